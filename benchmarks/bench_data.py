"""DataLoader epochs, TensorPlay vs PyTorch in one process (ratio = tp / torch).

One case per worker count: an epoch over a TensorDataset of 60000 samples (784 float32
features + an int64 label), batch 64, shuffle=True with a seeded generator. Each case first
checks that both libraries yield the same batches in the same order (and leave their
generators in the same state), then times whole epochs (worker start and shutdown
included), rounds interleaved, median.

    python benchmarks/bench_data.py [--quick] [--markdown]
"""
import argparse

import numpy as np
import torch
import torch.utils.data as torch_data

import tensorplay as tp
import tensorplay.utils.data as tp_data
from common import compare, print_table


def loader(lib, data, dataset, num_workers, seed=0):
    g = lib.Generator()
    g.manual_seed(seed)
    return data.DataLoader(dataset, batch_size=64, shuffle=True, generator=g,
                           num_workers=num_workers), g


def epoch(lib, data, dataset, num_workers):
    for _ in loader(lib, data, dataset, num_workers)[0]:
        pass


def check(name, datasets, num_workers):
    (ours, g_ours), (ref, g_ref) = (loader(tp, tp_data, datasets[0], num_workers),
                                    loader(torch, torch_data, datasets[1], num_workers))
    count = 0
    for (x, y), (tx, ty) in zip(ours, ref, strict=True):
        if not (np.array_equal(x.numpy(), tx.numpy()) and np.array_equal(y.numpy(), ty.numpy())):
            raise SystemExit(f"{name}: batch {count} differs from PyTorch's")
        count += 1
    if not np.array_equal(g_ours.get_state().numpy(), g_ref.get_state().numpy()):
        raise SystemExit(f"{name}: generator state after the epoch differs from PyTorch's")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--threads", type=int, default=None, help="set both libraries' threads")
    args = ap.parse_args()
    if args.threads:
        tp.set_num_threads(args.threads)
        torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((60000, 784)).astype(np.float32)
    y = rng.integers(0, 10, 60000)
    datasets = (tp_data.TensorDataset(tp.from_numpy(x), tp.from_numpy(y)),
                torch_data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)))
    rows = []
    for num_workers in (0, 2):
        name = f"epoch 60000x784, batch 64, shuffle, num_workers={num_workers}"
        check(name, datasets, num_workers)
        a, b = compare(lambda: epoch(tp, tp_data, datasets[0], num_workers),
                       lambda: epoch(torch, torch_data, datasets[1], num_workers),
                       number=1, rounds=2 if args.quick else 5)
        rows.append((name, a * 1e3, b * 1e3))
    print_table(rows, f"data loading, {tp.get_num_threads()} threads", args.markdown, width=52)


if __name__ == "__main__":
    main()
