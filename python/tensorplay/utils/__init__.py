"""tensorplay.utils: helpers shared across the package (hooks, ...)."""
from tensorplay.utils import hooks  # noqa: F401
