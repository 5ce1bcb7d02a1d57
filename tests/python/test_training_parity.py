"""The same training program on PyTorch and on TensorPlay, same seed: an MLP with dropout
trained 200 steps on shuffled DataLoader batches gives the same loss at every step (SGD
with momentum; AdamW with a OneCycleLR schedule)."""
import pathlib

import numpy as np
import pytest
import torch
import torch.utils.data  # noqa: F401  (torch.utils.data as an attribute)

import tensorplay as tp

DIGITS = pathlib.Path(__file__).resolve().parents[2] / "examples" / "data" / "digits.npz"
STEPS = 200


def train(lib, recipe):
    """The losses of STEPS training steps; written once against the PyTorch API."""
    nn, F, data = lib.nn, lib.nn.functional, lib.utils.data
    lib.manual_seed(0)
    with np.load(DIGITS) as d:
        x = d["images"].reshape(-1, 64).astype(np.float32) / 16.0
        y = d["labels"].astype(np.int64)
    loader = data.DataLoader(data.TensorDataset(lib.from_numpy(x), lib.from_numpy(y)),
                             batch_size=32, shuffle=True, generator=lib.Generator().manual_seed(1))
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.2), nn.Linear(128, 64),
                          nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 10))
    if recipe == "sgd_momentum":
        opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        sched = None
    else:
        opt = lib.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=STEPS)
    losses = []
    while len(losses) < STEPS:
        for xb, yb in loader:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if sched is not None:
                sched.step()
            losses.append(loss.item())
            if len(losses) == STEPS:
                break
    return np.array(losses), lib.get_rng_state().numpy()


@pytest.mark.parametrize("recipe", ["sgd_momentum", "adamw_onecycle"])
def test_same_loss_at_every_step_as_pytorch(recipe):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one summation order per GEMM on both sides
    try:
        theirs, their_rng = train(torch, recipe)
    finally:
        torch.set_num_threads(threads)
    ours, our_rng = train(tp, recipe)
    assert theirs[-1] < 0.5 * theirs[0]  # it trained
    rel = np.abs(ours - theirs) / np.abs(theirs)
    assert rel.max() <= 1e-5, (int(rel.argmax()), rel.max())
    # dropout and the shuffles drew the same numbers from the same generators
    assert np.array_equal(our_rng, their_rng)
