"""optimizer.step() over 100 parameter tensors of mixed sizes (~1M parameters), TensorPlay
vs PyTorch in one process (ratio = tp / torch). PyTorch runs its default CPU path (the
for-loop one, foreach=None); TensorPlay its default, the multi-tensor C++ kernels.

Each case first runs 5 steps with the same parameters and gradients in both libraries and
checks the parameters against PyTorch's, then times step() with rounds interleaved.

    python benchmarks/bench_optim.py [--quick] [--markdown] [--threads N]
"""
import argparse

import numpy as np
import torch

import tensorplay as tp
from common import compare, print_table

# 20 weights 256x160, 30 weights 64x96, 50 biases of 64..256 elements: 1,011,424 in all
SHAPES = [(256, 160)] * 20 + [(64, 96)] * 30 + [(64 + 4 * (i % 49),) for i in range(50)]

CASES = [("Adam", dict(lr=1e-3)),
         ("AdamW", dict(lr=1e-3, weight_decay=1e-2)),
         ("SGD", dict(lr=1e-2, momentum=0.9)),
         ("Adagrad", dict(lr=1e-2))]


def setup(lib, name, kw, inits, grads):
    params = [lib.nn.Parameter(lib.from_numpy(x.copy())) for x in inits]
    for p, g in zip(params, grads):
        p.grad = lib.from_numpy(g.copy())
    return params, getattr(lib.optim, name)(params, **kw)


def check(name, tp_params, tp_opt, torch_params, torch_opt):
    for _ in range(5):
        tp_opt.step()
        torch_opt.step()
    for a, b in zip(tp_params, torch_params):
        if not np.allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6):
            raise SystemExit(f"{name}: parameters after 5 steps differ from PyTorch's")


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
    inits = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    grads = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    total = sum(x.size for x in inits)
    rows = []
    for name, kw in CASES:
        tp_params, tp_opt = setup(tp, name, kw, inits, grads)
        torch_params, torch_opt = setup(torch, name, kw, inits, grads)
        check(name, tp_params, tp_opt, torch_params, torch_opt)
        a, b = compare(tp_opt.step, torch_opt.step, number=5 if args.quick else 20, rounds=3 if args.quick else 9)
        label = ", ".join(f"{k}={v}" for k, v in kw.items())
        rows.append((f"{name}({label}).step()", a * 1e3, b * 1e3))
    print_table(rows, f"optimizer.step(), {len(SHAPES)} tensors, {total} float32 parameters, "
                      f"{tp.get_num_threads()} threads", args.markdown, width=44)


if __name__ == "__main__":
    main()
