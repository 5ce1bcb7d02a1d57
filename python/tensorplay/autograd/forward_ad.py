"""Forward-mode AD (PyTorch's ``torch.autograd.forward_ad``): a dual tensor carries a
tangent, and every differentiable op computes its outputs' tangents from its inputs' by
the op's JVP formula (csrc/ops/*.yaml ``jvp:``)::

    with fwAD.dual_level():
        x = fwAD.make_dual(primal, tangent)
        y = f(x)
        jvp = fwAD.unpack_dual(y).tangent

One level at a time (nested levels raise, as in PyTorch); tangents vanish when their level
exits.
"""
from collections import namedtuple

from tensorplay import _C

__all__ = ['UnpackedDualTensor', 'enter_dual_level', 'exit_dual_level', 'make_dual',
           'unpack_dual', 'dual_level']

_current_level = -1


def enter_dual_level():
    """Enters a new dual level and returns its index (0). Prefer ``dual_level()``."""
    global _current_level
    level = _C._enter_dual_level()
    _current_level = level
    return level


def exit_dual_level(*, level=None):
    """Exits the dual level ``level`` (the current one by default); its tangents are gone."""
    global _current_level
    level = _current_level if level is None else level
    _C._exit_dual_level(level)
    _current_level = level - 1


def make_dual(tensor, tangent, *, level=None):
    """A view of ``tensor`` carrying ``tangent`` (same shape) at the dual level."""
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    if not isinstance(tensor, _C.Tensor):
        raise TypeError(f"make_dual(): argument 'tensor' must be Tensor, not "
                        f"{type(tensor).__name__}")
    if not isinstance(tangent, _C.Tensor):
        raise AttributeError(f"'{type(tangent).__name__}' object has no attribute "
                             "'is_floating_point'")
    return _C._make_dual(tensor, tangent, level)


_UnpackedDualTensor = namedtuple('_UnpackedDualTensor', ['primal', 'tangent'])


class UnpackedDualTensor(_UnpackedDualTensor):
    """``unpack_dual``'s result: ``primal`` (a view without tangent) and ``tangent`` (None
    if the tensor has none at the level)."""


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of ``tensor`` at the dual level; the tangent is None when it has
    none (or no level is active)."""
    if level is None:
        level = _current_level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    primal, tangent = _C._unpack_dual(tensor, level)
    return UnpackedDualTensor(primal, tangent)


class dual_level:
    """Context manager of one dual level: ``with dual_level(): ...``."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
