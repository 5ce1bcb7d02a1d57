"""Type promotion against torch: promote_types, result_type, can_cast and the
result dtype of binary ops over every pair of the 10 dtypes, for tensors,
0-dim tensors and Python scalars."""
import itertools

import pytest
import torch

import tensorplay_opdb as opdb

DTYPES = opdb.ALL_DTYPES
PAIRS = [pytest.param(a, b, id=f'{a}-{b}') for a, b in itertools.product(DTYPES, DTYPES)]
SCALARS = {'int': 2, 'float': 2.5, 'bool': True}

# An operand: ('tensor', dtype), ('0-dim', dtype) or ('scalar', 'int'|'float'|'bool').
TENSOR_KINDS = [(kind, dt) for kind in ('tensor', '0-dim') for dt in DTYPES]
OPERANDS = TENSOR_KINDS + [('scalar', s) for s in SCALARS]


def _operand(lib, kind, what):
    if kind == 'scalar':
        return SCALARS[what]
    shape = (2,) if kind == 'tensor' else ()
    values = torch.ones(shape, dtype=opdb.torch_dtype(what))
    return opdb.to_lib(values, lib)


def _name(d):
    return opdb.dtype_name(d)


def _operand_pairs():
    """(tensor-ish, any) in both orders, plus scalar-scalar for result_type."""
    params = []
    for a, b in itertools.product(TENSOR_KINDS, OPERANDS):
        params.append(pytest.param(a, b, id=f'{a[0]}:{a[1]}-{b[0]}:{b[1]}'))
        if b[0] == 'scalar':
            params.append(pytest.param(b, a, id=f'{b[0]}:{b[1]}-{a[0]}:{a[1]}'))
    return params


@pytest.mark.parametrize('a,b', PAIRS)
def test_promote_types(lib, a, b):
    expected = torch.promote_types(getattr(torch, a), getattr(torch, b))
    assert _name(lib.promote_types(getattr(lib, a), getattr(lib, b))) == _name(expected)


@pytest.mark.parametrize('a,b', PAIRS)
def test_can_cast(lib, a, b):
    expected = torch.can_cast(getattr(torch, a), getattr(torch, b))
    assert lib.can_cast(getattr(lib, a), getattr(lib, b)) == expected


@pytest.mark.parametrize('a,b', _operand_pairs())
def test_result_type(lib, a, b):
    expected = torch.result_type(_operand(torch, *a), _operand(torch, *b))
    assert _name(lib.result_type(_operand(lib, *a), _operand(lib, *b))) == _name(expected)


@pytest.mark.parametrize('a,b', [pytest.param(a, b, id=f'{a}-{b}')
                                 for a, b in itertools.product(SCALARS, SCALARS)])
def test_result_type_scalars(lib, a, b):
    expected = torch.result_type(SCALARS[a], SCALARS[b])
    assert _name(lib.result_type(SCALARS[a], SCALARS[b])) == _name(expected)


@pytest.mark.parametrize('a,b', _operand_pairs())
def test_add_result_dtype(lib, a, b):
    """tp.add(a, b) (and a + b) has torch's dtype and shape."""
    t_a, t_b = _operand(torch, *a), _operand(torch, *b)
    l_a, l_b = _operand(lib, *a), _operand(lib, *b)
    for fn in (lambda m, x, y: m.add(x, y), lambda m, x, y: x + y):
        expected = fn(torch, t_a, t_b)
        actual = fn(lib, l_a, l_b)
        assert _name(actual.dtype) == _name(expected.dtype)
        assert tuple(actual.shape) == tuple(expected.shape)


@pytest.mark.parametrize('op', ['div', 'sub', 'eq', 'maximum'])
@pytest.mark.parametrize('a,b', PAIRS)
def test_binary_result_dtype(lib, op, a, b):
    """Other binary ops promote tensor (+) tensor the same way (or fail alike)."""
    t_a, t_b = _operand(torch, 'tensor', a), _operand(torch, 'tensor', b)
    try:
        expected = getattr(torch, op)(t_a, t_b)
    except RuntimeError as e:
        with pytest.raises(type(e)):
            getattr(lib, op)(_operand(lib, 'tensor', a), _operand(lib, 'tensor', b))
        return
    actual = getattr(lib, op)(_operand(lib, 'tensor', a), _operand(lib, 'tensor', b))
    assert _name(actual.dtype) == _name(expected.dtype)
