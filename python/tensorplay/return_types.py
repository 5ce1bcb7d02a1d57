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
