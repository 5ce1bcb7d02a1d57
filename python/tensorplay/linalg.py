"""tp.linalg: PyTorch's torch.linalg namespace.

Each function here is the C++ op ``linalg_<name>`` (defined in csrc/ops/*.yaml) under its
torch.linalg name; add new ones the same way (one line each, plus a docstring).
Norms that need singular values (matrix ord 2, -2, 'nuc') raise NotImplementedError until
``svd`` lands.
"""
from tensorplay import _C

__all__ = ["matrix_norm", "norm", "vector_norm"]


def _export(name, doc):
    fn = getattr(_C, "linalg_" + name)

    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__module__ = __name__
    wrapper.__doc__ = doc
    return wrapper


vector_norm = _export("vector_norm", """vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None)

The ord-norm of the elements of ``x`` over ``dim`` (all of them by default); ord may be
any real number, ``inf`` (max |x|), ``-inf`` (min |x|) or 0 (count of nonzeros).

    >>> tp.linalg.vector_norm(tp.tensor([3.0, 4.0]))
    tensor(5.)
""")

matrix_norm = _export("matrix_norm", """matrix_norm(A, ord='fro', dim=(-2, -1), keepdim=False, *, dtype=None, out=None)

The norm of the matrices in dims ``dim`` of ``A``: 'fro', 1, -1, inf or -inf.
ord 2, -2 and 'nuc' need singular values and raise NotImplementedError for now.
""")

norm = _export("norm", """norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None)

A vector norm (``dim`` of one dim, or a 1-D input) or a matrix norm (``dim`` of two dims,
or a 2-D input when ``ord`` is given); without ``ord`` and ``dim``, the 2-norm of all elements.
""")
