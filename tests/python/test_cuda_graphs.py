"""CUDA graphs (Note [CUDA graphs] in csrc/cuda/graphs/graph.cpp): capture and replay, private
memory pools, Philox state at replay, capture-safety errors, make_graphed_callables, captured
training steps, conditional nodes, stage_and_launch, captures from several threads. GPU only
(scripts/gpu_check.sh)."""
import os
import threading
import warnings

import pytest

import tensorplay as tp
import tensorplay.nn.functional as F

gpu = pytest.mark.skipif(not tp.cuda.is_available(), reason='no CUDA GPU')
pytestmark = gpu


def _capture(fn, *args, pool=None, mode='global'):
    g = tp.cuda.CUDAGraph()
    with tp.cuda.graph(g, pool=pool, capture_error_mode=mode):
        out = fn(*args)
    return g, out


def _chain(x):
    for _ in range(10):
        x = (x * 1.001).sin()
    return x


def test_capture_replay_follows_new_inputs():
    x = tp.randn(1000, device='cuda')
    g, y = _capture(_chain, x)
    assert g.num_nodes >= 20
    for _ in range(3):
        new = tp.randn(1000, device='cuda')
        x.copy_(new)
        g.replay()
        assert tp.allclose(y, _chain(new))
    assert not tp.cuda.is_current_stream_capturing()


def test_capture_rules():
    g = tp.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match='non-default stream'):
        g.capture_begin()  # the current stream is the default one here
    with pytest.raises(RuntimeError, match='holds no capture'):
        g.replay()
    x = tp.ones(4, device='cuda')
    g, y = _capture(lambda t: t + 1, x)
    with pytest.raises(RuntimeError, match='already owns a captured graph'):
        with tp.cuda.graph(g):
            pass
    g.reset()
    with tp.cuda.graph(g):
        z = x * 3
    g.replay()
    assert tp.equal(z, tp.full((4,), 3.0, device='cuda'))
    with pytest.raises(ValueError, match='capture_error_mode'):
        with tp.cuda.graph(tp.cuda.CUDAGraph(), capture_error_mode='loose'):
            pass


def test_is_current_stream_capturing_and_stats():
    seen = {}
    g = tp.cuda.CUDAGraph()
    x = tp.ones(8, device='cuda')
    with tp.cuda.graph(g):
        seen['capturing'] = tp.cuda.is_current_stream_capturing()
        seen['stats'] = tp.cuda.memory_stats()
        y = x * 2
    assert seen['capturing'] and seen['stats']['graph_captures.current'] == 1
    stats = tp.cuda.memory_stats()
    assert stats['graph_captures.current'] == 0 and stats['graph_pools.current'] >= 1
    assert stats['graph_pool_segments.current'] >= 1
    assert stats['graph_pool_allocated_bytes.current'] >= y.numel() * 4


def _pools():
    return tp.cuda.memory_stats()['graph_pools.current']


def test_pool_lives_until_last_graph_and_last_tensor():
    tp.cuda.empty_cache()
    base = _pools()
    x = tp.ones(1 << 18, device='cuda')
    g, y = _capture(lambda t: t * 2, x)
    assert _pools() == base + 1
    g.reset()          # the graph goes, its output still lives in the pool
    assert _pools() == base + 1
    del y              # the last tensor: the pool's segments go back to the driver
    assert _pools() == base
    # a graph collected with its outputs: the pool goes too
    g, y = _capture(lambda t: t * 2, x)
    del g, y
    assert _pools() == base


def test_shared_pool_and_eager_never_reuses_pool_memory():
    x = tp.ones(1 << 16, device='cuda')
    pool = tp.cuda.graph_pool_handle()
    before = _pools()
    g1, y1 = _capture(lambda t: t + 1, x, pool=pool)
    g2, y2 = _capture(lambda t: t + 2, y1, pool=pool)
    assert g1.pool() == g2.pool() == pool and _pools() == before + 1
    g1.replay()
    g2.replay()
    assert tp.equal(y2, x + 3)
    # memory freed inside a capture stays the graph's: eager allocations do not get it
    def scratch(t):
        tmp = t * 5
        ptr = tmp.data_ptr()
        del tmp
        return t + 1, ptr
    g3, (out, freed_ptr) = _capture(scratch, x)
    eager = [tp.empty(1 << 16, device='cuda') for _ in range(8)]
    assert freed_ptr not in {e.data_ptr() for e in eager}


