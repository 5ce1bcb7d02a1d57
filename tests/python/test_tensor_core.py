"""Core Tensor behaviour against torch: dtypes and their limits, the default dtype,
devices, shape/stride/size metadata, contiguity, storage and views, the version
counter, Python conversions and protocols, requires_grad, and the errors torch
raises for overlapping or uncastable in-place writes.

Most tests run the same callable ``fn(lib)`` with ``lib`` = torch and
``lib`` = tensorplay and require the same outcome: equal plain values (with the
same Python types), or the same exception type."""
import operator
import os
import re
import warnings
import weakref

import pytest
import torch

import tensorplay as tp

DTYPES = ('bool', 'uint8', 'int8', 'int16', 'int32', 'int64',
          'float16', 'bfloat16', 'float32', 'float64')
FLOATS = ('float16', 'bfloat16', 'float32', 'float64')


def _name(dtype):
    return str(dtype).rsplit('.', 1)[-1]


def _plain(x):
    """A library-independent value: tensors, dtypes and devices by content, scalars with their type."""
    if isinstance(x, (tp.Tensor, torch.Tensor)):
        return ('tensor', _name(x.dtype), tuple(x.shape), _plain(x.tolist()))
    if isinstance(x, (tp.dtype, torch.dtype)):
        return ('dtype', _name(x))
    if isinstance(x, (tp.device, torch.device)):
        return ('device', str(x))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__ if type(x) in (list, tuple) else 'Size', [_plain(v) for v in x])
    return (type(x).__name__, x)


def _outcome(fn, lib):
    try:
        return False, fn(lib)
    except Exception as e:  # noqa: BLE001 - any exception is an outcome to compare
        return True, e


def assert_like_torch(fn, *, same_message=False):
    """fn(tp) returns what fn(torch) returns, or raises the same exception type
    (with torch's message inside tensorplay's if ``same_message``)."""
    torch_raised, expected = _outcome(fn, torch)
    tp_raised, got = _outcome(fn, tp)
    if torch_raised:
        assert tp_raised, f'torch raised {type(expected).__name__}({expected}); tensorplay returned {got!r}'
        assert type(got) is type(expected), \
            f'torch raised {type(expected).__name__}({expected}); tensorplay raised {type(got).__name__}({got})'
        if same_message:
            assert str(expected) in str(got)
    else:
        assert not tp_raised, f'tensorplay raised {type(got).__name__}({got}); torch returned {expected!r}'
        assert _plain(got) == _plain(expected)


# ---------------------------------------------------------------- dtypes

@pytest.mark.parametrize('alias', ['float', 'double', 'half', 'long', 'int', 'short'])
def test_dtype_aliases(alias):
    canonical = _name(getattr(torch, alias))
    assert getattr(tp, alias) is getattr(tp, canonical)
    assert str(getattr(tp, alias)) == f'tensorplay.{canonical}'


@pytest.mark.parametrize('name', DTYPES)
def test_dtype_attributes(name):
    assert_like_torch(lambda lib: [getattr(getattr(lib, name), a)
                                   for a in ('is_floating_point', 'is_signed', 'is_complex', 'itemsize')])


FINFO_FIELDS = ('bits', 'eps', 'max', 'min', 'tiny', 'smallest_normal', 'resolution', 'dtype')
IINFO_FIELDS = ('bits', 'min', 'max', 'dtype')


@pytest.mark.parametrize('info,fields', [('finfo', FINFO_FIELDS), ('iinfo', IINFO_FIELDS)])
@pytest.mark.parametrize('name', DTYPES)
def test_finfo_iinfo(info, fields, name):
    # Integer dtypes in finfo, floating ones (and bool) in iinfo raise TypeError in torch.
    assert_like_torch(lambda lib: [getattr(getattr(lib, info)(getattr(lib, name)), f) for f in fields])


@pytest.fixture
def default_dtype_restored():
    yield
    torch.set_default_dtype(torch.float32)
    tp.set_default_dtype(tp.float32)


