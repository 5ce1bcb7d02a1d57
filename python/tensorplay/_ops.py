"""Op handles (PyTorch's ``torch.ops``): ``tp.ops.aten.add`` is an op packet,
``tp.ops.aten.add.Tensor`` one overload of it, callable with the schema's argument binding.

Every form of every registered op has a handle: the functional form under the op's own
overload name, the in-place form under ``<name>_``, the out= form under ``out`` (or
``<overload>_out``), exactly as PyTorch names them. Handles are what graphs hold as call
targets and what dispatch modes receive; they are hashable, picklable (by name) and unique
(``tp.ops.aten.add.Tensor is tp.ops.aten.add.Tensor``). Built-in ops live in the ``aten``
namespace; ``tp.ops.<namespace>`` resolves any other namespace registered later
(``tp.library``).

    >>> tp.ops.aten.add.Tensor(tp.ones(2), tp.ones(2), alpha=2)
    tensor([3., 3.])
    >>> print(tp.ops.aten.add.Tensor._schema)
    aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
"""
import enum

from tensorplay import _C

__all__ = ['OpOverload', 'OpOverloadPacket', 'Tag', 'ops']


class Tag(enum.IntEnum):
    """An op's properties (PyTorch's ``torch.Tag``; same names and values)."""
    core = 0
    cudagraph_unsafe = 1
    data_dependent_output = 2
    dynamic_output_shape = 3
    flexible_layout = 4
    generated = 5
    inplace = 6
    inplace_view = 7
    maybe_aliasing_or_mutating = 8
    needs_contiguous_strides = 9
    needs_exact_strides = 10
    needs_fixed_stride_order = 11
    nondeterministic_bitwise = 12
    nondeterministic_seeded = 13
    out = 14
    out_variant = 15
    pointwise = 16
    pt2_compliant_tag = 17
    reduction = 18
    view_copy = 19

    def __repr__(self):
        return f'<Tag.{self.name}: {self.value}>'

    __str__ = __repr__


# ops.yaml's tags that are PyTorch tags (factory and view are ours: a view reads from the
# schema's alias annotation, as PyTorch's OpOverload.is_view does)
_YAML_TAGS = {'pointwise': Tag.pointwise, 'reduction': Tag.reduction,
              'nondeterministic': Tag.nondeterministic_seeded,
              'dynamic_output_shape': Tag.dynamic_output_shape,
              'data_dependent_output': Tag.data_dependent_output, 'inplace': Tag.inplace,
              'inplace_view': Tag.inplace_view}
_FORM_FUNCTIONAL, _FORM_INPLACE, _FORM_OUT = 0, 1, 2

OpOverload = _C._OpOverload
OpOverload.__module__ = 'tensorplay._ops'
OpOverload.__qualname__ = OpOverload.__name__ = 'OpOverload'


def _overload_name(self):
    """The qualified name with the overload: ``'aten::add.Tensor'``."""
    return f'{self._schema.name}.{self._overloadname}'


def _overload_repr(self):
    return f"<OpOverload(op='{self.namespace}.{self._opname}', overload='{self._overloadname}')>"


def _overload_str(self):
    return f'{self.namespace}.{self._opname}.{self._overloadname}'


def _overload_reduce(self):
    return _resolve_overload, (self.namespace, self._opname, self._overloadname)


def _overload_is_view(self):
    """Whether the output aliases an input without writing it (``Tensor(a)`` returns)."""
    rets = self._schema.returns
    return any(r.alias_info is not None and not r.alias_info.is_write for r in rets)


for _name, _fn in (('name', _overload_name), ('__repr__', _overload_repr),
                   ('__str__', _overload_str), ('__reduce__', _overload_reduce)):
    setattr(OpOverload, _name, _fn)
OpOverload.is_view = property(_overload_is_view)
OpOverload.__hash__ = object.__hash__
del _name, _fn