def test_adjacent_free_blocks_coalesce_in_a_pool():
    def alloc(_):
        a = tp.empty(1 << 19, device='cuda', dtype=tp.uint8)  # 512 KiB: the small pool
        b = tp.empty(1 << 19, device='cuda', dtype=tp.uint8)
        pa, pb = a.data_ptr(), b.data_ptr()
        del a, b
        c = tp.empty(1 << 20, device='cuda', dtype=tp.uint8)  # 1 MiB: fits only merged
        return c, pa, pb
    g, (c, pa, pb) = _capture(alloc, None)
    assert abs(pb - pa) == 1 << 19 and c.data_ptr() == min(pa, pb)


def test_replayed_random_ops_equal_the_eager_sequence():
    x = tp.ones(4096, device='cuda')
    gen = tp.Generator(device='cuda')

    def draws(t):
        return F.dropout(t, 0.5), tp.rand(100, device='cuda'), tp.randn(50, device='cuda', generator=gen)
    tp.cuda.manual_seed(1234)
    gen.manual_seed(99)
    g, outs = _capture(draws, x)
    tp.cuda.manual_seed(1234)
    gen.manual_seed(99)
    replayed = []
    for _ in range(3):
        g.replay()
        replayed.append([o.clone() for o in outs])
    tp.cuda.manual_seed(1234)
    gen.manual_seed(99)
    for r in replayed:
        e = draws(x)
        for a, b in zip(r, e):
            assert tp.equal(a, b)
    assert not tp.equal(replayed[0][0], replayed[1][0])  # fresh numbers at each replay
    # the generator moved on by what the graph drew, as eager draws would have moved it
    s = tp.cuda.get_rng_state()
    tp.cuda.manual_seed(1234)
    for _ in range(3):
        draws(x)
    assert tp.equal(s, tp.cuda.get_rng_state())


@pytest.mark.parametrize('what, call, match', [
    ('item', lambda t: t.sum().item(), 'copying a CUDA tensor to the CPU'),
    ('cpu', lambda t: t.cpu(), 'copying a CUDA tensor to the CPU'),
    ('nonzero', lambda t: t.nonzero(), 'nonzero'),
    ('masked_select', lambda t: t[t > 0], 'masked_select|nonzero'),
    ('sync', lambda t: tp.cuda.synchronize(), 'synchronize'),
    ('from_host', lambda t: t + tp.tensor([1.0, 2.0]).cuda(), 'CPU tensor to the GPU'),
])
def test_capture_errors_name_the_op_and_leave_a_clean_state(what, call, match):
    x = tp.randn(16, device='cuda')
    g = tp.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match=match) as info:
        with tp.cuda.graph(g):
            y = x * 2
            call(y)
    assert 'CUDA graph' in str(info.value)
    assert not tp.cuda.is_current_stream_capturing()
    assert tp.cuda.memory_stats()['graph_captures.current'] == 0
    tp.cuda.synchronize()  # the stream and device work again
    g2, out = _capture(lambda t: t + 1, x)
    g2.replay()
    assert tp.equal(out, x + 1)


def test_checks_are_skipped_under_capture_and_indexing_captures():
    w = tp.randn(10, 4, device='cuda')
    idx = tp.tensor([1, 3, 5], device='cuda')
    target = tp.tensor([2, 0, 1], device='cuda')
    g, (e, loss, pooled) = _capture(
        lambda: (F.embedding(idx, w), F.cross_entropy(w[:3], target),
                 F.max_pool2d(w.view(1, 1, 10, 4), 2)))
    idx.copy_(tp.tensor([0, 9, 2], device='cuda'))
    g.replay()
    assert tp.equal(e, w[tp.tensor([0, 9, 2], device='cuda')])
    assert tp.allclose(loss, F.cross_entropy(w[:3], target))
    assert tp.equal(pooled, F.max_pool2d(w.view(1, 1, 10, 4), 2))


def _mlp(seed):
    tp.manual_seed(seed)
    return tp.nn.Sequential(tp.nn.Linear(32, 64), tp.nn.GELU(), tp.nn.Linear(64, 8)).cuda()


