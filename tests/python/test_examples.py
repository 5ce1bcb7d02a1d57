"""The README's main job: the two-moons training example converges."""
import pathlib
import subprocess
import sys

import pytest

import tensorplay as tp

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_train_moons_converges():
    run = subprocess.run([sys.executable, str(ROOT / "examples" / "train_moons.py"), "--steps", "200"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    last = run.stdout.strip().splitlines()[-1]
    assert float(last.split("accuracy")[1]) >= 0.95, run.stdout


def test_train_moons_init_is_pytorchs():
    # the example's weights are the ones torch.randn draws from the same seed
    import importlib.util

    import numpy as np
    import torch
    spec = importlib.util.spec_from_file_location("train_moons", ROOT / "examples" / "train_moons.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    params = mod.init_params([2, 32, 32, 1], seed=7)
    g = torch.Generator().manual_seed(7)
    for i, (fan_in, fan_out) in enumerate([(2, 32), (32, 32), (32, 1)]):
        want = torch.randn(fan_in, fan_out, generator=g) * (2.0 / fan_in) ** 0.5
        assert np.array_equal(params[2 * i].detach().numpy(), want.numpy())


def test_train_digits_reaches_97_percent_and_its_checkpoint_loads_in_torch(tmp_path):
    # the README's main job end to end: accuracy, checkpoint round trip, plot, interop
    run = subprocess.run([sys.executable, str(ROOT / "examples" / "train_digits.py"), "--no-progress",
                          "--out", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    epochs = [line for line in run.stdout.splitlines() if line.startswith("epoch")]
    assert len(epochs) == 20
    assert float(epochs[-1].split("test acc")[1].split()[0]) >= 0.97, run.stdout
    assert "reloaded checkpoint test accuracy" in run.stdout
    assert (tmp_path / "digits_curves_tensorplay.png").stat().st_size > 10_000
    import importlib.util

    import torch
    spec = importlib.util.spec_from_file_location("train_digits", ROOT / "examples" / "train_digits.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    state = torch.load(tmp_path / "digits_cnn_tensorplay.pt", weights_only=True)
    model = mod.build_model(torch.nn)
    model.load_state_dict(state["model"])
    images, labels = mod.load_digits(torch)
    model.eval()
    with torch.no_grad():
        acc = (model(images).argmax(1) == labels).float().mean().item()
    assert acc >= 0.97  # the whole data set, scored by PyTorch with our weights
    assert set(state["optimizer"]) == {"state", "param_groups"}


@pytest.mark.skipif(not tp.cuda.is_available(), reason="no CUDA GPU")
def test_train_digits_on_cuda(tmp_path):
    # the main job with --device cuda: the same program on the GPU, checkpoint round trip
    run = subprocess.run([sys.executable, str(ROOT / "examples" / "train_digits.py"), "--no-progress",
                          "--device", "cuda", "--epochs", "8", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    epochs = [line for line in run.stdout.splitlines() if line.startswith("epoch")]
    assert len(epochs) == 8
    assert float(epochs[-1].split("test acc")[1].split()[0]) >= 0.95, run.stdout
    assert "reloaded checkpoint test accuracy" in run.stdout
