"""Element-wise ops PyTorch defines as compositions (logaddexp, deg2rad, isin, ...), written
here from registered ops: they run wherever those ops do (CPU, CUDA) and autograd flows
through them."""
import math

from tensorplay import _C
from tensorplay._shape_ops import _KERNEL_DTYPE_NAMES

__all__ = ['logaddexp', 'logaddexp2', 'deg2rad', 'rad2deg', 'isin']

Tensor = _C.Tensor


def _check_tensor_args(op, **args):
    for position, (name, value) in enumerate(args.items(), 1):
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}(): argument '{name}' (position {position}) must be Tensor, not "
                            f"{type(value).__name__}")


def _log_add(op, input, other, exp, log1p, scale):
    """log(exp(input) + exp(other)) in the base `exp` / `log1p` work in, from the larger term:
    max + log1p(exp(-|input - other|)), with equal infinities returned as they are."""
    _check_tensor_args(op, input=input, other=other)
    common = _C._result_type(input, other)
    if common.is_complex and op == 'logaddexp':
        return _log_add_complex(input.to(common), other.to(common))
    if not common.is_floating_point:
        raise NotImplementedError(f'"{op}_{input.device.type}" not implemented for '
                                  f"'{_KERNEL_DTYPE_NAMES[common._name]}'")
    a, b = tuple(input.shape), tuple(other.shape)
    for d in range(1, min(len(a), len(b)) + 1):
        if a[-d] != b[-d] and 1 not in (a[-d], b[-d]):
            raise RuntimeError(f"{op}: The size of tensor a ({a[-d]}) must match the size of tensor b "
                               f"({b[-d]}) at non-singleton dimension {max(len(a), len(b)) - d}")
    # half types computed in float32 and rounded once, as PyTorch's kernels do
    work = _C.float32 if common._name in ('float16', 'bfloat16') else common
    x, y = input.to(work), other.to(work)
    m = _C.maximum(x, y)
    spread = log1p(exp(-_C.abs(x - y))) * scale
    return _C.where(_C.isinf(m) & (x == y), m, m + spread).to(common)


def _log_add_complex(x, y):
    """Complex logaddexp as PyTorch computes it: the operand with the larger real part
    (the first on a tie) is m, the other n, and the result m + log1p(exp(n - m)); a NaN real
    part gives NaN, two real parts of -inf give n, two of +inf log(exp(n) + exp(m))."""
    first = _C.real(x) >= _C.real(y)
    m, n = _C.where(first, x, y), _C.where(first, y, x)
    m_re, n_re = _C.real(m), _C.real(n)
    both_inf = _C.isinf(m_re) & (m_re == n_re)
    generic = m + _C.log1p(_C.exp(n - m))
    out = _C.where(both_inf & (m_re < 0), n,
                   _C.where(both_inf, _C.log(_C.exp(n) + _C.exp(m)), generic))
    nan = _C.isnan(m_re) | _C.isnan(n_re)
    return _C.where(nan, complex(math.nan, math.nan), out)


def logaddexp(input, other):
    """log(exp(input) + exp(other)) without overflow (floating types)."""
    return _log_add('logaddexp', input, other, _C.exp, _C.log1p, 1.0)


def logaddexp2(input, other):
    """log2(2**input + 2**other) without overflow (floating types)."""
    return _log_add('logaddexp2', input, other, _C.exp2, _C.log1p, 1.0 / math.log(2.0))


def _angle(op, input, factor):
    _check_tensor_args(op, input=input)
    if input.is_complex():
        raise RuntimeError(f"{op} is not supported for complex tensors.")
    if not input.dtype.is_floating_point:
        input = input.to(_C.get_default_dtype())
    return input * factor


def deg2rad(input):
    """Degrees to radians (integer and bool inputs give the default float dtype)."""
    return _angle('deg2rad', input, math.pi / 180.0)


def rad2deg(input):
    """Radians to degrees (integer and bool inputs give the default float dtype)."""
    return _angle('rad2deg', input, 180.0 / math.pi)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each of `elements` is among `test_elements` (a bool tensor of elements' shape),
    both compared in their promoted dtype; NaN is never found. One of the two may be a
    Python number."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError(f"isin() received an invalid combination of arguments - got "
                        f"({type(elements).__name__}, {type(test_elements).__name__}), but expected a "
                        "Tensor for elements or test_elements")
    for value, name in ((elements, 'elements'), (test_elements, 'test_elements')):
        if not isinstance(value, (Tensor, bool, int, float)):
            raise TypeError(f"isin(): argument '{name}' must be Tensor or Number, not {type(value).__name__}")
    ref = elements if isinstance(elements, Tensor) else test_elements
    def as_tensor(v):
        if isinstance(v, Tensor):
            return v
        if ref.device.type == 'meta':  # tensor() places no data on meta; full infers the same dtype
            return _C.full((), v, device=ref.device)
        return _C._tensor(v, None, ref.device, False, 'isin')
    elements, test_elements = as_tensor(elements), as_tensor(test_elements)
    for t in (elements, test_elements):
        if t.dtype._name == 'bool':
            raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    common = _C.promote_types(elements.dtype, test_elements.dtype)
    if elements.device.type == 'meta':  # PyTorch's meta isin: laid out like elements (its CPU one is contiguous)
        from tensorplay._creation import empty_like
        return empty_like(elements, dtype=_C.bool)
    flat = elements.to(common).reshape(-1)
    test = test_elements.to(common).reshape(-1)
    if test.numel() == 0 or flat.numel() == 0:
        found = _C.zeros(flat.shape, dtype=_C.bool, device=flat.device)
    else:  # sorted test values: one binary search an element
        ordered = _C.sort(test).values
        at = _C.clamp(_C.searchsorted(ordered, flat), max=ordered.numel() - 1)
        found = _C.index_select(ordered, 0, at) == flat
    found = found.reshape(elements.shape)
    return ~found if invert else found


for _name in ('logaddexp', 'logaddexp2', 'deg2rad', 'rad2deg'):
    setattr(Tensor, _name, globals()[_name])
