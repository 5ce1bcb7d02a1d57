"""NumPy and DLPack interop against torch: from_numpy / Tensor.numpy / __array__,
from_dlpack in every direction (tensorplay <-> numpy, tensorplay <-> torch),
capsule consumption, lifetime of shared memory, and the copy-or-share rules of
tensor / as_tensor / asarray.

Zero-copy is checked by writing: a value written through one side must be read
back through the other, in both directions, at the first and last element."""
import gc
import math

import numpy as np
import pytest
import torch

import tensorplay as tp

NUMPY_DTYPES = ('bool', 'uint8', 'int8', 'int16', 'int32', 'int64', 'float16', 'float32', 'float64')
DTYPES = NUMPY_DTYPES + ('bfloat16',)


def _name(dtype):
    return str(dtype).rsplit('.', 1)[-1]


def _array(name, shape=(3, 4)):
    return (np.arange(math.prod(shape)) % 7).reshape(shape).astype(name)


def _base(lib, name):
    """A 3x4 tensor of ``lib`` with distinct-ish values of dtype ``name``."""
    return lib.tensor(_array('int64').tolist(), dtype=getattr(lib, name))


def _new_value(current):
    return (not current) if isinstance(current, bool) else current + 3


def assert_shares_memory(x, y):
    """x and y (numpy arrays or tensors of any library) view the same elements."""
    assert tuple(x.shape) == tuple(y.shape)
    if math.prod(x.shape) == 0:
        return
    for idx in (tuple(0 for _ in x.shape), tuple(s - 1 for s in x.shape)):
        for src, dst in ((x, y), (y, x)):
            value = _new_value(dst[idx].item())
            src[idx] = value
            assert dst[idx].item() == value, f'write at {idx} through {type(src)} not seen by {type(dst)}'


def assert_same_tensor(actual, expected):
    """Same dtype, shape, strides and values (actual: tensorplay; expected: torch or numpy)."""
    assert _name(actual.dtype) == _name(expected.dtype)
    assert tuple(actual.shape) == tuple(expected.shape)
    if isinstance(expected, np.ndarray):
        assert tuple(s * expected.itemsize for s in actual.stride()) == expected.strides
    else:
        assert actual.stride() == expected.stride()
    assert actual.tolist() == expected.tolist()


# ---------------------------------------------------------------- from_numpy, numpy(), __array__

NUMPY_LAYOUTS = {
    'contiguous': lambda a: a, 'transposed': lambda a: a.T, 'sliced': lambda a: a[1:, 1:],
    'stepped': lambda a: a[:, 1::2], 'fortran': np.asfortranarray, 'row': lambda a: a[2],
    '0-dim': lambda a: a[1, 2, ...], 'empty': lambda a: a[:0], 'broadcast_dim': lambda a: a[1:2],
}


@pytest.mark.parametrize('layout', NUMPY_LAYOUTS)
@pytest.mark.parametrize('name', NUMPY_DTYPES)
@pytest.mark.parametrize('consumer', ['from_numpy', 'from_dlpack'])
def test_from_numpy_shares_memory(consumer, name, layout):
    a = NUMPY_LAYOUTS[layout](_array(name))
    t = getattr(tp, consumer)(a)
    assert_same_tensor(t, getattr(torch, consumer)(a))
    if a.size:
        assert t.data_ptr() == a.ctypes.data
    assert_shares_memory(a, t)


@pytest.mark.parametrize('make', [lambda a: a[::-1], lambda a: a[:, ::-2], lambda a: a.T[::-1]],
                         ids=['rows', 'cols', 'transposed'])
def test_from_numpy_negative_strides(make):
    a = make(_array('float32'))
    with pytest.raises(ValueError, match='negative'):
        torch.from_numpy(a)
    with pytest.raises(ValueError, match='negative'):
        tp.from_numpy(a)


@pytest.mark.parametrize('dtype', [np.clongdouble, np.uint16, np.uint32, np.uint64,
                                   object, np.longdouble, 'U3', 'datetime64[s]'], ids=str)
