"""The main job's wall time, TensorPlay vs PyTorch: examples/train_digits.py run as a fresh
process with --backend tensorplay and --backend torch (the same program), from its start
(including importing the library) to the end of the last epoch, as the script reports.

Each run must reach 97% test accuracy and reload its checkpoint to the same accuracy (the
script exits otherwise); the two libraries alternate, median of --rounds runs each.

    python benchmarks/bench_main_job.py [--rounds 3] [--markdown]
"""
import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

from common import print_table

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "examples" / "train_digits.py"


def run(backend, out):
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, str(SCRIPT), "--backend", backend, "--no-progress",
                           "--out", out], capture_output=True, text=True, env=env, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"{backend}: the main job failed\n{proc.stdout}{proc.stderr}")
    acc = float(re.findall(r"test acc ([0-9.]+)", proc.stdout)[-1])
    if acc < 0.97:
        raise SystemExit(f"{backend}: test accuracy {acc:.4f} < 0.97")
    return float(re.search(r"training took ([0-9.]+) s", proc.stdout).group(1)), acc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    times = {"tensorplay": [], "torch": []}
    with tempfile.TemporaryDirectory() as out:
        for _ in range(args.rounds):
            for backend in times:
                seconds, acc = run(backend, out)
                times[backend].append(seconds)
                print(f"{backend}: {seconds:.2f} s, test accuracy {acc:.4f}", file=sys.stderr)
    a, b = (statistics.median(times[k]) * 1e3 for k in ("tensorplay", "torch"))
    print_table([("train_digits.py, 20 epochs, start to last epoch", a, b)],
                f"main job, median of {args.rounds} runs each", args.markdown)


if __name__ == "__main__":
    main()
