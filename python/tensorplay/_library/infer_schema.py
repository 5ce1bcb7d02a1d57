"""Schemas from type annotations (``tp.library.infer_schema``), PyTorch's rules.

Each parameter's annotation names one schema type; ``int`` becomes ``SymInt`` and
``int | float | bool`` becomes ``Scalar`` as in PyTorch. A parameter named in
``mutates_args`` (or every tensor, for ``"unknown"``) gets a write annotation ``Tensor(aN!)``
with N its position. Anything else raises ValueError naming the parameter.
"""
import collections.abc
import inspect
import typing

from tensorplay import _C

__all__ = ['infer_schema']

_NoneType = type(None)


def _base_types():
    from tensorplay import Tensor, device, dtype
    return {Tensor: 'Tensor', int: 'SymInt', float: 'float', bool: 'bool', str: 'str',
            dtype: 'ScalarType', device: 'Device'}


def _is_union_of_numbers(ann):
    args = typing.get_args(ann)
    return (typing.get_origin(ann) in (typing.Union, getattr(__import__('types'), 'UnionType', None))
            and set(args) - {_NoneType} == {int, float, bool})


def _optional_inner(ann):
    """X for Optional[X] (X | None), else None."""
    if typing.get_origin(ann) in (typing.Union, getattr(__import__('types'), 'UnionType', None)):
        args = typing.get_args(ann)
        if _NoneType in args and len(args) == 2:
            return next(a for a in args if a is not _NoneType)
    return None


_SEQUENCES = (list, collections.abc.Sequence, typing.Sequence, typing.List)


def _resolve(ann, globalns):
    if isinstance(ann, str):  # a string annotation ('tp.Tensor')
        ann = eval(ann, globalns)  # noqa: S307 - the user's own annotation text
    return ann


def _argument_type(ann):
    """The schema type of a parameter annotation, or None when there is none."""
    base = _base_types()
    if ann in base:
        return base[ann]
    if _is_union_of_numbers(ann):
        return 'Scalar?' if _NoneType in typing.get_args(ann) else 'Scalar'
    inner = _optional_inner(ann)
    if inner is not None:
        t = _argument_type(inner)
        if t is None or t.endswith('?') or t == 'Tensor[]' or t == 'Tensor?[]':
            return None
        return t + '?'
    if typing.get_origin(ann) in _SEQUENCES or ann in _SEQUENCES:
        args = typing.get_args(ann)
        if len(args) != 1:
            return None
        elem = args[0]
        if elem in base and elem not in (str,) and base[elem] not in ('ScalarType', 'Device'):
            return base[elem] + '[]'
        if _optional_inner(elem) is not None and base.get(_optional_inner(elem)) == 'Tensor':
            return 'Tensor?[]'
        if _is_union_of_numbers(elem) and _NoneType not in typing.get_args(elem):
            return 'Scalar[]'
    return None


def _return_type(ann):
    base = _base_types()
    if ann in (None, _NoneType):
        return '()'
    singles = {k: v for k, v in base.items() if v in ('Tensor', 'SymInt', 'float', 'bool')}
    if ann in singles:
        return singles[ann]
    if _is_union_of_numbers(ann) and _NoneType not in typing.get_args(ann):
        return 'Scalar'
    if typing.get_origin(ann) in (list, typing.List) and typing.get_args(ann) == (base_tensor(),):
        return 'Tensor[]'
    if typing.get_origin(ann) in (tuple, typing.Tuple):
        parts = [_return_type(a) for a in typing.get_args(ann)]
        if parts and all(p not in (None, '()') and not p.startswith('(') for p in parts):
            return '(' + ', '.join(parts) + ')'
    return None


def base_tensor():
    from tensorplay import Tensor
    return Tensor


def _default_text(value, schema_type):
    """A default value in schema notation, or None when PyTorch has no notation for it."""
    import tensorplay as tp
    if value is None:
        return 'None'
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, tp.dtype):
        return str(value).split('.')[-1]
    if isinstance(value, tp.device):
        return f'"{value}"'
    return None


def infer_schema(prototype_function, /, *, mutates_args, op_name=None):
    """The schema of ``prototype_function`` from its annotations, e.g. ``(Tensor x, SymInt n)
    -> Tensor``; with ``op_name`` (``"mylib::foo"``) the whole schema."""
    sig = inspect.signature(prototype_function)
    globalns = getattr(prototype_function, '__globals__', {})

    def error(what):
        raise ValueError(f'infer_schema(func): {what} Got func with signature {sig})')

    if mutates_args != 'unknown' and isinstance(mutates_args, str):
        error("mutates_args must be a set of parameter names or the string 'unknown', "
              f"got {mutates_args!r}.")
    params = []
    seen_kwonly = False
    mutated = set()
    for i, (name, p) in enumerate(sig.parameters.items()):
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            error('We do not support positional-only args, varargs, or varkwargs.')
        if p.annotation is p.empty:
            error(f'Parameter {name} must have a type annotation.')
        ann = _resolve(p.annotation, globalns)
        t = _argument_type(ann)
        if t is None:
            error(f'Parameter {name} has unsupported type {ann}. Supported: Tensor, '
                  'Optional[Tensor], Sequence[Tensor], Sequence[Optional[Tensor]], int, float, '
                  'bool, str, int | float | bool (Scalar), dtype, device, Sequences and '
                  'Optionals of those.')
        if t.startswith('Tensor') and (mutates_args == 'unknown' or name in mutates_args):
            if t != 'Tensor' and mutates_args != 'unknown':
                error(f'Parameter {name} is in mutates_args but is not a Tensor; only Tensors '
                      'can be mutated.')
            if t == 'Tensor':
                t = f'Tensor(a{i}!)'
                mutated.add(name)
        if p.kind == p.KEYWORD_ONLY and not seen_kwonly:
            params.append('*')
            seen_kwonly = True
        text = f'{t} {name}'
        if p.default is not p.empty:
            d = _default_text(p.default, t)
            if d is None:
                error(f'Parameter {name} has an unsupported default value type {type(p.default)}.')
            text += f'={d}'
        params.append(text)
    if mutates_args != 'unknown':
        missing = set(mutates_args) - set(sig.parameters)
        if missing:
            error(f"{missing} in mutates_args were not found in the custom op's signature. "
                  'mutates_args should contain the names of all args that the custom op '
                  "mutates, or just the string 'unknown' if you don't know.")
    if sig.return_annotation is sig.empty:
        error('No return type annotation was provided. Please add one.')
    ret = _return_type(_resolve(sig.return_annotation, globalns))
    if ret is None:
        error(f'Return has unsupported type {sig.return_annotation}. Supported: Tensor, '
              'List[Tensor], int, float, bool, int | float | bool (Scalar), tuples of those, '
              'None.')
    text = f'({", ".join(params)}) -> {ret}'
    if op_name is not None:
        text = op_name + text
    return text


def parse_check(text):
    """Parses a schema (raising RuntimeError with the parser's message when it is invalid)."""
    return _C._parse_schema(text)
