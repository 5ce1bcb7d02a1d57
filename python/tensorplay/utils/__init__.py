"""tensorplay.utils: helpers shared across the package (hooks, data loading, ...)."""
from tensorplay.utils import _python_dispatch, checkpoint, data, hooks  # noqa: F401
