"""Submodules that execute on first attribute access."""
import importlib.util
import sys

# What the import system reads from a parent package when it imports a submodule (and
# inspect from every module). Read without executing the module: importing
# `<package>.<name>.<sub>` would otherwise run <name> (whose own imports run <sub>) and then
# run <sub> a second time, giving two copies of its classes.
_METADATA = frozenset({"__path__", "__spec__", "__name__", "__package__", "__loader__", "__file__"})


class _LazyModule(importlib.util._LazyModule):
    def __getattribute__(self, attr):
        if attr in _METADATA:
            d = object.__getattribute__(self, "__dict__")
            if attr in d:
                return d[attr]
        # hand the module back to the standard library's lazy module, which loads it (3.12's
        # loads only a module whose class is exactly its own)
        self.__class__ = importlib.util._LazyModule
        return getattr(self, attr)


def lazy_submodule(package, name):
    """``<package>.<name>`` as a module that executes on first attribute access (also under
    ``import <package>.<name>``). Not a module-level ``__getattr__``: that would stop CPython
    from specialising every ``tp.<attr>`` lookup (measured: 29 -> 45 ns each)."""
    full = f'{package}.{name}'
    if full in sys.modules:  # imported already (`import <package>.<name>` before the package ran)
        return sys.modules[full]
    spec = importlib.util.find_spec(full)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[full] = module
    spec.loader.exec_module(module)
    module.__class__ = _LazyModule
    return module
