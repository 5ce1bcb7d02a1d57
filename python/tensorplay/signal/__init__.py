"""tensorplay.signal: signal-processing helpers (PyTorch's torch.signal); ``windows`` holds
the window functions (also reachable as ``tensorplay.windows``, as ``torch.windows``)."""
from tensorplay.signal import windows

__all__ = ["windows"]
