"""Foundation benchmarks: host overhead of tiny ops and 16M-element pointwise throughput,
TensorPlay vs PyTorch in one process on the same inputs (ratio = tp time / torch time).

    python benchmarks/bench_foundation.py [--quick] [--markdown]

Each case checks TensorPlay's result against PyTorch's before timing; a mismatch fails
the run. Timings: interleaved rounds, median per round.
"""
import argparse
import platform

import numpy as np
import torch

import tensorplay as tp
from common import compare






def check(name, ours, ref, tol=0.0):
    a = np.asarray(ours.float().numpy() if ours.dtype == tp.bfloat16 else ours.numpy(), dtype=np.float64)
    b = (ref.float() if ref.dtype == torch.bfloat16 else ref).numpy().astype(np.float64)
    if a.shape != b.shape or not np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True):
        raise SystemExit(f"{name}: TensorPlay result differs from PyTorch's")


def overhead_cases():
    a, b = tp.ones(1), tp.ones(1)
    ta, tb = torch.ones(1), torch.ones(1)
    return [
        ("tp.add(a, b)", lambda: tp.add(a, b), lambda: torch.add(ta, tb), (tp.add(a, b), torch.add(ta, tb))),
        ("a + b", lambda: a + b, lambda: ta + tb, (a + b, ta + tb)),
        ("a * 2.0", lambda: a * 2.0, lambda: ta * 2.0, (a * 2.0, ta * 2.0)),
        ("a.view(1)", lambda: a.view(1), lambda: ta.view(1), (a.view(1), ta.view(1))),
        ("tp.zeros(1)", lambda: tp.zeros(1), lambda: torch.zeros(1), (tp.zeros(1), torch.zeros(1))),
    ]


def throughput_cases(n):
    rng = np.random.default_rng(0)
    xa = rng.standard_normal(n, dtype=np.float32)
    ya = rng.standard_normal(n, dtype=np.float32)
    x, y = tp.from_numpy(xa), tp.from_numpy(ya)
    tx, ty = torch.from_numpy(xa), torch.from_numpy(ya)
    c, tc = x > 0, tx > 0
    o, to = tp.empty(n), torch.empty(n)
    return [
        ("add", lambda: tp.add(x, y), lambda: torch.add(tx, ty), 0.0),
        ("mul", lambda: tp.mul(x, y), lambda: torch.mul(tx, ty), 0.0),
        ("exp", lambda: tp.exp(x), lambda: torch.exp(tx), 1e-6),
        ("tanh", lambda: tp.tanh(x), lambda: torch.tanh(tx), 1e-6),
        ("sigmoid", lambda: tp.sigmoid(x), lambda: torch.sigmoid(tx), 1e-6),
        ("where", lambda: tp.where(c, x, y), lambda: torch.where(tc, tx, ty), 0.0),
        ("to(bfloat16)", lambda: x.to(tp.bfloat16), lambda: tx.to(torch.bfloat16), 0.0),
        # With a preallocated output neither library allocates: the kernels alone.
        ("add(out=)", lambda: tp.add(x, y, out=o), lambda: torch.add(tx, ty, out=to), 0.0),
        ("exp(out=)", lambda: tp.exp(x, out=o), lambda: torch.exp(tx, out=to), 1e-6),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (CI smoke run)")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args()
    rows = []
    threads = torch.get_num_threads()
    print(f"# machine: {platform.processor() or platform.machine()}, threads tp={tp.get_num_threads()} "
          f"torch={threads}, torch {torch.__version__}, tensorplay {tp.__version__}")

    number, rounds = (2000, 5) if args.quick else (20000, 15)
    for name, f_tp, f_th, (ours, ref) in overhead_cases():
        check(name, ours, ref)
        t_tp, t_th = compare(f_tp, f_th, number, rounds)
        rows.append(("overhead", name, threads, t_tp * 1e9, t_th * 1e9, "ns"))

    n = 1 << 24
    number, rounds = (3, 3) if args.quick else (10, 9)
    for nthreads in sorted({threads, 1}, reverse=True):
        tp.set_num_threads(nthreads)
        torch.set_num_threads(nthreads)
        for name, f_tp, f_th, tol in throughput_cases(n):
            check(name, f_tp(), f_th(), tol)
            t_tp, t_th = compare(f_tp, f_th, number, rounds)
            rows.append(("16M fp32", name, nthreads, t_tp * 1e3, t_th * 1e3, "ms"))
    tp.set_num_threads(threads)
    torch.set_num_threads(threads)

    if args.markdown:
        print("| group | case | threads | tensorplay | torch | ratio |")
        print("|---|---|---|---|---|---|")
        for g, name, th, a, b, unit in rows:
            print(f"| {g} | `{name}` | {th} | {a:.3g} {unit} | {b:.3g} {unit} | {a / b:.2f} |")
    else:
        for g, name, th, a, b, unit in rows:
            print(f"{g:9s} {name:14s} threads={th}  tp {a:9.3g} {unit}  torch {b:9.3g} {unit}  ratio {a / b:5.2f}")


if __name__ == "__main__":
    main()
