"""The meta device, over the op database: every op runs on meta tensors and gives PyTorch
2.13's meta results (shapes, dtypes, strides, storage offsets, aliasing), or raises the
exception class PyTorch raises (data-dependent ops: NotImplementedError)."""
import math

import pytest
import torch

import tensorplay_opdb as opdb

OPS = opdb.op_db


def _meta_like(t, lib):
    """A meta tensor with t's sizes, strides and storage offset (over a base large enough)."""
    shape, stride, offset = tuple(t.shape), tuple(t.stride()), t.storage_offset()
    extent = 1 + sum((s - 1) * st for s, st in zip(shape, stride)) if math.prod(shape) else 0
    base = lib.empty(offset + extent, dtype=t.dtype, device='meta')
    return base.as_strided(shape, stride, offset)


def _to_meta(x, lib):
    if isinstance(x, (list, tuple)):
        return type(x)(_to_meta(v, lib) for v in x)
    if isinstance(x, dict):
        return {k: _to_meta(v, lib) for k, v in x.items()}
    if isinstance(x, lib.Tensor):
        return _meta_like(x, lib)
    return x


def _tensors(x):
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v)]
    return [x] if opdb.is_tensor(x) else []


def _storage_key(t, lib):
    if lib is torch:
        return t.untyped_storage()._cdata
    return lib._C._storage_id(t)


def _describe(r, inputs, lib):
    """Shape, dtype, significant strides, offset, device, and which input it aliases."""
    if isinstance(r, (tuple, list)):
        return [_describe(v, inputs, lib) for v in r]
    if not opdb.is_tensor(r):
        return r
    shape = tuple(r.shape)
    strides = tuple(st if s > 1 else None for s, st in zip(shape, r.stride())) if math.prod(shape) else None
    keys = [_storage_key(t, lib) for t in inputs]
    key = _storage_key(r, lib)
    alias = keys.index(key) if key in keys else None
    return (shape, opdb.dtype_name(r.dtype), strides, r.storage_offset() if alias is not None else 0,
            r.device.type, alias)


def _outcome(fn):
    try:
        return 'ok', fn()
    except Exception as e:  # noqa: BLE001 - the exception class is the outcome
        return 'raised', e


@pytest.mark.parametrize('op', OPS, ids=[op.name for op in OPS])
def test_meta_matches_torch(op, lib, lib_is_torch):
    checked = 0
    for dtype in op.dtypes:
        for sample in op.sample_inputs(dtype):
            form = 'function' if op.function and op.applies('function', sample) else 'method'
            if form not in ('function', 'method'):
                continue
            targs, tkw = _to_meta(opdb.materialize(sample, torch), torch)
            largs, lkw = _to_meta(opdb.materialize(sample, lib), lib)
            ctx = f'{op.name} [{form}] {sample!r}'
            t_status, expected = _outcome(lambda: op.call(form, torch, targs, tkw))
            l_status, actual = _outcome(lambda: op.call(form, lib, largs, lkw))
            if t_status == 'raised':
                assert l_status == 'raised', f'{ctx}: torch raised {expected!r} on meta, we returned'
                want = opdb.lib_exception(type(expected), lib)
                assert isinstance(actual, want), f'{ctx}: torch raised {expected!r}, we raised {actual!r}'
                continue
            if l_status == 'raised':
                raise AssertionError(f'{ctx}: torch ran on meta, we raised {actual!r}') from actual
            got = _describe(actual, _tensors((largs, lkw)), lib)
            want = _describe(expected, _tensors((targs, tkw)), torch)
            if got != want and _torch_cpu_layout(op, form, sample) == _without_device(got):
                # PyTorch's meta layout disagrees with its own CPU kernel's (floor_divide and
                # copysign of a transposed and a broadcast operand): ours is the CPU one
                want = got
            assert got == want, f'{ctx}:\n  ours  {got}\n  torch {want}'
            checked += 1
    assert checked or op.name in NO_META_SAMPLES, f'{op.name}: no sample ran on meta'


def _without_device(d):
    if isinstance(d, list):
        return [_without_device(v) for v in d]
    return d[:4] if isinstance(d, tuple) and len(d) == 6 else d


def _torch_cpu_layout(op, form, sample):
    targs, tkw = opdb.materialize(sample, torch)
    status, r = _outcome(lambda: op.call(form, torch, targs, tkw))
    return _without_device(_describe(r, [], torch)) if status == 'ok' else None


# ops whose every sample is data-dependent on meta (torch raises for all of them)
NO_META_SAMPLES = {'nonzero', 'argwhere', 'masked_select', 'unique', 'unique_consecutive',
                   'bincount', 'equal', 'allclose', 'cov', 'corrcoef',
                   'linalg.lstsq',  # PyTorch has no meta kernel for it
                   '_standard_gamma_grad', '_dirichlet_grad'}  # nor for these


def test_factories_on_meta(lib):
    for fn, args in ((lib.arange, (5,)), (lib.zeros, ((2, 3),)), (lib.ones, ((4,),)),
                     (lib.empty, ((2, 2),)), (lib.full, ((3,), 1.5)), (lib.randn, ((2, 3),)),
                     (lib.rand, ((2,),)), (lib.eye, (3,)), (lib.linspace, (0, 1, 5))):
        t = fn(*args, device='meta')
        ref = getattr(torch, fn.__name__)(*args, device='meta')
        assert (t.device.type, tuple(t.shape), opdb.dtype_name(t.dtype)) == \
            ('meta', tuple(ref.shape), opdb.dtype_name(ref.dtype)), fn.__name__


def test_reading_meta_data_raises():
    import tensorplay as tp
    x = tp.empty(4, device='meta')
    with pytest.raises(NotImplementedError, match='Cannot copy out of meta tensor; no data!'):
        x.tolist()  # PyTorch's class and words, and item()'s below
    with pytest.raises(RuntimeError, match=r'Tensor.item\(\) cannot be called on meta tensors'):
        x[0].item()
    with pytest.raises(TypeError, match='(?i)meta'):  # PyTorch's numpy() raises TypeError too
        x.numpy()


def test_meta_repr_matches_torch():
    import tensorplay as tp
    cases = [lambda lib: lib.empty(4, device='meta'),
             lambda lib: lib.empty(2, 3, dtype=lib.int64, device='meta'),
             lambda lib: lib.empty(2, device='meta', requires_grad=True) * 2,
             lambda lib: lib.empty((), device='meta')]
    for make in cases:
        assert repr(make(tp)) == repr(make(torch)).replace('torch.', 'tensorplay.')
