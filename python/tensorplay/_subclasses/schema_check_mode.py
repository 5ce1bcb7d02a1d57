"""SchemaCheckMode: a debug dispatch mode that checks every op against its schema.

For each call it sees (built-in or tp.library op), the values of the arguments the schema
does not mark as written (``Tensor(a!)``) must be unchanged afterwards, and an output may
share storage with an input only where the schema's alias annotations say so (``Tensor(a)
self -> Tensor(a)``). A violation raises RuntimeError with PyTorch's words; ``ops`` records
the op handles seen, ``mutated`` and ``aliasing`` what was declared and happened.

    with SchemaCheckMode():
        model(x)
"""
from tensorplay import _C
from tensorplay.utils._python_dispatch import TorchDispatchMode

__all__ = ['SchemaCheckMode']


def _tensors(v):
    if isinstance(v, _C.Tensor):
        yield v
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from _tensors(x)


def _storage(t):
    try:
        return t.untyped_storage().data_ptr() if t.device.type != 'meta' else None
    except Exception:  # a tensor without storage (a wrapper subclass)
        return None


def _same(a, b):
    import tensorplay as tp
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.device.type == 'meta':
        return True
    if a.is_floating_point():
        return bool(tp.allclose(a, b, rtol=0, atol=0, equal_nan=True))
    return bool(tp.equal(a, b))


class SchemaCheckMode(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []
        self.mutated = []
        self.aliasing = []

    def reset_cache(self):
        self.ops.clear()
        self.mutated.clear()
        self.aliasing.clear()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.ops.append(func)
        schema = func._schema
        bound = list(zip(schema.arguments, list(args) + [kwargs.get(a.name) for a in
                                                          schema.arguments[len(args):]]))
        before = [[t.detach().clone() for t in _tensors(v)] for _, v in bound]
        out = func(*args, **kwargs)
        for (arg, value), old in zip(bound, before):
            written = arg.alias_info is not None and arg.alias_info.is_write
            changed = any(not _same(t, o) for t, o in zip(_tensors(value), old))
            if changed:
                self.mutated.append((func, arg.name))
                if not written:
                    raise RuntimeError(f'Argument {arg.name} is not defined as mutable but was '
                                       'mutated')
        declared = {next(iter(r.alias_info.before_set)) for r in schema.returns
                    if r.alias_info is not None}
        outputs = {s for s in (_storage(t) for t in _tensors(out)) if s}
        for arg, value in bound:
            shared = {_storage(t) for t in _tensors(value)} & outputs
            if not shared:
                continue
            self.aliasing.append((func, arg.name))
            sets = arg.alias_info.before_set if arg.alias_info is not None else set()
            if not sets & declared:
                raise RuntimeError(f'Argument {arg.name} is not defined to alias output but was '
                                   'aliasing')
        return out
