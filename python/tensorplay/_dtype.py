"""dtypes, their PyTorch aliases, finfo/iinfo and type-promotion helpers."""
import builtins

from tensorplay import _C

dtype = _C.dtype
bool = _C.bool
uint8 = _C.uint8
int8 = _C.int8
int16 = _C.int16
int32 = _C.int32
int64 = _C.int64
float16 = _C.float16
bfloat16 = _C.bfloat16
float32 = _C.float32
float64 = _C.float64
complex64 = _C.complex64
complex128 = _C.complex128
# PyTorch's aliases
half = float16
float = float32
double = float64
cfloat = complex64
cdouble = complex128
short = int16
int = int32
long = int64

ALL_DTYPES = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
COMPLEX_DTYPES = (complex64, complex128)

# (bits, eps, max, smallest normal, tiny, resolution) per floating type
_FINFO = {
    "float16": (16, 0.0009765625, 65504.0, 6.103515625e-05, 6.103515625e-05, 0.001),
    "bfloat16": (16, 0.0078125, 3.3895313892515355e38, 1.1754943508222875e-38,
                 1.1754943508222875e-38, 0.01),
    "float32": (32, 1.1920928955078125e-07, 3.4028234663852886e38, 1.1754943508222875e-38,
                1.1754943508222875e-38, 1e-06),
    "float64": (64, 2.220446049250313e-16, 1.7976931348623157e308, 2.2250738585072014e-308,
                2.2250738585072014e-308, 1e-15),
}
_IINFO = {"uint8": (8, 0, 255), "int8": (8, -128, 127), "int16": (16, -32768, 32767),
          "int32": (32, -2**31, 2**31 - 1), "int64": (64, -2**63, 2**63 - 1), "bool": (8, 0, 1)}


class finfo:
    """Machine limits of a floating dtype (PyTorch's ``torch.finfo``)."""

    def __init__(self, type=None):
        type = get_default_dtype() if type is None else type
        name = type._name
        if name not in _FINFO:
            raise TypeError(f"finfo: expected a floating point dtype, got {type}")
        self.bits, self.eps, self.max, self.smallest_normal, self.tiny, self.resolution = _FINFO[name]
        self.min = -self.max
        self.dtype = name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:e}, max={self.max:e}, "
                f"eps={self.eps:e}, smallest_normal={self.smallest_normal:e}, "
                f"tiny={self.tiny:e}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype (PyTorch's ``torch.iinfo``)."""

    def __init__(self, type):
        name = type._name
        if name not in _IINFO or name == "bool":
            raise TypeError(f"iinfo: expected an integer dtype, got {type}")
        self.bits, self.min, self.max = _IINFO[name]
        self.dtype = name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def get_default_dtype():
    """The dtype Python floats become (float32 unless changed)."""
    return _C.get_default_dtype()


def set_default_dtype(d):
    """Sets the dtype Python floats become; only floating dtypes are allowed."""
    if not isinstance(d, dtype):
        raise TypeError(f"set_default_dtype: expected a dtype, got {type(d).__name__}")
    _C.set_default_dtype(d)


def promote_types(type1, type2):
    """The smallest dtype both inputs convert to without losing their category."""
    return _C.promote_types(type1, type2)


def can_cast(from_, to):
    """Whether an op may write a ``from_`` result into a ``to`` tensor."""
    return _C.can_cast(from_, to)


def result_type(tensor1, tensor2):
    """The dtype an arithmetic op on the two operands would produce."""
    for x in (tensor1, tensor2):
        if not isinstance(x, (_C.Tensor, builtins.bool, builtins.int, builtins.float)):
            raise TypeError(f"result_type(): argument must be Tensor or Number, not {type(x).__name__}")
    return _C._result_type(tensor1, tensor2)
