"""CUDA backend I on the GPU, TensorPlay vs PyTorch in one process (issue 7's table).

Kernel times come from CUDA events around `reps` back-to-back calls (median of rounds,
interleaved between the libraries); bandwidth = bytes moved / time, compared with the
copy bandwidth PyTorch measures on the same machine. Each case first checks TensorPlay's
result against PyTorch's on the same inputs.

    python benchmarks/bench_cuda.py [--quick] [--markdown]
"""
import argparse
import os
import signal
import statistics
import sys
import time

import torch

import tensorplay as tp
from common import gpu_time


def host_time(lib, fn, reps, rounds):
    """Median microseconds of host time per call (launch-bound work, no waiting)."""
    fn()
    lib.cuda.synchronize()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        times.append((time.perf_counter() - t0) / reps * 1e6)
        lib.cuda.synchronize()
    return statistics.median(times)


def same_input(n, dtype="float32", seed=0):
    t = torch.randn(n, generator=torch.Generator().manual_seed(seed)).to(getattr(torch, dtype))
    x = tp.from_dlpack(t) if hasattr(tp, "from_dlpack") else tp.tensor(t.numpy())
    return x.cuda(), t.cuda()


def check(name, ours, ref, rtol=1e-5, atol=1e-5):
    a = torch.from_dlpack(ours.cpu()) if hasattr(ours, "__dlpack__") else torch.tensor(ours.cpu().tolist())
    b = ref.cpu()
    if a.shape != b.shape or not torch.allclose(a.double(), b.double(), rtol=rtol, atol=atol):
        raise SystemExit(f"{name}: TensorPlay result differs from PyTorch's")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="16M elements instead of 256M")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    big = (1 << 24) if args.quick else (1 << 28)
    reps, rounds = (5, 5) if args.quick else (10, 7)
    rows = []  # (case, tp, torch, unit, ratio note)

    x, xt = same_input(big, seed=1)
    y, yt = same_input(big, seed=2)
    gb = big * 4 / 1e9
    zt = torch.empty_like(xt)
    copy_ms = gpu_time(torch, lambda: zt.copy_(xt), reps, rounds)
    zt = None  # frees the device memory
    copy_bw = 2 * gb / (copy_ms / 1e3)
    rows.append((f"torch copy_ {big >> 20}M f32 (ceiling)", copy_bw, copy_bw, "GB/s", ""))
    for name, f_tp, f_th, moved in [
        ("add", lambda: x + y, lambda: xt + yt, 3),
        ("mul", lambda: x * y, lambda: xt * yt, 3),
        ("copy_", lambda: y.copy_(x), lambda: yt.copy_(xt), 2),  # last: y, yt become x
    ]:
        check(name, f_tp(), f_th())
        a = gpu_time(tp, f_tp, reps, rounds)
        b = gpu_time(torch, f_th, reps, rounds)
        bw_a, bw_b = moved * gb / (a / 1e3), moved * gb / (b / 1e3)
        rows.append((f"{name} {big >> 20}M f32", bw_a, bw_b, "GB/s", f"{bw_a / copy_bw:.2f} of copy"))

    for name, n in [("sum 16M f32", 1 << 24), (f"sum {big >> 20}M f32", big)]:
        s, st = (x[:n], xt[:n])
        check(name, s.sum(), st.sum(), rtol=1e-4, atol=1e-2)
        a = gpu_time(tp, lambda: s.sum(), reps, rounds)
        b = gpu_time(torch, lambda: st.sum(), reps, rounds)
        note = f"{n * 4 / 1e9 / (a / 1e3) / copy_bw:.2f} of copy" if n == big else ""
        rows.append((name, a * 1e3, b * 1e3, "us", note))
    s, st = x[: 1 << 24], xt[: 1 << 24]
    check("argmax", s.argmax(), st.argmax(), rtol=0, atol=0)
    a = gpu_time(tp, lambda: s.argmax(), reps, rounds)
    b = gpu_time(torch, lambda: st.argmax(), reps, rounds)
    rows.append(("argmax 16M f32", a * 1e3, b * 1e3, "us", ""))

    u, ut = same_input(1, seed=3)
    check("tiny add", u + u, ut + ut)
    # 200 calls per round stay below the launch queue's depth (about 1000), so the host
    # never waits for the GPU and the figure is host time, not kernel throughput.
    a = host_time(tp, lambda: u + u, 200, 4 * rounds)
    b = host_time(torch, lambda: ut + ut, 200, 4 * rounds)
    rows.append(("tiny add, host time", a, b, "us", ""))

    if hasattr(tp.cuda, "manual_seed"):
        try:
            r = tp.randn(big, device="cuda")
            if abs(float(r.mean().item())) > 1e-2 or abs(float((r * r).mean().item()) - 1) > 1e-2:
                raise SystemExit("randn: moments are off")
            a = gpu_time(tp, lambda: tp.randn(big, device="cuda"), reps, rounds)
            b = gpu_time(torch, lambda: torch.randn(big, device="cuda"), reps, rounds)
            rows.append((f"randn {big >> 20}M f32", gb / (a / 1e3), gb / (b / 1e3), "GB/s", ""))
        except NotImplementedError as e:
            rows.append((f"randn {big >> 20}M f32 ({e})", float("nan"), float("nan"), "", ""))

    print_rows("CUDA backend I", rows, args.markdown, 34)


def rows_on_timeout(title, rows, markdown, width):
    """Prints the rows measured so far when the run is stopped (scripts/gpu_check.sh runs each
    benchmark under `timeout`, which sends SIGTERM), so a slow row costs only the rows after it."""
    def stop(signum, frame):
        print_rows(f"{title} (stopped by SIGTERM: the rows measured so far)", rows, markdown, width)
        sys.stdout.flush()
        os._exit(124)
    signal.signal(signal.SIGTERM, stop)


def print_rows(title, rows, markdown, width):
    """The table: (name, tp, torch, unit, note) rows; ratio = tp time / torch time."""
    print(f"{title} on {torch.cuda.get_device_name()}; ratio = tp time / torch time")
    if markdown:
        print("| case | tensorplay | torch | ratio | note |\n|---|---|---|---|---|")
    for name, a, b, unit, note in rows:
        ratio = (b / a) if unit == "GB/s" else (a / b)
        if markdown:
            print(f"| {name} | {a:.4g} {unit} | {b:.4g} {unit} | {ratio:.2f} | {note} |")
        else:
            print(f"{name:{width}s} tp {a:9.4g} {unit:4s} torch {b:9.4g} {unit:4s} ratio {ratio:5.2f} {note}")


if __name__ == "__main__":
    main()