@pytest.mark.parametrize('name', DTYPES)
def test_set_default_dtype(default_dtype_restored, name):
    def check(lib):
        lib.set_default_dtype(getattr(lib, name))
        return [lib.get_default_dtype(), lib.tensor(1.5).dtype, lib.tensor([1, 2.5]).dtype,
                lib.zeros(2).dtype, lib.full((1,), 2.0).dtype, lib.arange(0.5).dtype,
                (lib.tensor([1, 2]) * 1.5).dtype, lib.tensor(3).dtype, lib.finfo().bits]
    assert_like_torch(check)


def test_default_dtype_is_float32():
    assert tp.get_default_dtype() is tp.float32


@pytest.mark.parametrize('a,b', [('uint8', 'int8'), ('bool', 'float16'), ('float16', 'bfloat16'),
                                 ('int64', 'float16'), ('int32', 'uint8'), ('float32', 'float64')])
def test_promote_types_and_can_cast(a, b):
    assert_like_torch(lambda lib: [lib.promote_types(getattr(lib, a), getattr(lib, b)),
                                   lib.can_cast(getattr(lib, a), getattr(lib, b)),
                                   lib.can_cast(getattr(lib, b), getattr(lib, a))])


@pytest.mark.parametrize('make', [
    pytest.param(lambda lib: (lib.tensor([1, 2]), 1.5), id='int-float_scalar'),
    pytest.param(lambda lib: (lib.tensor([1], dtype=lib.uint8), -1), id='uint8-int_scalar'),
    pytest.param(lambda lib: (lib.tensor(1, dtype=lib.int64), lib.tensor([1], dtype=lib.int8)), id='0dim-int8'),
    pytest.param(lambda lib: (lib.tensor(1.0, dtype=lib.float64), lib.tensor([1])), id='0dim_f64-int64'),
    pytest.param(lambda lib: (lib.tensor([True]), True), id='bool-bool_scalar'),
    pytest.param(lambda lib: (lib.tensor([1], dtype=lib.float16), lib.tensor([1], dtype=lib.bfloat16)), id='f16-bf16'),
])
def test_result_type(make):
    assert_like_torch(lambda lib: lib.result_type(*make(lib)))


# ---------------------------------------------------------------- devices

DEVICE_ARGS = [('cpu',), ('cuda:1',), ('cuda', 0), ('cuda',), ('cpu', 0), ('cuda:0',)]


@pytest.mark.parametrize('args', DEVICE_ARGS, ids=str)
def test_device_parsing(args):
    assert_like_torch(lambda lib: [(d.type, d.index, str(d), repr(d))
                                   for d in (lib.device(*args), lib.device(lib.device(*args)))])


def test_device_equality_and_hash():
    def table(lib):
        devs = [lib.device(*a) for a in DEVICE_ARGS]
        return [[a == b for b in devs] for a in devs] + [[hash(a) == hash(lib.device(str(a))) for a in devs]]
    assert_like_torch(table)


def test_device_from_int_is_the_accelerator():
    # torch.device(1) means the current accelerator; tensorplay's accelerator is CUDA.
    assert tp.device(1) == tp.device('cuda', 1) == tp.device('cuda:1')


def test_device_keywords_and_repr_round_trip():
    # torch.device(type=..., index=...) works, so the repr (which graph code prints) evaluates
    for d in (tp.device('cpu'), tp.device('cuda', 1), tp.device('meta')):
        assert eval(repr(d), {'device': tp.device}) == d
    assert str(tp.device(type='cuda', index=2)) == str(torch.device(type='cuda', index=2)) == 'cuda:2'
    assert tp.device(type='cpu') == tp.device('cpu')


@pytest.mark.parametrize('args', [('gpu',), ('cuda:x',), ('cuda:-1',), ('',), ('cuda:0:1',), ('cpu:',),
                                  ('cuda', -1), (-1,)], ids=str)
def test_device_bad_spec_raises_runtime_error(args):
    with pytest.raises(RuntimeError):
        torch.device(*args)
    with pytest.raises(RuntimeError):
        tp.device(*args)


def test_tensor_device():
    t = tp.zeros(2)
    assert t.device == tp.device('cpu') and str(t.device) == 'cpu' and t.device.type == 'cpu'


# ---------------------------------------------------------------- shape, size, stride

SHAPES = [(2, 3), (), (0,), (4, 1, 2), (2, 0, 3)]


