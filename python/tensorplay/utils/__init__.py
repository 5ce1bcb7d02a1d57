"""tensorplay.utils: helpers shared across the package (hooks, data loading, ...)."""
from tensorplay.utils import _python_dispatch, data, hooks  # noqa: F401


def __getattr__(name):  # tp.utils.checkpoint / tensorboard load on first use
    if name in ('checkpoint', 'tensorboard'):
        import importlib
        return importlib.import_module(f'tensorplay.utils.{name}')
    raise AttributeError(f"module 'tensorplay.utils' has no attribute '{name}'")
