"""A small model zoo, end to end against PyTorch: the same seed gives the same weights,
then a few SGD steps give the same losses and weights (float tolerance)."""
import numpy as np
import pytest
import torch

import tensorplay as tp


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Dropout(0.0), nn.Linear(32, 32),
                         nn.GELU(), nn.Linear(32, 5))


def lenet(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(6, 16, 5), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(),
                         nn.Linear(16 * 5 * 5, 64), nn.ReLU(), nn.Linear(64, 5))


def resnet_blocks(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self, c, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(c if stride == 1 else c // 2, c, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)
            self.down = None if stride == 1 else nn.Sequential(
                nn.Conv2d(c // 2, c, 1, stride, bias=False), nn.BatchNorm2d(c))

        def forward(self, x):
            idt = x if self.down is None else self.down(x)
            y = nn.functional.relu(self.bn1(self.conv1(x)))
            return nn.functional.relu(self.bn2(self.conv2(y)) + idt)

    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         Block(8, 1), Block(16, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(16, 5))


def lstm_tagger(lib):
    nn = lib.nn

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(30, 8, padding_idx=0)
            self.lstm = nn.LSTM(8, 12, num_layers=2, batch_first=True, bidirectional=True)
            self.head = nn.Linear(24, 5)

        def forward(self, ids):
            h, _ = self.lstm(self.emb(ids))
            return self.head(h).reshape((-1, 5))

    return Tagger()


def transformer(lib):
    nn = lib.nn

    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(30, 16)
            layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
            self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(16, 5)

        def forward(self, ids):
            return self.head(self.enc(self.emb(ids)).mean(1))

    return Tiny()


def data(name, rng):
    if name == "mlp":
        return rng.standard_normal((16, 20)).astype(np.float32), rng.integers(0, 5, 16)
    if name in ("lenet",):
        return rng.standard_normal((8, 1, 28, 28)).astype(np.float32), rng.integers(0, 5, 8)
    if name == "resnet":
        return rng.standard_normal((4, 3, 12, 12)).astype(np.float32), rng.integers(0, 5, 4)
    ids = rng.integers(1, 30, (4, 7))
    return ids, (rng.integers(0, 5, 28) if name == "lstm" else rng.integers(0, 5, 4))


MODELS = {"mlp": mlp, "lenet": lenet, "resnet": resnet_blocks, "lstm": lstm_tagger,
          "transformer": transformer}


@pytest.mark.parametrize("name", list(MODELS))
def test_model_trains_like_pytorch(name):
    torch.manual_seed(0)
    tm = MODELS[name](torch)
    tp.manual_seed(0)
    pm = MODELS[name](tp)
    for (k, a), (_, b) in zip(tm.state_dict().items(), pm.state_dict().items()):
        assert np.array_equal(a.numpy(), b.numpy()), k
    rng = np.random.default_rng(1)
    x, y = data(name, rng)
    tx, px = torch.from_numpy(x), tp.from_numpy(x)
    ty, py = torch.from_numpy(y), tp.from_numpy(y)
    for step in range(3):
        tl = torch.nn.functional.cross_entropy(tm(tx), ty)
        pl = tp.nn.functional.cross_entropy(pm(px), py)
        np.testing.assert_allclose(pl.item(), tl.item(), rtol=2e-4, atol=1e-5)
        for m in (tm, pm):
            m.zero_grad()
        tl.backward()
        pl.backward()
        with torch.no_grad():
            for p in tm.parameters():
                p -= 0.1 * p.grad
        with tp.no_grad():
            for p in pm.parameters():
                p -= 0.1 * p.grad
    for (k, a), (_, b) in zip(tm.state_dict().items(), pm.state_dict().items()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-3, atol=1e-4, err_msg=k)