def test_from_numpy_unsupported_dtype(dtype):
    a = np.zeros(3, dtype=dtype)
    with pytest.raises(TypeError, match='numpy'):
        tp.from_numpy(a)
    with pytest.raises(TypeError):
        tp.tensor(a)


@pytest.mark.parametrize('bad', [pytest.param(lambda: np.zeros(3, dtype='>f4'), id='byteswapped'),
                                 pytest.param(lambda: [1.0, 2.0], id='list'),
                                 pytest.param(lambda: torch.zeros(2), id='torch_tensor')])
def test_from_numpy_rejects_like_torch(bad):
    with pytest.raises(Exception) as expected:
        torch.from_numpy(bad())
    with pytest.raises(expected.type):
        tp.from_numpy(bad())


TENSOR_LAYOUTS = {
    'contiguous': lambda x: x, 'transposed': lambda x: x.t(), 'sliced': lambda x: x[1:, 1:],
    'stepped': lambda x: x[:, 1::2], 'row': lambda x: x[2], '0-dim': lambda x: x[1, 2],
    'empty': lambda x: x[:0], 'expanded': lambda x: x[1].expand(2, 4),
}


@pytest.mark.parametrize('layout', TENSOR_LAYOUTS)
@pytest.mark.parametrize('name', NUMPY_DTYPES)
@pytest.mark.parametrize('convert', [lambda t: t.numpy(), np.asarray, np.from_dlpack],
                         ids=['numpy', 'asarray', 'np.from_dlpack'])
def test_to_numpy_shares_memory(convert, name, layout):
    t = TENSOR_LAYOUTS[layout](_base(tp, name))
    a = convert(t)
    expected = convert(TENSOR_LAYOUTS[layout](_base(torch, name)))
    assert isinstance(a, np.ndarray) and a.dtype == expected.dtype
    assert a.shape == expected.shape and a.tolist() == expected.tolist()
    if t.numel():  # the strides of an empty array are arbitrary
        assert a.strides == expected.strides and a.ctypes.data == t.data_ptr()
    if layout != 'expanded':  # numpy marks arrays with zero strides read-only
        assert_shares_memory(a, t)


def _outcome(fn, *args):
    """(exception type or None, result)."""
    try:
        return None, fn(*args)
    except Exception as e:  # noqa: BLE001 - the exception type is the outcome
        return type(e), None


def _floats(lib):
    return lib.tensor([1.5, 2.5])


def _bfloat16(lib):
    return lib.zeros(2, dtype=lib.bfloat16)


def _grad(lib):
    return lib.zeros(2, requires_grad=True)


# (make a tensor, convert it to numpy); copy=False conversions that need no copy are left
# out: torch's __array__ lacks the copy keyword, so NumPy 2 refuses them for torch.
NUMPY_CASES = {
    'numpy': (_floats, lambda t: t.numpy()),
    'asarray': (_floats, np.asarray),
    'asarray_float64': (_floats, lambda t: np.asarray(t, dtype=np.float64)),
    'asarray_int32': (_floats, lambda t: np.asarray(t, dtype=np.int32)),
    'asarray_copy': (_floats, lambda t: np.asarray(t, copy=True)),
    'array': (_floats, np.array),
    'asarray_float64_no_copy': (_floats, lambda t: np.asarray(t, dtype=np.float64, copy=False)),
    'bfloat16': (_bfloat16, lambda t: t.numpy()),
    'bfloat16_asarray': (_bfloat16, np.asarray),
    'bfloat16_from_dlpack': (_bfloat16, np.from_dlpack),
    'requires_grad': (_grad, lambda t: t.numpy()),
    'requires_grad_asarray': (_grad, np.asarray),
    'requires_grad_force': (_grad, lambda t: t.numpy(force=True)),
    'requires_grad_detach': (_grad, lambda t: t.detach().numpy()),
}


def _to_numpy(lib, case):
    """(dtype, values, whether a write to the array shows in the tensor) or the exception type."""
    make, convert = NUMPY_CASES[case]
    t = make(lib)
    error, a = _outcome(convert, t)
    if error is not None:
        return error
    values = a.tolist()
    a[0] = 7
    return a.dtype, values, t[0].item() == 7


