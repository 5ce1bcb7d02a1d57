"""Random sampling, TensorPlay vs PyTorch in one process (ratio = tp time / torch time).

Each case seeds both libraries identically and first checks that TensorPlay draws exactly
PyTorch's bits (the generators' states must match afterwards too), then times the call.

    python benchmarks/bench_random.py [--quick] [--markdown]
"""
import argparse

import numpy as np
import torch

import tensorplay as tp
from common import compare, print_table

N = 16 * 1024 * 1024


def cases(n):
    xt, xp = torch.empty(n), tp.empty(n)
    return [
        (f"randn({n})", lambda m: m.randn(n)),
        (f"rand({n})", lambda m: m.rand(n)),
        (f"randint(0, 100, ({n},))", lambda m: m.randint(0, 100, (n,))),
        ("randperm(1_000_000)", lambda m: m.randperm(1_000_000)),
        (f"bernoulli_(0.5) on {n}", lambda m: (xt if m is torch else xp).bernoulli_(0.5)),
        (f"randn({n}, float64)", lambda m: m.randn(n, dtype=m.float64)),
        (f"uniform_(-2, 3) on {n}", lambda m: (xt if m is torch else xp).uniform_(-2, 3)),
    ]


def check_bits(name, fn):
    torch.manual_seed(1)
    tp.manual_seed(1)
    a, b = fn(torch).numpy(), fn(tp).numpy()
    if a.dtype != b.dtype or not np.array_equal(a.view(np.uint8), b.view(np.uint8)):
        raise SystemExit(f"{name}: TensorPlay's draws differ from PyTorch's")
    if not np.array_equal(torch.get_rng_state().numpy(), tp.get_rng_state().numpy()):
        raise SystemExit(f"{name}: generator states differ after the call")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="1M elements, fewer rounds")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    n = N // 16 if args.quick else N
    rows = []
    for name, fn in cases(n):
        check_bits(name, fn)
        a, b = compare(lambda: fn(tp), lambda: fn(torch), number=1 if not args.quick else 3,
                       rounds=5 if not args.quick else 3)
        rows.append((name, a * 1e3, b * 1e3))
    print_table(rows, f"random ops, {tp.get_num_threads()} threads", args.markdown, width=34)


if __name__ == "__main__":
    main()
