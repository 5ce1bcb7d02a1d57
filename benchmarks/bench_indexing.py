"""Indexing benchmark: gather and advanced-index read of 1M, boolean-mask select on 16M
float32, advanced-index write (`x[idx] = v`), index_put_ accumulate and scatter_add of 1M,
TensorPlay vs PyTorch in one process (ratio = tp time / torch time).

    python benchmarks/bench_indexing.py [--quick]

Each case checks TensorPlay's result against PyTorch's before timing: exactly, except
index_put_ accumulate, whose float sums PyTorch adds in a thread-dependent order (its result
changes from run to run); TensorPlay keeps the serial order, so that case uses allclose.
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
    perm = rng.permutation(1 << 20)   # distinct indices: plain writes have one defined result
    p, tpm = tp.from_numpy(perm), torch.from_numpy(perm)
    dst, tdst = tp.zeros(1 << 20), torch.zeros(1 << 20)

    def setitem(d, index, v):
        d[index] = v
        return d

    cases = [("gather 1M", lambda: x.gather(0, i), lambda: tx.gather(0, ti)),
             ("x[index] read 1M", lambda: x[i], lambda: tx[ti]),
             ("masked_select 16M", lambda: b.masked_select(m), lambda: tb.masked_select(tm)),
             ("x[index] = v write 1M", lambda: setitem(dst, p, x), lambda: setitem(tdst, tpm, tx)),
             ("index_put_ accumulate 1M", lambda: dst.index_put_((i,), x, accumulate=True),
              lambda: tdst.index_put_((ti,), tx, accumulate=True)),
             ("scatter_add 1M", lambda: x.scatter_add(0, i, x), lambda: tx.scatter_add(0, ti, tx))]
    number, rounds = (3, 3) if args.quick else (10, 9)
    print(f"# threads tp={tp.get_num_threads()} torch={torch.get_num_threads()}")
    for name, f_tp, f_th in cases:
        dst.zero_(), tdst.zero_()
        r_tp, r_th = f_tp().numpy(), f_th().numpy()
        same = (np.allclose(r_tp, r_th, rtol=1e-5, atol=1e-5) if "accumulate" in name
                else np.array_equal(r_tp, r_th))
        if not same:
            raise SystemExit(f"{name}: TensorPlay result differs from PyTorch's")
        a, t = compare(f_tp, f_th, number, rounds)
        print(f"| `{name}` | {a * 1e3:.3g} ms | {t * 1e3:.3g} ms | {a / t:.2f} |")


if __name__ == "__main__":
    main()
