"""tensorplay.utils.tensorboard: ``SummaryWriter`` (PyTorch's torch.utils.tensorboard),
writing TensorBoard's event files without TensorFlow; ``read_events`` reads them back."""
from tensorplay.utils.tensorboard.writer import FileWriter, SummaryWriter  # noqa: F401
from tensorplay.utils.tensorboard._reader import read_events  # noqa: F401

__all__ = ["FileWriter", "SummaryWriter", "read_events"]
