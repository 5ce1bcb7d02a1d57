"""tp.cuda.amp: PyTorch's deprecated CUDA spellings of tp.amp."""
from tensorplay.cuda.amp.autocast_mode import autocast
from tensorplay.cuda.amp.grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast"]
