"""tensorplay.utils: helpers shared across the package (hooks, data loading, ...)."""
from tensorplay.utils import _python_dispatch, data, hooks  # noqa: F401



def _lazy(name):  # executes on first attribute access (see tensorplay._lazy_submodule)
    import importlib.util
    import sys
    full = f'{__name__}.{name}'
    spec = importlib.util.find_spec(full)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[full] = module
    spec.loader.exec_module(module)
    return module


checkpoint = _lazy('checkpoint')
tensorboard = _lazy('tensorboard')