@pytest.mark.parametrize('shape', SHAPES, ids=str)
def test_shape_is_size(shape):
    s = tp.zeros(shape).shape
    assert isinstance(s, tp.Size) and isinstance(s, tuple)
    assert s == shape and tp.zeros(shape).size() == shape
    assert repr(s) == repr(torch.zeros(shape).shape).replace('torch.', 'tensorplay.')
    assert isinstance(s[1:], tp.Size) and s[1:] == shape[1:]
    assert s.numel() == torch.Size(shape).numel()


def test_size_repr_literal():
    assert repr(tp.zeros(2, 3).shape) == 'tensorplay.Size([2, 3])'


LAYOUTS = {
    'contiguous': lambda lib, shape: lib.zeros(shape),
    'transposed': lambda lib, shape: lib.zeros(shape).t() if len(shape) <= 2 else lib.zeros(shape).transpose(0, 2),
    'sliced': lambda lib, shape: lib.zeros(tuple(s * 2 for s in shape))[tuple(slice(None, None, 2) for _ in shape)],
}


@pytest.mark.parametrize('layout', LAYOUTS)
@pytest.mark.parametrize('shape', SHAPES, ids=str)
def test_size_and_stride_of_dim(shape, layout):
    make = LAYOUTS[layout]
    for dim in range(-len(shape) - 2, len(shape) + 2):
        assert_like_torch(lambda lib: make(lib, shape).size(dim))
        assert_like_torch(lambda lib: make(lib, shape).stride(dim))
    assert_like_torch(lambda lib: (make(lib, shape).size(), make(lib, shape).stride()))


@pytest.mark.parametrize('name', DTYPES)
@pytest.mark.parametrize('shape', SHAPES, ids=str)
def test_metadata(name, shape):
    assert_like_torch(lambda lib: [fn(lib.zeros(shape, dtype=getattr(lib, name))) for fn in (
        lambda t: t.dim(), lambda t: t.ndim, lambda t: t.numel(), lambda t: t.element_size(),
        lambda t: t.itemsize, lambda t: t.nbytes, lambda t: t.is_floating_point(),
        lambda t: lib.is_floating_point(t), lambda t: lib.numel(t))])


STRIDED = [((2, 3, 4, 5), (60, 20, 5, 1)), ((2, 3, 4, 5), (60, 1, 15, 3)), ((1, 3, 4, 5), (60, 1, 15, 3)),
           ((2, 1, 4, 5), (20, 20, 5, 1)), ((2, 3, 1, 5), (15, 1, 15, 3)), ((2, 3, 1, 1), (3, 1, 1, 1)),
           ((2, 3, 4, 5), (120, 40, 10, 2)), ((2, 3, 4, 5), (1, 2, 6, 24)), ((0, 3, 4, 5), (1, 1, 1, 1)),
           ((3, 2), (1, 3)), ((2, 3), (0, 1)), ((1, 3), (0, 1)), ((0, 3), (1, 1)), ((4, 3, 2), (1, 4, 12)),
           ((2, 3, 4), (12, 1, 3)), ((1, 2, 3, 4, 5), (120, 60, 20, 5, 1)), ((), ())]


@pytest.mark.parametrize('shape,strides', STRIDED, ids=str)
def test_is_contiguous(shape, strides):
    assert_like_torch(lambda lib: [lib.empty_strided(shape, strides).is_contiguous(),
                                   lib.empty_strided(shape, strides).is_contiguous(memory_format=lib.channels_last),
                                   lib.empty_strided(shape, strides).is_contiguous(memory_format=lib.contiguous_format)])


# ---------------------------------------------------------------- storage and views

VIEWS = {
    'slice_rows': lambda x: x[1:], 'slice_cols': lambda x: x[:, 2:], 'stepped': lambda x: x[1:, 1::2],
    't': lambda x: x.t(), 't_sliced': lambda x: x.t()[1:], 'T': lambda x: x.T,
    'view_flat': lambda x: x.view(12)[5:], 'view_row': lambda x: x.view(4, 3)[2], 'scalar': lambda x: x[2][3],
    'transpose': lambda x: x.transpose(0, 1)[2:], 'expand': lambda x: x[1:2].expand(5, 4),
}


