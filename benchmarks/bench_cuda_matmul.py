"""CUDA matrix products, TensorPlay vs PyTorch in one process (both on cuBLAS).

8192^3 matmul in bfloat16, float32 with TF32 off ('highest') and float32 with TF32
('high'). Both libraries multiply the same inputs; TensorPlay's result is first checked
against PyTorch's, then each is timed with CUDA events on the default stream (warm-up,
then the median of interleaved rounds of back-to-back products). ratio = tp time / torch
time (the aim: at most 1.03, i.e. at least 0.97 of PyTorch's TFLOP/s).

    python benchmarks/bench_cuda_matmul.py [--quick] [--size N] [--markdown]
"""
import argparse
import statistics

import torch

import tensorplay as tp
from common import event_time

CASES = [  # (name, dtype name, float32 matmul precision)
    ("bf16", "bfloat16", "highest"),
    ("fp32", "float32", "highest"),
    ("fp32 tf32", "float32", "high"),
]
# max |tp - torch| / max |torch| allowed: both accumulate in float32, in different orders
TOLERANCE = {"bfloat16": 1e-2, "float32": 1e-5}
TF32_TOLERANCE = 5e-3


def set_precision(precision):
    tp.set_float32_matmul_precision(precision)
    torch.backends.cuda.matmul.allow_tf32 = precision != "highest"


def inputs(n, dtype_name, seed):
    """The same n x n operand in both libraries (made by torch, copied into tp)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(n, n, device="cuda", generator=g).to(getattr(torch, dtype_name))
    ours = tp.from_dlpack(x.float().cpu()).to(getattr(tp, dtype_name)).cuda()
    return ours, x


def check(a, b, ta, tb, name, dtype_name, precision):
    ours = torch.from_dlpack(a @ b).float()
    ref = (ta @ tb).float()
    torch.cuda.synchronize()
    err = ((ours - ref).abs().max() / ref.abs().max()).item()
    tol = TF32_TOLERANCE if precision != "highest" else TOLERANCE[dtype_name]
    if not err <= tol:
        raise SystemExit(f"{name}: TensorPlay's result differs from PyTorch's "
                         f"(max error {err:.2e} of max |result|, tolerance {tol:.0e})")
    return err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer rounds")
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    if not (tp.cuda.is_available() and torch.cuda.is_available()):
        raise SystemExit("bench_cuda_matmul: needs a CUDA GPU (tp and torch)")
    n = args.size
    number, rounds = (3, 5) if args.quick else (10, 9)
    flops = 2.0 * n * n * n
    rows = []
    old = tp.get_float32_matmul_precision(), torch.backends.cuda.matmul.allow_tf32
    try:
        for name, dtype_name, precision in CASES:
            set_precision(precision)
            a, ta = inputs(n, dtype_name, 1)
            b, tb = inputs(n, dtype_name, 2)
            err = check(a, b, ta, tb, name, dtype_name, precision)
            tp_fn, torch_fn = (lambda: a @ b), (lambda: ta @ tb)
            for _ in range(3):  # warm-up: cuBLAS's heuristics, workspaces, clocks
                tp_fn(), torch_fn()
            torch.cuda.synchronize()
            ours, theirs = [], []
            for _ in range(rounds):
                ours.append(event_time(torch, tp_fn, number))
                theirs.append(event_time(torch, torch_fn, number))
            t_tp, t_torch = statistics.median(ours), statistics.median(theirs)
            rows.append((f"matmul {n}^3 {name}", t_tp, t_torch, flops / t_tp / 1e9,
                         flops / t_torch / 1e9, err))
            a = b = ta = tb = None  # frees the device memory
    finally:
        tp.set_float32_matmul_precision(old[0])
        torch.backends.cuda.matmul.allow_tf32 = old[1]
    print(f"CUDA matmul, {torch.cuda.get_device_name()}, median of {rounds} rounds of {number}")
    if args.markdown:
        print("| case | tp TFLOP/s | torch TFLOP/s | ratio (tp/torch time) | max err |")
        print("|---|---|---|---|---|")
    for name, t_tp, t_torch, f_tp, f_torch, err in rows:
        if args.markdown:
            print(f"| `{name}` | {f_tp:.0f} | {f_torch:.0f} | {t_tp / t_torch:.3f} | {err:.1e} |")
        else:
            print(f"{name:24s} tp {f_tp:6.0f} TFLOP/s ({t_tp:7.3f} ms)  torch {f_torch:6.0f} "
                  f"TFLOP/s ({t_torch:7.3f} ms)  ratio {t_tp / t_torch:5.3f}  max err {err:.1e}")


if __name__ == "__main__":
    main()
