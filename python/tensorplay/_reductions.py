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


def _xor_reduce(bits, d):
    """bits XOR-reduced along dim d, keeping it as size 1 (pairwise halving: log2(n) ops)."""
    n = bits.shape[d]
    while n > 1:
        half = n // 2
        folded = _C.bitwise_xor(bits.narrow(d, 0, half), bits.narrow(d, half, half))
        bits = _C.cat([folded, bits.narrow(d, 2 * half, 1)], d) if n % 2 else folded
        n = bits.shape[d]
    return bits


def hash_tensor(input, dim=(), *, keepdim=False, mode=0):
    """A hash of the elements (over ``dim``, all dims by default): each element widened to
    float64 or int64, its 64 bits XOR-ed together (mode 0, PyTorch's only mode).

    PyTorch's result is uint64; TensorPlay has no uint64 dtype, so the same 64 bits come
    back as int64 (``torch_result.view(torch.int64)`` equals ours)."""
    from tensorplay import float64, int64
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"hash_tensor(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    dims = [dim] if isinstance(dim, int) else list(dim)
    nd = input.dim()
    if not dims and input.numel() == 0:
        raise RuntimeError("hash_tensor: Expected reduction dim to be specified for input.numel() == 0. "
                           "Specify the reduction dim with the 'dim' argument.")
    dims = sorted({d % nd if nd else 0 for d in dims}) if dims else list(range(nd))
    for d in dims:
        if nd and input.shape[d] == 0:
            raise IndexError(f"hash_tensor: Expected reduction dim {d} to have non-zero size.")
    wide = input.to(float64) if input.is_floating_point() else input.to(int64)
    bits = wide.view(int64)
    for d in dims:
        if nd:
            bits = _xor_reduce(bits, d)
    if not keepdim and nd:
        for d in reversed(dims):
            bits = bits.squeeze(d)
    return bits.clone() if bits.dim() == 0 and nd == 0 else bits.contiguous()


def _tensor_hash_tensor(self, dim=(), *, keepdim=False, mode=0):
    return hash_tensor(self, dim, keepdim=keepdim, mode=mode)


def _tensor_unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
    return unique(self, sorted, return_inverse, return_counts, dim)


def _tensor_unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    return unique_consecutive(self, return_inverse, return_counts, dim)


def _tensor_norm(self, p="fro", dim=None, keepdim=False, dtype=None):
    return norm(self, p, dim, keepdim, dtype=dtype)


for _name, _fn in (("unique", _tensor_unique), ("unique_consecutive", _tensor_unique_consecutive),
                   ("norm", _tensor_norm), ("hash_tensor", _tensor_hash_tensor)):
    _fn.__name__ = _fn.__qualname__ = _name
    _fn.__doc__ = globals()[_name].__doc__
    setattr(_C.Tensor, _name, _fn)
