"""Runs each CUDA nn kernel of benchmarks/bench_cuda_nn.py a few times, for a profiler:
    ncu --section SpeedOfLight --section Occupancy --section LaunchStats \\
        -k regex:'softmax|layer_norm|cross_entropy' python3 scripts/profile_cuda_nn.py [case ...]
Cases: softmax_f32 softmax_bf16 ln_fwd_bf16 ln_bwd_f32 ln_bwd_bf16 ce_bf16 (default: all)."""
import sys

import tensorplay as tp
import tensorplay.nn.functional as F


def main():
    cases = sys.argv[1:] or ["softmax_f32", "softmax_bf16", "ln_fwd_bf16", "ln_bwd_f32", "ln_bwd_bf16", "ce_bf16"]
    rows, n = 32768, 4096
    for case in cases:
        dt = tp.bfloat16 if case.endswith("bf16") else tp.float32
        if case.startswith("softmax"):
            x = tp.randn(rows, n, device="cuda").to(dt)
            for _ in range(3):
                F.softmax(x, -1)
        elif case.startswith("ln"):
            x = tp.randn(rows, n, device="cuda").to(dt).requires_grad_(case.startswith("ln_bwd"))
            w = tp.randn(n, device="cuda").to(dt).requires_grad_(x.requires_grad)
            b = tp.randn(n, device="cuda").to(dt).requires_grad_(x.requires_grad)
            for _ in range(3):
                y = F.layer_norm(x, (n,), w, b)
                if x.requires_grad:
                    y.backward(tp.ones_like(y))
        elif case.startswith("ce"):
            x = tp.randn(8192, 50257, device="cuda").to(dt).requires_grad_()
            t = tp.randint(0, 50257, (8192,), device="cuda")
            for _ in range(3):
                F.cross_entropy(x, t).backward()
        tp.cuda.synchronize()
        print(case, "ran")


if __name__ == "__main__":
    main()
