"""autograd.Function and forward-mode AD, TensorPlay vs PyTorch in one process
(ratio = tp time / torch time):

- a custom Function (square, saves its input) forward + backward on a 1-element tensor;
- forward-mode JVP of a chain of 20 ops on 16-element tensors (dual_level, make_dual,
  unpack_dual), the same with the dual level entered once outside the timing, and a chain
  of 20 unary ops (no binary op with a constant, a slow path of PyTorch's forward AD).

    python benchmarks/bench_function.py [--quick] [--markdown]

Each case first checks TensorPlay's result against PyTorch's.
"""
import argparse

import numpy as np
import torch

import tensorplay as tp
from common import print_table, run_checked


def square_function(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return 2 * x * grad
    return Square


def function_case():
    def make(lib):
        sq = square_function(lib)
        x = lib.from_numpy(np.array([1.5], dtype=np.float32)).requires_grad_(True)

        def run():
            x.grad = None
            sq.apply(x).backward()
            return x.grad
        return run
    return "Function square, 1 element, fwd+bwd", make(tp), make(torch)


def _chain(lib, fwAD, x, v):
    y = fwAD.make_dual(x, v)
    for _ in range(4):  # 20 ops
        y = lib.tanh(y * 1.01 + 0.1).exp() - 0.05
    return fwAD.unpack_dual(y).tangent


def jvp_chain_case():
    arr = np.linspace(-1, 1, 16, dtype=np.float32)

    def make(lib):
        fwAD = lib.autograd.forward_ad
        x = lib.from_numpy(arr.copy())
        v = lib.ones_like(x)

        def run():
            with fwAD.dual_level():
                return _chain(lib, fwAD, x, v)
        return run
    return "JVP of a 20-op chain, 16 elements", make(tp), make(torch)


def jvp_unary_chain_case():
    """20 unary ops only: PyTorch 2.13's forward AD is slow on binary ops with a constant
    operand (hundreds of us each here), so this row shows the ratio without that path."""
    arr = np.linspace(-1, 1, 16, dtype=np.float32)

    def make(lib):
        fwAD = lib.autograd.forward_ad
        x = lib.from_numpy(arr.copy())
        v = lib.ones_like(x)

        def run():
            with fwAD.dual_level():
                y = fwAD.make_dual(x, v)
                for _ in range(5):  # 20 ops
                    y = y.sin().tanh().exp().sigmoid()
                return fwAD.unpack_dual(y).tangent
        return run
    return "JVP of 20 unary ops, 16 elements", make(tp), make(torch)


def jvp_chain_open_level_case():
    """The same chain inside one dual level left open (no level enter/exit per call)."""
    arr = np.linspace(-1, 1, 16, dtype=np.float32)

    def make(lib):
        fwAD = lib.autograd.forward_ad
        x = lib.from_numpy(arr.copy())
        v = lib.ones_like(x)
        return lambda: _chain(lib, fwAD, x, v)
    return "same chain, dual level kept open", make(tp), make(torch)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--only", choices=["function", "jvp"])
    args = ap.parse_args()
    number, rounds = (500, 3) if args.quick else (5000, 9)
    rows = []
    if args.only in (None, "function"):
        rows += run_checked([function_case()], number, rounds)
    if args.only in (None, "jvp"):
        rows += run_checked([jvp_chain_case(), jvp_unary_chain_case()], number // 10, rounds)
        for lib in (tp, torch):  # the open-level case runs inside one level per library
            lib.autograd.forward_ad.enter_dual_level()
        try:
            rows += run_checked([jvp_chain_open_level_case()], number // 10, rounds)
        finally:
            for lib in (tp, torch):
                lib.autograd.forward_ad.exit_dual_level()
    print_table(rows, f"# threads tp={tp.get_num_threads()} torch={torch.get_num_threads()}, "
                f"torch {torch.__version__}", args.markdown, width=40)


if __name__ == "__main__":
    main()
