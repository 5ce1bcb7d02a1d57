"""The README's main job: a small CNN learns the 8x8 handwritten digits shipped in
examples/data/digits.npz (1,797 images, UCI "Optical Recognition of Handwritten Digits").

It uses the whole training stack: tp.utils.data (a seeded random_split and a shuffled
DataLoader), tp.nn (convolutions, pooling, dropout), tp.optim (AdamW with a OneCycleLR
schedule), a tqdm progress bar and per-epoch metrics, then tp.save / tp.load of a
checkpoint (the reloaded model must score the same) and a PNG of the learning curves.
The program is written against the PyTorch API, so `--backend torch` runs it unchanged
on PyTorch (benchmarks/bench_main_job.py times both).

    python examples/train_digits.py [--epochs 20] [--out examples/output] [--backend torch]
                                    [--device cuda]
"""
import argparse
import importlib
import pathlib
import sys
import time

import numpy as np

DATA = pathlib.Path(__file__).parent / "data" / "digits.npz"


def load_digits(lib):
    """Images as (N, 1, 8, 8) float32 in [0, 1] and int64 labels."""
    with np.load(DATA) as d:
        images = d["images"].astype(np.float32)[:, None] / 16.0
        labels = d["labels"].astype(np.int64)
    return lib.from_numpy(images), lib.from_numpy(labels)


def build_model(nn):
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 4 * 4, 128), nn.ReLU(), nn.Dropout(0.2),
        nn.Linear(128, 10))


def evaluate(lib, model, loader, device):
    """(mean loss, accuracy) over a loader, without gradients."""
    model.eval()
    total, correct, loss_sum = 0, 0, 0.0
    with lib.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            logits = model(x)
            loss_sum += lib.nn.functional.cross_entropy(logits, y, reduction="sum").item()
            correct += (logits.argmax(1) == y).sum().item()
            total += y.numel()
    return loss_sum / total, correct / total


def plot_curves(history, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    epochs = [h["epoch"] for h in history]
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    ax_loss.plot(epochs, [h["train_loss"] for h in history], label="train")
    ax_loss.plot(epochs, [h["test_loss"] for h in history], label="test")
    ax_loss.set(xlabel="epoch", ylabel="cross-entropy", title="loss")
    ax_loss.legend()
    ax_acc.plot(epochs, [h["train_acc"] for h in history], label="train")
    ax_acc.plot(epochs, [h["test_acc"] for h in history], label="test")
    ax_acc.set(xlabel="epoch", ylabel="accuracy", title="accuracy")
    ax_acc.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (a CUDA build on a GPU)")
    ap.add_argument("--out", default=str(pathlib.Path(__file__).parent / "output"))
    ap.add_argument("--backend", default="tensorplay", choices=["tensorplay", "torch"])
    ap.add_argument("--no-progress", action="store_true", help="no tqdm bar (logs, CI)")
    args = ap.parse_args(argv)
    start = time.perf_counter()

    lib = importlib.import_module(args.backend)
    from tqdm import tqdm
    if args.device != "cpu" and not (hasattr(lib, "cuda") and lib.cuda.is_available()):
        sys.exit(f"train_digits: device {args.device!r} is not available in this build")
    data_mod = importlib.import_module(f"{args.backend}.utils.data")
    lib.manual_seed(args.seed)

    images, labels = load_digits(lib)
    dataset = data_mod.TensorDataset(images, labels)
    split = lib.Generator().manual_seed(args.seed)
    train_set, test_set = data_mod.random_split(dataset, [0.8, 0.2], generator=split)
    train_loader = data_mod.DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                                       generator=lib.Generator().manual_seed(args.seed))
    test_loader = data_mod.DataLoader(test_set, batch_size=256)

    model = build_model(lib.nn).to(args.device)
    optimizer = lib.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    scheduler = lib.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, epochs=args.epochs,
                                                  steps_per_epoch=len(train_loader))
    history = []
    for epoch in range(1, args.epochs + 1):
        model.train()
        seen, correct, loss_sum = 0, 0, 0.0
        bar = tqdm(train_loader, desc=f"epoch {epoch:2d}/{args.epochs}", leave=False,
                   disable=args.no_progress, file=sys.stderr)
        for x, y in bar:
            x, y = x.to(args.device, non_blocking=True), y.to(args.device, non_blocking=True)
            logits = model(x)
            loss = lib.nn.functional.cross_entropy(logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            loss_sum += loss.item() * y.numel()
            correct += (logits.argmax(1) == y).sum().item()
            seen += y.numel()
            bar.set_postfix(loss=f"{loss.item():.3f}")
        test_loss, test_acc = evaluate(lib, model, test_loader, args.device)
        history.append({"epoch": epoch, "train_loss": loss_sum / seen, "train_acc": correct / seen,
                        "test_loss": test_loss, "test_acc": test_acc})
        print(f"epoch {epoch:2d}  train loss {loss_sum / seen:.4f}  train acc {correct / seen:.4f}  "
              f"test loss {test_loss:.4f}  test acc {test_acc:.4f}  "
              f"lr {scheduler.get_last_lr()[0]:.2e}", flush=True)
    train_seconds = time.perf_counter() - start

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    checkpoint = out / f"digits_cnn_{args.backend}.pt"
    lib.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
              "epoch": args.epochs, "test_acc": history[-1]["test_acc"]}, checkpoint)
    restored = build_model(lib.nn).to(args.device)
    state = lib.load(checkpoint, map_location="cpu")  # weights_only=True: tensors and containers
    restored.load_state_dict(state["model"])
    _, reloaded_acc = evaluate(lib, restored, test_loader, args.device)
    if reloaded_acc != history[-1]["test_acc"]:
        sys.exit(f"train_digits: the reloaded model scores {reloaded_acc:.4f}, "
                 f"not {history[-1]['test_acc']:.4f}")
    plot = out / f"digits_curves_{args.backend}.png"
    plot_curves(history, plot)
    print(f"saved {checkpoint} and {plot}")
    print(f"training took {train_seconds:.1f} s ({args.backend}); reloaded checkpoint test "
          f"accuracy {reloaded_acc:.4f}")
    return history[-1]["test_acc"]


if __name__ == "__main__":
    main()
