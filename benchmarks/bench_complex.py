"""Complex tensors (issue 32): complex64 matmul 512^3 (the issue's target, <= 1.0x PyTorch),
the element-wise and reduction paths on 1M complex64 elements, and linalg.eig / eigvals
(geev; eig checked through |V|, which is blind to the eigenvectors' phases), TensorPlay vs
PyTorch in one process with the same thread count (ratio = tp time / torch time).

    python benchmarks/bench_complex.py [--quick] [--markdown] [--threads N]

Each case checks TensorPlay's result against PyTorch's before timing.
"""
import argparse

import numpy as np
import torch

import tensorplay as tp
from common import print_table, run_checked


def complex_pair(rng, shape):
    a = (rng.standard_normal(shape, dtype=np.float32) + 1j * rng.standard_normal(shape, dtype=np.float32))
    a = a.astype(np.complex64)
    return tp.from_numpy(a), torch.from_numpy(a)


def cases():
    rng = np.random.default_rng(0)
    a, ta = complex_pair(rng, (512, 512))
    b, tb = complex_pair(rng, (512, 512))
    x, tx = complex_pair(rng, (1 << 20,))
    y, ty = complex_pair(rng, (1 << 20,))
    g_np = rng.standard_normal((128, 128))
    g, tg = tp.from_numpy(g_np), torch.from_numpy(g_np)
    c, tc = complex_pair(rng, (64, 64))
    return [
        ("complex64 matmul 512x512x512", lambda: a @ b, lambda: ta @ tb),
        ("complex64 mul 1M", lambda: x * y, lambda: tx * ty),
        ("complex64 add 1M", lambda: x + y, lambda: tx + ty),
        ("complex64 div 1M", lambda: x / y, lambda: tx / ty),
        ("complex64 abs 1M", lambda: x.abs(), lambda: tx.abs()),
        ("complex64 exp 1M", lambda: x.exp(), lambda: tx.exp()),
        ("complex64 sum 1M", lambda: x.sum(), lambda: tx.sum()),
        ("view_as_real(x) * 2, 1M", lambda: tp.view_as_real(x) * 2, lambda: torch.view_as_real(tx) * 2),
        ("linalg.eigvals float64 128x128", lambda: tp.linalg.eigvals(g), lambda: torch.linalg.eigvals(tg)),
        ("linalg.eig float64 128x128", lambda: tp.linalg.eig(g)[1].abs(),
         lambda: torch.linalg.eig(tg)[1].abs()),
        ("linalg.eig complex64 64x64", lambda: tp.linalg.eig(c)[1].abs(),
         lambda: torch.linalg.eig(tc)[1].abs()),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = ap.parse_args()
    tp.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    number, rounds = (3, 3) if args.quick else (10, 9)
    rows = run_checked(cases(), number, rounds, rtol=1e-4, atol=1e-3)
    print_table(rows, f"complex64, {args.threads} threads", args.markdown, width=30)


if __name__ == "__main__":
    main()