def test_make_graphed_callables_module_and_function():
    model = _mlp(0)
    ref = _mlp(0)
    x = tp.randn(16, 32, device='cuda', requires_grad=True)
    fn = lambda a, b: (a * b).sin()  # noqa: E731
    a = tp.randn(8, device='cuda', requires_grad=True)
    b = tp.randn(8, device='cuda')
    graphed_model, graphed_fn = tp.cuda.make_graphed_callables((model, fn), ((x,), (a, b)))
    for _ in range(3):
        xi = tp.randn(16, 32, device='cuda', requires_grad=True)
        xr = xi.detach().clone().requires_grad_(True)
        out = graphed_model(xi)
        expect = ref(xr)
        assert tp.allclose(out, expect, atol=1e-5)
        out.square().sum().backward()
        expect.square().sum().backward()
        assert tp.allclose(xi.grad, xr.grad, atol=1e-5)
        for p, q in zip(model.parameters(), ref.parameters()):
            assert tp.allclose(p.grad, q.grad, atol=1e-4)
            p.grad = None
            q.grad = None
        ai = tp.randn(8, device='cuda', requires_grad=True)
        bi = tp.randn(8, device='cuda')
        r = graphed_fn(ai, bi)
        assert tp.allclose(r, (ai * bi).sin())
        r.sum().backward()
        assert tp.allclose(ai.grad, bi * (ai * bi).cos(), atol=1e-6)
    model.eval()  # another training mode: the eager forward runs
    assert tp.allclose(graphed_model(x), ref.eval()(x), atol=1e-5)


def test_make_graphed_autograd_function_is_public():
    assert callable(tp.cuda.make_graphed_autograd_function)
    with pytest.raises(TypeError, match='only Tensors'):
        tp.cuda.make_graphed_callables(lambda t, k: t * k, (tp.ones(2, device='cuda'), 3))


@pytest.mark.parametrize('opt_name', ['AdamW', 'Adam', 'SGD'])
def test_whole_training_step_captured(opt_name):
    model, ref = _mlp(1), _mlp(1)
    kw = dict(lr=1e-2)
    if opt_name == 'SGD':
        opt, ref_opt = (tp.optim.SGD(m.parameters(), momentum=0.9, **kw) for m in (model, ref))
    else:
        cls = getattr(tp.optim, opt_name)
        opt = cls(model.parameters(), capturable=True, **kw)
        ref_opt = cls(ref.parameters(), **kw)
    static_x = tp.randn(16, 32, device='cuda')
    static_y = tp.randn(16, 8, device='cuda')

    def step(m, o, x, y):
        o.zero_grad(set_to_none=True)
        loss = F.mse_loss(m(x), y)
        loss.backward()
        o.step()
        return loss

    side = tp.cuda.Stream()
    side.wait_stream(tp.cuda.current_stream())
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        with tp.cuda.stream(side):
            for _ in range(3):  # warm-up (also on the reference, to stay in step)
                step(model, opt, static_x, static_y)
    tp.cuda.current_stream().wait_stream(side)
    for _ in range(3):
        step(ref, ref_opt, static_x, static_y)
    g = tp.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with tp.cuda.graph(g):
        static_loss = F.mse_loss(model(static_x), static_y)
        static_loss.backward()
        opt.step()
    for _ in range(5):
        x, y = tp.randn(16, 32, device='cuda'), tp.randn(16, 8, device='cuda')
        static_x.copy_(x)
        static_y.copy_(y)
        g.replay()
        ref_loss = step(ref, ref_opt, x, y)
        assert tp.allclose(static_loss, ref_loss, rtol=1e-4, atol=1e-6)
    for p, q in zip(model.parameters(), ref.parameters()):
        assert tp.allclose(p, q, rtol=1e-4, atol=1e-5)


def test_non_capturable_adam_refuses_capture():
    model = _mlp(2)
    opt = tp.optim.Adam(model.parameters())
    model(tp.randn(4, 32, device='cuda')).sum().backward()
    with pytest.raises(RuntimeError, match="capturable is False"):
        with tp.cuda.graph(tp.cuda.CUDAGraph()):
            opt.step()


def test_if_node_runs_its_body_when_the_predicate_holds():
    x = tp.zeros(4, device='cuda')
    pred = tp.tensor(True, device='cuda')
    g = tp.cuda.CUDAGraph()
    with tp.cuda.graph(g):
        x.add_(1)
        g.begin_capture_to_if_node(pred)
        x.mul_(10)
        g.end_capture_to_conditional_node()
        x.add_(1)
    x.zero_()
    g.replay()
    assert tp.equal(x, tp.full((4,), 11.0, device='cuda'))
    pred.fill_(False)
    x.zero_()
    g.replay()
    assert tp.equal(x, tp.full((4,), 2.0, device='cuda'))


