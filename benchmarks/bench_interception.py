"""Interception-layer benchmarks (issue 27): what plain eager pays for the dispatch keys and
__torch_function__, what an op handle, a pass-through TorchDispatchMode / TorchFunctionMode
and a Tensor subclass cost, and GPT-2 small forward + backward under FakeTensorMode,
TensorPlay vs PyTorch in one process (ratio = tp time / torch time).

    python benchmarks/bench_interception.py [--quick] [--markdown] [--no-gpt]

Run it with another tree's tensorplay first on PYTHONPATH (an older build) to compare plain
eager before and after: sections whose machinery that build lacks are skipped. Every case
checks its result against PyTorch's (values, or shapes under fake tensors) before timing.
"""
import argparse
import platform
import time

import numpy as np
import torch

import tensorplay as tp
from common import compare


def check(name, ours, ref):
    a, b = np.asarray(ours.tolist(), dtype=np.float64), ref.detach().numpy().astype(np.float64)
    if a.shape != b.shape or not np.allclose(a, b, rtol=1e-6, atol=1e-6):
        raise SystemExit(f"{name}: TensorPlay result differs from PyTorch's")


def eager_cases():
    a, b, ta, tb = tp.ones(1), tp.full((1,), 2.0), torch.ones(1), torch.full((1,), 2.0)
    g, tg = tp.ones(1, requires_grad=True), torch.ones(1, requires_grad=True)
    m, tm = tp.ones(4, 4), torch.ones(4, 4)
    return [('add 1-element', lambda: tp.add(a, b), lambda: torch.add(ta, tb)),
            ('a + b 1-element', lambda: a + b, lambda: ta + tb),
            ('view 4x4 -> 16', lambda: m.view(16), lambda: tm.view(16)),
            ('x * 2 recording a grad node', lambda: g * 2, lambda: tg * 2),
            ('x.shape', lambda: m.shape, lambda: tm.shape)]


def handle_cases():
    a, b, ta, tb = tp.ones(1), tp.full((1,), 2.0), torch.ones(1), torch.full((1,), 2.0)
    h, th = tp.ops.aten.add.Tensor, torch.ops.aten.add.Tensor
    return [('aten.add.Tensor handle', lambda: h(a, b), lambda: th(ta, tb)),
            ('tp.add (same inputs)', lambda: tp.add(a, b), lambda: torch.add(ta, tb))]


def _dispatch_mode(lib):
    from importlib import import_module
    base = import_module(f'{lib.__name__}.utils._python_dispatch').TorchDispatchMode

    class PassThrough(base):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))
    return PassThrough()


def _function_mode(lib):
    class PassThrough(lib.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))
    return PassThrough()


def _in_mode(mode, fn):
    def run():
        with mode:
            return fn()
    return run


def mode_cases():
    a, b, ta, tb = tp.ones(1), tp.full((1,), 2.0), torch.ones(1), torch.full((1,), 2.0)
    x, tx = tp.ones(8, 8), torch.ones(8, 8)

    def ops(lib, p, q, r):
        return ((p + q) * q).sum() + r.relu().mean()
    cases = []
    for label, make in (('TorchDispatchMode', _dispatch_mode), ('TorchFunctionMode', _function_mode)):
        cases.append((f'{label} pass-through, 5 ops', _in_mode(make(tp), lambda: ops(tp, a, b, x)),
                      _in_mode(make(torch), lambda: ops(torch, ta, tb, tx))))

    class Sub(tp.Tensor):
        pass

    class TSub(torch.Tensor):
        pass
    s, ts = a.as_subclass(Sub), ta.as_subclass(TSub)
    cases.append(('subclass (default __torch_function__) add', lambda: s + b, lambda: ts + tb))
    return cases


def timed_rows(cases, number, rounds):
    rows = []
    for name, f_tp, f_th in cases:
        ours, ref = f_tp(), f_th()
        if isinstance(ref, torch.Tensor):
            check(name, ours, ref)
        else:
            assert tuple(ours) == tuple(ref), name
        a, b = compare(f_tp, f_th, number, rounds)
        rows.append((name, a * 1e6, b * 1e6))
    return rows


def gpt2_fake(lib, batch, seq):
    from importlib import import_module
    from tensorplay.testing.gpt import gpt2
    fake = import_module(f'{lib.__name__}._subclasses.fake_tensor')
    with fake.FakeTensorMode():
        model = gpt2(lib)
        idx = lib.randint(0, 50257, (batch, seq))
        logits, loss = model(idx, idx)
        loss.backward()
    return tuple(logits.shape), tuple(model.lm_head.weight.grad.shape)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--quick', action='store_true')
    ap.add_argument('--markdown', action='store_true')
    ap.add_argument('--no-gpt', action='store_true')
    args = ap.parse_args()
    number, rounds = (2000, 5) if args.quick else (20000, 15)
    tp.set_num_threads(1), torch.set_num_threads(1)
    print(f'# {platform.processor() or platform.machine()}, tensorplay {tp.__version__}, torch {torch.__version__}')
    rows = timed_rows(eager_cases(), number, rounds)
    if hasattr(tp, 'ops'):
        rows += timed_rows(handle_cases(), number, rounds)
    if hasattr(tp, 'overrides'):
        rows += timed_rows(mode_cases(), number // 4, rounds)
    if args.markdown:
        print('| case | tensorplay | torch | ratio |\n|---|---|---|---|')
    for name, a, b in rows:
        print(f'| `{name}` | {a:.3g} µs | {b:.3g} µs | {a / b:.2f} |' if args.markdown
              else f'{name:44s} tp {a:8.3g} µs  torch {b:8.3g} µs  ratio {a / b:5.2f}')
    if hasattr(tp, '_subclasses') and not args.no_gpt:
        batch, seq = (8, 256) if args.quick else (64, 1024)
        times = {}
        for lib in (tp, torch):
            gpt2_fake(lib, 1, 8)  # warm-up
            best = float('inf')
            for _ in range(1 if args.quick else 3):
                t0 = time.perf_counter()
                shapes = gpt2_fake(lib, batch, seq)
                best = min(best, time.perf_counter() - t0)
            times[lib.__name__] = (best, shapes)
        (a, s1), (b, s2) = times['tensorplay'], times['torch']
        assert s1 == s2, (s1, s2)
        name = f'GPT-2 small fwd+bwd, FakeTensorMode, {batch}x{seq}'
        print(f'| `{name}` | {a * 1e3:.0f} ms | {b * 1e3:.0f} ms | {a / b:.2f} |' if args.markdown
              else f'{name:44s} tp {a * 1e3:8.0f} ms  torch {b * 1e3:8.0f} ms  ratio {a / b:5.2f}')


if __name__ == '__main__':
    main()
