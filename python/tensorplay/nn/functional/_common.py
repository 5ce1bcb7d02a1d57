"""Helpers shared by the nn.functional modules."""
from tensorplay import _C

Tensor = _C.Tensor


def _op(name):
    return getattr(_C, name, None)


def _pair(x, n, name="argument"):
    if isinstance(x, (tuple, list)):
        if len(x) == 1:
            return tuple(x) * n
        return tuple(x)
    return (x,) * n


def _reduce(loss, reduction, op="loss"):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _legacy_reduction(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _require(name):
    fn = _op(name)
    if fn is None:
        raise NotImplementedError(f"{name}: no kernel in this build yet")
    return fn


def _scalar_name(dtype):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
            "int64": "Long", "complex64": "ComplexFloat",
            "complex128": "ComplexDouble"}[str(dtype).split(".")[-1]]


def _torch_size(shape):
    return "torch.Size([" + ", ".join(str(s) for s in shape) + "])"
