"""tensorplay.utils: helpers shared across the package (hooks, data loading, ...)."""
from tensorplay.utils import data, hooks  # noqa: F401
