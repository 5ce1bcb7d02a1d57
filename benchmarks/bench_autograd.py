"""Autograd benchmark, TensorPlay vs PyTorch in one process (ratio = tp time / torch time):

- `x * 2` on a 1-element tensor that requires grad (records one node);
- forward + backward of a chain of 100 small ops on 16-element tensors;
- forward + backward of a 3-layer MLP (512 wide, batch 64: matmul, add, relu).

    python benchmarks/bench_autograd.py [--quick] [--markdown]

Each case first checks TensorPlay's values and gradients against PyTorch's.
"""
import argparse

import numpy as np
import torch

import tensorplay as tp
from common import compare


def _pair(arr, requires_grad=True):
    return (tp.from_numpy(arr.copy()).requires_grad_(requires_grad),
            torch.from_numpy(arr.copy()).requires_grad_(requires_grad))


def record_one():
    x, tx = _pair(np.ones(1, dtype=np.float32))
    return "x * 2, 1 element, records a node", (lambda: x * 2), (lambda: tx * 2), None


def chain():
    x, tx = _pair(np.linspace(-1, 1, 16, dtype=np.float32))

    def run(lib, v):
        v.grad = None
        y = v
        for i in range(25):  # 100 ops
            y = lib.tanh(y * 1.01 + 0.1) - 0.05
        y.sum().backward()
        return v.grad
    return "chain of 100 ops, 16 elements, fwd+bwd", (lambda: run(tp, x)), (lambda: run(torch, tx)), None


def mlp():
    rng = np.random.default_rng(0)
    shapes = [(512, 512), (512,), (512, 512), (512,), (512, 512), (512,)]
    params = [_pair((rng.standard_normal(s) * 0.05).astype(np.float32)) for s in shapes]
    xs = _pair(rng.standard_normal((64, 512)).astype(np.float32), requires_grad=False)

    def run(lib, which):
        ps = [p[which] for p in params]
        for p in ps:
            p.grad = None
        h = xs[which]
        for i in range(3):
            h = lib.matmul(h, ps[2 * i]) + ps[2 * i + 1]
            if i < 2:
                h = lib.relu(h)
        h.sum().backward()
        return ps[0].grad
    return "MLP 3x512, batch 64, fwd+bwd", (lambda: run(tp, 0)), (lambda: run(torch, 1)), None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    rows = []
    for make, (number, rounds) in ((record_one, (20000, 9)), (chain, (50, 9)), (mlp, (10, 9))):
        name, f_tp, f_th, _ = make()
        ours, ref = f_tp(), f_th()
        ours_v, ref_v = np.asarray(ours.detach().tolist()), ref.detach().numpy()
        if ours_v.shape != ref_v.shape or not np.allclose(ours_v, ref_v, rtol=1e-4, atol=1e-4):
            raise SystemExit(f"{name}: TensorPlay result differs from PyTorch's")
        if args.quick:
            number, rounds = max(1, number // 10), 3
        a, b = compare(f_tp, f_th, number, rounds)
        rows.append((name, a, b))
    print(f"# threads tp={tp.get_num_threads()} torch={torch.get_num_threads()}, torch {torch.__version__}")
    if args.markdown:
        print("| case | tensorplay | torch | ratio |\n|---|---|---|---|")
    for name, a, b in rows:
        unit, scale = ("us", 1e6) if b < 1e-3 else ("ms", 1e3)
        print(f"| `{name}` | {a * scale:.3g} {unit} | {b * scale:.3g} {unit} | {a / b:.2f} |" if args.markdown
              else f"{name:40s} tp {a * scale:8.3g} {unit}  torch {b * scale:8.3g} {unit}  ratio {a / b:5.2f}")


if __name__ == "__main__":
    main()