@pytest.mark.parametrize('name', ['float32', 'int16', 'float64', 'bool'])
@pytest.mark.parametrize('view', VIEWS)
def test_view_storage(view, name):
    assert_like_torch(lambda lib: [VIEWS[view](lib.zeros(3, 4, dtype=getattr(lib, name))).storage_offset(),
                                   VIEWS[view](lib.zeros(3, 4, dtype=getattr(lib, name))).stride()])
    x = tp.zeros(3, 4, dtype=getattr(tp, name))
    v = VIEWS[view](x)
    assert v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr() == x.data_ptr()
    assert v.data_ptr() == x.data_ptr() + v.storage_offset() * x.element_size()
    assert v.untyped_storage().nbytes() == x.nbytes


def test_distinct_tensors_have_distinct_storage():
    a, b = tp.zeros(4), tp.zeros(4)
    assert a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()
    assert a.clone().data_ptr() != a.data_ptr()


@pytest.mark.parametrize('factory', [
    lambda lib: lib.zeros(3), lambda lib: lib.ones(3), lambda lib: lib.empty(3), lambda lib: lib.full((3,), 2.0),
    lambda lib: lib.tensor([1.0, 2.0]), lambda lib: lib.arange(4), lambda lib: lib.eye(2),
], ids=['zeros', 'ones', 'empty', 'full', 'tensor', 'arange', 'eye'])
def test_version_of_new_tensor(factory):
    assert_like_torch(lambda lib: factory(lib)._version)


INPLACE = {
    'add_': lambda lib, t: t.add_(1), 'copy_': lambda lib, t: t.copy_(lib.ones(t.shape)),
    'fill_': lambda lib, t: t.fill_(2), 'zero_': lambda lib, t: t.zero_(),
    '__iadd__': lambda lib, t: operator.iadd(t, 1), 'setitem': lambda lib, t: t.__setitem__(0, 5.0),
}


@pytest.mark.parametrize('op', INPLACE)
def test_version_counter_shared_with_views(op):
    def versions(lib):
        x = lib.zeros(4)
        v, w = x[1:], x.view(2, 2)
        start = x._version
        seen = [(v._version - start, w._version - start)]
        for target in (v, x, w):
            INPLACE[op](lib, target)
            seen.append((x._version - start, v._version - start, w._version - start))
        seen.append(x[2:]._version - start)  # a view taken later shares the counter too
        return seen
    assert_like_torch(versions)


# ---------------------------------------------------------------- Python conversions and protocols

@pytest.mark.parametrize('name', DTYPES)
def test_item_and_tolist(name):
    def convert(lib):
        t = lib.tensor([[1, 0], [2, 3]], dtype=getattr(lib, name))
        return [t[1, 0].item(), t[0, 1].item(), t.tolist(), t[1].tolist(), t[1, 1].tolist()]
    assert_like_torch(convert)


PROTOCOL_CASES = {
    'bool_true': lambda lib: bool(lib.tensor([2.0])), 'bool_false': lambda lib: bool(lib.tensor(0)),
    'bool_multi': lambda lib: bool(lib.tensor([1, 1])), 'bool_empty': lambda lib: bool(lib.zeros(0)),
    'if_multi': lambda lib: 1 if lib.ones(2) else 0,
    'float_int': lambda lib: float(lib.tensor(3)), 'float_1elem': lambda lib: float(lib.tensor([[2.5]])),
    'float_multi': lambda lib: float(lib.zeros(2)), 'float_empty': lambda lib: float(lib.zeros(0)),
    'int_float': lambda lib: int(lib.tensor(-2.7)), 'int_bool': lambda lib: int(lib.tensor(True)),
    'int_multi': lambda lib: int(lib.zeros(2)),
    'index_int': lambda lib: operator.index(lib.tensor(3)), 'index_1elem': lambda lib: operator.index(lib.tensor([3])),
    'index_bool': lambda lib: operator.index(lib.tensor(True)),
    'index_float': lambda lib: operator.index(lib.tensor(1.0)), 'index_multi': lambda lib: operator.index(lib.tensor([1, 2])),
    'list_index': lambda lib: [10, 20, 30][lib.tensor(2)], 'list_index_float': lambda lib: [10, 20][lib.tensor(1.0)],
    'range': lambda lib: list(range(lib.tensor(3))),
    'len': lambda lib: len(lib.zeros(3, 2)), 'len_empty': lambda lib: len(lib.zeros(0, 2)),
    'len_0d': lambda lib: len(lib.tensor(1.0)),
    'iter': lambda lib: list(lib.tensor([[1, 2], [3, 4]])), 'iter_1d': lambda lib: list(lib.tensor([1.5, 2.5])),
    'iter_0d': lambda lib: list(lib.tensor(1)),
    'in_scalar': lambda lib: 2 in lib.tensor([1, 2]), 'not_in_scalar': lambda lib: 5 in lib.tensor([1, 2]),
    'in_float': lambda lib: 2.0 in lib.tensor([1, 2]), 'in_tensor': lambda lib: lib.tensor(2) in lib.tensor([[1, 2]]),
    'in_str': lambda lib: 'a' in lib.tensor([1, 2]), 'in_list': lambda lib: [1] in lib.tensor([1, 2]),
}


