"""tensorplay.cuda.amp.GradScaler: the deprecated CUDA-only spelling of
``tensorplay.amp.GradScaler("cuda", ...)``, as PyTorch's torch.cuda.amp.GradScaler."""
import warnings

from tensorplay.amp.grad_scaler import GradScaler as _GradScaler
from tensorplay.amp.grad_scaler import OptState  # noqa: F401

__all__ = ["GradScaler"]


class GradScaler(_GradScaler):
    """See :class:`tensorplay.amp.GradScaler`. ``tensorplay.cuda.amp.GradScaler(args...)``
    is deprecated: use ``tensorplay.amp.GradScaler("cuda", args...)``."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        warnings.warn("`tensorplay.cuda.amp.GradScaler(args...)` is deprecated. "
                      "Please use `tensorplay.amp.GradScaler('cuda', args...)` instead.",
                      FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