def test_while_node_runs_a_data_dependent_number_of_times():
    x = tp.ones(3, device='cuda')
    count = tp.zeros((), dtype=tp.int64, device='cuda')
    pred = tp.zeros((), dtype=tp.bool, device='cuda')
    g = tp.cuda.CUDAGraph()
    with tp.cuda.graph(g):
        tp.gt(count, 0, out=pred)
        g.begin_capture_to_while_node(pred)
        x.mul_(2)
        count.sub_(1)
        tp.gt(count, 0, out=pred)
        g.end_capture_to_conditional_node()
    for n in (3, 0, 5):
        x.fill_(1)
        count.fill_(n)
        g.replay()
        assert tp.equal(x, tp.full((3,), float(2 ** n), device='cuda'))
        assert count.item() == 0


def test_stage_and_launch_equals_copy_and_replay():
    a = tp.randn(256, device='cuda')
    b = tp.randn(256, device='cuda')
    g, y = _capture(lambda s, t: (s * t).relu() + s, a, b)
    na, nb = tp.randn(256, device='cuda'), tp.randn(256, device='cuda')
    g.stage_and_launch([a, b], [na, nb])
    assert tp.allclose(y, (na * nb).relu() + na)
    g.stage_and_launch([a, b], [na.double(), nb[::1]])  # converted on the way
    assert tp.allclose(y, (na * nb).relu() + na)
    with pytest.raises(ValueError, match='shape'):
        g.stage_and_launch([a, b], [na[:10], nb])
    with pytest.raises(ValueError, match='static inputs'):
        g.stage_and_launch([a], [na, nb])


def test_stage_and_launch_batched_and_large_copies():
    # Note [Batched staging copies]: ten small inputs (more than one batch of 8), a byte tensor
    # at an odd offset (unaligned: the byte loop), a 2 MiB one (cudaMemcpyAsync), an empty one
    # and a strided one (a device copy), staged in order
    static = [tp.zeros(n, device='cuda') for n in (1, 3, 4, 5, 17, 256, 1000, 1023, 4096, 33)]
    raw = tp.zeros(101, dtype=tp.uint8, device='cuda')
    odd = raw[1:100]
    big = tp.zeros(1 << 19, device='cuda')
    empty = tp.zeros(0, device='cuda')
    wide = tp.zeros(64, device='cuda')
    ins = static + [odd, big, empty, wide]
    g, outs = _capture(lambda *ts: [t * 2 for t in ts], *ins)
    new = [tp.randn(t.numel(), device='cuda') for t in static]
    new += [tp.randint(0, 100, (99,), dtype=tp.uint8, device='cuda'), tp.randn(1 << 19, device='cuda'),
            tp.zeros(0, device='cuda'), tp.randn(128, device='cuda')[::2]]
    g.stage_and_launch(ins, new)
    for out, src in zip(outs, new):
        assert tp.equal(out, src * 2)
    assert raw[0].item() == 0 and raw[100].item() == 0  # nothing written around the odd view


def test_debug_dump_writes_dot(tmp_path):
    g = tp.cuda.CUDAGraph()
    g.enable_debug_mode()
    x = tp.ones(8, device='cuda')
    with tp.cuda.graph(g):
        y = x.exp() + 1
    path = tmp_path / 'graph.dot'
    g.debug_dump(path)
    assert 'digraph' in path.read_text()
    g2, _ = _capture(lambda t: t * 2, x)
    with pytest.raises(RuntimeError, match='enable_debug_mode'):
        g2.debug_dump(tmp_path / 'none.dot')


def test_captures_from_two_threads_at_once():
    results, errors = {}, []
    barrier = threading.Barrier(2)

    def worker(k):
        try:
            x = tp.full((1024,), float(k), device='cuda')
            g = tp.cuda.CUDAGraph()
            s = tp.cuda.Stream()
            with tp.cuda.stream(s):
                g.capture_begin(capture_error_mode='thread_local')
                barrier.wait()  # both captures underway at once
                y = _chain(x)
                g.capture_end()
            x.fill_(k + 1.0)
            g.replay()
            s.synchronize()
            results[k] = (y.clone(), _chain(tp.full((1024,), k + 1.0, device='cuda')))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for got, want in results.values():
        assert tp.allclose(got, want)