class OpOverloadPacket:
    """All overloads of one op name (``tp.ops.aten.add``): ``.Tensor``, ``.out``,
    ``.default``; calling it picks the first overload whose schema binds the arguments."""

    def __init__(self, namespace, name):
        self._namespace = namespace
        self._opname = name
        self._overloads = {}
        self.__name__ = name
        self._qualified_op_name = f'{namespace}::{name}'

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self._namespace}.{self._opname}')>"

    def __str__(self):
        return f'{self._namespace}.{self._opname}'

    def __reduce__(self):
        return _resolve_packet, (self._namespace, self._opname)

    def __getattr__(self, overload):
        if overload.startswith('__'):
            raise AttributeError(overload)
        try:
            return self._overloads[overload]
        except KeyError:
            raise AttributeError(f"The underlying op of '{self}' has no overload name "
                                 f"'{overload}'") from None

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._overloads))

    def overloads(self):
        """The overload names, ``'default'`` for the unnamed one."""
        return list(self._overloads)

    def name(self):
        return self._qualified_op_name

    @property
    def op(self):
        return self

    def __call__(self, /, *args, **kwargs):
        return _C._call_overloads(tuple(self._overloads.values()), args, kwargs)

    def _add(self, overload_name, handle):
        handle._opname = self._opname
        handle._overloadname = overload_name
        handle.namespace = self._namespace
        handle.overloadpacket = self
        handle.__name__ = f'{self._opname}.{overload_name}'
        self._overloads[overload_name] = handle
        setattr(self, overload_name, handle)  # plain attribute lookups from now on


class _OpNamespace:
    """``tp.ops.<namespace>``: the op packets of one namespace, by name (plain attributes:
    ``tp.ops.aten.add`` is two dictionary lookups)."""

    def __init__(self, name):
        self.__name__ = f'tensorplay.ops.{name}'
        self.name = name
        self._packets = {}

    def __getattr__(self, op_name):
        if op_name.startswith('__'):
            raise AttributeError(op_name)
        try:
            return self._packets[op_name]
        except KeyError:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute "
                                 f"'{op_name}'") from None

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._packets))

    def __reduce__(self):
        return _resolve_namespace, (self.name,)

    def _packet(self, op_name):
        p = self._packets.get(op_name)
        if p is None:
            p = self._packets[op_name] = OpOverloadPacket(self.name, op_name)
            setattr(self, op_name, p)
        return p


class _Ops:
    """``tp.ops``: namespaces of op handles (``aten`` for the built-in ops)."""

    def __init__(self):
        self.__name__ = 'tensorplay.ops'
        self._namespaces = {}

    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        ns = self._namespaces.get(name)
        if ns is None:  # any namespace resolves; tp.library fills it
            ns = self._namespaces[name] = _OpNamespace(name)
            setattr(self, name, ns)
        return ns

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._namespaces))

    def _register_forms(self, forms):
        """Adds handles for (op id, form, namespace, name, overload, schema, tags) rows."""
        for op_id, form, namespace, name, overload, _text, tags in forms:
            handle = OpOverload(op_id, form)
            tag_list = [_YAML_TAGS[t] for t in tags.split(',') if t in _YAML_TAGS]
            if Tag.inplace_view in tag_list:  # (PyTorch's in-place views carry both)
                tag_list.append(Tag.inplace)
            if form == _FORM_INPLACE:
                tag_list.append(Tag.inplace)
            elif form == _FORM_OUT:
                tag_list.append(Tag.out)
            handle.tags = sorted(set(tag_list))
            getattr(self, namespace)._packet(name)._add(overload or 'default', handle)
            _C._set_op_handle(op_id, form, handle)  # what the Python dispatch key hands out


def _resolve_namespace(namespace):
    return getattr(ops, namespace)


def _resolve_packet(namespace, name):
    return getattr(getattr(ops, namespace), name)


def _resolve_overload(namespace, name, overload):
    return getattr(getattr(getattr(ops, namespace), name), overload)


ops = _Ops()
ops._register_forms(_C._op_forms())