@pytest.mark.parametrize('case', PROTOCOL_CASES)
def test_python_protocols(case):
    assert_like_torch(PROTOCOL_CASES[case])


ATTRIBUTE_CASES = {
    'H': lambda lib: lib.arange(6.0).reshape(2, 3).H.tolist(),
    'H_1d': lambda lib: lib.ones(3).H, 'H_3d': lambda lib: lib.ones(2, 3, 4).H,
    'H_is_view': lambda lib: (lambda x: x.H.data_ptr() == x.data_ptr())(lib.ones(2, 3)),
    'mH': lambda lib: lib.arange(12.0).reshape(2, 2, 3).mH.tolist(), 'mH_1d': lambda lib: lib.ones(3).mH,
    'adjoint': lambda lib: lib.adjoint(lib.arange(6.0).reshape(3, 2)).tolist(),
    'adjoint_method': lambda lib: lib.ones(4, 2, 3).adjoint().shape, 'adjoint_1d': lambda lib: lib.ones(3).adjoint(),
    'new_tensor': lambda lib: (lambda y: (y.dtype, y.tolist(), y.requires_grad))(
        lib.ones(2, dtype=lib.float16).new_tensor([1, 2])),
    'new_tensor_bool_data': lambda lib: lib.ones(1, dtype=lib.int32).new_tensor([True, 2.7]).tolist(),
    'new_tensor_dtype': lambda lib: lib.ones(1).new_tensor(3, dtype=lib.int64, requires_grad=False).dtype,
    'new_tensor_grad': lambda lib: lib.ones(1, dtype=lib.float64).new_tensor([1.0], requires_grad=True).is_leaf,
    'new_tensor_int_grad': lambda lib: lib.ones(1, dtype=lib.int64).new_tensor([1], requires_grad=True),
    'weakref': lambda lib: (lambda t: weakref.ref(t)() is t)(lib.ones(1)),
    'weakref_dict': lambda lib: len(weakref.WeakKeyDictionary({lib.ones(1): 1})),
    'size_add': lambda lib: (type(lib.Size([2]) + (3,)).__name__, lib.Size([2]) + (3,)),
    'size_radd': lambda lib: (type((1,) + lib.Size([2])).__name__, (1,) + lib.Size([2])),
    'size_add_size': lambda lib: type(lib.Size([2]) + lib.Size([3])).__name__,
    'size_add_list': lambda lib: lib.Size([2]) + [1], 'size_add_float': lambda lib: lib.Size([2]) + (1.5,),
    'size_mul': lambda lib: (type(lib.Size([2]) * 2).__name__, 3 * lib.Size([1]), lib.Size([2]) * 0),
    'size_mul_float': lambda lib: lib.Size([2]) * 1.5,
    'ravel': lambda lib: lib.ravel(lib.arange(6.0).reshape(2, 3).t()).tolist(),
    'ravel_view': lambda lib: (lambda x: x.ravel().data_ptr() == x.data_ptr())(lib.ones(2, 3)),
    'ravel_0d': lambda lib: lib.tensor(3.0).ravel().shape, 'ravel_list': lambda lib: lib.ravel([1, 2]),
    'ravel_grad': lambda lib: (lambda x: (x.ravel() * lib.arange(6.0)).sum().backward() or x.grad.tolist())(
        lib.ones(2, 3, requires_grad=True)),
    'clamp_min': lambda lib: lib.clamp_min(lib.tensor([-1.0, 2.0]), 0.5).tolist(),
    'clamp_max': lambda lib: lib.clamp_max(lib.tensor([-1.0, 2.0]), 0.5).tolist(),
    'fill_diagonal': lambda lib: lib.zeros(3, 5).fill_diagonal_(2).tolist(),
    'fill_diagonal_tall': lambda lib: lib.zeros(7, 3).fill_diagonal_(1).tolist(),
    'fill_diagonal_wrap': lambda lib: lib.zeros(7, 3).fill_diagonal_(1, wrap=True).tolist(),
    'fill_diagonal_wrap_wide': lambda lib: lib.zeros(3, 5).fill_diagonal_(1, wrap=True).tolist(),
    'fill_diagonal_wrap_strided': lambda lib: lib.zeros(4, 6).t().fill_diagonal_(1, wrap=True).tolist(),
    'fill_diagonal_3d': lambda lib: lib.zeros(2, 2, 2).fill_diagonal_(3).tolist(),
    'fill_diagonal_returns_self': lambda lib: (lambda x: x.fill_diagonal_(1) is x)(lib.zeros(2, 2)),
    'fill_diagonal_int': lambda lib: lib.zeros(3, 3, dtype=lib.int64).fill_diagonal_(2.7).tolist(),
    'fill_diagonal_tensor_value': lambda lib: lib.zeros(2, 2).fill_diagonal_(lib.tensor(2.0)).tolist(),
    'fill_diagonal_empty': lambda lib: lib.zeros(0, 3).fill_diagonal_(1).shape,
    'fill_diagonal_uneven_3d': lambda lib: lib.zeros(2, 3, 2).fill_diagonal_(3),
    'fill_diagonal_1d': lambda lib: lib.zeros(3).fill_diagonal_(3),
    'fill_diagonal_leaf': lambda lib: lib.ones(2, 2, requires_grad=True).fill_diagonal_(0),
    'fill_diagonal_grad': lambda lib: (lambda x: ((x * 2).fill_diagonal_(0, wrap=True).sum().backward(),
                                                 x.grad.tolist())[1])(lib.ones(5, 2, requires_grad=True)),
}


