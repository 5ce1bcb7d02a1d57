"""The Python side of complex tensors: ``Tensor.real`` / ``Tensor.imag`` (views that can be
assigned to), ``conj`` and the conjugate/negative-bit queries.

Note [No lazy conjugation yet]: PyTorch's ``conj()`` returns a view with a conjugate bit
that kernels resolve when they read it. TensorPlay has no such bit: ``conj()`` of a complex
tensor computes the conjugate (``conj_physical``), so ``is_conj()`` is always False and
``resolve_conj()`` has nothing to resolve. Values, dtypes and gradients are PyTorch's; what
differs is that writes into ``x.conj()`` do not reach ``x``.
"""
from tensorplay import _C

Tensor = _C.Tensor


def conj(input):
    """The complex conjugate of ``input`` (``input`` itself for a real tensor)."""
    return input.conj_physical() if input.is_complex() else input


def resolve_conj(input):
    """``input`` with its conjugation applied: ``input`` itself (Note [No lazy conjugation yet])."""
    return input


def resolve_neg(input):
    """``input`` with its negation applied: ``input`` itself (there is no negative bit)."""
    return input


def is_conj(input):
    """Whether ``input`` is a lazily conjugated view: never (Note [No lazy conjugation yet])."""
    return False


def is_neg(input):
    """Whether ``input`` is a lazily negated view: never."""
    return False


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


def _install(namespace):
    """Puts the functions above into tensorplay's namespace and the methods on Tensor."""
    for fn in (conj, resolve_conj, resolve_neg, is_conj, is_neg, is_complex, isreal, view_as_real_copy,
               view_as_complex_copy, conj_physical_):
        namespace[fn.__name__] = fn
    for fn in (conj, resolve_conj, resolve_neg, is_conj, is_neg, isreal):
        setattr(Tensor, fn.__name__, fn)
    Tensor.real = property(_get_real, _set_real, doc="The real part (a view; assignable).")
    Tensor.imag = property(_get_imag, _set_imag, doc="The imaginary part (a view; assignable).")
