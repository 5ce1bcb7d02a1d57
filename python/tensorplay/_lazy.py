"""Submodules that execute on first attribute access."""
import importlib.util
import sys


def lazy_submodule(package, name):
    """``<package>.<name>`` as a module that executes on first attribute access (also under
    ``import <package>.<name>``). Not a module-level ``__getattr__``: that would stop CPython
    from specialising every ``tp.<attr>`` lookup (measured: 29 -> 45 ns each)."""
    full = f'{package}.{name}'
    spec = importlib.util.find_spec(full)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[full] = module
    spec.loader.exec_module(module)
    return module
