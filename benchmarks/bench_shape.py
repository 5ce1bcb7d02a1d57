"""Shape-op benchmark: cat of 100 tensors, TensorPlay vs PyTorch in one process on the
same inputs (ratio = tp time / torch time; target <= 1.0).

    python benchmarks/bench_shape.py [--quick]

Each case checks TensorPlay's result against PyTorch's before timing; a mismatch fails
the run. Timings: interleaved rounds, median per round.
"""
import argparse
import time

import numpy as np
import torch

import tensorplay as tp
from common import compare






def cases():
    rng = np.random.default_rng(0)
    out = []
    for shape, dim in (((16,), 0), ((64, 64), 0), ((64, 64), 1), ((1024, 256), 0)):
        arrays = [rng.standard_normal(shape, dtype=np.float32) for _ in range(100)]
        ours = [tp.from_numpy(a) for a in arrays]
        ref = [torch.from_numpy(a) for a in arrays]
        name = f"cat 100 x {list(shape)} dim={dim}"
        out.append((name, lambda o=ours, d=dim: tp.cat(o, d), lambda r=ref, d=dim: torch.cat(r, d)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (CI smoke run)")
    args = ap.parse_args()
    rounds = 3 if args.quick else 11
    print(f"threads: tp {tp.get_num_threads()}, torch {torch.get_num_threads()}")
    print(f"{'case':32} {'tp (us)':>10} {'torch (us)':>11} {'ratio':>7}")
    for name, tp_fn, torch_fn in cases():
        if not np.array_equal(tp_fn().numpy(), torch_fn().numpy()):
            raise SystemExit(f"{name}: TensorPlay result differs from PyTorch's")
        t0 = time.perf_counter()
        torch_fn()
        number = max(1, min(2000, int(0.02 / max(time.perf_counter() - t0, 1e-7))))
        a, b = compare(tp_fn, torch_fn, number, rounds)
        print(f"{name:32} {a * 1e6:10.1f} {b * 1e6:11.1f} {a / b:7.2f}")


if __name__ == "__main__":
    main()
