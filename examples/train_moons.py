"""Trains a small MLP on the two-moons data shipped in examples/data (the README's main job).

Everything runs on TensorPlay: matmul, relu, the loss and full-batch gradient descent
through autograd (tp.nn / tp.optim arrive with their issue; until then the parameters
are plain tensors updated under no_grad). Prints the loss and accuracy as it learns.

    python examples/train_moons.py [--steps 300] [--lr 0.5]
"""
import argparse
import math
import pathlib

import numpy as np

import tensorplay as tp

DATA = pathlib.Path(__file__).parent / "data" / "moons.csv"


def load():
    table = np.loadtxt(DATA, delimiter=",", skiprows=1, dtype=np.float32)
    return tp.from_numpy(table[:, :2].copy()), tp.from_numpy(table[:, 2:].copy())


def init_params(sizes, seed=0):
    """He-initialised weights and zero biases. The draws are PyTorch's: the same seed gives
    the weights torch.randn would, so a PyTorch run of this script starts identically."""
    g = tp.Generator().manual_seed(seed)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        w = tp.randn(fan_in, fan_out, generator=g) * math.sqrt(2.0 / fan_in)
        params += [w.requires_grad_(), tp.zeros(fan_out, requires_grad=True)]
    return params


def forward(params, x):
    h = x
    for i in range(0, len(params), 2):
        h = h @ params[i] + params[i + 1]
        if i + 2 < len(params):
            h = tp.relu(h)
    return h  # logits


def bce_with_logits(logits, target):
    """Mean binary cross-entropy, computed stably from logits."""
    return (tp.clamp(logits, min=0) - logits * target + tp.log1p(tp.exp(-tp.abs(logits)))).mean()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--lr", type=float, default=0.5)
    args = ap.parse_args()

    x, y = load()
    params = init_params([2, 32, 32, 1])
    print(f"tensorplay {tp.__version__}: two moons, {x.shape[0]} points, MLP 2-32-32-1")
    for step in range(args.steps + 1):
        logits = forward(params, x)
        loss = bce_with_logits(logits, y)
        for p in params:
            p.grad = None
        loss.backward()
        with tp.no_grad():
            for p in params:
                p -= args.lr * p.grad
        if step % 50 == 0:
            accuracy = ((logits > 0).to(tp.float32) == y).to(tp.float32).mean().item()
            print(f"step {step:4d}  loss {loss.item():.4f}  accuracy {accuracy:.3f}")
    if accuracy < 0.95:
        raise SystemExit(f"training did not converge (accuracy {accuracy:.3f})")


if __name__ == "__main__":
    main()
