"""tp.amp: automatic mixed precision (``autocast``) and gradient scaling (``GradScaler``)."""
from tensorplay.amp.autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from tensorplay.amp.grad_scaler import GradScaler, OptState

__all__ = ["GradScaler", "OptState", "autocast", "custom_bwd", "custom_fwd", "is_autocast_available"]
