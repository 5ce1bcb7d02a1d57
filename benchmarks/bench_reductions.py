"""Reduction benchmark: sum, mean and amax over 16M float32 elements and over each dim
of 4096x4096, logsumexp and median over the last dim of 4096x4096, sort of 1M float32 and
unique of 1M int64 (values below 2^16), TensorPlay vs PyTorch in one process
(ratio = tp time / torch time).

    python benchmarks/bench_reductions.py [--quick] [--markdown]

Each case checks TensorPlay's result against PyTorch's before timing.
"""
import argparse

import numpy as np
import torch

import tensorplay as tp
from common import print_table, run_checked


def cases():
    rng = np.random.default_rng(0)
    flat = rng.standard_normal(1 << 24, dtype=np.float32)
    square = rng.standard_normal((4096, 4096), dtype=np.float32)
    out = []
    for label, arr in (("16M", flat), ("4096x4096", square)):
        x, tx = tp.from_numpy(arr), torch.from_numpy(arr)
        dims = [None] if arr.ndim == 1 else [0, 1]
        for op in ("sum", "mean", "amax"):
            for d in dims:
                args = () if d is None else (d,)
                name = f"{op} {label}" + ("" if d is None else f" dim={d}")
                out.append((name, (lambda x=x, op=op, a=args: getattr(tp, op)(x, *a)),
                            (lambda tx=tx, op=op, a=args: getattr(torch, op)(tx, *a))))
    x, tx = tp.from_numpy(square), torch.from_numpy(square)
    out.append(("logsumexp 4096x4096 dim=-1", lambda: tp.logsumexp(x, -1),
                lambda: torch.logsumexp(tx, -1)))
    v = rng.standard_normal(1 << 20, dtype=np.float32)
    y, ty = tp.from_numpy(v), torch.from_numpy(v)
    out.append(("sort 1M", lambda: y.sort().values, lambda: ty.sort().values))
    out.append(("median 4096x4096 dim=-1", lambda: tp.median(x, -1).values,
                lambda: torch.median(tx, -1).values))
    ints = rng.integers(0, 1 << 16, 1 << 20)
    z, tz = tp.from_numpy(ints), torch.from_numpy(ints)
    out.append(("unique 1M int64", lambda: tp.unique(z), lambda: torch.unique(tz)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    number, rounds = (3, 3) if args.quick else (10, 9)
    rows = run_checked(cases(), number, rounds)
    print_table(rows, f"# threads tp={tp.get_num_threads()} torch={torch.get_num_threads()}, "
                f"torch {torch.__version__}", args.markdown)

if __name__ == "__main__":
    main()
