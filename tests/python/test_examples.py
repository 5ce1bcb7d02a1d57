"""The README's main job: the two-moons training example converges."""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_train_moons_converges():
    run = subprocess.run([sys.executable, str(ROOT / "examples" / "train_moons.py"), "--steps", "200"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    last = run.stdout.strip().splitlines()[-1]
    assert float(last.split("accuracy")[1]) >= 0.95, run.stdout
