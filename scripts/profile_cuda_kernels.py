"""Which GPU kernels a TensorPlay case spends its time in, next to PyTorch's: each case
runs a few times under torch.profiler (CUPTI records every kernel of the process, ours
too) and the top kernels by total device time are printed per library.

    python3 scripts/profile_cuda_kernels.py [chain_small] [conv_block] [sdpa] [mlp_bf16] [gpt]

The step count and total kernel time per step are printed too: a step whose wall time
(bench_cuda_train.py) is well above its kernel time is bound by the host.
"""
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

import tensorplay as tp
import tensorplay.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))
from bench_cuda_train import gpt, mlp, step_fn  # noqa: E402


def conv_block(lib, n=64):
    """ResNet-50 stage-2 bottleneck convolutions, channels last, bf16, forward + backward."""
    fn = F if lib is tp else torch.nn.functional
    cl = lib.channels_last
    x = lib.randn(n, 256, 56, 56, device="cuda").to(lib.bfloat16).contiguous(memory_format=cl).requires_grad_()
    ws = [(lib.randn(*s, device="cuda") * 0.05).to(lib.bfloat16).contiguous(memory_format=cl).requires_grad_()
          for s in [(64, 256, 1, 1), (64, 64, 3, 3), (256, 64, 1, 1)]]
    g = lib.randn(n, 256, 56, 56, device="cuda").to(lib.bfloat16).contiguous(memory_format=cl)

    def step():
        a = x
        for w, p in zip(ws, (0, 1, 0)):
            a = fn.conv2d(a, w, padding=p)
        return lib.autograd.grad(a, [x] + ws, g)
    return step


def sdpa(lib, b=8, h=16, s=4096, d=128):
    fn = F if lib is tp else torch.nn.functional
    q, k, v = (lib.randn(b, h, s, d, device="cuda").to(lib.bfloat16).requires_grad_() for _ in range(3))
    g = lib.randn(b, h, s, d, device="cuda").to(lib.bfloat16)

    def step():
        return lib.autograd.grad(fn.scaled_dot_product_attention(q, k, v, is_causal=True), [q, k, v], g)
    return step


def mlp_bf16(lib, width=4096, batch=8192):
    """bench_cuda_train's MLP step under bf16 autocast (AdamW)."""
    model = mlp(lib, width).to("cuda")
    x, y = lib.randn(batch, width, device="cuda"), lib.randn(batch, width, device="cuda")
    return step_fn(lib, model, (F if lib is tp else torch.nn.functional).mse_loss, x, y, lib.bfloat16, "cuda")


def gpt_step(lib, vocab=50257, d=768, heads=12, layers=12, seq=1024, batch=8):
    """bench_cuda_train's GPT-2-small step under bf16 autocast (AdamW)."""
    model = gpt(lib, vocab, d, heads, layers, seq).to("cuda")
    idx = lib.randint(0, vocab, (batch, seq), device="cuda")
    ce = (F if lib is tp else torch.nn.functional).cross_entropy
    return step_fn(lib, model, lambda o, t: ce(o.flatten(0, 1), t.flatten()), idx, idx, lib.bfloat16, "cuda")


def chain_small(lib, n=1024):
    """bench_cuda_graphs' chain of 20 pointwise ops on 1024 float32, eager: the per-kernel
    device times behind the graph replay's ratio (each kernel is about a microsecond)."""
    x = lib.randn(n, device="cuda")

    def step():
        y = x
        for _ in range(10):
            y = lib.sin(y * 1.001)
        return y
    return step


CASES = {"chain_small": chain_small, "conv_block": conv_block, "sdpa": sdpa, "mlp_bf16": mlp_bf16, "gpt": gpt_step}


def main():
    tp.backends.cudnn.benchmark = torch.backends.cudnn.benchmark = True
    for name in sys.argv[1:] or list(CASES):
        for lib in (tp, torch):
            step = CASES[name](lib)
            for _ in range(3):
                step()
            torch.cuda.synchronize()
            tp.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(3):
                    step()
                tp.cuda.synchronize()
                torch.cuda.synchronize()
            events = [e for e in prof.key_averages() if e.device_time_total > 0]
            events.sort(key=lambda e: -e.device_time_total)
            total = sum(e.device_time_total for e in events) / 3
            launches = sum(e.count for e in events) // 3
            print(f"== {name} {lib.__name__}: {total / 1e3:.3f} ms of kernels per step, {launches} kernels")
            for e in events[:25]:
                print(f"  {e.device_time_total / 3:10.1f} us  x{e.count // 3:<4} {e.key[:110]}")


if __name__ == "__main__":
    main()
