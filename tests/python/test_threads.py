"""Eight threads at once (issue 33, threads): ops, backward passes, random draws and module
forwards, on independent and on shared inputs, each result checked against the same work done
on one thread. Races in the autograd engine, the allocator caches or the generators show up
as wrong values, exceptions or crashes here (and under ThreadSanitizer: scripts/sanitize.sh)."""
import threading

import numpy as np

import tensorplay as tp
import tensorplay.nn as nn
import tensorplay.nn.functional as F

THREADS = 8
ROUNDS = 30


def _run_threads(work):
    errors, results = [], [None] * THREADS
    barrier = threading.Barrier(THREADS)

    def body(k):
        try:
            barrier.wait()
            results[k] = work(k)
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append((k, e))
    threads = [threading.Thread(target=body, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


def _step(x, w):
    # a forward and backward with a few op families (matmul, reductions, pointwise, views)
    w = w.detach().requires_grad_(True)
    y = (x @ w).tanh()
    loss = (y.softmax(-1) * y).sum() + w.square().mean()
    loss.backward()
    return loss.detach(), w.grad


def test_independent_and_shared_inputs_from_eight_threads():
    rng = np.random.default_rng(0)
    shared_x = tp.tensor(rng.standard_normal((32, 16)).astype(np.float32))
    ws = [tp.tensor(rng.standard_normal((16, 8)).astype(np.float32)) for _ in range(THREADS)]
    xs = [tp.tensor(rng.standard_normal((32, 16)).astype(np.float32)) for _ in range(THREADS)]
    expect = [(_step(shared_x, ws[k]), _step(xs[k], ws[k])) for k in range(THREADS)]

    def work(k):
        out = None
        for _ in range(ROUNDS):
            out = (_step(shared_x, ws[k]), _step(xs[k], ws[k]))
        return out
    for k, got in enumerate(_run_threads(work)):
        for (gl, gg), (el, eg) in zip(got, expect[k]):
            assert tp.equal(gl, el) and tp.equal(gg, eg)


def test_random_draws_from_eight_threads():
    # each thread's own generator gives the sequence it gives alone; the shared default
    # generator hands out every draw exactly once (the draws are those of one thread, reordered)
    def own(k):
        g = tp.Generator().manual_seed(100 + k)
        return [tp.randn(64, generator=g) for _ in range(ROUNDS)]
    expect = [own(k) for k in range(THREADS)]
    for k, got in enumerate(_run_threads(own)):
        assert all(tp.equal(a, b) for a, b in zip(got, expect[k]))
    tp.manual_seed(7)
    draws = _run_threads(lambda k: [tp.rand(256) for _ in range(ROUNDS)])
    seen = tp.cat([d for per in draws for d in per])
    tp.manual_seed(7)
    alone = tp.cat([tp.rand(256) for _ in range(THREADS * ROUNDS)])
    assert tp.equal(seen.sort().values, alone.sort().values)  # the same numbers, in some order


def test_module_forward_backward_from_eight_threads_on_a_shared_model():
    tp.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(8 * 4 * 4, 10))
    rng = np.random.default_rng(1)
    xs = [tp.tensor(rng.standard_normal((4, 1, 8, 8)).astype(np.float32)) for _ in range(THREADS)]
    ys = [tp.tensor(rng.integers(0, 10, 4)) for _ in range(THREADS)]

    def grads(k):
        # autograd.grad: no shared .grad accumulation between threads
        loss = F.cross_entropy(model(xs[k]), ys[k])
        return loss.detach(), tp.autograd.grad(loss, list(model.parameters()))
    expect = [grads(k) for k in range(THREADS)]

    def work(k):
        out = None
        for _ in range(ROUNDS // 3):
            out = grads(k)
        return out
    for k, (loss, gs) in enumerate(_run_threads(work)):
        assert tp.equal(loss, expect[k][0])
        assert all(tp.equal(a, b) for a, b in zip(gs, expect[k][1]))


def test_backward_accumulating_into_shared_leaves_from_eight_threads():
    # concurrent backward passes into the same leaf: .grad ends as the sum of all of them
    w = tp.ones(16, requires_grad=True)

    def work(k):
        for _ in range(ROUNDS):
            (w * float(k + 1)).sum().backward()
    _run_threads(work)
    total = ROUNDS * sum(range(1, THREADS + 1))
    assert tp.equal(w.grad, tp.full((16,), float(total)))
