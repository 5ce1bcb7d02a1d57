"""tp.library benchmarks (issue 28): what a custom op costs above its kernel, and custom op
calls (forward, forward + backward) against torch.library.custom_op, in one process
(ratio = tp time / torch time).

    python benchmarks/bench_library.py [--quick] [--markdown]

The kernel is a 1-element sin. Every case checks its result against PyTorch's first.
"""
import argparse
import platform

import numpy as np
import torch

import tensorplay as tp
from common import compare


def define(lib, ns):
    @lib.library.custom_op(f'{ns}::bench_sin', mutates_args=())
    def bench_sin(x: lib.Tensor) -> lib.Tensor:
        return lib.sin(x)

    @bench_sin.register_fake
    def _(x):
        return lib.empty_like(x)

    @lib.library.custom_op(f'{ns}::bench_sin_grad', mutates_args=())
    def bench_sin_grad(x: lib.Tensor) -> lib.Tensor:
        return lib.sin(x)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * x.cos()
    bench_sin_grad.register_autograd(backward, setup_context=setup_context)
    return bench_sin, bench_sin_grad


def check(name, ours, ref):
    a, b = np.asarray(ours.tolist(), dtype=np.float64), ref.detach().numpy().astype(np.float64)
    if a.shape != b.shape or not np.allclose(a, b, rtol=1e-6, atol=1e-6):
        raise SystemExit(f"{name}: TensorPlay result differs from PyTorch's")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--quick', action='store_true')
    ap.add_argument('--markdown', action='store_true')
    args = ap.parse_args()
    number, rounds = (2000, 5) if args.quick else (20000, 9)
    tp_sin, tp_sin_grad = define(tp, 'tpbench')
    th_sin, th_sin_grad = define(torch, 'tpbench')
    x, tx = tp.full((1,), 0.5), torch.full((1,), 0.5)
    g, tg = tp.full((1,), 0.5, requires_grad=True), torch.full((1,), 0.5, requires_grad=True)

    def fwd_bwd(op, t):
        def run():
            t.grad = None
            op(t).backward()
            return t.grad
        return run

    cases = [('kernel alone: sin(x)', lambda: tp.sin(x), lambda: torch.sin(tx)),
             ('custom op (kernel: sin)', lambda: tp_sin(x), lambda: th_sin(tx)),
             ('custom op via tp.ops handle', lambda: tp.ops.tpbench.bench_sin.default(x),
              lambda: torch.ops.tpbench.bench_sin.default(tx)),
             ('custom op + autograd, forward', lambda: tp_sin_grad(g), lambda: th_sin_grad(tg)),
             ('custom op + autograd, fwd + bwd', fwd_bwd(tp_sin_grad, g), fwd_bwd(th_sin_grad, tg))]
    rows = []
    for name, f_tp, f_th in cases:
        check(name, f_tp(), f_th())
        a, b = compare(f_tp, f_th, number, rounds)
        rows.append((name, a * 1e6, b * 1e6))
    print(f'# tp.library, {platform.processor() or platform.machine()}, torch {torch.__version__}')
    if args.markdown:
        print('| case | tensorplay | torch | ratio |\n|---|---|---|---|')
    for name, a, b in rows:
        print(f'| `{name}` | {a:.3g} µs | {b:.3g} µs | {a / b:.2f} |' if args.markdown
              else f'{name:34s} tp {a:7.3g} µs  torch {b:7.3g} µs  ratio {a / b:5.2f}')
    kernel = rows[0][1]
    print(f'custom op cost above its kernel: {rows[1][1] - kernel:.2f} µs '
          f'(torch: {rows[1][2] - rows[0][2]:.2f} µs)')


if __name__ == '__main__':
    main()
