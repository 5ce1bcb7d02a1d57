"""Memory is given back: tensors, autograd graphs and saved tensors are freed once
unreachable, a long training loop keeps its resident memory flat, and the CPU block cache and
the CUDA caching allocator return their memory on empty_cache (issue 33, leaks)."""
import gc
import os
import weakref

import numpy as np
import pytest

import tensorplay as tp
import tensorplay.nn as nn
import tensorplay.nn.functional as F


def _rss():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')


def test_tensor_and_its_graph_are_freed_when_unreachable():
    a = tp.randn(64, requires_grad=True)
    y = (a * 2).exp().sum()
    wy = weakref.ref(y)
    node = y.grad_fn
    wnode = weakref.ref(node) if hasattr(type(node), '__weakref__') else None
    del node
    y.backward()
    del y
    assert wy() is None
    if wnode is not None:
        assert wnode() is None


def test_saved_tensors_are_freed_after_backward():
    freed = []
    a = tp.randn(256, requires_grad=True)

    def pack(t):
        r = weakref.ref(t)
        freed.append(r)
        return t
    with tp.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = (a.sin() * a.cos()).sum()
    y.backward()
    del y
    gc.collect()
    # what the graph saved (a's intermediates) is gone; `a` itself is still ours
    assert all(r() is None or r() is a for r in freed)


def test_function_outputs_and_ctx_are_freed():
    class Twice(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2

    a = tp.randn(8, requires_grad=True)
    out = Twice.apply(a)
    w = weakref.ref(out)
    out.sum().backward()
    del out
    assert w() is None


class _Twice(tp.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def _collected(make):
    """make() builds a cycle and returns a weak reference into it; gc must free it."""
    r = make()
    gc.collect()
    return r() is None


def test_cycle_through_function_ctx_is_collected():
    # the example: out.grad_fn.saved = out
    def make():
        out = _Twice.apply(tp.randn(3, requires_grad=True))
        out.grad_fn.saved = out
        return weakref.ref(out)
    assert _collected(make)

    def make_saved():  # the ctx keeps the output through save_for_backward's tensor list too
        x = tp.randn(3, requires_grad=True)
        out = _Twice.apply(x)
        out.grad_fn.keep = [out, x]
        return weakref.ref(out.grad_fn)
    assert _collected(make_saved)


def test_cycle_through_tensor_hooks_is_collected():
    def make_leaf():
        t = tp.randn(3, requires_grad=True)
        t.register_hook(lambda g: g * t.detach())
        return weakref.ref(t)
    assert _collected(make_leaf)

    def make_nonleaf():
        t = tp.randn(3, requires_grad=True) * 2
        t.register_hook(lambda g: g + t.detach())
        return weakref.ref(t)
    assert _collected(make_nonleaf)

    def make_post():
        t = tp.randn(3, requires_grad=True)
        t.register_post_accumulate_grad_hook(lambda p: t)
        return weakref.ref(t)
    assert _collected(make_post)


def test_collector_leaves_live_cycles_alone():
    # a tensor kept from outside the cycle, and a node shared by two outputs: nothing freed,
    # and backward through them still works after a collection
    x = tp.randn(3, requires_grad=True)
    out = _Twice.apply(x)
    out.grad_fn.saved = out
    keep = out
    del out
    gc.collect()
    keep.sum().backward()
    assert tp.equal(x.grad, tp.full((3,), 2.0))
    t = tp.randn(3, requires_grad=True)
    h = t * 3
    h.register_hook(lambda g: g * 2)
    alias = h.view(3)  # shares h's graph
    del h
    gc.collect()
    alias.sum().backward()
    assert tp.equal(t.grad, tp.full((3,), 6.0))


def test_module_and_optimizer_are_collected():
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    opt = tp.optim.AdamW(model.parameters())
    model(tp.randn(4, 8)).sum().backward()
    opt.step()
    wm, wp = weakref.ref(model), weakref.ref(next(model.parameters()))
    del model, opt
    gc.collect()
    assert wm() is None and wp() is None


def _digits_net():
    # the main job's CNN (examples/train_digits.py build_model), on 8x8 digits
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 4 * 4, 128), nn.ReLU(), nn.Dropout(0.2),
        nn.Linear(128, 10))


def test_training_loop_keeps_resident_memory_flat():
    tp.manual_seed(0)
    rng = np.random.default_rng(0)
    xs = tp.tensor(rng.standard_normal((16, 1, 8, 8)).astype(np.float32))
    ys = tp.tensor(rng.integers(0, 10, 16))
    model = _digits_net()
    opt = tp.optim.AdamW(model.parameters(), lr=1e-3)
    sched = tp.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=5000)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(xs), ys)
        loss.backward()
        opt.step()
        sched.step()
        return loss.item()

    for _ in range(500):  # warm-up: caches, allocator bins, lazily built state
        step()
    gc.collect()
    before = _rss()
    for _ in range(4500):
        step()
    gc.collect()
    after = _rss()
    assert after <= before * 1.02, f'RSS grew from {before} to {after} bytes over 4500 steps'


def test_cpu_block_cache_returns_memory_on_empty_cache():
    tp.cpu.empty_cache()
    assert tp.cpu.memory_cached() == 0
    big = [tp.ones(1 << 22) for _ in range(4)]  # 16 MiB each: cached after free
    del big
    cached = tp.cpu.memory_cached()
    assert cached >= 4 * (16 << 20)
    rss_cached = _rss()
    assert tp.cpu.empty_cache() == cached
    assert tp.cpu.memory_cached() == 0
    assert _rss() <= rss_cached - 32 * (1 << 20)  # the pages went back to the system
    x = tp.ones(1 << 22)  # allocating again works
    assert float(x.sum()) == float(1 << 22)


@pytest.mark.skipif(not tp.cuda.is_available(), reason='no CUDA GPU')
def test_cuda_caching_allocator_returns_memory_on_empty_cache():
    tp.cuda.empty_cache()
    base = tp.cuda.memory_reserved()
    xs = [tp.empty(16 << 20, device='cuda', dtype=tp.uint8) for _ in range(4)]
    assert tp.cuda.memory_reserved() >= base + 64 * (1 << 20)
    del xs
    assert tp.cuda.memory_allocated() <= base
    tp.cuda.empty_cache()
    assert tp.cuda.memory_reserved() <= base
