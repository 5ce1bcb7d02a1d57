"""What a bfloat16 32768x4096 row kernel can reach on this GPU, without TensorPlay: torch's
copy_ (float32 and bfloat16 of the same shape), torch's layer_norm, and plain Triton kernels
(one row a program: a row copy and a layer-norm forward) at several warps a program. Each
Triton kernel is checked against torch first; GB/s counts the bytes read and written once.

    python benchmarks/probe_bf16_rows.py
"""
import os
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import gpu_time  # noqa: E402

ROWS, N = 32768, 4096


@triton.jit
def row_copy_kernel(x_ptr, y_ptr, n: tl.constexpr):
    cols = tl.arange(0, n)
    base = tl.program_id(0).to(tl.int64) * n
    tl.store(y_ptr + base + cols, tl.load(x_ptr + base + cols))


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, eps, n: tl.constexpr):
    cols = tl.arange(0, n)
    base = tl.program_id(0).to(tl.int64) * n
    x = tl.load(x_ptr + base + cols).to(tl.float32)
    mean = tl.sum(x, axis=0) / n
    d = x - mean
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n + eps)
    w = tl.load(w_ptr + cols).to(tl.float32)
    b = tl.load(b_ptr + cols).to(tl.float32)
    tl.store(y_ptr + base + cols, (d * rstd * w + b).to(y_ptr.dtype.element_ty))


def gbps(fn, nbytes, reps=50, rounds=5):
    """GB/s of fn at the median of `rounds` timings of `reps` calls (CUDA events)."""
    return nbytes / 1e9 / (gpu_time(torch, fn, reps, rounds) / 1e3)


def main():
    torch.manual_seed(0)
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(ROWS, N, device="cuda", dtype=dtype)
        y = torch.empty_like(x)
        rows.append((f"torch copy_ {dtype}", gbps(lambda: y.copy_(x), 2 * x.numel() * x.element_size())))
    x = torch.randn(ROWS, N, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(N, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    nbytes = 2 * x.numel() * x.element_size()
    ref = torch.nn.functional.layer_norm(x, (N,), w, b)
    rows.append(("torch layer_norm bf16", gbps(lambda: torch.nn.functional.layer_norm(x, (N,), w, b), nbytes)))
    for warps in (4, 8, 16):
        row_copy_kernel[(ROWS,)](x, y, N, num_warps=warps)
        if not torch.equal(y, x):
            raise SystemExit(f"triton row copy ({warps} warps) differs from its input")
        rows.append((f"triton row copy bf16, {warps} warps",
                     gbps(lambda: row_copy_kernel[(ROWS,)](x, y, N, num_warps=warps), nbytes)))
        layer_norm_kernel[(ROWS,)](x, w, b, y, 1e-5, N, num_warps=warps)
        torch.testing.assert_close(y, ref, rtol=2e-2, atol=2e-2)
        rows.append((f"triton layer_norm bf16, {warps} warps",
                     gbps(lambda: layer_norm_kernel[(ROWS,)](x, w, b, y, 1e-5, N, num_warps=warps), nbytes)))
    print(f"bf16 row ceilings on {torch.cuda.get_device_name()} ({ROWS}x{N}; GB/s)")
    for name, bw in rows:
        print(f"{name:<40} {bw:8.0f}")


if __name__ == "__main__":
    main()
