"""tensorplay.utils: helpers shared across the package (hooks, data loading, ...)."""
from tensorplay.utils import _python_dispatch, data, hooks  # noqa: F401
