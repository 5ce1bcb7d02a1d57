"""Training steps on the GPU, TensorPlay vs PyTorch in one process (issue 10's table): the
MLP of ../shared/BENCHMARKS.md (3 Linear 4096, batch 8192, AdamW; fp32 and bf16 autocast)
and a GPT-2-small-sized Transformer (12 layers, d 768, 12 heads, seq 1024, batch 8,
vocab 50257, bf16 autocast, AdamW).

Both libraries start from the same weights (copied through DLPack) and data; the losses of
the first step must agree before anything is timed. A step is forward, loss, backward and
optimizer step; times are CUDA-event medians of rounds after warm-up.

    python benchmarks/bench_cuda_train.py [--quick] [--device cuda] [--markdown]
"""
import argparse
import contextlib
import os
import statistics
import sys

import numpy as np
import torch

import tensorplay as tp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def mlp(lib, width):
    nn = lib.nn
    return nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, width))


def gpt(lib, vocab, d, heads, layers, seq):
    nn = lib.nn

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, d)
            self.pos = nn.Embedding(seq, d)
            self.blocks = nn.ModuleList([
                nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True) for _ in range(layers)])
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            n = idx.shape[1]
            x = self.tok(idx) + self.pos(lib.arange(n, device=idx.device))
            mask = nn.Transformer.generate_square_subsequent_mask(n, device=idx.device)
            for block in self.blocks:
                x = block(x, src_mask=mask, is_causal=True)
            return self.head(self.ln(x))

    return GPT()


def same_weights(tp_model, torch_model):
    """Copies torch_model's parameters into tp_model (same definition, same order)."""
    with tp.no_grad():
        for (name, a), (_, b) in zip(tp_model.named_parameters(), torch_model.named_parameters()):
            assert tuple(a.shape) == tuple(b.shape), name
            a.copy_(tp.from_dlpack(b.detach().contiguous()))


def step_fn(lib, model, loss_fn, data, target, dtype, device):
    opt = lib.optim.AdamW(model.parameters(), lr=1e-4)
    ctx = (lambda: lib.autocast(device, dtype=dtype)) if dtype is not None else contextlib.nullcontext

    def step():
        with ctx():
            loss = loss_fn(model(data), target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss
    return step


def timed(lib, fn, device, warmup, rounds):
    for _ in range(warmup):
        fn()
    if device == "cpu":
        import time
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)
    lib.cuda.synchronize()
    times = []
    for _ in range(rounds):
        start, end = lib.cuda.Event(enable_timing=True), lib.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def case(name, build, make_data, loss_name, dtype_name, device, warmup, rounds, rtol):
    torch.manual_seed(0)
    tm = build(torch).to(device)
    pm = build(tp).to(device)
    same_weights(pm, tm)
    x_t, y_t = make_data()
    x_t, y_t = x_t.to(device), y_t.to(device)
    x_p, y_p = tp.from_dlpack(x_t), tp.from_dlpack(y_t)
    t_dtype = getattr(torch, dtype_name) if dtype_name else None
    p_dtype = getattr(tp, dtype_name) if dtype_name else None
    t_loss = getattr(torch.nn.functional, loss_name)
    p_loss = getattr(tp.nn.functional, loss_name)
    if loss_name == "cross_entropy":
        t_fn, p_fn = (lambda o, y: t_loss(o.flatten(0, 1), y.flatten())), (lambda o, y: p_loss(o.flatten(0, 1), y.flatten()))
    else:
        t_fn, p_fn = t_loss, p_loss
    ts = step_fn(torch, tm, t_fn, x_t, y_t, t_dtype, device)
    ps = step_fn(tp, pm, p_fn, x_p, y_p, p_dtype, device)
    a, b = float(ps().item()), float(ts().item())  # the first step: same weights, same data
    if not np.isclose(a, b, rtol=rtol, atol=rtol):
        raise SystemExit(f"{name}: first-step loss {a} differs from torch's {b}")
    pt = timed(tp, ps, device, warmup, rounds)
    tt = timed(torch, ts, device, warmup, rounds)
    return (name, pt, tt, "ms", "")  # bench_cuda's row shape (name, tp, torch, unit, note)


def main():
    # the GPT case's attention: the fused path (cuDNN's graphs where built, else our kernels), or
    # the math path with TP_FLASH_SDP=0
    tp.backends.cuda.enable_flash_sdp(os.environ.get("TP_FLASH_SDP", "1") == "1")
    if os.environ.get("TP_BENCH_SKIP_CUDNN_SDPA"):  # scripts/gpu_check.sh: its cuDNN SDPA probe crashed
        tp._C._cudnn_set_sdpa(False)
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run, any device)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    dev = args.device
    if args.quick:
        width, batch, warmup, rounds = 256, 512, 1, 3
        vocab, d, heads, layers, seq, gbatch = 512, 64, 4, 2, 64, 2
    else:
        width, batch, warmup, rounds = 4096, 8192, 3, 10
        vocab, d, heads, layers, seq, gbatch = 50257, 768, 12, 12, 1024, 8
    g = torch.Generator().manual_seed(1)
    mlp_data = lambda: (torch.randn(batch, width, generator=g), torch.randn(batch, width, generator=g))
    gpt_data = lambda: (torch.randint(0, vocab, (gbatch, seq), generator=g),
                        torch.randint(0, vocab, (gbatch, seq), generator=g))
    lowp = "bfloat16"
    where = torch.cuda.get_device_name() if dev != "cpu" else "cpu"
    rows = []
    if dev != "cpu":
        from bench_cuda import rows_on_timeout
        rows_on_timeout(f"Training steps on {where}", rows, args.markdown, 48)
    rows.append(case(f"GPT {layers}x{d}, seq {seq}, batch {gbatch}, bf16 autocast",
                     lambda lib: gpt(lib, vocab, d, heads, layers, seq), gpt_data, "cross_entropy", lowp, dev,
                     warmup, rounds, 2e-2))
    rows.append(case(f"MLP {width} x3, batch {batch}, fp32", lambda lib: mlp(lib, width), mlp_data, "mse_loss",
                     None, dev, warmup, rounds, 1e-4))
    rows.append(case(f"MLP {width} x3, batch {batch}, bf16 autocast", lambda lib: mlp(lib, width), mlp_data,
                     "mse_loss", lowp, dev, warmup, rounds, 2e-2))
    print(f"Training steps on {where}; ratio = tp time / torch time (target <= 1.0)")
    if args.markdown:
        print("| case | tensorplay | torch | ratio |\n|---|---|---|---|")
    for name, a, b, _, _ in rows:
        if args.markdown:
            print(f"| {name} | {a:.3f} ms | {b:.3f} ms | {a / b:.2f} |")
        else:
            print(f"{name:48s} tp {a:9.3f} ms torch {b:9.3f} ms ratio {a / b:5.2f}")


if __name__ == "__main__":
    main()