@pytest.mark.filterwarnings('ignore::DeprecationWarning')  # torch's __array__ has no copy keyword
@pytest.mark.parametrize('case', NUMPY_CASES)
def test_numpy_conversion_like_torch(case):
    assert _to_numpy(tp, case) == _to_numpy(torch, case)


# ---------------------------------------------------------------- DLPack with torch

@pytest.mark.parametrize('layout', TENSOR_LAYOUTS)
@pytest.mark.parametrize('name', DTYPES)
@pytest.mark.parametrize('direction', ['torch->tensorplay', 'tensorplay->torch'])
def test_dlpack_with_torch(direction, name, layout):
    producer, consumer = (torch, tp) if direction == 'torch->tensorplay' else (tp, torch)
    src = TENSOR_LAYOUTS[layout](_base(producer, name))
    out = consumer.from_dlpack(src)
    tp_side, torch_side = (out, src) if consumer is tp else (src, out)
    assert_same_tensor(tp_side, torch_side)
    if src.numel():
        assert out.data_ptr() == src.data_ptr()
    assert_shares_memory(tp_side, torch_side)


def test_dlpack_device():
    t = tp.zeros(2)
    assert t.__dlpack_device__() == (1, 0) == torch.zeros(2).__dlpack_device__()
    assert tuple(int(v) for v in t.__dlpack_device__()) == (1, 0)


PRODUCERS = {'numpy': lambda: np.arange(6.0), 'torch': lambda: torch.arange(6.0),
             'tensorplay': lambda: tp.arange(6.0)}
CAPSULE_CONSUMERS = {'tensorplay': tp.from_dlpack, 'torch': torch.from_dlpack}


@pytest.mark.parametrize('second', CAPSULE_CONSUMERS)
@pytest.mark.parametrize('first', CAPSULE_CONSUMERS)
@pytest.mark.parametrize('producer', PRODUCERS)
def test_capsule_is_consumed_once(producer, first, second):
    capsule = PRODUCERS[producer]().__dlpack__()
    assert CAPSULE_CONSUMERS[first](capsule).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    with pytest.raises(RuntimeError):  # what torch raises for a used capsule
        CAPSULE_CONSUMERS[second](capsule)


# ---------------------------------------------------------------- lifetime

N = 2048  # small enough that freed memory is reused by the allocations that follow

SHARE_ROUTES = {
    'numpy->tp.from_numpy': ('numpy', tp.from_numpy, None),
    'numpy->tp.from_dlpack': ('numpy', tp.from_dlpack, None),
    'numpy->tp.as_tensor': ('numpy', tp.as_tensor, None),
    'numpy->tp.asarray': ('numpy', tp.asarray, None),
    'torch->tp.from_dlpack': ('torch', tp.from_dlpack, None),
    'tp->torch.from_dlpack': ('tensorplay', torch.from_dlpack, None),
    'tp->np.from_dlpack': ('tensorplay', np.from_dlpack, None),
    'tp->Tensor.numpy': ('tensorplay', lambda t: t.numpy(), None),
    'tp->np.asarray': ('tensorplay', np.asarray, None),
    'numpy-capsule->tp': ('numpy', lambda a: a.__dlpack__(), tp.from_dlpack),
    'torch-capsule->tp': ('torch', lambda a: a.__dlpack__(), tp.from_dlpack),
    'tp-capsule->torch': ('tensorplay', lambda a: a.__dlpack__(), torch.from_dlpack),
    'tp-capsule->tp': ('tensorplay', lambda a: a.__dlpack__(), tp.from_dlpack),
    'tp-versioned-capsule->tp': ('tensorplay', lambda a: a.__dlpack__(max_version=(1, 0)), tp.from_dlpack),
}
LIFETIME_PRODUCERS = {'numpy': lambda: np.arange(N, dtype=np.float64),
                      'torch': lambda: torch.arange(N, dtype=torch.float64),
                      'tensorplay': lambda: tp.arange(N, dtype=tp.float64)}


