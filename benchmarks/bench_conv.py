"""Convolution benchmark (issue 34): every shape row of the issue, forward and forward +
backward (input, weight and bias gradients), TensorPlay vs PyTorch in one process, at 1 and 2
threads (ratio = tp time / torch time; <= 1.0 is the target).

    python benchmarks/bench_conv.py [--quick] [--markdown] [--threads 1,2] [--only SUBSTR]
                                    [--mode fwd,fwdbwd]

Each case first checks the output and every gradient against PyTorch's: the worst error,
relative to the largest magnitude of the reference (max |ours - ref| / max |ref|), must stay
under 1e-4 (float32), and channels-last cases must give PyTorch's strides. The worst errors
seen are printed after the table. Timing: rounds of tp and torch interleaved, median per call.
"""
import argparse
import statistics
import time

import numpy as np
import torch

import tensorplay as tp

# (name, input shape, weight shape, stride, padding, dilation, groups, channels_last)
SHAPES = [
    ("3x3 8x64x56x56->64", (8, 64, 56, 56), (64, 64, 3, 3), 1, 1, 1, 1, False),
    ("3x3 16x128x28x28->128", (16, 128, 28, 28), (128, 128, 3, 3), 1, 1, 1, 1, False),
    ("3x3 32x64x32x32->64", (32, 64, 32, 32), (64, 64, 3, 3), 1, 1, 1, 1, False),
    ("3x3 64x1x28x28->32", (64, 1, 28, 28), (32, 1, 3, 3), 1, 1, 1, 1, False),
    ("1x1 8x64x56x56->64", (8, 64, 56, 56), (64, 64, 1, 1), 1, 0, 1, 1, False),
    ("3x3/2 8x64x56x56->128", (8, 64, 56, 56), (128, 64, 3, 3), 2, 1, 1, 1, False),
    ("1x1/2 8x64x56x56->128", (8, 64, 56, 56), (128, 64, 1, 1), 2, 0, 1, 1, False),
    ("7x7/2 stem 8x3x224x224->64", (8, 3, 224, 224), (64, 3, 7, 7), 2, 3, 1, 1, False),
    ("5x5 stem 16x3x64x64->32", (16, 3, 64, 64), (32, 3, 5, 5), 1, 2, 1, 1, False),
    ("depthwise 3x3 8x64x56x56", (8, 64, 56, 56), (64, 1, 3, 3), 1, 1, 1, 64, False),
    ("grouped g8 3x3 8x64x56x56->64", (8, 64, 56, 56), (64, 8, 3, 3), 1, 1, 1, 8, False),
    ("dilated d2 3x3 8x64x56x56->64", (8, 64, 56, 56), (64, 64, 3, 3), 1, 2, 2, 1, False),
    ("3x3 8x64x56x56->64 CL", (8, 64, 56, 56), (64, 64, 3, 3), 1, 1, 1, 1, True),
    ("1x1 8x64x56x56->64 CL", (8, 64, 56, 56), (64, 64, 1, 1), 1, 0, 1, 1, True),
    ("3x3/2 8x64x56x56->128 CL", (8, 64, 56, 56), (128, 64, 3, 3), 2, 1, 1, 1, True),
    ("depthwise 3x3 8x64x56x56 CL", (8, 64, 56, 56), (64, 1, 3, 3), 1, 1, 1, 64, True),
    ("depthwise 3x3/2 8x64x56x56 CL", (8, 64, 56, 56), (64, 1, 3, 3), 2, 1, 1, 64, True),
]


