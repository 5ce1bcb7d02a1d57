"""Indexing benchmark: gather and advanced-index read of 1M, boolean-mask select on 16M
float32, TensorPlay vs
PyTorch in one process (ratio = tp time / torch time).

    python benchmarks/bench_indexing.py [--quick]

Each case checks TensorPlay's result against PyTorch's before timing.
"""
import argparse

import numpy as np
import torch

import tensorplay as tp
from common import compare


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    src = rng.standard_normal(1 << 20, dtype=np.float32)
    idx = rng.integers(0, 1 << 20, 1 << 20)
    big = rng.standard_normal(1 << 24, dtype=np.float32)
    x, tx = tp.from_numpy(src), torch.from_numpy(src)
    i, ti = tp.from_numpy(idx), torch.from_numpy(idx)
    b, tb = tp.from_numpy(big), torch.from_numpy(big)
    m, tm = b > 0, tb > 0
    cases = [("gather 1M", lambda: x.gather(0, i), lambda: tx.gather(0, ti)),
             ("x[index] read 1M", lambda: x[i], lambda: tx[ti]),
             ("masked_select 16M", lambda: b.masked_select(m), lambda: tb.masked_select(tm))]
    number, rounds = (3, 3) if args.quick else (10, 9)
    print(f"# threads tp={tp.get_num_threads()} torch={torch.get_num_threads()}")
    for name, f_tp, f_th in cases:
        if not np.array_equal(f_tp().numpy(), f_th().numpy()):
            raise SystemExit(f"{name}: TensorPlay result differs from PyTorch's")
        a, t = compare(f_tp, f_th, number, rounds)
        print(f"| `{name}` | {a * 1e3:.3g} ms | {t * 1e3:.3g} ms | {a / t:.2f} |")


if __name__ == "__main__":
    main()