@pytest.mark.parametrize('route', SHARE_ROUTES)
def test_consumer_outlives_producer(route):
    producer, export, consume = SHARE_ROUTES[route]
    src = LIFETIME_PRODUCERS[producer]()
    held = export(src)
    del src
    gc.collect()
    clobber = [np.full(N, -1.0) for _ in range(8)] + [tp.full((N,), -1.0, dtype=tp.float64) for _ in range(8)]
    out = consume(held) if consume else held
    del held
    gc.collect()
    clobber += [torch.full((N,), -1.0, dtype=torch.float64) for _ in range(8)]
    assert out.tolist() == list(map(float, range(N)))
    out[0] = 42.0  # the memory is still writable and owned
    assert out[0].item() == 42.0


# ---------------------------------------------------------------- copy or share: tensor / as_tensor / asarray

SOURCES = {
    'ndarray': lambda lib: np.arange(4.0), 'ndarray_int32': lambda lib: np.arange(4, dtype=np.int32),
    'ndarray_strided': lambda lib: np.arange(8.0)[::2], 'tensor': lambda lib: lib.arange(4.0),
    'list': lambda lib: [0.0, 1.0, 2.0, 3.0], 'scalar': lambda lib: 2.5,
}
CONVERSIONS = {
    'tensor': lambda lib, x: lib.tensor(x),
    'as_tensor': lambda lib, x: lib.as_tensor(x),
    'as_tensor_float32': lambda lib, x: lib.as_tensor(x, dtype=lib.float32),
    'asarray': lambda lib, x: lib.asarray(x),
    'asarray_copy': lambda lib, x: lib.asarray(x, copy=True),
    'asarray_no_copy': lambda lib, x: lib.asarray(x, copy=False),
    'asarray_float32': lambda lib, x: lib.asarray(x, dtype=lib.float32),
    'asarray_float32_no_copy': lambda lib, x: lib.asarray(x, dtype=lib.float32, copy=False),
    'asarray_float64_copy': lambda lib, x: lib.asarray(x, dtype=lib.float64, copy=True),
}


def _convert(lib, source, conversion):
    """(dtype, values, whether a later write to the source shows in the result) or the exception type."""
    x = SOURCES[source](lib)
    error, r = _outcome(CONVERSIONS[conversion], lib, x)
    if error is not None:
        return error
    values = r.tolist()
    if isinstance(x, (list, float)):
        return _name(r.dtype), values
    x[0] = 99
    return _name(r.dtype), values, r.reshape(-1)[0].item() == 99


@pytest.mark.filterwarnings('ignore::UserWarning')  # torch.tensor(tensor) suggests clone()
@pytest.mark.parametrize('conversion', CONVERSIONS)
@pytest.mark.parametrize('source', SOURCES)
def test_copy_or_share(source, conversion):
    assert _convert(tp, source, conversion) == _convert(torch, source, conversion)


@pytest.mark.parametrize('name', NUMPY_DTYPES)
def test_tensor_copies_and_as_tensor_shares(name):
    a = _array(name)
    copied, shared = tp.tensor(a), tp.as_tensor(a)
    assert copied.data_ptr() != a.ctypes.data and shared.data_ptr() == a.ctypes.data
    assert_same_tensor(copied, torch.tensor(a))
    assert_shares_memory(a, shared)
    a[...] = _new_value(a.flat[0].item())
    assert copied.tolist() == _array(name).tolist()


@pytest.mark.parametrize("data", [
    np.float64(1.5), np.float32(1.5), np.int32(3), np.int16(2), np.uint8(3), np.bool_(True),
    [np.int32(1), np.int32(2)], [np.float64(1.0), 2.0], [np.float16(1.0)], [1, np.int32(2)],
    [1, np.float32(2)], [[np.bool_(True)], [False]], [True, 2], [1, 2.5]])
@pytest.mark.parametrize("factory", ["tensor", "as_tensor"])
def test_dtype_inferred_from_numpy_scalars_matches_torch(data, factory):
    a = getattr(torch, factory)(data)
    b = getattr(tp, factory)(data)
    assert str(b.dtype).split(".")[-1] == str(a.dtype).split(".")[-1]
    assert b.tolist() == a.tolist()
