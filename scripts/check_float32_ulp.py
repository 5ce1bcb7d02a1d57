"""Exhaustive ulp check of the float32 transcendentals (Note [float32 math] in
csrc/kernels/functors/vec_math.h), ours against PyTorch's, over every float32 of each
function's main range plus the special values.

The reference is the float64 function of the (exact) float64 input: NumPy's float64 exp /
log / sin / cos / tanh are within an ulp of double, so the reference is off the exact value
by ~2^-52 relative, 2^-29 of a float32 ulp, which is the precision of the figures below. The
error of a result y is |y - ref| in ulps of float32 at ref (the binade of the exact value;
subnormal spacing 2^-149 below 2^-126); inf counts as 2^128, and as exact where the
reference rounds to it. A correctly rounded result is
within 0.5 ulp.

    PYTHONPATH=python python scripts/check_float32_ulp.py            # every float32
    PYTHONPATH=python python scripts/check_float32_ulp.py --stride 97  # a quick sample
    PYTHONPATH=python python scripts/check_float32_ulp.py exp log      # some functions
"""
import argparse
import sys
import time

import numpy as np
import torch

import tensorplay as tp

CHUNK = 1 << 24


def sigmoid64(x):
    return 1.0 / (1.0 + np.exp(-x))


# name: (float64 reference, ranges [lo, hi] of float32 values checked)
FUNCTIONS = {
    'exp': (np.exp, [(-104.0, 89.0)]),
    'log': (np.log, [(0.0, float(np.finfo(np.float32).max))]),
    'sin': (np.sin, [(-1e5, 1e5)]),
    'cos': (np.cos, [(-1e5, 1e5)]),
    'tanh': (np.tanh, [(-10.0, 10.0)]),
    'sigmoid': (sigmoid64, [(-104.0, 89.0)]),
}
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40, 1.1754944e-38,
                    3.4028235e38, -3.4028235e38, 88.72283, 88.72284, -87.33654, -103.97208,
                    -103.97209, 1e6, -1e6, 1.5e6, 2e6, 1e10, -1e30, 1e38, 9.01, 9.02, 20.0, -20.0],
                   dtype=np.float32)


def bits_range(lo, hi, stride):
    """float32 values in [lo, hi], in bit order, every stride-th one; chunks of CHUNK."""
    def span(a, b):  # 0 <= a <= b
        ua = np.float32(a).view(np.uint32)
        ub = np.float32(b).view(np.uint32)
        for start in range(int(ua), int(ub) + 1, CHUNK * stride):
            stop = min(start + CHUNK * stride, int(ub) + 1)
            yield np.arange(start, stop, stride, dtype=np.uint32).view(np.float32)
    if lo >= 0:
        yield from span(lo, hi)
        return
    for c in span(0.0, -lo):
        yield -c
    if hi > 0:
        yield from span(0.0, hi)


def ulp_error(y, ref):
    """|y - ref| in float32 ulps at ref; NaN where exactly one of them is NaN -> inf."""
    y64 = y.astype(np.float64)
    y64 = np.where(np.isinf(y64), np.copysign(2.0 ** 128, y64), y64)
    # ulp at ref: 2^(exponent of ref - 23), at least 2^-149 (read from the bits: fast)
    e = ((ref.view(np.uint64) >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64) - 1023
    ulp = ((np.maximum(e - 23, -149) + 1023).astype(np.uint64) << np.uint64(52)).view(np.float64)
    err = np.abs(y64 - ref) / ulp
    with np.errstate(over='ignore'):
        err = np.where(np.isinf(y) & (y == ref.astype(np.float32)), 0.0, err)  # overflow to inf
    nan_y, nan_r = np.isnan(y), np.isnan(ref)
    err = np.where(nan_y & nan_r, 0.0, err)
    err = np.where(nan_y ^ nan_r, np.inf, err)
    # zeros: the sign must match the reference's
    zero = (y == 0) & (ref == 0)
    err = np.where(zero & (np.signbit(y) != np.signbit(ref)), np.inf, err)
    return err


def run(name, stride):
    ref_fn, ranges = FUNCTIONS[name]
    tp_fn, th_fn = getattr(tp, name), getattr(torch, name)
    stats = {'tp': [0.0, 0, None], 'torch': [0.0, 0, None]}
    n = 0
    chunks = [c for lo, hi in ranges for c in bits_range(lo, hi, stride)]
    chunks.append(SPECIAL)
    for x in chunks:
        with np.errstate(over='ignore', divide='ignore', invalid='ignore'):
            ref = ref_fn(x.astype(np.float64))
        for lib, y in (('tp', tp_fn(tp.from_numpy(x)).numpy()), ('torch', th_fn(torch.from_numpy(x)).numpy())):
            err = ulp_error(y, ref)
            s = stats[lib]
            i = int(np.argmax(err))
            if err[i] > s[0]:
                s[0], s[2] = float(err[i]), float(x[i])
            s[1] += int(np.count_nonzero(err > 0.5))
        n += len(x)
    return n, stats


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('functions', nargs='*', default=list(FUNCTIONS))
    ap.add_argument('--stride', type=int, default=1, help='check every stride-th float32 only')
    args = ap.parse_args()
    print(f'tensorplay at {tp.backends.cpu.get_cpu_capability()}, torch {torch.__version__} at '
          f'{torch.backends.cpu.get_cpu_capability()}; stride {args.stride}')
    print('| function | values | tp max ulp (at x) | tp > 0.5 ulp | torch max ulp (at x) | torch > 0.5 ulp |')
    print('|---|---|---|---|---|---|')
    worst = 0.0
    for name in args.functions:
        t0 = time.time()
        n, st = run(name, args.stride)
        a, b = st['tp'], st['torch']
        print(f'| {name} | {n:,} | {a[0]:.3f} ({a[2]:.9g}) | {a[1]:,} | {b[0]:.3f} ({b[2]:.9g}) | {b[1]:,} |'
              f'  <!-- {time.time() - t0:.0f} s -->', flush=True)
        worst = max(worst, a[0])
    sys.exit(0 if worst <= 1.0 else 1)


if __name__ == '__main__':
    main()