@pytest.mark.parametrize('case', ATTRIBUTE_CASES)
def test_tensor_attributes_like_torch(case):
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # neither library warns in these cases
        assert_like_torch(ATTRIBUTE_CASES[case])


def test_copy_construct_warnings():
    # PyTorch's UserWarning for a tensor built from a tensor, and the 0-D H deprecation
    for lib in (tp, torch):
        x = lib.ones(2)
        with pytest.warns(UserWarning, match="rather than .*tensor\\(sourceTensor\\)"):
            assert lib.tensor(x).tolist() == [1.0, 1.0]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            assert x.new_tensor(x, dtype=lib.int64).tolist() == [1, 1]
        assert len(caught) == 1 and "rather than tensor.new_tensor(sourceTensor)" in str(caught[0].message)
        with pytest.warns(UserWarning, match="Tensor.H is deprecated on 0-D tensors"):
            assert lib.tensor(2.0).H.item() == 2.0


# ---------------------------------------------------------------- requires_grad

FACTORIES = {
    'zeros': lambda lib, dt, rg: lib.zeros(2, dtype=dt, requires_grad=rg),
    'ones': lambda lib, dt, rg: lib.ones(2, dtype=dt, requires_grad=rg),
    'empty': lambda lib, dt, rg: lib.empty(2, dtype=dt, requires_grad=rg),
    'full': lambda lib, dt, rg: lib.full((2,), 1, dtype=dt, requires_grad=rg),
    'tensor': lambda lib, dt, rg: lib.tensor([1, 0], dtype=dt, requires_grad=rg),
    'arange': lambda lib, dt, rg: lib.arange(2, dtype=dt, requires_grad=rg),
    'eye': lambda lib, dt, rg: lib.eye(2, dtype=dt, requires_grad=rg),
    'zeros_like': lambda lib, dt, rg: lib.zeros_like(lib.ones(2), dtype=dt, requires_grad=rg),
}


