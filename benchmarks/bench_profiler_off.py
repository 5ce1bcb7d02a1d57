"""What the profiler costs when it is not recording (it should cost nothing: no dispatch mode
is installed, and a backward pays one check of a module global), and what it costs while
recording.

    PYTHONPATH=../python python bench_profiler_off.py [--before DIR]

Times, per call (median of rounds): ``x.add(1)`` on a 16-element tensor, and one forward +
backward of a 2-layer MLP (64 wide, batch 16). Measured in three states in one process:
never profiled, after a profile has run and stopped, and while recording. ``--before DIR``
also runs the "never profiled" case in fresh processes, alternately with DIR on sys.path (a
tensorplay tree without the profiler, e.g. ``git archive`` of the base commit plus the
compiled core) and with this tree, three times each (best of each), for a before/after
comparison.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

CASES = r'''
import statistics, time
import tensorplay as tp

x = tp.ones(16)
w1 = tp.randn(64, 64, requires_grad=True)
w2 = tp.randn(64, 1, requires_grad=True)
inp = tp.randn(16, 64)

def add():
    x.add(1)

def mlp():
    (inp @ w1).relu().matmul(w2).sum().backward()

def per_call(fn, n, rounds=15):
    for _ in range(n):
        fn()
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        ts.append((time.perf_counter_ns() - t0) / n / 1000)
    return statistics.median(ts)
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", help="a tensorplay tree without the profiler")
    args = ap.parse_args()
    ns = {}
    exec(CASES, ns)
    tp, per_call = ns["tp"], ns["per_call"]
    rows = [("never profiled", per_call(ns["add"], 20000), per_call(ns["mlp"], 300))]
    with tp.profiler.profile():
        ns["mlp"]()
    rows.append(("after a profile stopped", per_call(ns["add"], 20000),
                 per_call(ns["mlp"], 300)))
    with tp.profiler.profile():
        rows.append(("while recording", per_call(ns["add"], 2000, 5),
                     per_call(ns["mlp"], 50, 5)))
    if args.before:
        # fresh processes, alternating trees, 3 each: the better of each tree's runs
        code = CASES + "\nprint(per_call(add, 20000), per_call(mlp, 300))\n"
        here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")
        runs = {"before": [], "after": []}
        for _ in range(3):
            for key, path in (("before", args.before), ("after", here)):
                env = dict(os.environ, PYTHONPATH=path)
                out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                     text=True, check=True).stdout.split()
                runs[key].append((float(out[0]), float(out[1])))
        for key, label in (("after", "this tree, fresh process"),
                           ("before", "before (no profiler in the tree), fresh process")):
            rows.insert(0, (label, min(r[0] for r in runs[key]), min(r[1] for r in runs[key])))
    print("| state | x.add(1), 16 elements | MLP forward + backward |")
    print("|---|---|---|")
    for name, a, m in rows:
        print(f"| {name} | {a:.2f} us | {m:.1f} us |")


if __name__ == "__main__":
    main()
