"""Python glue for reductions whose PyTorch signature the binding layer cannot express:
unique / unique_consecutive (how many results depends on flags) and the legacy
tp.norm / Tensor.norm (which picks a linalg norm from ``p`` and ``dim``)."""
from tensorplay import _C, linalg


def _select(results, return_inverse, return_counts):
    output, inverse, counts = results
    if not return_inverse and not return_counts:
        return output
    picked = (output,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return picked


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements of ``input`` (or distinct slices along ``dim``), sorted, plus
    optionally the inverse indices and the counts.

        >>> tp.unique(tp.tensor([2, 1, 2]), return_counts=True)
        (tensor([1, 2]), tensor([1, 2]))
    """
    results = _C._unique(input, sorted, return_inverse, return_counts, dim)
    return _select(results, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """One element (or slice along ``dim``) per run of equal consecutive ones, plus
    optionally the inverse indices and the run lengths."""
    results = _C._unique_consecutive(input, return_inverse, return_counts, dim)
    return _select(results, return_inverse, return_counts)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """The legacy norm: ``p`` a number (vector norm over ``dim``), 'fro' (2-norm over up to
    two dims) or 'nuc'. Prefer tp.linalg.vector_norm / matrix_norm."""
    kw = {"dtype": dtype}
    if out is not None:
        kw["out"] = out
    if isinstance(dim, int):
        dim = [dim]
    if isinstance(p, str):
        if p == "fro" and (dim is None or len(dim) <= 2):
            return linalg.vector_norm(input, 2, dim, keepdim, **kw)
        dims = list(range(input.dim())) if dim is None else dim
        return linalg.matrix_norm(input, p, dims, keepdim, **kw)
    return linalg.vector_norm(input, 2 if p is None else p, dim, keepdim, **kw)


def _tensor_unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
    return unique(self, sorted, return_inverse, return_counts, dim)


def _tensor_unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    return unique_consecutive(self, return_inverse, return_counts, dim)


def _tensor_norm(self, p="fro", dim=None, keepdim=False, dtype=None):
    return norm(self, p, dim, keepdim, dtype=dtype)


for _name, _fn in (("unique", _tensor_unique), ("unique_consecutive", _tensor_unique_consecutive),
                   ("norm", _tensor_norm)):
    _fn.__name__ = _fn.__qualname__ = _name
    _fn.__doc__ = globals()[_name].__doc__
    setattr(_C.Tensor, _name, _fn)