@pytest.mark.parametrize('requires_grad', [False, True])
@pytest.mark.parametrize('name', ['float32', 'float64', 'float16', 'bfloat16', 'int64', 'uint8', 'bool'])
@pytest.mark.parametrize('factory', FACTORIES)
def test_factory_requires_grad(factory, name, requires_grad):
    assert_like_torch(lambda lib: FACTORIES[factory](lib, getattr(lib, name), requires_grad).requires_grad)


@pytest.mark.parametrize('name', ['float32', 'int64', 'bool'])
@pytest.mark.parametrize('how', ['attribute', 'method'])
def test_set_requires_grad(how, name):
    def set_it(lib):
        t = lib.zeros(2, dtype=getattr(lib, name))
        if how == 'attribute':
            t.requires_grad = True
        else:
            assert t.requires_grad_() is t
        return t.requires_grad
    assert_like_torch(set_it)


# ---------------------------------------------------------------- errors of in-place ops

def _expanded(lib):
    return lib.zeros(3).expand(2, 3)


def _arange(lib):
    return lib.arange(6.0)


ERROR_CASES = {
    'expanded_add_': lambda lib: _expanded(lib).add_(1),
    'expanded_mul_': lambda lib: _expanded(lib).mul_(2),
    'expanded_copy_': lambda lib: _expanded(lib).copy_(lib.ones(2, 3)),
    'expanded_fill_': lambda lib: _expanded(lib).fill_(1),
    'expanded_zero_': lambda lib: _expanded(lib).zero_(),
    'partial_copy_': lambda lib: (lambda a: a[1:].copy_(a[:-1]))(_arange(lib)),
    'partial_add_': lambda lib: (lambda a: a[1:].add_(a[:-1]))(_arange(lib)),
    'partial_mul_': lambda lib: (lambda a: a[2:].mul_(a[:-2]))(_arange(lib)),
    'disjoint_add_': lambda lib: (lambda a: a[3:].add_(a[:3]))(_arange(lib)),
    'same_add_': lambda lib: (lambda a: a.add_(a))(_arange(lib)),
    'int_add_float': lambda lib: lib.tensor([1, 2]).add_(1.5),
    'int_mul_float_tensor': lambda lib: lib.tensor([1, 2]).mul_(lib.tensor([1.5, 2.0])),
    'bool_add_int': lambda lib: lib.tensor([True]).add_(2),
    'int_add_int': lambda lib: lib.tensor([1, 2], dtype=lib.int8).add_(300),
    'floor_divide': lambda lib: lib.tensor([1, 2]) // 0,
    'floor_divide_tensor': lambda lib: lib.tensor([1, 2], dtype=lib.uint8) // lib.tensor([1, 0], dtype=lib.uint8),
    'remainder': lambda lib: lib.tensor(5) % 0,
    'remainder_': lambda lib: lib.tensor([5]).remainder_(0),
    'fmod': lambda lib: lib.fmod(lib.tensor([5], dtype=lib.int16), 0),
    'div_floor': lambda lib: lib.div(lib.tensor([5]), 0, rounding_mode='floor'),
    'div_true': lambda lib: lib.tensor([5]) / 0,
    'neg_bool': lambda lib: -lib.tensor([True, False]),
    'neg_bool_fn': lambda lib: lib.neg(lib.tensor(True)),
    'neg_bool_': lambda lib: lib.tensor([True]).neg_(),
}


@pytest.mark.parametrize('case', ERROR_CASES)
def test_inplace_and_arithmetic_errors(case):
    assert_like_torch(ERROR_CASES[case], same_message=True)


# ---------------------------------------------------------------- version

def test_version_strings():
    sha = tp.version.git_version
    assert re.fullmatch(r'[0-9a-f]{40}|', sha), sha
    explicit = os.environ.get('TENSORPLAY_BUILD_VERSION', '').strip()
    if not explicit:
        assert re.fullmatch(r'1\.0\.0a0(\+git[0-9a-f]{7})?', tp.__version__), tp.__version__
    assert tp.__version__ == (explicit or ('1.0.0a0+git' + sha[:7] if sha else '1.0.0a0'))
    assert tp.version.__version__ == tp.__version__
