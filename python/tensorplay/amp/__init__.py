"""tp.amp: automatic mixed precision (``autocast``)."""
from tensorplay.amp.autocast_mode import autocast, is_autocast_available

__all__ = ["autocast", "is_autocast_available"]