def out_shape(x, w, s, p, d):
    return (x[0], w[0]) + tuple((x[i] + 2 * p - d * (w[i] - 1) - 1) // s + 1 for i in (2, 3))


def rel_err(ours, ref):
    ours = np.asarray(ours.tolist(), dtype=np.float64)
    ref = ref.detach().double().numpy()
    assert ours.shape == ref.shape, (ours.shape, ref.shape)
    return float(np.abs(ours - ref).max() / max(np.abs(ref).max(), 1e-30))


def make_case(row, mode, rng):
    """(tp step, torch step, check) for one shape row; mode 'fwd' or 'fwdbwd'."""
    name, xs, ws, s, p, d, g, cl = row
    arrays = [rng.standard_normal(xs, dtype=np.float32), rng.standard_normal(ws, dtype=np.float32) * 0.1,
              rng.standard_normal(ws[0], dtype=np.float32)]
    cot = rng.standard_normal(out_shape(xs, ws, s, p, d), dtype=np.float32)

    def tensors(lib):
        # cloned into each library's own allocation, as a network's activations are (NumPy's
        # large arrays start 16 bytes past a cache line)
        x, w, b = (lib.from_numpy(a.copy()).clone() for a in arrays)
        c = lib.from_numpy(cot.copy()).clone()
        if cl:
            x, c = x.contiguous(memory_format=lib.channels_last), c.contiguous(memory_format=lib.channels_last)
        if mode == "fwdbwd":
            x, w, b = x.requires_grad_(), w.requires_grad_(), b.requires_grad_()
        return [x, w, b], c

    def step(lib, ins, c):
        if mode == "fwd":
            return lambda: lib.nn.functional.conv2d(*ins, stride=s, padding=p, dilation=d, groups=g)

        def run():
            for t in ins:
                t.grad = None
            out = lib.nn.functional.conv2d(*ins, stride=s, padding=p, dilation=d, groups=g)
            out.backward(c)
            return out
        return run
    (tp_in, tp_c), (th_in, th_c) = tensors(tp), tensors(torch)
    tp_step, th_step = step(tp, tp_in, tp_c), step(torch, th_in, th_c)

    def check():
        pairs = [("out", tp_step().detach(), th_step().detach())]
        if mode == "fwdbwd":
            pairs += [(n, a.grad, b.grad) for n, a, b in zip(("gx", "gw", "gb"), tp_in, th_in)]
        errs = {}
        for n, ours, ref in pairs:
            if cl and n in ("out", "gx") and tuple(ours.stride()) != tuple(ref.stride()):
                raise SystemExit(f"{name} {mode}: {n} strides {ours.stride()} differ from PyTorch's {ref.stride()}")
            errs[n] = rel_err(ours, ref)
            if errs[n] > 1e-4:
                raise SystemExit(f"{name} {mode}: {n} differs from PyTorch's (relative error {errs[n]:.2e})")
        return errs
    return tp_step, th_step, check


def timeit(fn, number):
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def compare(f_tp, f_th, budget, rounds):
    """Median seconds per call of each, `rounds` interleaved rounds of about `budget` s each."""
    f_tp(), f_th()
    one = max(timeit(f_th, 1), 1e-5)
    number = max(1, int(budget / one))
    tps, ths = [], []
    for _ in range(rounds):
        tps.append(timeit(f_tp, number))
        ths.append(timeit(f_th, number))
    return statistics.median(tps), statistics.median(ths)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--mode", default="fwd,fwdbwd")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    budget, rounds = (0.05, 3) if args.quick else (0.15, 7)
    rng = np.random.default_rng(0)
    threads = [int(t) for t in args.threads.split(",")]
    results = {}
    worst = {}
    for row in SHAPES:
        if args.only and args.only not in row[0]:
            continue
        for mode in args.mode.split(","):
            tp_step, th_step, check = make_case(row, mode, rng)
            for th in threads:
                tp.set_num_threads(th)
                torch.set_num_threads(th)
                for n, e in check().items():
                    worst[(row[0], n)] = max(worst.get((row[0], n), 0.0), e)
                a, b = compare(tp_step, th_step, budget, rounds)
                results[(row[0], mode, th)] = (a * 1e3, b * 1e3)
                if not args.markdown:
                    print(f"{row[0]:32s} {mode:6s} {th}t  tp {a * 1e3:8.3f} ms  torch {b * 1e3:8.3f} ms  "
                          f"ratio {a / b:5.2f}", flush=True)
    if args.markdown:
        print(f"torch {torch.__version__}; ratio = tp / torch")
        head = " | ".join(f"{m} {t}t" for m in args.mode.split(",") for t in threads)
        print(f"| shape | {head} |\n|---|" + "---|" * (len(threads) * len(args.mode.split(","))))
        for row in SHAPES:
            cells = []
            for m in args.mode.split(","):
                for t in threads:
                    r = results.get((row[0], m, t))
                    cells.append(f"{r[0]:.3g} / {r[1]:.3g} ms = **{r[0] / r[1]:.2f}**" if r else "-")
            if any(c != "-" for c in cells):
                print(f"| `{row[0]}` | " + " | ".join(cells) + " |")
    print("worst relative error (max |tp - torch| / max |torch|):")
    for (name, n), e in sorted(worst.items()):
        print(f"  {name:32s} {n:3s} {e:.1e}")


if __name__ == "__main__":
    main()
