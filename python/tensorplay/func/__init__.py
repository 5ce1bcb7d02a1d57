"""tp.func: functional transforms (functional_call so far)."""
from tensorplay.nn.utils.stateless import functional_call

__all__ = ["functional_call"]
