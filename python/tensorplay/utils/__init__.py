"""tensorplay.utils: helpers shared across the package (hooks, data loading, ...)."""
from tensorplay.utils import _python_dispatch, data, hooks  # noqa: F401
from tensorplay._lazy import lazy_submodule as _lazy

checkpoint = _lazy(__name__, 'checkpoint')  # loaded on first use
tensorboard = _lazy(__name__, 'tensorboard')
