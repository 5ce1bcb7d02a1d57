"""ResNet-18 (torchvision's architecture: a 7x7/2 stem, 3x3/2 max pool, four stages of two
BasicBlocks, 64-128-256-512 channels, 1x1/2 downsample shortcuts, global average pool, fc)
written once against an `nn` namespace, built with tp.nn and torch.nn from the same weights,
and timed in one process (ratio = tp / torch):

  * inference: eval mode, no_grad, batch 8 of 3x224x224;
  * training step: train mode (batch statistics), cross entropy, backward, SGD(lr 0.01,
    momentum 0.9, weight decay 1e-4), batch 16 of 3x64x64, 10 classes;
  * the main job's CNN (examples/train_digits.py's model) training step: AdamW, batch 64 of 1x8x8.

    python benchmarks/resnet18.py [--threads 1,2] [--quick] [--markdown] [--only SUBSTR]

Before timing, the inference logits, the first training step's loss and the parameters after
it are compared with PyTorch's (relative error printed; a ReLU input within rounding of zero
can take the other side of the kink and change a gradient, so these are reported, not
asserted).
"""
import argparse
import pathlib
import statistics
import sys
import time

import numpy as np
import torch

import tensorplay as tp

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))


def conv3x3(nn, cin, cout, stride=1):
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)


def make_block(nn, cin, cout, stride):
    class BasicBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = conv3x3(nn, cin, cout, stride)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = conv3x3(nn, cout, cout)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                                nn.BatchNorm2d(cout))

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += identity
            return self.relu(out)
    return BasicBlock()


def resnet18(nn, num_classes=1000):
    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
            layers, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                layers.append(nn.Sequential(make_block(nn, cin, cout, stride), make_block(nn, cout, cout, 1)))
                cin = cout
            self.layer1, self.layer2, self.layer3, self.layer4 = layers
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, num_classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(self.avgpool(x).flatten(1))
    return ResNet18()


def pair(num_classes, seed=0):
    """(tp model, torch model) with the same weights (torch's default init)."""
    torch.manual_seed(seed)
    th = resnet18(torch.nn, num_classes)
    ours = resnet18(tp.nn, num_classes)
    state = {k: tp.from_numpy(v.detach().numpy().copy()) for k, v in th.state_dict().items()}
    ours.load_state_dict(state)
    return ours, th


def rel_err(a, b):
    a = np.asarray(a.tolist(), dtype=np.float64)
    b = b.detach().double().numpy()
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def timeit(fn, number):
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def compare(f_tp, f_th, number, rounds):
    f_tp(), f_th()
    tps, ths = [], []
    for _ in range(rounds):
        tps.append(timeit(f_tp, number))
        ths.append(timeit(f_th, number))
    return statistics.median(tps), statistics.median(ths)


def inference_case(rng):
    ours, th = pair(1000)
    ours.eval(), th.eval()
    x = rng.standard_normal((8, 3, 224, 224), dtype=np.float32)
    xt, xh = tp.from_numpy(x.copy()), torch.from_numpy(x.copy())

    def f_tp():
        with tp.no_grad():
            return ours(xt)

    def f_th():
        with torch.no_grad():
            return th(xh)
    return f_tp, f_th, lambda: {"logits": rel_err(f_tp(), f_th())}


def train_case(rng):
    ours, th = pair(10)
    ours.train(), th.train()
    x = rng.standard_normal((16, 3, 64, 64), dtype=np.float32)
    y = rng.integers(0, 10, 16)
    xt, yt, xh, yh = tp.from_numpy(x.copy()), tp.from_numpy(y.copy()), torch.from_numpy(x.copy()), torch.from_numpy(y.copy())
    opt_t = tp.optim.SGD(ours.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    opt_h = torch.optim.SGD(th.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)

    def step(lib, model, opt, xb, yb):
        def run():
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            return loss
        return run
    f_tp, f_th = step(tp, ours, opt_t, xt, yt), step(torch, th, opt_h, xh, yh)

    def check():
        errs = {"loss": rel_err(f_tp().detach(), f_th().detach())}
        errs["params after step"] = max(rel_err(a.detach(), b.detach())
                                        for a, b in zip(ours.parameters(), th.parameters()))
        return errs
    return f_tp, f_th, check


def digits_case(rng):
    import train_digits
    torch.manual_seed(0)
    th = train_digits.build_model(torch.nn)
    ours = train_digits.build_model(tp.nn)
    ours.load_state_dict({k: tp.from_numpy(v.detach().numpy().copy()) for k, v in th.state_dict().items()})
    ours.eval(), th.eval()  # dropout off, so the two steps match
    x = rng.random((64, 1, 8, 8), dtype=np.float32)
    y = rng.integers(0, 10, 64)
    xt, yt, xh, yh = tp.from_numpy(x.copy()), tp.from_numpy(y.copy()), torch.from_numpy(x.copy()), torch.from_numpy(y.copy())
    opt_t, opt_h = tp.optim.AdamW(ours.parameters(), lr=1e-3), torch.optim.AdamW(th.parameters(), lr=1e-3)

    def step(lib, model, opt, xb, yb):
        def run():
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            return loss
        return run
    f_tp, f_th = step(tp, ours, opt_t, xt, yt), step(torch, th, opt_h, xh, yh)
    return f_tp, f_th, lambda: {"loss": rel_err(f_tp().detach(), f_th().detach())}


CASES = [("ResNet-18 inference, batch 8, 224x224", inference_case, 2),
         ("ResNet-18 training step (SGD), batch 16, 64x64", train_case, 3),
         ("main job CNN training step (AdamW), batch 64, 1x8x8", digits_case, 100)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    rounds = 3 if args.quick else 7
    rows = []
    for name, make, number in CASES:
        if args.only and args.only not in name:
            continue
        f_tp, f_th, check = make(np.random.default_rng(0))
        errs = check()
        for th in (int(t) for t in args.threads.split(",")):
            tp.set_num_threads(th)
            torch.set_num_threads(th)
            a, b = compare(f_tp, f_th, number, rounds)
            rows.append((name, th, a * 1e3, b * 1e3))
            print(f"{name:52s} {th}t  tp {a * 1e3:8.2f} ms  torch {b * 1e3:8.2f} ms  ratio {a / b:5.2f}  "
                  + ", ".join(f"{k} rel err {v:.1e}" for k, v in errs.items()), flush=True)
    if args.markdown:
        print("| case | threads | tensorplay | torch | ratio |\n|---|---|---|---|---|")
        for name, th, a, b in rows:
            print(f"| {name} | {th} | {a:.3g} ms | {b:.3g} ms | **{a / b:.2f}** |")


if __name__ == "__main__":
    main()
