"""nn layers and training steps, TensorPlay vs PyTorch in one process (ratio = tp / torch).

Models are built from the same seed in both libraries, so they start with identical weights
(checked); each case then checks the output and the parameter gradients against PyTorch's
before timing forward + backward (training steps: + an SGD update written the same way in
both, p -= lr * p.grad under no_grad).

    python benchmarks/bench_nn.py [--quick] [--markdown]
"""
import argparse

import numpy as np
import torch

import tensorplay as tp
from common import compare, print_table


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def lenet(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                         nn.Linear(84, 10))


class LSTMHead:
    @staticmethod
    def build(lib):
        return lib.nn.LSTM(128, 256, num_layers=2)


def make(lib, builder, seed=0):
    lib.manual_seed(seed)
    return builder(lib)


def train_step(lib, model, x, y, lr=0.01):
    out = model(x)
    loss = lib.nn.functional.cross_entropy(out, y)
    for p in model.parameters():
        p.grad = None
    loss.backward()
    with lib.no_grad():
        for p in model.parameters():
            p -= lr * p.grad
    return loss


def fwd_bwd(lib, model, *xs):
    out = model(*xs)
    out = out[0] if isinstance(out, tuple) else out
    for p in model.parameters():
        p.grad = None
    out.sum().backward()
    return out


def check(name, tm, pm, run_t, run_p):
    for (k, a), (_, b) in zip(tm.state_dict().items(), pm.state_dict().items()):
        if not np.array_equal(a.numpy(), b.numpy()):
            raise SystemExit(f"{name}: seeded weights differ at {k}")
    a, b = run_t(), run_p()
    if not np.allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-3, atol=1e-4):
        raise SystemExit(f"{name}: output differs from PyTorch's")
    for (k, pa), (_, pb) in zip(tm.named_parameters(), pm.named_parameters()):
        if pa.grad is not None and not np.allclose(pa.grad.numpy(), pb.grad.numpy(), rtol=1e-2, atol=1e-3):
            raise SystemExit(f"{name}: gradient of {k} differs from PyTorch's")


def cases(quick):
    rng = np.random.default_rng(0)
    out = []
    # cross entropy 4096 x 1000, forward + backward (fused kernel)
    logits = rng.standard_normal((4096, 1000)).astype(np.float32)
    labels = rng.integers(0, 1000, 4096)
    tl_, pl_ = torch.from_numpy(logits).requires_grad_(), tp.from_numpy(logits.copy()).requires_grad_()
    tlab, plab = torch.from_numpy(labels), tp.from_numpy(labels)

    class XEnt:  # a module-like wrapper so check() can compare the gradient
        def __init__(self, lib, x, y):
            self.lib, self.x, self.y = lib, x, y

        def state_dict(self):
            return {}

        def named_parameters(self):
            return [("logits", self.x)]

        def parameters(self):
            return [self.x]

        def __call__(self):
            return self.lib.nn.functional.cross_entropy(self.x, self.y)
    xt, xp = XEnt(torch, tl_, tlab), XEnt(tp, pl_, plab)
    out.append(("cross_entropy 4096x1000, fwd+bwd", xt, xp,
                lambda: fwd_bwd(torch, xt), lambda: fwd_bwd(tp, xp)))
    # 3-layer MLP training step (batch 64, 784 -> 512 -> 512 -> 10)
    x = rng.standard_normal((64, 784)).astype(np.float32)
    y = rng.integers(0, 10, 64)
    tm, pm = make(torch, mlp), make(tp, mlp)
    tx, px, ty, py = torch.from_numpy(x), tp.from_numpy(x), torch.from_numpy(y), tp.from_numpy(y)
    out.append(("MLP 784-512-512-10 train step, batch 64", tm, pm,
                lambda: train_step(torch, tm, tx, ty, 0.0), lambda: train_step(tp, pm, px, py, 0.0)))
    # LSTM 2 layers, hidden 256, seq 64, batch 32
    xs = rng.standard_normal((64, 32, 128)).astype(np.float32)
    tm2, pm2 = make(torch, LSTMHead.build), make(tp, LSTMHead.build)
    txs, pxs = torch.from_numpy(xs), tp.from_numpy(xs)
    out.append(("LSTM 2x256, seq 64, batch 32, fwd+bwd", tm2, pm2,
                lambda: fwd_bwd(torch, tm2, txs), lambda: fwd_bwd(tp, pm2, pxs)))
    # MultiheadAttention, seq 256, dim 512, 8 heads, batch 4
    q = rng.standard_normal((256, 4, 512)).astype(np.float32)
    tm3, pm3 = make(torch, lambda lib: lib.nn.MultiheadAttention(512, 8)), \
        make(tp, lambda lib: lib.nn.MultiheadAttention(512, 8))
    tq, pq = torch.from_numpy(q), tp.from_numpy(q)
    out.append(("MultiheadAttention seq 256 dim 512, fwd+bwd", tm3, pm3,
                lambda: fwd_bwd(torch, tm3, tq, tq, tq), lambda: fwd_bwd(tp, pm3, pq, pq, pq)))
    if hasattr(tp, "conv2d") and hasattr(tp, "max_pool2d"):
        xi = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
        tm4, pm4 = make(torch, lenet), make(tp, lenet)
        txi, pxi = torch.from_numpy(xi), tp.from_numpy(xi)
        out.append(("LeNet train step, 28x28, batch 64", tm4, pm4,
                    lambda: train_step(torch, tm4, txi, ty, 0.0),
                    lambda: train_step(tp, pm4, pxi, py, 0.0)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--threads", type=int, default=None, help="set both libraries' threads")
    args = ap.parse_args()
    if args.threads:
        tp.set_num_threads(args.threads)
        torch.set_num_threads(args.threads)
    rows = []
    for name, tm, pm, run_t, run_p in cases(args.quick):
        check(name, tm, pm, run_t, run_p)
        a, b = compare(run_p, run_t, number=3 if args.quick else 10, rounds=3 if args.quick else 7)
        rows.append((name, a * 1e3, b * 1e3))
    print_table(rows, f"nn, {tp.get_num_threads()} threads", args.markdown, width=46)


if __name__ == "__main__":
    main()
