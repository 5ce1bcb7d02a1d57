"""Named tuples returned by ops with several results (PyTorch's torch.return_types)."""
from collections import namedtuple

from tensorplay import _C


def _return_type(name, fields):
    base = namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"tensorplay.return_types.{name}(\n{body})"

    cls = type(name, (base,), {"__repr__": __repr__, "__slots__": (),
                               "__module__": "tensorplay.return_types"})
    _C._set_return_type(name, cls)
    return cls


max = _return_type("max", ["values", "indices"])
min = _return_type("min", ["values", "indices"])
sort = _return_type("sort", ["values", "indices"])
topk = _return_type("topk", ["values", "indices"])
aminmax = _return_type("aminmax", ["min", "max"])
cummax = _return_type("cummax", ["values", "indices"])
cummin = _return_type("cummin", ["values", "indices"])
kthvalue = _return_type("kthvalue", ["values", "indices"])
median = _return_type("median", ["values", "indices"])
nanmedian = _return_type("nanmedian", ["values", "indices"])
mode = _return_type("mode", ["values", "indices"])
