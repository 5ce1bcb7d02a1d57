"""tp.cuda.amp: PyTorch's deprecated CUDA spellings of tp.amp."""
from tensorplay.cuda.amp.autocast_mode import autocast

__all__ = ["autocast"]
