"""The Python side of complex tensors: ``Tensor.real`` / ``Tensor.imag`` (views that can be
assigned to) and the conjugate/negative-bit queries. ``conj`` is a view with the conjugate
bit flipped (Note [Conjugate and negative bits] in csrc/dispatch/math_bits.cpp); ``conj``,
``resolve_conj``, ``resolve_neg``, ``_conj`` and ``_neg_view`` are ops (complex.yaml).
"""
from tensorplay import _C

Tensor = _C.Tensor


def is_conj(input):
    """Whether ``input`` is a lazily conjugated view (its conjugate bit is set)."""
    return input.is_conj()


def is_neg(input):
    """Whether ``input`` is a lazily negated view (its negative bit is set)."""
    return input.is_neg()


def is_complex(input):
    """Whether ``input``'s dtype is complex64 or complex128."""
    return input.is_complex()


def isreal(input):
    """Whether each element is real: its imaginary part is 0 (every element of a real tensor)."""
    if input.is_complex():
        return _C.imag(input) == 0
    return _C.ones(tuple(input.shape), dtype=_C.bool, device=input.device)


def conj_physical_(input):
    """Conjugates ``input`` in place."""
    return input.conj_physical_()


def view_as_real_copy(input):
    """``view_as_real(input)`` as a new contiguous tensor."""
    return _C.view_as_real(input).clone()


def view_as_complex_copy(input):
    """``view_as_complex(input)`` as a new contiguous tensor."""
    return _C.view_as_complex(input).clone()


def _get_real(self):
    return _C.real(self)


def _set_real(self, value):
    _C.real(self).copy_(value)


def _get_imag(self):
    return _C.imag(self)


def _set_imag(self, value):
    _C.imag(self).copy_(value)


def _to_complex(self):
    """complex(t) of a one-element tensor (its value, conjugate bit applied)."""
    if self.numel() != 1:
        raise ValueError("only one element tensors can be converted to Python scalars")
    return complex(self.item())


def _install(namespace):
    """Puts the functions above into tensorplay's namespace and the methods on Tensor."""
    for fn in (is_conj, is_neg, is_complex, isreal, view_as_real_copy, view_as_complex_copy, conj_physical_):
        namespace[fn.__name__] = fn
    Tensor.isreal = isreal
    Tensor.__complex__ = _to_complex
    for name in ('_conj', '_neg_view', '_conj_physical'):  # torch._conj, ... (PyTorch's internal names)
        namespace[name] = getattr(_C, name)
    Tensor.real = property(_get_real, _set_real, doc="The real part (a view; assignable).")
    Tensor.imag = property(_get_imag, _set_imag, doc="The imaginary part (a view; assignable).")
