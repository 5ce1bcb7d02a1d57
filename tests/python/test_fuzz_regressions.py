"""Focused regression tests for the differential-fuzzing findings of docs/fuzz_findings.md:
each runs the same call in torch and tensorplay and compares the outcome (result dtype,
shape, strides, values, or the exception class)."""
import os
import subprocess
import sys
import warnings

import pytest
import torch

import tensorplay as tp


def _both(fn):
    """fn(lib) in torch and tensorplay: ('ok', result) or ('raised', exception class name)."""
    out = []
    for lib in (torch, tp):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')  # torch's warning on resizing a non-empty out=
            try:
                out.append(('ok', fn(lib)))
            except Exception as e:  # noqa: BLE001 - the class is the outcome
                out.append(('raised', type(e).__name__))
    return out


def _same_outcome(fn):
    (ts, t), (ls, l) = _both(fn)
    assert ts == ls, f'torch {ts} {t}, tensorplay {ls} {l}'
    if ts == 'raised':
        assert t == l
    return t, l


def _same_layout(fn):
    t, l = _same_outcome(fn)
    if isinstance(t, str):  # both raised the same class
        return
    assert tuple(t.shape) == tuple(l.shape)
    assert t.stride() == l.stride()
    torch.testing.assert_close(torch.tensor(l.tolist()), torch.tensor(t.tolist()), check_dtype=False)


# F4: dtype checks also run on empty inputs
@pytest.mark.parametrize('op', ['floor', 'ceil', 'trunc', 'round', 'abs', 'frac', 'bitwise_not'])
@pytest.mark.parametrize('dtype', ['bool', 'float32', 'int64'])
@pytest.mark.parametrize('shape', [(2,), (0,)])
def test_unary_dtype_support_on_empty(op, dtype, shape):
    _same_outcome(lambda lib: getattr(lib, op)(lib.ones(shape, dtype=getattr(lib, dtype))).dtype is not None)


@pytest.mark.parametrize('op', ['remainder', 'fmod', 'hypot', 'gcd', 'bitwise_or', 'bitwise_left_shift'])
@pytest.mark.parametrize('dtype', ['bool', 'float32', 'int32'])
def test_binary_dtype_support_on_empty(op, dtype):
    _same_outcome(lambda lib: getattr(lib, op)(lib.ones(0, dtype=getattr(lib, dtype)),
                                               lib.ones(0, dtype=getattr(lib, dtype))).shape == (0,))


# F1: an out= that is resized takes the inputs' layout
@pytest.mark.parametrize('out_shape', [(0,), (5,), (3, 4)])
def test_resized_out_follows_input_layout(out_shape):
    def call(lib):
        x = lib.arange(12.).reshape(4, 3).t()
        o = lib.empty(out_shape)
        lib.sinh(x, out=o)
        return o
    _same_layout(call)

    def call2(lib):
        x = lib.arange(24.).reshape(2, 3, 4).permute(2, 0, 1)
        o = lib.empty(0, dtype=lib.bool)
        return lib.eq(x, x[:1], out=o)
    _same_layout(call2)


# F2: nonzero / argwhere / unique(dim=) results are laid out like PyTorch's
@pytest.mark.parametrize('shape', [(3, 4), (5,), (), (2, 3, 4), (0, 3)])
def test_nonzero_argwhere_layout(shape):
    def values(lib):
        return (lib.arange(max(1, torch.Size(shape).numel())) % 3)[:torch.Size(shape).numel()].reshape(shape)
    _same_layout(lambda lib: lib.nonzero(values(lib)))
    _same_layout(lambda lib: lib.argwhere(values(lib)))
    _same_layout(lambda lib: values(lib).nonzero())


@pytest.mark.parametrize('out', ['empty', 'right', 'wrong', 'float'])
def test_nonzero_out(out):
    def call(lib):
        x = lib.tensor([[1., 0., 2.], [0., 3., 4.]])
        o = {'empty': lambda: lib.empty(0, dtype=lib.int64), 'right': lambda: lib.zeros(4, 2, dtype=lib.int64),
             'wrong': lambda: lib.zeros(5, dtype=lib.int64), 'float': lambda: lib.zeros(0)}[out]()
        r = lib.nonzero(x, out=o)
        assert r is o
        return o
    _same_layout(call)


@pytest.mark.parametrize('dim', [0, 1, 2, -1])
@pytest.mark.parametrize('fn', ['unique', 'unique_consecutive'])
def test_unique_dim_layout(fn, dim):
    def call(lib):
        x = lib.tensor([[[1, 0], [1, 1], [0, 1]], [[1, 0], [1, 1], [1, 1]]])
        return getattr(lib, fn)(x, dim=dim)
    _same_layout(call)


# F5: out= dtype checks
@pytest.mark.parametrize('op', ['abs', 'neg', 'sign', 'sgn', 'floor', 'ceil', 'trunc', 'fix', 'round',
                                'frac', 'bitwise_not', 'nan_to_num', 'isposinf', 'isneginf', 'signbit',
                                'square', 'exp', 'logical_not'])
@pytest.mark.parametrize('dtypes', [('float32', 'float64'), ('int64', 'int32'), ('int64', 'float32'),
                                    ('float32', 'bool'), ('int32', 'int32')])
def test_unary_out_dtype(op, dtypes):
    def call(lib):
        x = lib.tensor([1.5, -2.0, 0.0]).to(getattr(lib, dtypes[0]))
        o = lib.empty(3, dtype=getattr(lib, dtypes[1]))
        return getattr(lib, op)(x, out=o)
    _same_outcome(call)


def test_clamp_scalar_out_dtype():
    _same_outcome(lambda lib: lib.clamp(lib.tensor([1, 5], dtype=lib.int8), None, 1,
                                        out=lib.empty(2, dtype=lib.int64)))
    _same_outcome(lambda lib: lib.clamp(lib.tensor([1, 5]), 0.5, out=lib.empty(2)))
    _same_outcome(lambda lib: lib.tensor([1, 5]).clamp_(0.5))


@pytest.mark.parametrize('factory', [
    lambda lib, **kw: lib.zeros(3, **kw), lambda lib, **kw: lib.ones(2, 2, **kw),
    lambda lib, **kw: lib.empty(3, **kw), lambda lib, **kw: lib.full((3,), 2, **kw),
    lambda lib, **kw: lib.arange(4, **kw), lambda lib, **kw: lib.linspace(0, 1, 5, **kw),
    lambda lib, **kw: lib.logspace(0, 1, 5, **kw), lambda lib, **kw: lib.eye(3, **kw)])
@pytest.mark.parametrize('dtype', [None, 'int32', 'float64'])
def test_factory_out_dtype(factory, dtype):
    def call(lib):
        kw = {} if dtype is None else {'dtype': getattr(lib, dtype)}
        o = lib.empty(0, dtype=lib.float64)
        r = factory(lib, out=o, **kw)
        assert r is o
        return str(o.dtype).split('.')[-1], tuple(o.shape)
    t, l = _same_outcome(call)
    assert t == l


# F10: bool products with an empty operand return before the dtype check, as in PyTorch
@pytest.mark.parametrize('call', [
    lambda lib, o: lib.mm(o(0, 3), o(3, 2)), lambda lib, o: lib.mm(o(2, 0), o(0, 2)),
    lambda lib, o: lib.mv(o(2, 0), o(0)), lambda lib, o: lib.bmm(o(1, 2, 0), o(1, 0, 2)),
    lambda lib, o: lib.matmul(o(2, 0), o(0, 2)), lambda lib, o: lib.dot(o(0), o(0)),
    lambda lib, o: lib.inner(o(2, 0), o(3, 0)), lambda lib, o: lib.linalg.matrix_power(o(0, 0), 3),
    lambda lib, o: lib.tensordot(o(2, 0), o(0, 2), 1), lambda lib, o: lib.mm(o(2, 2), o(2, 2)),
    lambda lib, o: lib.addmm(o(2, 2), o(2, 0), o(0, 2)), lambda lib, o: lib.addmm(o(2, 2), o(2, 0), o(0, 2), beta=0),
    lambda lib, o: lib.addmv(o(2), o(2, 0), o(0)), lambda lib, o: lib.baddbmm(o(1, 2, 2), o(1, 2, 0), o(1, 0, 2))])
def test_bool_products_of_empty(call):
    def run(lib):
        r = call(lib, lambda *s: lib.ones(*s, dtype=lib.bool))
        return tuple(r.shape), r.tolist()
    t, l = _same_outcome(run)
    assert t == l


# D3 narrowed: a pointwise out= that is also an input is not resized (PyTorch's TensorIterator)
def test_out_that_is_an_input_is_not_resized():
    def run(lib):
        a = lib.ones(3)
        return lib.add(a, lib.ones(2, 3), out=a)
    _same_outcome(run)
    _same_layout(lambda lib: (lambda a: lib.mul(a, lib.ones(2, 3), out=a))(lib.ones(2, 3)))


# F7: a Tensor where a tuple out= belongs is a TypeError before any other check
@pytest.mark.parametrize('call', [lambda lib, x, o: lib.frexp(x, out=o), lambda lib, x, o: lib.median(x, 7, out=o),
                                  lambda lib, x, o: lib.cummax(x, 7, out=o), lambda lib, x, o: lib.aminmax(x, dim=7, out=o),
                                  lambda lib, x, o: lib.mode(x, 7, out=o)])
def test_tuple_out_checked_first(call):
    _same_outcome(lambda lib: call(lib, lib.tensor([1.0, 2.0]), lib.empty(2)))


# F6: the exception class where PyTorch reads a size of a 0-d (or too small) tensor first
_F = lambda lib: lib.nn.functional


@pytest.mark.parametrize('call', [
    lambda lib, x: _F(lib).avg_pool2d(x, 2), lambda lib, x: _F(lib).unfold(x, 2),
    lambda lib, x: lib.addbmm(lib.ones(2, 2), x, lib.ones(1, 2, 2)),
    lambda lib, x: lib.addbmm(lib.ones(2, 2), lib.ones(1, 2, 2), x),
    lambda lib, x: lib.mv(x, lib.ones(2)), lambda lib, x: lib.linalg.cross(x, x),
    lambda lib, x: _F(lib).grid_sample(x, lib.ones(1, 2, 2, 2), align_corners=False),
    lambda lib, x: _F(lib).grid_sample(lib.ones(1, 1, 2, 2), x, align_corners=False),
    lambda lib, x: lib.repeat_interleave(x, lib.tensor([1, 2]), dim=0),
    lambda lib, x: _F(lib).scaled_dot_product_attention(x, lib.ones(2, 2), lib.ones(2, 2)),
    lambda lib, x: lib.split(x, 1), lambda lib, x: lib.chunk(x, 2)])
@pytest.mark.parametrize('shape', [(), (2,), (2, 2)])
def test_error_class_on_small_inputs(call, shape):
    _same_outcome(lambda lib: call(lib, lib.ones(shape)))


@pytest.mark.parametrize('shape', [(2,), (2, 2), (1, 2, 2), (1, 1, 2, 2), (1, 1, 1, 2, 2)])
@pytest.mark.parametrize('pad', [(1,), (1, 1), (1, 1, 1, 1), (1, 1, 1, 1, 1, 1)])
@pytest.mark.parametrize('mode', ['constant', 'reflect', 'replicate', 'circular'])
def test_pad_checks(shape, pad, mode):
    _same_outcome(lambda lib: _F(lib).pad(lib.ones(shape), pad, mode=mode).shape)


# F8: a written tensor that shares memory with an input it reads is refused
_OVERLAP = {
    'hstack': lambda lib: (lambda a, b: lib.hstack((a, b), out=b))(lib.tensor(1.0), lib.tensor(2.0)),
    'stack': lambda lib: (lambda a, b: lib.stack([a, b], -1, out=b))(lib.ones(2, 3), lib.ones(2, 3)),
    'cat': lambda lib: (lambda a, b: lib.cat([a, b], out=b))(lib.ones(2, 3), lib.ones(2, 3)),
    'cat_empty_out': lambda lib: (lambda a, b: lib.cat([a, b], out=a))(lib.ones(0), lib.ones(2, 3)),
    'column_stack': lambda lib: (lambda x: lib.column_stack([x, x], out=x))(lib.ones(4)),
    'scatter_add_src': lambda lib: (lambda x, s: lib.scatter_add(x, 0, lib.tensor([0, 1, 2]), s, out=s))(
        lib.ones(3), lib.ones(3)),
    'scatter_add_self': lambda lib: (lambda x, s: lib.scatter_add(x, 0, lib.tensor([0, 1, 2]), s, out=x))(
        lib.ones(3), lib.ones(3)),
    'scatter_inplace': lambda lib: (lambda x: x.scatter_(0, lib.tensor([0, 1, 2]), x))(lib.ones(3)),
    'index_add_src': lambda lib: (lambda s: lib.index_add(lib.ones(3), 0, lib.tensor([0]), s, out=s))(lib.ones(1)),
    'index_copy_inplace': lambda lib: (lambda x: x.index_copy_(0, lib.tensor([0, 1, 2]), x))(lib.ones(3)),
    'index_add_index': lambda lib: (lambda i: lib.index_add(lib.ones(3, dtype=lib.int64), 0, i, i, out=i))(
        lib.tensor([0, 1, 2])),
}


@pytest.mark.parametrize('name', sorted(_OVERLAP))
def test_written_tensor_overlapping_an_input(name):
    _same_outcome(lambda lib: tuple(_OVERLAP[name](lib).shape))


# F7: PyTorch's order of checks (the dim, then sizes or dtypes)
@pytest.mark.parametrize('call', [
    lambda lib: lib.kthvalue(lib.tensor([True]), 1, 5), lambda lib: lib.kthvalue(lib.tensor([True, False]), 5, 0),
    lambda lib: lib.amax(lib.ones(0, 3)), lambda lib: lib.amax(lib.ones(0, 3), 0), lambda lib: lib.amin(lib.ones(0, 3), ()),
    lambda lib: lib.median(lib.tensor([True]), 5), lambda lib: lib.median(lib.zeros(0, dtype=lib.bool), 0),
    lambda lib: lib.nanmedian(lib.tensor([True]), 1),
    lambda lib: lib.logcumsumexp(lib.ones(2, dtype=lib.int32), 4),
    lambda lib: lib.stack([lib.ones(2), lib.ones(3)], 5), lambda lib: lib.unflatten(lib.tensor(1.0), 1, (1,)),
    lambda lib: lib.unflatten(lib.tensor(1.0), 0, (1,)), lambda lib: lib.diag_embed(lib.tensor(1.0), 0, 0, 1),
    lambda lib: lib.diag_embed(lib.tensor(1.0), 0, 0, -1)])
def test_order_of_checks(call):
    _same_outcome(lambda lib: tuple(call(lib)[0].shape) if isinstance(call(lib), tuple) else tuple(call(lib).shape))


# F1 (linalg): a resized out= takes the factor's column-major layout; the legacy cholesky's stays
# contiguous, and returns an empty result for an empty input before any check
@pytest.mark.parametrize('fn', ['linalg.cholesky', 'linalg.inv', 'inverse', 'cholesky'])
@pytest.mark.parametrize('out_shape', [(0,), (3, 3), (5,)])
def test_linalg_out_layout(fn, out_shape):
    def call(lib):
        f = lib.linalg.cholesky if fn == 'linalg.cholesky' else lib.linalg.inv if fn == 'linalg.inv' \
            else getattr(lib, fn)
        a = lib.eye(3) + 0.1
        o = lib.empty(out_shape)
        f(a, out=o)
        return o
    _same_layout(call)


@pytest.mark.parametrize('shape', [(0, 3), (4, 0), (0, 0), (2, 0, 3)])
@pytest.mark.parametrize('dtype', ['float32', 'bool', 'int32'])
def test_legacy_cholesky_of_empty(shape, dtype):
    _same_layout(lambda lib: lib.cholesky(lib.ones(shape, dtype=getattr(lib, dtype))))


# dtype rules of the norms and pools (mixed dtypes on CPU, pooling to size 1 is a mean, empty
# inputs skip the 2-d kernel's dtype dispatch, replication pads of bool on meta)
@pytest.mark.parametrize('call', [
    lambda lib, F: F.adaptive_avg_pool2d(lib.ones(1, 2, 2, dtype=lib.int32), 1),
    lambda lib, F: F.adaptive_avg_pool2d(lib.ones(0, 3, 6, 6, dtype=lib.int32), 4),
    lambda lib, F: F.adaptive_avg_pool2d(lib.ones(1, 3, 6, 6, dtype=lib.int32), 4),
    lambda lib, F: F.adaptive_avg_pool1d(lib.ones(0, 2, 3, dtype=lib.int32), 2),
    lambda lib, F: F.adaptive_avg_pool3d(lib.ones(0, 1, 2, 2, 2, dtype=lib.int32), 1),
    lambda lib, F: F.adaptive_avg_pool3d(lib.ones(0, 1, 2, 2, 2, dtype=lib.int32), 2),
    lambda lib, F: F.batch_norm(lib.ones(2, 3), lib.zeros(3, dtype=lib.float64), lib.ones(3, dtype=lib.float64)),
    lambda lib, F: F.batch_norm(lib.ones(2, 3, dtype=lib.bfloat16), lib.zeros(3), lib.ones(3)),
    lambda lib, F: F.batch_norm(lib.ones(2, 3, dtype=lib.float64), lib.zeros(3), lib.ones(3)),
    lambda lib, F: F.group_norm(lib.ones(2, 4), 2, weight=lib.ones(4, dtype=lib.float64)),
    lambda lib, F: F.group_norm(lib.ones(2, 4, dtype=lib.bfloat16), 2, weight=lib.ones(4)),
    lambda lib, F: F.pad(lib.ones(1, 2, 3, dtype=lib.bool, device='meta'), (1, 1), mode='replicate'),
    lambda lib, F: F.pad(lib.ones(1, 2, 3, dtype=lib.bool, device='meta'), (1, 1), mode='reflect')])
def test_norm_and_pool_dtype_rules(call):
    t, l = _same_outcome(lambda lib: (str(call(lib, lib.nn.functional).dtype).split('.')[-1],
                                      tuple(call(lib, lib.nn.functional).shape)))
    assert t == l


# C6: a convolution with an empty kernel is refused (it wrote out of bounds: heap corruption)
@pytest.mark.parametrize('call', [
    lambda F, lib: F.conv1d(lib.ones(1, 2, 5), lib.ones(3, 2, 0)),
    lambda F, lib: F.conv2d(lib.ones(1, 2, 5, 5), lib.ones(3, 2, 0, 3)),
    lambda F, lib: F.conv2d(lib.ones(1, 2, 5, 5), lib.ones(3, 2, 3, 0)),
    lambda F, lib: F.conv3d(lib.ones(1, 2, 5, 5, 5), lib.ones(3, 2, 3, 0, 3)),
    lambda F, lib: F.conv_transpose1d(lib.ones(1, 2, 5), lib.ones(2, 3, 0)),
    lambda F, lib: F.conv_transpose2d(lib.ones(1, 2, 5, 5), lib.ones(2, 3, 0, 3)),
    lambda F, lib: F.conv_transpose3d(lib.ones(1, 2, 5, 5, 5), lib.ones(2, 3, 3, 0, 3))])
def test_conv_empty_kernel(call):
    _same_outcome(lambda lib: call(lib.nn.functional, lib).shape)


# out= dtype checked before the dims (reductions), negative expand sizes, aten group_norm's IndexError
@pytest.mark.parametrize('call', [
    lambda lib: lib.amax(lib.ones(2, 3), 5, out=lib.empty(0, dtype=lib.float64)),
    lambda lib: lib.amin(lib.ones(2, 3), 1, out=lib.empty(0, dtype=lib.float64)),
    lambda lib: lib.any(lib.ones(2, 3), 5, out=lib.empty(0)),
    lambda lib: lib.any(lib.ones(2, 3), 1, out=lib.empty(0, dtype=lib.uint8)),
    lambda lib: lib.all(lib.ones(2, 3), out=lib.empty(0, dtype=lib.int32)),
    lambda lib: lib.logcumsumexp(lib.ones(2, 3), 5, out=lib.empty(0, dtype=lib.float64)),
    lambda lib: lib.group_norm(lib.tensor(1.0), 1), lambda lib: lib.group_norm(lib.ones(2), 1),
    lambda lib: lib.nn.functional.group_norm(lib.tensor(1.0), 1),
    lambda lib: lib.ones(2, 1).expand(2, -3), lambda lib: lib.ones(1).expand(3, -1)])
def test_checks_before_dims_and_sizes(call):
    _same_outcome(lambda lib: tuple(call(lib).shape))


# F13: an index write into an expanded (self-overlapping) tensor is refused like PyTorch
@pytest.mark.parametrize('call', [
    lambda lib, x, i: x.index_add_(0, i, lib.ones(1)), lambda lib, x, i: x.index_copy_(0, i, lib.ones(1)),
    lambda lib, x, i: x.scatter_(0, i, lib.ones(1)), lambda lib, x, i: x.index_reduce_(0, i, lib.ones(1), 'prod'),
    lambda lib, x, i: lib.index_add(lib.ones(3), 0, i, lib.ones(1), out=x), lambda lib, x, i: x.fill_(1.0),
    lambda lib, x, i: lib.any(lib.ones(2, 3), 1, out=lib.empty(0, dtype=lib.uint8))])
def test_index_writes_into_expanded(call):
    _same_outcome(lambda lib: tuple(call(lib, lib.ones(1).expand(3), lib.tensor([0])).shape))


# repeat_interleave's repeats dtypes (int32/int64 only), kthvalue over an empty dim before its dtype
@pytest.mark.parametrize('dtype', ['int8', 'uint8', 'int16', 'int32', 'int64', 'bool', 'float32'])
def test_repeat_interleave_repeats_dtype(dtype):
    _same_outcome(lambda lib: lib.repeat_interleave(lib.ones(3), lib.ones(3, dtype=getattr(lib, dtype))).shape)


@pytest.mark.parametrize('dtype', ['bool', 'float32'])
def test_kthvalue_empty_dim(dtype):
    _same_outcome(lambda lib: lib.zeros(6, 0, dtype=getattr(lib, dtype)).kthvalue(1, 1)[0].shape)


# F5 (more): sum / prod without dtype= write any out= dtype; triu / tril / diag / where refuse another one
@pytest.mark.parametrize('call', [
    lambda lib: lib.sum(lib.tensor([1, 2, 3]), 0, out=lib.empty(0)),
    lambda lib: lib.sum(lib.tensor([1, 2, 3]), 0, out=lib.empty(0, dtype=lib.bool)),
    lambda lib: lib.prod(lib.tensor([1, 2, 3]), 0, out=lib.empty(0, dtype=lib.int32)),
    lambda lib: lib.sum(lib.tensor([1, 2, 3]), 0, dtype=lib.int64, out=lib.empty(0)),
    lambda lib: lib.triu(lib.ones(2, 2), out=lib.empty(0, dtype=lib.float64)),
    lambda lib: lib.tril(lib.ones(2, 2), out=lib.empty(0)),
    lambda lib: lib.diag(lib.ones(2), out=lib.empty(0, dtype=lib.float64)),
    lambda lib: lib.diag(lib.ones(2, 2), out=lib.empty(0, dtype=lib.int32)),
    lambda lib: lib.where(lib.tensor([True]), lib.ones(1), lib.ones(1), out=lib.empty(0, dtype=lib.float64))])
def test_out_dtype_rules_more(call):
    t, l = _same_outcome(lambda lib: (str(call(lib).dtype).split('.')[-1], call(lib).tolist()))
    assert t == l


# unfold's dim (IndexError, also on a 0-d tensor) and negative size; renorm's dim range and NaN maxnorm
@pytest.mark.parametrize('call', [
    lambda lib: lib.tensor(1.0).unfold(1, 3, 1), lambda lib: lib.tensor(1.0).unfold(-1, 1, 1),
    lambda lib: lib.ones(3).unfold(0, -1, 1), lambda lib: lib.ones(3).unfold(5, 1, 1),
    lambda lib: lib.ones(2, 3).renorm(2, 7, 1.0), lambda lib: lib.ones(2, 3).renorm(2, 0, float('nan')),
    lambda lib: lib.ones(2, 3).renorm(2, -2, 1.0)])
def test_unfold_renorm_checks(call):
    _same_outcome(lambda lib: tuple(call(lib).shape))


# index_select's errors: RuntimeError for dim 1 of a matrix or more (PyTorch's dim-1 kernel) and for an
# empty indexed dim, IndexError otherwise
@pytest.mark.parametrize('shape, dim', [((4, 6), 0), ((4, 6), 1), ((2, 4, 6), 1), ((2, 4, 6), 2), ((0, 0), 0),
                                        ((3, 0), 1), ((6,), 0), ((0, 3), 1)])
def test_index_select_errors(shape, dim):
    _same_outcome(lambda lib: lib.ones(shape).index_select(dim, lib.tensor([7])).shape)


# bincount of an empty input: int64 zeros before the weights are checked
@pytest.mark.parametrize('weights', [None, (5,), (2, 2)])
def test_bincount_empty(weights):
    def call(lib):
        w = None if weights is None else lib.ones(weights)
        r = lib.bincount(lib.tensor([], dtype=lib.int64), weights=w, minlength=3)
        return str(r.dtype).split('.')[-1], r.tolist()
    t, l = _same_outcome(call)
    assert t == l


# index_copy with a 0-d source: exactly one index (IndexError), checked before the bounds
@pytest.mark.parametrize('index', [[0, 1, 2], [0], [9, 1, 2]])
def test_index_copy_scalar_source(index):
    _same_outcome(lambda lib: lib.ones(4, 6).index_copy(0, lib.tensor(index), lib.tensor(1.0)).shape)


# gcd/lcm of the most negative integer (Note [gcd and lcm of the most negative integer]):
# gcd(INT_MIN, 5) was -1 and lcm divided INT_MIN by -1, a SIGFPE (PyTorch 2.13 dies there
# too, so the reference is Python's math on the magnitudes, wrapped into the dtype)
@pytest.mark.parametrize('dtype,bits', [('int8', 8), ('int16', 16), ('int32', 32), ('int64', 64)])
def test_gcd_lcm_of_the_most_negative_integer(dtype, bits):
    import math
    lo = -(1 << (bits - 1))
    others = [5, 3, -7, 8, -8, 1, -1, 0, lo, (1 << (bits - 1)) - 1]

    def wrap(v):
        v &= (1 << bits) - 1
        return v - (1 << bits) if v >> (bits - 1) else v
    a = tp.full((len(others),), lo, dtype=getattr(tp, dtype))
    b = tp.tensor(others, dtype=getattr(tp, dtype))
    assert tp.gcd(a, b).tolist() == [wrap(math.gcd(lo, o)) for o in others]
    assert tp.lcm(a, b).tolist() == [wrap(math.lcm(lo, o)) for o in others]
    # where PyTorch's arithmetic is defined, the same values as PyTorch's
    t = torch.tensor([lo], dtype=getattr(torch, dtype))
    for o in (8, -8, 1, 0):
        ot = torch.tensor([o], dtype=getattr(torch, dtype))
        oo = tp.tensor([o], dtype=getattr(tp, dtype))
        assert tp.gcd(a[:1], oo).tolist() == torch.gcd(t, ot).tolist()
        assert tp.lcm(a[:1], oo).tolist() == torch.lcm(t, ot).tolist()


# crashes of fuzz seed 20261209 (10 minutes at the session's end), each now an outcome
def test_addmv_out_is_its_matrix_and_must_be_resized_does_not_corrupt_the_heap():
    m = tp.arange(12, dtype=tp.float64).reshape(3, 4)
    ref = tp.addmv(tp.ones(3, dtype=tp.float64), m.clone(), tp.ones(4, dtype=tp.float64), beta=0)
    out = tp.addmv(tp.ones(3, dtype=tp.float64), m, tp.ones(4, dtype=tp.float64), beta=0, out=m)
    assert out is m and m.shape == (3,) and m.tolist() == ref.tolist()  # read before resized (D3)


def test_tensordot_contracting_a_0d_tensor_raises_indexerror():
    _same_outcome(lambda lib: lib.tensordot(lib.ones(2, 3, dtype=lib.bool), lib.tensor(True),
                                            dims=([1], [0])))


def test_bincount_of_the_largest_int64_raises():
    _same_outcome(lambda lib: lib.bincount(lib.tensor([1, 2 ** 63 - 1]), lib.ones(2)))


# triage of seed 20261209 (branch fuzz3): results compared with torch's, value for value
def _same_result(fn):
    t, l = _same_outcome(fn)
    if isinstance(t, str):  # both raised the same class
        return
    assert db_dtype(l) == str(t.dtype).replace('torch.', '') and tuple(l.shape) == tuple(t.shape)
    assert l.tolist() == t.tolist()


def db_dtype(t):
    return str(t.dtype).replace('tensorplay.', '')


@pytest.mark.parametrize('shape', [(2, 0, 7), (0, 2, 7), (2, 3, 0), (3, 0), (0, 7)])
def test_adaptive_avg_pool1d_of_zero_channels(shape):
    _same_result(lambda lib: lib.adaptive_avg_pool1d(lib.zeros(shape), 4))


@pytest.mark.parametrize('shape', [(2, 0, 7, 3), (2, 3, 0, 3), (3, 0, 3), (0, 7, 3), (2, 0, 7, 3, 2)])
def test_adaptive_pools_of_empty_dims(shape):
    _same_result(lambda lib: lib.nn.functional.adaptive_avg_pool2d(lib.zeros(shape[:4]), (4, 2)))
    _same_result(lambda lib: lib.nn.functional.adaptive_max_pool2d(lib.zeros(shape[:4]), (4, 2))[0])
    if len(shape) >= 4:
        _same_result(lambda lib: lib.nn.functional.adaptive_avg_pool3d(lib.zeros(shape + (2,) * (5 - len(shape))),
                                                                       (4, 2, 1)))


@pytest.mark.parametrize('case', ['int-empty', 'float-weight-empty', 'empty-weight', 'int', 'int-float-weight',
                                  'half-double-weight', 'float-bool-bias', 'bf16-float-bias'])
def test_batch_norm_checks_in_pytorchs_order(case):
    def call(lib):
        z = lib.zeros
        x = {'int-empty': z(2, 0, 4, dtype=lib.int16), 'float-weight-empty': z(2, 0, 4, dtype=lib.int16),
             'empty-weight': z(2, 0, 4), 'int': z(2, 3, 4, dtype=lib.int32),
             'int-float-weight': z(2, 3, 4, dtype=lib.int32), 'half-double-weight': z(2, 3, 4, dtype=lib.float16),
             'float-bool-bias': z(2, 3, 4), 'bf16-float-bias': z(2, 3, 4, dtype=lib.bfloat16)}[case]
        w = {'int-empty': z(3, dtype=lib.int16) + 2, 'float-weight-empty': z(3) + 2, 'empty-weight': z(0),
             'int': z(3, dtype=lib.int32), 'int-float-weight': z(3, dtype=lib.float64),
             'half-double-weight': z(3, dtype=lib.float64), 'float-bool-bias': z(3),
             'bf16-float-bias': z(3, dtype=lib.bfloat16)}[case]
        b = {'float-weight-empty': z(3) + 1, 'float-bool-bias': z(3, dtype=lib.bool),
             'bf16-float-bias': z(3)}.get(case)
        return lib.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, True)
    _same_result(call)


@pytest.mark.parametrize('case', ['int', 'int-sizes', 'int-mixed', 'later-param', 'groups'])
def test_native_group_norm_checks_in_pytorchs_order(case):
    def call(lib):
        x = lib.zeros(2, 4, 2, dtype=lib.float32 if case == 'later-param' else lib.int16)
        w = {'int-mixed': lib.ones(4, dtype=lib.float64), 'later-param': lib.ones(4)}.get(case)
        b = {'later-param': lib.ones(4, dtype=lib.int32)}.get(case)
        hxw = 3 if case == 'int-sizes' else 2
        return lib.native_group_norm(x, w, b, 2, 4, hxw, 3 if case == 'groups' else 2, 1e-5)[0]
    _same_result(call)


@pytest.mark.parametrize('dtype', ['int8', 'int16', 'int32', 'int64', 'uint8'])
@pytest.mark.parametrize('src', ['float32', 'float64', 'float16', 'bfloat16'])
def test_float_to_int_casts_of_nan_inf_and_out_of_range(src, dtype):
    values = [float('nan'), float('inf'), -float('inf'), 3e10, -3e10, 2.5, -7.9, 40000.7, 2147483903.0]
    _same_result(lambda lib: lib.tensor(values, dtype=getattr(lib, src)).to(getattr(lib, dtype)))


def test_isclose_of_opposite_infinities():
    inf, nan = float('inf'), float('nan')
    for equal_nan in (False, True):
        _same_result(lambda lib: lib.isclose(lib.tensor([inf, inf, -inf, nan, 1.0, inf]),
                                             lib.tensor([-inf, inf, inf, nan, inf, 1.0]), equal_nan=equal_nan))


@pytest.mark.parametrize('shape,reps', [((2, 0), (2, -1)), ((2, 0), (-1, 2)), ((2, 3), (-1, 0)), ((2, 0), (1, -2, 3)),
                                        ((2, 3), (2, -1)), ((0,), (-1, 2))])
def test_repeat_checks_the_result_sizes(shape, reps):
    _same_result(lambda lib: lib.zeros(shape).repeat(*reps))
    _same_result(lambda lib: lib.zeros(shape).tile(reps))


def test_repeat_on_meta_refuses_negative_repeats():
    _same_outcome(lambda lib: lib.zeros(2, 0, device='meta').repeat(2, -1).shape)


@pytest.mark.parametrize('a,b', [((2, 0, 3), (2, 3, 4)), ((2, 1, 0), (2, 0, 4)), ((2, 1, 3), (2, 3, 0)),
                                 ((2, 1, 3), (2, 3, 4))])
@pytest.mark.parametrize('da,db', [('int16', 'bool'), ('float32', 'int64'), ('int64', 'float32')])
def test_bmm_of_an_empty_operand_skips_the_dtype_check(a, b, da, db):
    _same_result(lambda lib: lib.bmm(lib.zeros(a, dtype=getattr(lib, da)), lib.zeros(b, dtype=getattr(lib, db))))


@pytest.mark.parametrize('case', ['empty-out', 'empty-out-int', 'zero-channels', 'negative', 'int', 'empty-batch'])
def test_max_unpool2d_empty_results_and_checks(case):
    def call(lib):
        i = lib.tensor([4, 6, 8, 11, 0, 7, 12, 10, 5, 6, 12, 10]).reshape(1, 3, 2, 2)
        x = lib.arange(12.).reshape(1, 3, 2, 2)
        size = [4, 4]
        if case == 'empty-out':
            size = [4, 0]
        elif case == 'empty-out-int':
            x, size = x.int(), [0, 4]
        elif case == 'zero-channels':
            x, i = x[:, :0], i[:, :0]
        elif case == 'negative':
            size = [-1, 4]
        elif case == 'int':
            x = x.int()
        elif case == 'empty-batch':
            x, i = x[:0], i[:0]
        return lib._C._nn.max_unpool2d(x, i, size) if lib is torch else lib.max_unpool2d(x, i, size)
    _same_result(call)


# linalg of empty float16/bfloat16/bool input: PyTorch's kernels return it before their dtype
# dispatch (geqrf and inv's low-precision check do not)
@pytest.mark.parametrize('dtype', ['float16', 'bfloat16', 'bool', 'int8'])
@pytest.mark.parametrize('shape', [(0, 0), (2, 0, 0), (0, 3, 3), (3, 3), (0, 3)])
@pytest.mark.parametrize('op', ['svdvals', 'det', 'slogdet', 'cholesky', 'cholesky_ex', 'solve', 'inv', 'eigvalsh',
                                'qr', 'matrix_norm2'])
def test_linalg_of_empty_low_precision_input(op, shape, dtype):
    def call(lib):
        x = lib.zeros(shape, dtype=getattr(lib, dtype))
        if op == 'solve':
            return lib.linalg.solve(x, x)
        if op == 'matrix_norm2':
            return lib.linalg.matrix_norm(x, 2)
        r = getattr(lib.linalg, op)(x)
        return r[0] if isinstance(r, tuple) else r
    _same_result(call)


# out= of matrix_rank / pinv / matrix_power takes any dtype the result casts to safely
@pytest.mark.parametrize('out_dtype', ['float16', 'int32', 'float64', 'bool', 'int64'])
@pytest.mark.parametrize('op', ['matrix_rank', 'matrix_rank_empty', 'pinv', 'pinv_empty', 'power0', 'power1',
                                'power-1', 'power2', 'power2_empty'])
def test_linalg_out_dtype_rules(op, out_dtype):
    def call(lib):
        o = lib.zeros(0, dtype=getattr(lib, out_dtype))
        eye = lib.eye(3) * 2
        if op.startswith('matrix_rank'):
            return lib.linalg.matrix_rank(lib.zeros(2, 0, 3) if op.endswith('empty') else eye, out=o)
        if op.startswith('pinv'):
            return lib.linalg.pinv(lib.zeros(0, 3) if op.endswith('empty') else eye, out=o)
        n = int(op[5:].split('_')[0])
        return lib.linalg.matrix_power(lib.zeros(0, 0) if op.endswith('empty') else eye, n, out=o)
    _same_result(call)


# empty inputs PyTorch returns before its dtype dispatch or dim check; trace's dtype first
@pytest.mark.parametrize('case', ['cummin-dim2', 'cummax-dim-5', 'cummin-bool', 'cummax-1d-dim1', 'cummin-0d-dim1',
                                  'cumsum-dim2'])
def test_cummax_cummin_of_empty_input(case):
    def call(lib):
        x = {'cummin-bool': lib.zeros(0, 3, dtype=lib.bool), 'cummax-1d-dim1': lib.zeros(0),
             'cummin-0d-dim1': lib.tensor(1.)}.get(case, lib.zeros(0, 3))
        dim = {'cummin-dim2': 2, 'cummax-dim-5': -5, 'cumsum-dim2': 2}.get(case, 1)
        if case == 'cumsum-dim2':
            return lib.cumsum(x, dim)
        return getattr(lib, case[:6])(x, dim)[0]
    _same_result(call)


@pytest.mark.parametrize('case', ['empty-self', 'empty-both', 'empty-self-2d', 'nonempty', 'int32-out'])
def test_searchsorted_of_empty_bool_input(case):
    def call(lib):
        z = lib.zeros
        b = lib.bool
        if case == 'empty-self':
            return lib.bucketize(z(0, 2, dtype=b), z(6, dtype=b))
        if case == 'empty-both':
            return lib.bucketize(z(0, 2, dtype=b), z(0, dtype=b))
        if case == 'empty-self-2d':
            return lib.searchsorted(z(0, 6, dtype=b), z(0, 2, dtype=b))
        if case == 'int32-out':
            return lib.searchsorted(z(6, dtype=b), z(0, dtype=b), out_int32=True)
        return lib.searchsorted(lib.tensor([False, True]), lib.tensor([True]))
    _same_result(call)


@pytest.mark.parametrize('op', ['softmax', 'log_softmax'])
@pytest.mark.parametrize('dtype', ['int32', 'bool', 'float32'])
@pytest.mark.parametrize('shape,dim', [((2, 0), 1), ((0, 3), 1), ((2, 0), 5), ((2, 3), 1)])
def test_softmax_of_empty_integer_input(op, dtype, shape, dim):
    _same_result(lambda lib: getattr(lib, op)(lib.zeros(shape, dtype=getattr(lib, dtype)), dim))


@pytest.mark.parametrize('shape', [(), (2,), (2, 2), (2, 2, 2), (0, 0)])
@pytest.mark.parametrize('dtype', ['bool', 'float32'])
def test_trace_checks_the_dtype_first(shape, dtype):
    _same_result(lambda lib: lib.trace(lib.zeros(shape, dtype=getattr(lib, dtype))))


@pytest.mark.parametrize('k,dim', [(1, 0), (0, 0), (1, 1), (1, -1)])
@pytest.mark.parametrize('shape', [(), (1,)])
def test_kthvalue_of_a_0d_bool_tensor(shape, k, dim):
    _same_result(lambda lib: lib.kthvalue(lib.ones(shape, dtype=lib.bool), k, dim)[0])


# an empty indexed dim: PyTorch's index_add writes nothing and checks no bounds; its
# index_copy/index_fill restride self over the index first (RuntimeError where self's other
# dims hold elements, nothing written where they do not)
@pytest.mark.parametrize('case', range(12))
def test_index_writes_into_an_empty_dim(case):
    def call(lib):
        z = lib.zeros
        return [lambda: z(0, 0).index_fill_(1, lib.tensor([2]), 1.),
                lambda: z(4, 0).index_fill_(1, lib.tensor([2]), 1.),
                lambda: z(0, 4).index_fill_(0, lib.tensor([-2]), 1.),
                lambda: z(0).index_fill_(0, lib.tensor([2]), 1.),
                lambda: z(0, 6).index_copy_(0, lib.tensor([3, 1, 2]), z(3, 6)),
                lambda: z(0).index_copy_(0, lib.tensor([3]), z(1)),
                lambda: z(0, 6).index_add_(0, lib.tensor([3, 1, 2]), z(3, 6)),
                lambda: z(0, 0).index_copy_(0, lib.tensor([3, 1, 2]), z(3, 0)),
                lambda: z(0, 6).index_add_(0, lib.tensor([3, 1, 2]), z(2, 6)),
                lambda: z(0, 6).index_copy_(0, lib.tensor([3, 1, 2]), z(2, 6)),
                lambda: z(0, 6).index_add(0, lib.tensor([3, 1, 2]), z(3, 6)),
                lambda: z(4, 2).index_fill_(1, lib.tensor([2]), 1.)][case]()
    _same_result(call)


# convolutions: PyTorch's CPU kernel, picked by the input's dtype after the shape checks,
# raises NotImplementedError for a dtype it lacks before the weight's dtype is compared
@pytest.mark.parametrize('xd,wd', [('int32', 'float32'), ('bool', 'int64'), ('int64', 'int64'), ('float32', 'int32'),
                                   ('float16', 'float32'), ('int32', 'float16'), ('int32', 'int32')])
@pytest.mark.parametrize('case', ['ct1d', 'ct2d', 'ct3d', 'c1d', 'c2d', 'c2d-dil', 'c3d', 'c3d-dil', 'c2d-empty',
                                  'c2d-badshape'])
def test_convolution_dtype_checks_in_pytorchs_order(case, xd, wd):
    def call(lib):
        F = lib.nn.functional

        def z(*s, dt):
            return lib.zeros(*s, dtype=getattr(lib, dt))
        return {'ct1d': lambda: F.conv_transpose1d(z(1, 4, 3, dt=xd), z(4, 1, 3, dt=wd)),
                'ct2d': lambda: F.conv_transpose2d(z(1, 4, 3, 3, dt=xd), z(4, 1, 3, 3, dt=wd), stride=2),
                'ct3d': lambda: F.conv_transpose3d(z(1, 4, 3, 3, 3, dt=xd), z(4, 1, 3, 3, 3, dt=wd)),
                'c1d': lambda: F.conv1d(z(1, 4, 5, dt=xd), z(2, 4, 3, dt=wd)),
                'c2d': lambda: F.conv2d(z(1, 4, 5, 5, dt=xd), z(2, 4, 3, 3, dt=wd)),
                'c2d-dil': lambda: F.conv2d(z(1, 4, 5, 5, dt=xd), z(2, 4, 3, 3, dt=wd), dilation=2),
                'c3d': lambda: F.conv3d(z(1, 4, 5, 5, 5, dt=xd), z(2, 4, 3, 3, 3, dt=wd)),
                'c3d-dil': lambda: F.conv3d(z(1, 4, 5, 5, 5, dt=xd), z(2, 4, 3, 3, 3, dt=wd), dilation=2),
                'c2d-empty': lambda: F.conv2d(z(0, 4, 5, 5, dt=xd), z(2, 4, 3, 3, dt=xd)),
                'c2d-badshape': lambda: F.conv2d(z(1, 3, 5, 5, dt=xd), z(2, 4, 3, 3, dt=wd))}[case]()
    _same_outcome(call)


@pytest.mark.parametrize('dtype', ['float32', 'int64'])
@pytest.mark.parametrize('case', ['zero-spatial', 'zero-spatial-pad', 'ct-zero-spatial', 'zero-batch', 'zero-chan',
                                  'groups-empty-w', 'groups-more-than-w', 'groups-div', 'ct1d-empty-w', 'ct2d-empty-w',
                                  'ct3d-empty-w'])
def test_convolution_empty_inputs_and_weights(case, dtype):
    def call(lib):
        F = lib.nn.functional

        def z(*s):
            return lib.zeros(*s, dtype=getattr(lib, dtype))
        return {'zero-spatial': lambda: F.conv2d(z(2, 4, 0, 5), z(3, 4, 1, 1)),
                'zero-spatial-pad': lambda: F.conv2d(z(2, 4, 0, 5), z(3, 4, 1, 1), padding=1),
                'ct-zero-spatial': lambda: F.conv_transpose2d(z(2, 4, 0, 5), z(4, 3, 1, 3)),
                'zero-batch': lambda: F.conv2d(z(0, 4, 3, 5), z(3, 4, 1, 1)),
                'zero-chan': lambda: F.conv2d(z(2, 0, 3, 5), z(3, 0, 1, 1)),
                'groups-empty-w': lambda: F.conv2d(z(2, 4, 3, 5), z(0, 1, 3, 3), groups=4),
                'groups-more-than-w': lambda: F.conv2d(z(2, 4, 3, 5), z(2, 1, 3, 3), groups=4),
                'groups-div': lambda: F.conv2d(z(2, 4, 3, 5), z(6, 1, 3, 3), groups=4),
                'ct1d-empty-w': lambda: F.conv_transpose1d(z(2, 4, 5), z(4, 0, 1), groups=4),
                'ct2d-empty-w': lambda: F.conv_transpose2d(z(2, 4, 5, 5), z(4, 0, 1, 1), groups=4),
                'ct3d-empty-w': lambda: F.conv_transpose3d(z(2, 4, 5, 5, 5), z(4, 0, 1, 1, 1), groups=4)}[case]()
    _same_outcome(call)


@pytest.mark.parametrize('dtype', ['int16', 'float32', 'bool'])
@pytest.mark.parametrize('shape,size', [((3, 4, 5), 0), ((3, 4, 5), (0, 2)), ((3, 4, 5), (2, 2)), ((2, 3, 4, 5), (2, 0)),
                                        ((3, 0, 5), (0, 2))])
def test_adaptive_avg_pool2d_to_an_empty_size_skips_the_dtype_check(shape, size, dtype):
    _same_result(lambda lib: lib.nn.functional.adaptive_avg_pool2d(lib.ones(shape, dtype=getattr(lib, dtype)), size))


# an unbatched input's dim 0 holds channels: pools and reflection/replication pads refuse it
# empty (the adaptive pools do not); avg_pool3d wants the unpadded input as large as the kernel;
# cdist refuses a NaN p
@pytest.mark.parametrize('case', ['ap3d-small', 'ap3d-ok', 'mp3d-small', 'ap3d-4d-zero', 'ap3d-5d-zero', 'mp3d-4d-zero',
                                  'mp2d-3d-zero', 'ap2d-3d-zero', 'ap1d-2d-zero', 'mp1d-2d-zero', 'aap2d-3d-zero',
                                  'amp2d-3d-zero', 'rp1d-2d-zero', 'rp1d-3d-zero-batch', 'rpl1d-2d-zero',
                                  'rp2d-3d-zero', 'rpl3d-4d-zero', 'circ-2d-zero', 'cdist-nan'])
def test_pools_and_pads_of_empty_unbatched_input(case):
    def call(lib):
        F, z = lib.nn.functional, lib.zeros
        return {'ap3d-small': lambda: F.avg_pool3d(z(2, 3, 1, 5, 5), 3, 2, 1),
                'ap3d-ok': lambda: F.avg_pool3d(z(2, 3, 3, 5, 5), 3, 2, 1),
                'mp3d-small': lambda: F.max_pool3d(z(2, 3, 1, 5, 5), 3, 2, 1),
                'ap3d-4d-zero': lambda: F.avg_pool3d(z(0, 5, 5, 5), 2),
                'ap3d-5d-zero': lambda: F.avg_pool3d(z(0, 2, 5, 5, 5), 2),
                'mp3d-4d-zero': lambda: F.max_pool3d(z(0, 5, 5, 5), 2),
                'mp2d-3d-zero': lambda: F.max_pool2d(z(0, 5, 5), 2),
                'ap2d-3d-zero': lambda: F.avg_pool2d(z(0, 5, 5), 2),
                'ap1d-2d-zero': lambda: F.avg_pool1d(z(0, 5), 2),
                'mp1d-2d-zero': lambda: F.max_pool1d(z(0, 5), 2),
                'aap2d-3d-zero': lambda: F.adaptive_avg_pool2d(z(0, 5, 5), 2),
                'amp2d-3d-zero': lambda: F.adaptive_max_pool2d(z(0, 5, 5), 2),
                'rp1d-2d-zero': lambda: F.pad(z(0, 4), [1, 1], mode='reflect'),
                'rp1d-3d-zero-batch': lambda: F.pad(z(0, 2, 4), [1, 1], mode='reflect'),
                'rpl1d-2d-zero': lambda: F.pad(z(0, 4), [1, 1], mode='replicate'),
                'rp2d-3d-zero': lambda: F.pad(z(0, 4, 4), [1, 1, 1, 1], mode='reflect'),
                'rpl3d-4d-zero': lambda: F.pad(z(0, 4, 4, 4), [1, 1, 1, 1, 1, 1], mode='replicate'),
                'circ-2d-zero': lambda: F.pad(z(0, 4), [1, 1], mode='circular'),
                'cdist-nan': lambda: lib.cdist(z(3, 2), z(4, 2), p=float('nan'))}[case]()
    _same_result(call)


def _same_exactly(fn):
    """Same outcome; results (a tensor or a tuple of them) of the same dtype, shape and values,
    NaN where torch has NaN, bit for bit."""
    t, l = _same_outcome(fn)
    if isinstance(t, str):
        return
    ts, ls = (t, l) if isinstance(t, tuple) else ((t,), (l,))
    for a, b in zip(ts, ls):
        assert db_dtype(b) == str(a.dtype).replace('torch.', '') and tuple(b.shape) == tuple(a.shape)
        torch.testing.assert_close(torch.tensor(b.tolist(), dtype=a.dtype), a, rtol=0, atol=0, equal_nan=True)


# F14: var_mean / std_mean / var / std of float16 and bfloat16 reduce in double and round once
# (PyTorch's CPU Welford kernel); the mean of a slice holding an infinity is NaN unless it is
# the slice's last element in memory (Note [Welford mean of an infinity] in statistics.cpp)
_VALUES = [[1.3, -2.7, 5.1, 0.33, 7.9, -3.3, 2.2], [0.1, 0.7, -0.2, 3.3, 2.9, 1.9, -4.4],
           [9.9, -9.1, 3.7, 4.4, -0.6, 1.5, 6.6]]


@pytest.mark.parametrize('dtype', ['float16', 'bfloat16', 'float32', 'float64'])
@pytest.mark.parametrize('op', ['var_mean', 'std_mean', 'var', 'std'])
@pytest.mark.parametrize('dim', [0, 1, None, (0, 1)])
def test_var_std_rounding(op, dtype, dim):
    def call(lib):
        x = lib.tensor(_VALUES, dtype=getattr(lib, dtype)) * 3
        return getattr(lib, op)(x, dim) if dim is not None else getattr(lib, op)(x)
    if dtype in ('float16', 'bfloat16'):
        _same_exactly(call)
    else:
        t, l = _same_outcome(call)
        for a, b in zip(t if isinstance(t, tuple) else (t,), l if isinstance(l, tuple) else (l,)):
            torch.testing.assert_close(torch.tensor(b.tolist(), dtype=a.dtype), a)


@pytest.mark.parametrize('where', [(0, 0), (2, 6), (1, 3), (2, 0), (0, 6)])
@pytest.mark.parametrize('layout', ['plain', 't', 'expanded'])
@pytest.mark.parametrize('dim', [0, 1, None, -1])
@pytest.mark.parametrize('dtype', ['float32', 'float64', 'float16'])
def test_var_mean_of_an_infinity(where, layout, dim, dtype):
    def call(lib):
        x = lib.tensor(_VALUES, dtype=getattr(lib, dtype))
        x[where] = float('-inf') if where[1] % 2 else float('inf')
        if layout == 't':
            x = x.t()
        elif layout == 'expanded':
            x = x[:1].expand(3, 7)
        return lib.var_mean(x, dim) if dim is not None else lib.var_mean(x)
    t, l = _same_outcome(call)
    # the means: inf and NaN exactly where torch has them
    def odd(m):
        return [(i, str(v)) for i, v in enumerate(m.flatten().tolist()) if v != v or abs(v) == float('inf')]
    assert odd(l[1]) == odd(t[1]) and odd(l[0]) == odd(t[0])


# F10/F7: grid_sampler's CPU kernels: the 2-D one returns an empty result before any dtype or
# mode check, the 3-D one dispatches on the input's dtype first; then the grid's dtype
@pytest.mark.parametrize('case', ['2d-bool-empty', '2d-int-empty-grid', '2d-mix-empty', '2d-mode5-empty',
                                  '2d-int-mode5', '2d-int', '2d-mix', '3d-int-empty', '3d-mix-empty',
                                  '3d-mode5-empty', '3d-bool-mode5', '3d-int'])
def test_grid_sampler_check_order(case):
    def call(lib):
        z, f16, i32, b = lib.zeros, lib.float16, lib.int32, lib.bool
        return {'2d-bool-empty': lambda: lib.grid_sampler(z(0, 3, 4, 5, dtype=b), z(0, 2, 3, 2, dtype=b), 1, 1, False),
                '2d-int-empty-grid': lambda: lib.grid_sampler(z(1, 3, 4, 5, dtype=i32), z(1, 0, 3, 2, dtype=f16), 0, 0, False),
                '2d-mix-empty': lambda: lib.grid_sampler(z(2, 3, 4, 5), z(2, 0, 3, 2, dtype=f16), 0, 0, False),
                '2d-mode5-empty': lambda: lib.grid_sampler(z(1, 3, 4, 5), z(1, 0, 3, 2), 5, 7, False),
                '2d-int-mode5': lambda: lib.grid_sampler(z(1, 3, 4, 5, dtype=i32), z(1, 2, 3, 2, dtype=f16), 5, 0, False),
                '2d-int': lambda: lib.grid_sampler(z(1, 3, 4, 5, dtype=i32), z(1, 2, 3, 2, dtype=i32), 0, 0, False),
                '2d-mix': lambda: lib.grid_sampler(z(1, 3, 4, 5), z(1, 2, 3, 2, dtype=f16), 0, 0, False),
                '3d-int-empty': lambda: lib.grid_sampler(z(1, 3, 4, 5, 4, dtype=i32), z(1, 0, 3, 2, 3), 0, 0, False),
                '3d-mix-empty': lambda: lib.grid_sampler(z(1, 3, 4, 5, 4), z(1, 0, 3, 2, 3, dtype=f16), 0, 0, False),
                '3d-mode5-empty': lambda: lib.grid_sampler(z(0, 3, 4, 5, 4), z(0, 1, 3, 2, 3), 5, 0, False),
                '3d-bool-mode5': lambda: lib.grid_sampler(z(0, 3, 4, 5, 4, dtype=b), z(0, 1, 3, 2, 3, dtype=f16), 5, 0, False),
                '3d-int': lambda: lib.grid_sampler(z(1, 3, 4, 5, 4, dtype=i32), z(1, 1, 3, 2, 3, dtype=f16), 0, 5, False),
                }[case]()
    _same_result(call)


# F6/F7: index_add / index_reduce check in PyTorch's order (the dim, the index's rank and dtype,
# source's dtype, dim, count (IndexError reading a 0-d source's size) and shape, out='s dtype,
# then the bounds); index_add's bounds error is scatter_add's RuntimeError above one dim for an
# int64 index and alpha 1, else IndexError, and it writes nothing into an empty self above one
# dim; index_reduce without self fails restriding an empty indexed dim (RuntimeError)
@pytest.mark.parametrize('op', ['index_add', 'index_reduce'])
@pytest.mark.parametrize('case', ['count-before-bounds', 'shape-before-bounds', 'scalar-self', 'scalar-source',
                                  'source-dim', 'dtype-before-bounds', 'out-dtype', 'empty-1d', 'empty-2d',
                                  'empty-other-dim', 'int32-index', 'alpha', 'ok', 'empty-no-self'])
def test_index_add_reduce_check_order(op, case):
    def call(lib):
        z, o, t = lib.zeros, lib.ones, lib.tensor
        args = {'count-before-bounds': (z(4, 3), 0, t([5, 6, 7]), o(4, 3)),
                'shape-before-bounds': (z(6, 4), 0, t([9, 1, 2, 3]), o(4, 3)),
                'scalar-self': (z(()), 0, t([3] * 7), o(7, 6)),
                'scalar-source': (z(3, 4), 0, t([5, 6]), t(1.)),
                'source-dim': (z(2, 3), 1, t([0, 1]), t(1.)),
                'dtype-before-bounds': (z(4, 3), 0, t([9]), o(1, 3, dtype=lib.float64)),
                'out-dtype': (z(4, 3, dtype=lib.int32), 0, t([9]), o(1, 3, dtype=lib.int32)),
                'empty-1d': (z(0), 0, t([5, 6]), o(2)),
                'empty-2d': (z(4, 0), 1, t([5, 6]), o(4, 2)),
                'empty-other-dim': (z(0, 1), 1, t([0, -1]), o(0, 2)),
                'int32-index': (z(4, 6), 1, t([2, 5, 2**31 - 1], dtype=lib.int32), o(4, 3)),
                'alpha': (z(4, 6), 1, t([2, 5, -1]), o(4, 3)),
                'ok': (z(4, 6), 1, t([2, 5, 2]), o(4, 3)),
                'empty-no-self': (z(4, 0), 1, t([5, 6]), o(4, 2))}[case]
        kw = {}
        if op == 'index_reduce':
            kw = {'reduce': 'amax' if case != 'empty-no-self' else 'prod', 'include_self': case != 'empty-no-self'}
        elif case == 'alpha':
            kw = {'alpha': 2}
        if case == 'out-dtype':
            kw['out'] = lib.zeros(4, 3)
        return getattr(lib, op)(*args, **kw)
    _same_result(call)


# F6/F7: index_copy checks in PyTorch's order: the dim, out='s dtype and overlap, the index's
# rank, a 0-d source's single index, the ranks, the dtypes, the slice shapes, the count
@pytest.mark.parametrize('case', ['dim-before-out', 'slices', 'count', 'scalar-self', 'expanded', 'ranks',
                                  'index-dtype', 'ok'])
def test_index_copy_check_order(case):
    def call(lib):
        z, o, t = lib.zeros, lib.ones, lib.tensor
        if case == 'dim-before-out':
            return lib.index_copy(z(3, 4, dtype=lib.int16), 7, t([0]), o(3, 1, dtype=lib.int16), out=z(3, 4))
        if case == 'expanded':
            return z(1, 3, dtype=lib.int8).expand(4, 3).index_copy_(0, t([9]), o(1, 3, dtype=lib.int8))
        args = {'slices': (z(6, 4), 1, t([0, 1, 9]), o(4, 3)),
                'count': (z(3, 0), 0, t([1]), o(0, 0)),
                'scalar-self': (z(()), 0, t([0]), o(7, 6)),
                'ranks': (z(3, 4), 0, t([9]), o(1, 4, 1)),
                'index-dtype': (z(3, 4), 0, t([9], dtype=lib.int32), o(1, 4)),
                'ok': (z(3, 4), 1, t([3, 0]), o(3, 2))}[case]
        return lib.index_copy(*args)
    _same_result(call)


# F6/F10: addmv reads a 0-d self's size(0) for its size-mismatch message (IndexError); with an
# empty matrix and beta != 0 PyTorch returns beta * self in self's own shape
@pytest.mark.parametrize('case', ['0d-mismatch', '1d-mismatch', 'empty-1', 'empty-0d', 'empty-0d-beta0',
                                  'empty-cols-0d', 'empty-out', 'empty-int-beta'])
def test_addmv_of_a_0d_or_empty_operand(case):
    def call(lib):
        z, o, t = lib.zeros, lib.ones, lib.tensor
        return {'0d-mismatch': lambda: lib.addmv(t(1.), o(3, 4), o(0)),
                '1d-mismatch': lambda: lib.addmv(o(3), o(3, 4), o(1)),
                'empty-1': lambda: lib.addmv(t([7], dtype=lib.uint8), z(0, 4, dtype=lib.uint8), o(4, dtype=lib.uint8)),
                'empty-0d': lambda: lib.addmv(t(3, dtype=lib.int32), z(0, 4, dtype=lib.int32), o(4, dtype=lib.int32)),
                'empty-0d-beta0': lambda: lib.addmv(t(3.), z(0, 4), o(4), beta=0),
                'empty-cols-0d': lambda: lib.addmv(t(3.), z(5, 0), o(0), beta=2),
                'empty-out': lambda: lib.addmv(t([3.]), z(0, 4), o(4), beta=0.5, out=lib.empty(7)),
                'empty-int-beta': lambda: lib.addmv(t([3, 4, 5]), z(3, 0, dtype=lib.int64), o(0, dtype=lib.int64), beta=2),
                }[case]()
    _same_result(call)


# F10: bmm / baddbmm dispatch on batch1's dtype (NotImplementedError for bool) before comparing
# batch2's; baddbmm first compares self's dtype with batch1's, and with an empty operand takes
# batch2's dtype and scales self by beta (an empty result scales nothing); einsum's contractions
# go through bmm (an empty contraction of bool or mixed dtypes gives zeros)
@pytest.mark.parametrize('case', ['bmm-bool-double', 'bmm-half-bool', 'baddbmm-bool-double', 'baddbmm-self',
                                  'baddbmm-empty-mix', 'baddbmm-empty-bool-self', 'baddbmm-empty-result',
                                  'baddbmm-bool-k0', 'baddbmm-k0-beta', 'einsum-bool-empty', 'einsum-mix-empty',
                                  'einsum-bool-double', 'einsum-bool'])
def test_bmm_family_dtype_order(case):
    def call(lib):
        z, o, b, d, i8 = lib.zeros, lib.ones, lib.bool, lib.double, lib.int8
        return {'bmm-bool-double': lambda: lib.bmm(z(2, 3, 4, dtype=b), z(2, 4, 5, dtype=d)),
                'bmm-half-bool': lambda: lib.bmm(z(2, 3, 4, dtype=lib.half), z(2, 4, 5, dtype=b)),
                'baddbmm-bool-double': lambda: lib.baddbmm(z(2, 3, 5, dtype=b), z(2, 3, 4, dtype=b), z(2, 4, 5, dtype=d)),
                'baddbmm-self': lambda: lib.baddbmm(z(2, 3, 5, dtype=d), z(2, 3, 4, dtype=b), z(2, 4, 5, dtype=d)),
                'baddbmm-empty-mix': lambda: lib.baddbmm(o(2, 3, 5) * 3, z(2, 3, 0), z(2, 0, 5, dtype=i8), beta=2),
                'baddbmm-empty-bool-self': lambda: lib.baddbmm(o(2, 3, 5, dtype=b), z(2, 3, 0, dtype=b), z(2, 0, 5)),
                'baddbmm-empty-result': lambda: lib.baddbmm(o(0, 3, 5, dtype=b), z(0, 3, 4, dtype=b), z(0, 4, 5, dtype=b)),
                'baddbmm-bool-k0': lambda: lib.baddbmm(o(2, 3, 5, dtype=b), z(2, 3, 0, dtype=b), z(2, 0, 5, dtype=b)),
                'baddbmm-k0-beta': lambda: lib.baddbmm(o(2, 3, 5), z(2, 3, 0), z(2, 0, 5), beta=2.5),
                'einsum-bool-empty': lambda: lib.einsum('ij,jk', z(3, 0, dtype=b), z(0, 5, dtype=b)),
                'einsum-mix-empty': lambda: lib.einsum('ij,jk', z(3, 0, dtype=i8), z(0, 5, dtype=lib.half)),
                'einsum-bool-double': lambda: lib.einsum('bij,bjk->bik', z(2, 3, 4, dtype=b), z(1, 4, 5, dtype=d)),
                'einsum-bool': lambda: lib.einsum('ij,jk', z(2, 3, dtype=b), z(3, 5, dtype=b)),
                }[case]()
    _same_result(call)


# F14/F6: topk of a 0-d tensor is that tensor whatever k (0 or 1) and wraps its dim first;
# among equal values (and unsorted) topk's CPU order is PyTorch's selection's
@pytest.mark.parametrize('k', [0, 1])
@pytest.mark.parametrize('dim', [0, -1, 1])
def test_topk_of_a_0d_tensor(k, dim):
    _same_exactly(lambda lib: tuple(lib.topk(lib.tensor(11.), k, dim)))
    _same_exactly(lambda lib: tuple(lib.topk(lib.tensor(True), k, dim)))


@pytest.mark.parametrize('n,k', [(7, 3), (12, 5), (40, 13), (300, 4), (200, 200), (65, 1), (9, 9)])
@pytest.mark.parametrize('largest', [True, False])
@pytest.mark.parametrize('is_sorted', [True, False])
def test_topk_order_among_ties(n, k, largest, is_sorted):
    values = [float((i * 7) % 5) for i in range(n)]
    values[n // 2] = float('nan')
    _same_result(lambda lib: lib.topk(lib.tensor(values), k, largest=largest, sorted=is_sorted)[1])
    finite = [1. if v != v else v for v in values]
    _same_result(lambda lib: lib.topk(lib.tensor([finite, finite[::-1]], dtype=lib.int32 if n < 100 else lib.float16),
                                      k, 1, largest, is_sorted)[1])


# F1/F2: flip / fliplr / flipud and native_dropout's eval mask are laid out as PyTorch's
# empty_like lays out a stepped, transposed, overlapping or expanded input (dense strides in
# the order of the input's)
@pytest.mark.parametrize('layout', [((4, 3), (2, 8)), ((6, 3), (2, 12)), ((3, 4, 3), (0, 1, 12)), ((2, 3), (1, 1)),
                                    ((3, 2, 4), (12, 1, 3)), ((4, 3), (3, 1))])
@pytest.mark.parametrize('op', ['flip0', 'flip01', 'fliplr', 'flipud', 'dropout-mask', 'dropout'])
def test_flip_and_dropout_layouts(layout, op):
    def call(lib):
        x = lib.arange(48, dtype=lib.int32).as_strided(*layout)
        return {'flip0': lambda: x.flip(0), 'flip01': lambda: x.flip(0, 1), 'fliplr': lambda: x.fliplr(),
                'flipud': lambda: x.flipud(), 'dropout-mask': lambda: lib.native_dropout(x, 0.4, False)[1],
                'dropout': lambda: lib.native_dropout(x, 0.4, False)[0]}[op]()
    _same_layout(call)


# F5/F7/F14: heaviside refuses an out= of another dtype; linspace / logspace of one step give
# start; matrix_norm checks ord, the rank and the dtype before the dims
@pytest.mark.parametrize('case', ['heaviside-out', 'heaviside-out-ok', 'linspace-1', 'linspace-1-out', 'logspace-1',
                                  'mn-int-dims', 'mn-ord0-dims', 'mn-half-2', 'mn-half-nuc', 'mn-half-fro',
                                  'mn-int8-fro', 'mn-1d-dtype'])
def test_heaviside_linspace_matrix_norm(case):
    def call(lib):
        o = lib.ones
        return {'heaviside-out': lambda: lib.heaviside(o(3), o(3), out=lib.empty(3, dtype=lib.int32)),
                'heaviside-out-ok': lambda: lib.heaviside(o(3), o(3), out=lib.empty(0)),
                'linspace-1': lambda: lib.linspace(1, 7, 1),
                'linspace-1-out': lambda: lib.linspace(1, 7, 1, out=lib.empty(0)),
                'logspace-1': lambda: lib.logspace(1, 7, 1),
                'mn-int-dims': lambda: lib.linalg.matrix_norm(o(3, 3, dtype=lib.int32), dim=(0, 5)),
                'mn-ord0-dims': lambda: lib.linalg.matrix_norm(o(3, 3), ord=0, dim=(0, 5)),
                'mn-half-2': lambda: lib.linalg.matrix_norm(o(3, 3, dtype=lib.half), ord=2, dim=(0, 7)),
                'mn-half-nuc': lambda: lib.linalg.matrix_norm(o(3, 3, dtype=lib.half), ord='nuc'),
                'mn-half-fro': lambda: lib.linalg.matrix_norm(o(3, 3, dtype=lib.half), ord='fro'),
                'mn-int8-fro': lambda: lib.linalg.matrix_norm(o(3, 3, dtype=lib.int8), ord='fro'),
                'mn-1d-dtype': lambda: lib.linalg.matrix_norm(o(3, dtype=lib.int8)),
                }[case]()
    _same_result(call)


# F10/F11: cdist checks the ranks and columns, then the dtypes and p; empty rows or batches give
# an empty result and no columns zeros (x1's dtype) before its kernel refuses a half type or a
# second dtype
@pytest.mark.parametrize('case', [((0, 4), (2, 4), 'bfloat16', 'bfloat16'), ((3, 4), (2, 4), 'bfloat16', 'bfloat16'),
                                  ((3, 4), (0, 4), 'float16', 'float16'), ((3, 4), (2, 0), 'float16', 'float16'),
                                  ((3, 4), (2, 4), 'float32', 'float64'), ((0, 4), (2, 4), 'float64', 'float32'),
                                  ((3, 0), (2, 0), 'float64', 'float32'), ((2, 3, 0), (1, 2, 0), 'float16', 'float32'),
                                  ((0, 3, 4), (1, 2, 4), 'float16', 'float32'), ((3, 4), (2, 4), 'int32', 'int32'),
                                  ((0, 4), (2, 5), 'int32', 'float32'), ((3, 4), (2, 4), 'float64', 'float64')])
def test_cdist_check_order(case):
    a, b, da, db = case
    _same_result(lambda lib: lib.cdist(lib.ones(a, dtype=getattr(lib, da)), lib.ones(b, dtype=getattr(lib, db))))


# F8: an out= sharing an input's memory: outer / ger check it against the inputs before the
# resize (a.reshape(-1, 1) is `a` in another layout), kron when it must be resized, cross
# always; cat and the stacks refuse out= one of their inputs even when both are empty
@pytest.mark.parametrize('case', ['outer', 'outer-empty-other', 'outer-1', 'outer-empty-self', 'ger', 'kron',
                                  'kron-same-shape', 'kron-empty', 'cross-a', 'cross-b', 'cross-disjoint',
                                  'cat-empty', 'vstack-empty', 'column-stack-empty', 'hstack-empty', 'cat-other-empty'])
def test_out_overlapping_an_input(case):
    def call(lib):
        o, z = lib.ones, lib.zeros
        a3, a1, a0, m, e = o(3), o(1), z(0), o(2, 3), z(2, 0)
        c, c2 = lib.arange(12.).reshape(4, 3), lib.arange(12.).reshape(4, 3) + 1
        base = lib.arange(12.)
        return {'outer': lambda: lib.outer(a3, o(4), out=a3),
                'outer-empty-other': lambda: lib.outer(a3, o(0), out=a3),
                'outer-1': lambda: lib.outer(a1, o(1), out=a1),
                'outer-empty-self': lambda: lib.outer(a0, o(3), out=a0),
                'ger': lambda: lib.ger(a3, o(2), out=a3),
                'kron': lambda: lib.kron(m, o(2, 2), out=m),
                'kron-same-shape': lambda: lib.kron(m, o(1, 1), out=m),
                'kron-empty': lambda: lib.kron(e, o(2, 2), out=e),
                'cross-a': lambda: lib.linalg.cross(c, c2, out=c),
                'cross-b': lambda: lib.cross(c, c2, dim=1, out=c2),
                'cross-disjoint': lambda: lib.linalg.cross(base[:6].view(2, 3), base[:6].view(2, 3),
                                                           out=base[6:].view(2, 3)),
                'cat-empty': lambda: lib.cat([e, e], out=e),
                'vstack-empty': lambda: lib.vstack([e, z(2, 0)], out=e),
                'column-stack-empty': lambda: lib.column_stack([z(2, 0), e], out=e),
                'hstack-empty': lambda: lib.hstack([e, z(2, 0)], out=e),
                'cat-other-empty': lambda: lib.cat([z(2, 0), z(2, 0)], out=e),
                }[case]()
    _same_result(call)


# F10: tensordot sums a contracted dim of size 1 on one side away on the other (in its dtype)
# instead of refusing the sizes; the duplicates are looked for after
@pytest.mark.parametrize('case', [((2, 3), (1, 4), 'int32'), ((2, 3), (1, 4), 'int8'), ((2, 1), (3, 4), 'float32'),
                                  ((2, 1), (1, 4), 'float32'), ((2, 0), (1, 4), 'float32'), ((2, 3), (1, 4), 'bool'),
                                  ((2, 3), (2, 4), 'float32'), ((2, 3), (1, 4), 'float16')])
def test_tensordot_of_size_one_contracted_dims(case):
    a, b, dt = case
    def call(lib):
        x = (lib.arange(int(lib.tensor(a).prod()) or 1) % 5).reshape(-1)[:int(lib.tensor(a).prod())].reshape(a)
        return lib.tensordot(x.to(getattr(lib, dt)) * (100 if dt == 'int8' else 1),
                             lib.ones(b, dtype=getattr(lib, dt)), ([1], [0]))
    _same_result(call)
    _same_result(lambda lib: lib.tensordot(lib.ones(2, 3), lib.ones(3, 3), ([1, 1], [0, 1])))


# F10/F14: scaled_dot_product_attention checks the dtypes, devices, ranks and the mask's dtype
# first; an empty value gives zeros of (..., L, Ev) in query's dtype before any other check;
# a row the mask hides entirely gives 0 (PyTorch's _safe_softmax), not NaN
@pytest.mark.parametrize('case', ['int-k-heads0', 'int-v-e0', 'v-batch0', 'k-s0', 'v-e0-mask-causal', 'v-e0-3d',
                                  'dtype', 'k-dtype', 'mask-dtype', 'masked-row', 'masked-row-float', 'ok'])
def test_sdpa_checks_and_empty_value(case):
    def call(lib):
        o, i32, F = lib.ones, lib.int32, lib.nn.functional
        sdpa = F.scaled_dot_product_attention
        return {'int-k-heads0': lambda: sdpa(o(2, 3, 5, 8, dtype=i32), o(2, 0, 7, 8, dtype=i32), o(2, 3, 7, 0, dtype=i32)),
                'int-v-e0': lambda: sdpa(o(2, 3, 5, 8, dtype=i32), o(2, 3, 7, 8, dtype=i32), o(2, 3, 7, 0, dtype=i32)),
                'v-batch0': lambda: sdpa(o(2, 3, 5, 8, dtype=lib.int16), o(2, 3, 7, 8, dtype=lib.int16),
                                         o(0, 3, 7, 8, dtype=lib.int16), is_causal=True),
                'k-s0': lambda: sdpa(o(2, 3, 5, 8), o(2, 3, 0, 8), o(2, 3, 0, 8)),
                'v-e0-mask-causal': lambda: sdpa(o(2, 3, 5, 8), o(2, 3, 7, 8), o(2, 3, 7, 0), o(5, 7), is_causal=True),
                'v-e0-3d': lambda: sdpa(o(3, 5, 8), o(1, 7, 8), o(4, 7, 0)),
                'dtype': lambda: sdpa(o(2, 3, 5, 8), o(2, 3, 7, 8), o(2, 3, 7, 0, dtype=lib.float64)),
                'k-dtype': lambda: sdpa(o(2, 3, 5, 8), o(2, 3, 7, 8, dtype=lib.float64), o(2, 3, 7, 8)),
                'mask-dtype': lambda: sdpa(o(1, 1, 2, 4), o(1, 1, 3, 4), o(1, 1, 3, 4), lib.zeros(2, 3, dtype=i32)),
                'masked-row': lambda: sdpa(o(1, 1, 2, 4), o(1, 1, 3, 4), lib.arange(12.).reshape(1, 1, 3, 4),
                                           lib.tensor([[False] * 3, [True, False, True]])),
                'masked-row-float': lambda: sdpa(o(1, 1, 2, 4), o(1, 1, 3, 4), lib.arange(12.).reshape(1, 1, 3, 4),
                                                 lib.tensor([[float('-inf')] * 3, [0., 1., 0.]])),
                'ok': lambda: sdpa(o(1, 2, 3, 4) / 3, o(1, 2, 5, 4) / 2, lib.arange(40.).reshape(1, 2, 5, 4)),
                }[case]()
    t, l = _same_outcome(call)
    if not isinstance(t, str):
        assert str(l.dtype).split('.')[-1] == str(t.dtype).split('.')[-1] and tuple(l.shape) == tuple(t.shape)
        torch.testing.assert_close(torch.tensor(l.tolist(), dtype=t.dtype), t, equal_nan=True)


# F10/F7: gather / scatter check an empty index for neither its dtype nor its shape, count a
# 0-d tensor as one of one element, and compare src's sizes before its rank
@pytest.mark.parametrize('case', ['g-empty-int8', 'g-empty-shape', 'g-0d-1d', 'g-1d-0d', 's-empty-int8', 's-empty-0d',
                                  's-0d-index-1d-self', 's-0d-src-empty', 's-src-rank', 'g-ok', 's-ok'])
def test_gather_scatter_of_empty_or_0d_index(case):
    def call(lib):
        z, o, t = lib.zeros, lib.ones, lib.tensor
        return {'g-empty-int8': lambda: lib.gather(o(3, 4), 1, z(3, 0, dtype=lib.int8)),
                'g-empty-shape': lambda: lib.gather(o(3, 0), 1, z(0, 4, dtype=lib.int64)),
                'g-0d-1d': lambda: lib.gather(t(5.), 0, t([0, 0])),
                'g-1d-0d': lambda: lib.gather(t([5., 6.]), 0, t(1)),
                's-empty-int8': lambda: lib.scatter(o(3, 4), 1, z(0, dtype=lib.int8), 2.),
                's-empty-0d': lambda: lib.scatter(t(1.), 0, z(2, 0, dtype=lib.int64), 2.),
                's-0d-index-1d-self': lambda: lib.scatter(t([1., 2.]), 0, t(1), t([7.])),
                's-0d-src-empty': lambda: lib.scatter(t(1, dtype=lib.int8), 0, t(0), z(0, dtype=lib.int8)),
                's-src-rank': lambda: lib.scatter(o(3, 4), 0, t([[0, 1]]), o(2)),
                'g-ok': lambda: lib.gather(lib.arange(12.).reshape(3, 4), 1, t([[0, 3], [1, 1], [2, 0]])),
                's-ok': lambda: lib.scatter(z(3, 4), 1, t([[0, 3], [1, 1], [2, 0]]), 5.),
                }[case]()
    _same_result(call)


# F10/F6: embedding_bag promotes indices and offsets to their common dtype before wanting Long
# or Int, reads a 0-d weight's size(0) for padding_idx (IndexError), and counts bags with
# offset2bag (an offset outside [0, n]: IndexError) where mode sum leaves its fast path
@pytest.mark.parametrize('case', ['bool-indices', 'int8-offsets', 'both-bool', '0d-weight-padding', 'neg-offset-mean',
                                  'neg-offset-psw-padding', 'ok'])
def test_embedding_bag_index_dtypes_and_offsets(case):
    def call(lib):
        w = lib.arange(30.).reshape(10, 3)
        idx = lib.tensor([1, 2, 4, 5, 4, 3, 2, 9, 0, 7, 7])
        offs = lib.tensor([0, 4, 4, 6, 10])
        eb = lib.embedding_bag
        return {'bool-indices': lambda: eb(w, idx > 3, offs, False, 1, False, None, False, None),
                'int8-offsets': lambda: eb(w, idx, offs.to(lib.int8), False, 1, False, None, False, None),
                'both-bool': lambda: eb(w, idx > 3, offs > 3, False, 1, False, None, False, None),
                '0d-weight-padding': lambda: eb(lib.tensor(1.), idx, offs, False, 2, False, None, False, -3),
                'neg-offset-mean': lambda: eb(w, idx, lib.tensor([0, -1, 4]), False, 1, False, None, False, None),
                'neg-offset-psw-padding': lambda: eb(w, idx, lib.tensor([0, -1, 4]), False, 0, False,
                                                     lib.ones(11), False, 7),
                'ok': lambda: eb(w, idx, offs, False, 1, False, None, False, None),
                }[case]()[0]
    _same_result(call)


# F11/F7: the 2-D and 3-D reflection / replication pads refuse only an output empty in every
# padded dim; quantile checks out='s dtype, then the dim, then q's values; cumulative_trapezoid
# with x checks the dim, then x's and y's dtypes, and takes an x of fewer dims
@pytest.mark.parametrize('case', ['rep3d-one-zero', 'ref3d-one-zero', 'rep2d-one-zero', 'ref2d-one-zero',
                                  'rep3d-all-zero', 'rep1d-zero', 'rep3d-negative', 'rep3d-bool-one-zero',
                                  'q-out-dtype-dim', 'q-dim-before-q', 'q-scalar-range', 'ct-bool-x', 'ct-dim-bool',
                                  'ct-x-fewer-dims', 'ct-empty-x', 'ct-x-len'])
def test_pads_quantile_cumulative_trapezoid_checks(case):
    def call(lib):
        x5, x4, o = lib.ones(2, 3, 4, 5, 6), lib.ones(2, 3, 5, 6), lib.ones
        nn = lib._C._nn if lib is torch else lib
        return {'rep3d-one-zero': lambda: nn.replication_pad3d(x5, [0, -6, 0, 0, 0, 0]),
                'ref3d-one-zero': lambda: nn.reflection_pad3d(x5, [0, -6, 0, 0, 0, 0]),
                'rep2d-one-zero': lambda: nn.replication_pad2d(x4, [0, -6, 0, 0]),
                'ref2d-one-zero': lambda: nn.reflection_pad2d(x4, [0, -6, 0, 0]),
                'rep3d-all-zero': lambda: nn.replication_pad3d(x5, [0, -6, 0, -5, 0, -4]),
                'rep1d-zero': lambda: nn.replication_pad1d(lib.ones(2, 3, 6), [0, -6]),
                'rep3d-negative': lambda: nn.replication_pad3d(x5, [0, -7, 0, 0, 0, 0]),
                'rep3d-bool-one-zero': lambda: nn.replication_pad3d(x5.bool(), [0, -6, 0, 0, 0, 0]),
                'q-out-dtype-dim': lambda: lib.quantile(o(3, 4), 0.5, dim=7, out=lib.empty(0, dtype=lib.float64)),
                'q-dim-before-q': lambda: lib.quantile(o(3, 4), lib.tensor([0.5, 2.]), dim=2),
                'q-scalar-range': lambda: lib.quantile(lib.ones(0), 2.),
                'ct-bool-x': lambda: lib.cumulative_trapezoid(o(3, 4), o(4, dtype=lib.bool)),
                'ct-dim-bool': lambda: lib.cumulative_trapezoid(o(3, 4, dtype=lib.bool), o(4), dim=5),
                'ct-x-fewer-dims': lambda: lib.cumulative_trapezoid(lib.arange(24.).reshape(2, 3, 4),
                                                                    lib.arange(12.).reshape(3, 4) ** 2, dim=1),
                'ct-empty-x': lambda: lib.cumulative_trapezoid(o(3, 0, dtype=lib.int64), o(0, dtype=lib.int64)),
                'ct-x-len': lambda: lib.cumulative_trapezoid(o(3, 0, dtype=lib.int64), o(4, dtype=lib.int64)),
                }[case]()
    _same_result(call)


# F6/F10: sdpa reads a 0-d mask's size(-2) where PyTorch's CPU backend choice looks at it
# (IndexError); an empty head dim makes the default scale infinite (no ZeroDivisionError)
@pytest.mark.parametrize('case', ['0d-mask', '0d-mask-3d', 'e0'])
def test_sdpa_0d_mask_and_empty_head_dim(case):
    def call(lib):
        o, sdpa = lib.ones, lib.nn.functional.scaled_dot_product_attention
        return {'0d-mask': lambda: sdpa(o(2, 3, 5, 8), o(2, 3, 7, 8), o(2, 3, 7, 8), lib.tensor(1.)).shape,
                '0d-mask-3d': lambda: sdpa(o(3, 5, 8), o(3, 7, 8), o(3, 7, 8), lib.tensor(1.)).shape,
                'e0': lambda: sdpa(o(2, 3, 0, 0), o(2, 3, 0, 0), o(2, 3, 0, 8)).shape}[case]()
    _same_outcome(call)


# F1/F2: the *_scatter ops copy their input with its exact strides and storage offset (its
# whole storage), overlapping strides included; an expanded input is cloned
@pytest.mark.parametrize('layout', [((3, 4), (1, 1), 0), ((3, 4), (0, 1), 0), ((3, 4), (1, 3), 0), ((3, 4), (8, 2), 1),
                                    ((3, 4), (4, 1), 0)])
@pytest.mark.parametrize('op', ['diagonal', 'select', 'slice'])
def test_scatter_ops_keep_the_input_layout(layout, op):
    def call(lib):
        x = lib.arange(30.).as_strided(*layout)
        if op == 'diagonal':
            r = lib.diagonal_scatter(x, lib.zeros(3))
        elif op == 'select':
            r = lib.select_scatter(x, lib.zeros(4), 0, 0)
        else:
            r = lib.slice_scatter(x, lib.zeros(3, 2), 1, 0, 2)
        return r.stride(), r.storage_offset()
    _same_outcome(call)
    (_, t), (_, l) = _both(call)
    assert t == l


# F11: linalg.lstsq refuses a NaN in A or B as PyTorch's LAPACK does (an illegal argument)
@pytest.mark.parametrize('where', ['A', 'B', 'none', 'B-batch'])
@pytest.mark.parametrize('driver', [None, 'gelsy', 'gelsd', 'gelss', 'gels'])
def test_lstsq_of_nan(where, driver):
    def call(lib):
        A = lib.arange(12, dtype=lib.float64).reshape(4, 3).sin()
        B = lib.arange(8, dtype=lib.float64).reshape(4, 2).cos()
        if where == 'A':
            A[1, 1] = float('nan')
        elif where == 'B':
            B[2, 0] = float('nan')
        elif where == 'B-batch':
            A, B = A.expand(2, 4, 3), B.expand(2, 4, 2).clone()
            B[1, 0, 0] = float('nan')
        return lib.linalg.lstsq(A, B, driver=driver).solution.shape
    _same_outcome(call)


# F5/F10: logit of float16 / bfloat16 takes an out= as the TensorIterator does: castable to
# (else "result type Half can't be cast"), resized in the input's layout unless it is the input
@pytest.mark.parametrize('dtype', ['float16', 'bfloat16'])
@pytest.mark.parametrize('out', ['empty', 'wrong-shape', 'byte', 'float32', 'right', 'self'])
def test_logit_of_half_types_out(dtype, out):
    def call(lib):
        x = lib.tensor([[0.2, 0.7, 0.5], [0.9, 0.1, 0.4]], dtype=getattr(lib, dtype)).t()
        o = {'empty': lambda: lib.empty(0, dtype=x.dtype), 'wrong-shape': lambda: lib.empty(5, dtype=x.dtype),
             'byte': lambda: lib.empty(3, 2, dtype=lib.uint8), 'float32': lambda: lib.empty(3, 2),
             'right': lambda: lib.empty(3, 2, dtype=x.dtype), 'self': lambda: x}[out]()
        return lib.logit(x, 0.05, out=o if out != 'self' else x[:1])
    _same_layout(call)


# F7/F6: take_along_dim compares the ranks before the index dtype and the dim; cat checks that
# the inputs cast to out='s dtype before comparing their shapes (TypeError)
@pytest.mark.parametrize('case', ['tad-0d-2d', 'tad-rank-dtype', 'tad-0d-0d', 'cat-dtype-shapes', 'col-stack-dtype',
                                  'cat-ok'])
def test_take_along_dim_and_cat_check_order(case):
    def call(lib):
        o, t = lib.ones, lib.tensor
        return {'tad-0d-2d': lambda: lib.take_along_dim(t(1.), o(2, 2, dtype=lib.int64), 0),
                'tad-rank-dtype': lambda: lib.take_along_dim(o(3), t([[0]], dtype=lib.int32), 9),
                'tad-0d-0d': lambda: lib.take_along_dim(t(1.), t(0), 0),
                'cat-dtype-shapes': lambda: lib.cat([o(2, 3), o(3, 2)], out=lib.empty(0, dtype=lib.int64)),
                'col-stack-dtype': lambda: lib.column_stack([o(2, 3), t(1.)], out=lib.empty(0, dtype=lib.int32)),
                'cat-ok': lambda: lib.cat([o(2, 3), o(1, 3)], out=lib.empty(0, dtype=lib.float64)),
                }[case]()
    _same_result(call)


# F7: native_group_norm of a 0-d or 1-d input checks the groups, the parameters, the mixed
# dtypes and its dtype dispatch before the sizes
@pytest.mark.parametrize('case', ['0d-long', '0d-groups', '1d-long', '0d-weight', '0d-bool-mixed'])
def test_native_group_norm_of_a_0d_or_1d_input(case):
    def call(lib):
        t, o, gn = lib.tensor, lib.ones, lib.native_group_norm
        return {'0d-long': lambda: gn(t(1), None, None, 1, 1, 1, 1, 1e-5),
                '0d-groups': lambda: gn(t(1), None, None, 1, 3, 1, 2, 1e-5),
                '1d-long': lambda: gn(t([1, 2]), None, None, 1, 2, 1, 1, 1e-5),
                '0d-weight': lambda: gn(t(1), o(3), None, 1, 1, 1, 1, 1e-5),
                '0d-bool-mixed': lambda: gn(t(True), o(1), None, 1, 1, 1, 1, 1e-5)}[case]()[0]
    _same_outcome(call)


# F10: pooling output sizes divide the span by the stride rounding down (PyTorch's div_rtn), the
# ceil-mode stride - 1 added first; roll of an empty tensor returns it before looking at a dim
@pytest.mark.parametrize('case', ['mp3d-ceil-w1', 'mp2d-ceil-w1', 'mp1d-ceil', 'ap2d-ceil', 'mp3d-floor',
                                  'roll-empty-dim', 'roll-empty-dims', 'roll-0d'])
def test_pool_ceil_sizes_and_roll_of_empty(case):
    def call(lib):
        F, o = lib.nn.functional, lib.ones
        return {'mp3d-ceil-w1': lambda: F.max_pool3d(o(1, 2, 5, 5, 1), 2, 2, ceil_mode=True),
                'mp2d-ceil-w1': lambda: F.max_pool2d(o(1, 2, 5, 1), 2, 2, ceil_mode=True),
                'mp1d-ceil': lambda: F.max_pool1d(o(1, 2, 1), 2, 2, ceil_mode=True),
                'ap2d-ceil': lambda: F.avg_pool2d(o(1, 2, 5, 1), 2, 2, ceil_mode=True),
                'mp3d-floor': lambda: F.max_pool3d(o(1, 2, 5, 5, 1), 2, 2),
                'roll-empty-dim': lambda: lib.roll(o(0, 3), 1, 7),
                'roll-empty-dims': lambda: lib.roll(o(2, 0), (1, 2), (0, 9)),
                'roll-0d': lambda: lib.roll(lib.tensor(1.), 1, 1)}[case]()
    _same_result(call)


# F7/F10: a batched matmul dispatches on the first operand's dtype (bmm: NotImplementedError for
# bool) before comparing the second's, and with an empty operand returns before (batch2's dtype)
@pytest.mark.parametrize('case', ['bool-half', 'bool-int', 'int-byte-empty', 'bool-char-empty', 'mm-int-byte',
                                  'mm-bool-int', 'ok'])
def test_batched_matmul_dtype_order(case):
    def call(lib):
        o, z = lib.ones, lib.zeros
        return {'bool-half': lambda: lib.matmul(o(2, 2, 3, dtype=lib.bool), o(2, 3, 2, dtype=lib.half)),
                'bool-int': lambda: lib.matmul(o(2, 3, dtype=lib.bool), o(4, 3, 2, dtype=lib.int32)),
                'int-byte-empty': lambda: lib.matmul(z(0, 3, dtype=lib.int32), o(5, 3, 4, dtype=lib.uint8)),
                'bool-char-empty': lambda: lib.matmul(z(2, 0, 3, dtype=lib.bool), o(2, 3, 4, dtype=lib.int8)),
                'mm-int-byte': lambda: lib.matmul(o(2, 3, dtype=lib.int32), o(3, 2, dtype=lib.uint8)),
                'mm-bool-int': lambda: lib.matmul(o(2, 3, dtype=lib.bool), o(3, 2, dtype=lib.int32)),
                'ok': lambda: lib.matmul(o(2, 2, 3), o(2, 3, 2))}[case]()
    _same_result(call)


# F6: im2col checks kernel_size, dilation, padding and stride before reading a 0-d / 1-d
# input's sizes (a bad dilation is a RuntimeError, not an IndexError)
@pytest.mark.parametrize('case', [('0d', (1, 1), (-1, 1), (0, 0)), ('0d', (1, 1), (1, 1), (1, -1)),
                                  ('1d', (2, 2), (2, -5), (0, 0)), ('0d', (1, 1), (1, 1), (0, 0)),
                                  ('3d', (2, 2), (1, 1), (-1, 0))])
def test_im2col_checks_its_arguments_first(case):
    shape, k, d, p = case
    def call(lib):
        x = {'0d': lib.tensor(True), '1d': lib.ones(3, dtype=lib.bool), '3d': lib.ones(2, 4, 4)}[shape]
        return lib._C._nn.im2col(x, k, d, p, (1, 1)) if lib is torch else lib.im2col(x, k, d, p, (1, 1))
    _same_result(call)


# Fuzz-run follow-ups: in-place baddbmm_ with empty operands of another dtype is a bad in-place
# call; index_add checks out='s dtype before the bounds; kron's out= overlap check judges only
# dense inputs (an expanded one passes, as in PyTorch)
@pytest.mark.parametrize('case', ['baddbmm-inplace-mix', 'index-add-out-dtype', 'kron-expanded-out'])
def test_fuzz4_followups(case):
    def call(lib):
        o, z = lib.ones, lib.zeros
        if case == 'baddbmm-inplace-mix':
            return z(2, 3, 5, dtype=lib.bool).baddbmm_(z(2, 3, 0, dtype=lib.int16), z(2, 0, 5, dtype=lib.int16))
        if case == 'index-add-out-dtype':
            return lib.index_add(z(4, 6, dtype=lib.int32), 1, lib.tensor([-2**63]), o(4, 1, dtype=lib.int32),
                                 out=lib.empty(4, 6))
        a = lib.arange(3.).expand(2, 3)
        return lib.kron(a, o(2, 2), out=a).shape
    _same_outcome(call)


# ------------------------------------------------------------------ fuzzfix (issue: open F cases)
def _raised_both(fn, gist):
    """fn raises the same exception class in torch and tensorplay, both messages holding `gist`."""
    errors = []
    for lib in (torch, tp):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            with pytest.raises(Exception) as info:
                fn(lib)
        errors.append(info.value)
    assert type(errors[1]).__name__ == type(errors[0]).__name__, errors
    assert all(gist in str(e) for e in errors), errors


def _conv(lib, x, w, b=None, transposed=False, groups=1):
    n = x.dim() - 2
    return lib.convolution(x, w, b, [1] * n, [0] * n, [1] * n, transposed, [0] * n, groups)


def _z(lib, *shape, dtype='float32', fill=0):
    return lib.full(shape, fill, dtype=getattr(lib, dtype))


# F15: an empty batch goes through PyTorch's "empty" backend: no kernel dtype checks, the dtype
# of the input times the weight's 0-d first element, the bias' first element added in place
@pytest.mark.parametrize('case', [
    ('uint8', 'float64', None, False), ('float32', 'bool', None, False), ('int32', 'float64', None, True),
    ('int32', 'int32', 'bool', False), ('uint8', 'uint8', 'int64', True), ('float16', 'float16', 'float64', False)])
def test_conv_of_an_empty_batch_takes_promoted_dtype(case):
    x_dt, w_dt, b_dt, transposed = case
    w_shape = (4, 2, 3) if transposed else (2, 4, 3)
    _same_result(lambda lib: _conv(lib, _z(lib, 0, 4, 5, dtype=x_dt), _z(lib, *w_shape, dtype=w_dt),
                                   None if b_dt is None else _z(lib, 2, dtype=b_dt), transposed))


@pytest.mark.parametrize('case', [
    ('empty-weight', "select(): index 0 out of range"), ('empty-weight-T', "select(): index 0 out of range"),
    ('float-bias-into-uint8', "result type Float can't be cast to the desired output type Byte")])
def test_conv_of_an_empty_batch_errors(case):
    name, gist = case
    def call(lib):
        if name == 'empty-weight':
            return _conv(lib, _z(lib, 0, 4, 5), _z(lib, 2, 4, 0))
        if name == 'empty-weight-T':
            return _conv(lib, _z(lib, 0, 4, 5, 4), _z(lib, 4, 2, 3, 0), transposed=True)
        return _conv(lib, _z(lib, 0, 4, 5, dtype='uint8'), _z(lib, 2, 4, 3, dtype='uint8'), _z(lib, 2))
    _raised_both(call, gist)


def test_conv_of_an_empty_batch_with_empty_spatial_dims():
    _same_result(lambda lib: lib.nn.functional.conv1d(_z(lib, 0, 4, 0), _z(lib, 2, 4, 1), padding=1))


# F15: a bias of another dtype than the input: oneDNN's float32 / bfloat16 convolutions and
# slow_conv_transpose3d refuse it, slow_conv_transpose2d adds one of the same or a lower kind in
# place, the plain slow kernels cast it
@pytest.mark.parametrize('case', [
    ('float64', 'bfloat16', False, 1), ('float64', 'int32', True, 1), ('int64', 'bool', True, 2),
    ('int64', 'float32', False, 1), ('int64', 'float64', False, 3), ('float16', 'float64', True, 1),
    ('float16', 'int64', False, 2), ('int32', 'float64', False, 2), ('bfloat16', 'float32', True, 2)])
def test_conv_bias_of_another_dtype_accepted(case):
    x_dt, b_dt, transposed, nsp = case
    sp, ks = (5,) * nsp, (3,) * nsp
    w_shape = ((4, 2) if transposed else (2, 4)) + ks
    _same_result(lambda lib: _conv(lib, _z(lib, 1, 4, *sp, dtype=x_dt, fill=1), _z(lib, *w_shape, dtype=x_dt, fill=1),
                                   _z(lib, 2, dtype=b_dt, fill=3), transposed))


@pytest.mark.parametrize('case', [
    ('float32', 'float64', False, 1, 2, 'should be the same'), ('float32', 'int64', True, 2, 2, 'should be the same'),
    ('float64', 'float32', True, 3, 1, 'expected scalar type Double but found Float'),
    ('int64', 'float32', True, 1, 1, "result type Float can't be cast to the desired output type Long")])
def test_conv_bias_of_another_dtype_refused(case):
    x_dt, b_dt, transposed, nsp, n, gist = case
    sp, ks = (5,) * nsp, (3,) * nsp
    w_shape = ((4, 2) if transposed else (2, 4)) + ks
    _raised_both(lambda lib: _conv(lib, _z(lib, n, 4, *sp, dtype=x_dt, fill=1), _z(lib, *w_shape, dtype=x_dt, fill=1),
                                   _z(lib, 2, dtype=b_dt), transposed), gist)


# F15: a transposed convolution checks weight's dim 0 against groups as the plain one does
@pytest.mark.parametrize('case', [((1, 4, 5), (4, 2, 3), 5, 'expected weight to be at least 5 at dimension 0'),
                                  ((1, 6, 5), (6, 2, 3), 4, 'expected weight to be divisible by 4 at dimension 0'),
                                  ((0, 4, 5), (4, 2, 3), 5, 'expected weight to be at least 5')])
def test_conv_transpose_checks_groups_against_weight(case):
    x, w, groups, gist = case
    _raised_both(lambda lib: _conv(lib, _z(lib, *x), _z(lib, *w), transposed=True, groups=groups), gist)


# F13: fill_ with a 0-d tensor value copies it (PyTorch's fill_.Tensor): an expanded self is
# refused where fill_ with a number fills it
@pytest.mark.parametrize('case', ['tensor-expanded', 'function-expanded', 'number-expanded', 'tensor-1x1',
                                  'tensor-empty-expanded', 'float-into-int16', 'tensor-1d'])
def test_fill_with_a_tensor_value(case):
    def call(lib):
        e = lib.ones(3).expand(2, 3)
        if case == 'tensor-expanded':
            return e.fill_(lib.tensor(2.))
        if case == 'function-expanded':
            return lib.fill_(e, lib.tensor(2.))
        if case == 'number-expanded':
            return e.fill_(2)
        if case == 'tensor-1x1':
            return lib.ones(1).expand(1, 1).fill_(lib.tensor(2.))
        if case == 'tensor-empty-expanded':
            return lib.ones(0).expand(2, 0).fill_(lib.tensor(2.))
        if case == 'float-into-int16':
            return lib.ones(3, dtype=lib.int16).fill_(lib.tensor(2.7))
        return lib.ones(3).fill_(lib.tensor([2.]))
    _same_result(call)


def test_fill_with_a_tensor_value_message_and_gradient():
    _raised_both(lambda lib: lib.ones(3).expand(2, 3).fill_(lib.tensor(2.)),
                 'more than one element of the written-to tensor refers to a single memory location')
    grads = []
    for lib in (torch, tp):
        v = lib.tensor(2., requires_grad=True)
        x = lib.zeros(3).fill_(v)
        (x * lib.tensor([1., 2., 3.])).sum().backward()
        grads.append(v.grad.item())
    assert grads[0] == grads[1] == 6.0


# F10 / F6: pinv and matrix_rank of an empty input return before the tolerances are broadcast
# (and pinv before a hermitian input is checked square; matrix_rank's rtol path before its dtype
# check); a number atol alone reads A.size(-2) first (pinv, and matrix_rank with out=)
@pytest.mark.parametrize('fn', ['pinv', 'matrix_rank'])
@pytest.mark.parametrize('shape,dtype', [((), 'float32'), ((3,), 'float32'), ((0, 4), 'float32'), ((4, 0), 'int32'),
                                         ((2, 0, 3), 'float64'), ((0, 4, 4), 'float32')])
@pytest.mark.parametrize('hermitian', [False, True])
@pytest.mark.parametrize('tols', [{}, {'atol': 1.5}, {'rtol': 0.5}, {'atol': 'T3'}, {'rtol': 'T21'}, {'tol': 0.5}])
@pytest.mark.parametrize('out', [None, 'int64', 'float32'])
def test_pinv_matrix_rank_of_empty_and_vector_inputs(fn, shape, dtype, hermitian, tols, out):
    def call(lib):
        k = {a: (lib.tensor([0.5, 1.5, 2.5]) if v == 'T3' else lib.ones(2, 1) if v == 'T21' else v)
             for a, v in tols.items()}
        if 'tol' in k and fn == 'pinv':
            k = {'rcond': k.pop('tol')}
        if out:
            k['out'] = lib.empty(0, dtype=getattr(lib, out))
        r = getattr(lib.linalg, fn)(lib.ones(shape, dtype=getattr(lib, dtype)), hermitian=hermitian, **k)
        return r.dtype, tuple(r.shape)
    t, l = _same_outcome(call)
    if not isinstance(t, str):
        assert str(l[0]).split('.')[-1] == str(t[0]).split('.')[-1] and l[1] == t[1]


# F13: masked_fill_ writes the value where the mask holds only, so an expanded self is taken
# (PyTorch skips the overlap check: the result is the same in any order); nan_to_num_ of an
# integer or bool tensor writes nothing (an expanded self passes; a float one is refused), and
# nan_to_num(out=) of one resizes out= contiguously before copying
@pytest.mark.parametrize('case', ['mask-2d', 'mask-all', 'value-tensor', 'stepped-bf16', 'mask-int', 'mask-bad-shape'])
def test_masked_fill_into_an_expanded_tensor(case):
    def call(lib):
        e = lib.tensor([1., 2., 3.]).expand(2, 3)
        if case == 'mask-2d':
            return e.masked_fill_(lib.tensor([[True, False, True], [False, False, False]]), 5.)
        if case == 'mask-all':
            return e.masked_fill_(lib.tensor(True), 5.)
        if case == 'value-tensor':
            return e.masked_fill_(lib.tensor([False, False, True]), lib.tensor(-1.))
        if case == 'stepped-bf16':
            x = lib.arange(24.).to(lib.bfloat16).as_strided((4, 6), (6, 0))
            return x.masked_fill_(lib.arange(48).remainder(3).eq(0).as_strided((4, 6), (12, 2)), lib.tensor(1.))
        if case == 'mask-int':
            return e.masked_fill_(lib.tensor([1, 0, 1]), 5.)
        return e.masked_fill_(lib.tensor([True, False]), 5.)
    _same_result(call)


@pytest.mark.parametrize('dtype', ['float32', 'float16', 'int32', 'uint8', 'bool'])
def test_nan_to_num_in_place_on_an_expanded_tensor(dtype):
    _same_result(lambda lib: lib.tensor([1., 0., 3.]).to(getattr(lib, dtype)).expand(2, 3).nan_to_num_())


@pytest.mark.parametrize('case', ['resized', 'expanded', 'layout'])
def test_nan_to_num_of_integers_out(case):
    def call(lib):
        x = lib.arange(12, dtype=lib.int64).reshape(3, 4).t()
        if case == 'resized':
            return lib.nan_to_num(x, out=lib.empty(2, dtype=lib.int64)).stride()
        if case == 'expanded':
            return lib.nan_to_num(lib.ones(2, 3, dtype=lib.int64), out=lib.ones(3, dtype=lib.int64).expand(2, 3))
        return lib.nan_to_num(x).stride()
    _same_outcome(call)


# F10: addbmm of no batches copies self (broadcast) into the result (out='s dtype) and scales it
# by beta in place before any operand dtype check; addmm with an empty result skips bool's beta
# check (an empty result scales nothing)
@pytest.mark.parametrize('case', [
    ('int32', 'int32', 'uint8', (3, 5), 2, None), ('float32', 'int64', 'bool', (3, 5), 2.5, None),
    ('int32', 'uint8', 'uint8', (5,), 2, None), ('int32', 'uint8', 'uint8', (3, 5), 0, None),
    ('int32', 'uint8', 'uint8', (3, 5), 2, 'float32'), ('int32', 'uint8', 'uint8', (3, 5), 2.5, None),
    ('bool', 'uint8', 'uint8', (3, 5), 2, None), ('bool', 'uint8', 'uint8', (3, 5), True, None),
    ('int32', 'uint8', 'uint8', (4,), 1, None)])
@pytest.mark.parametrize('inplace', [False, True])
def test_addbmm_of_no_batches(case, inplace):
    s_dt, b1_dt, b2_dt, s_shape, beta, out = case
    def call(lib):
        self = lib.ones(s_shape, dtype=getattr(lib, s_dt))
        b1, b2 = lib.ones(0, 3, 4, dtype=getattr(lib, b1_dt)), lib.ones(0, 4, 5, dtype=getattr(lib, b2_dt))
        if inplace:
            return self.addbmm_(b1, b2, beta=beta)
        kw = {'out': lib.empty(0, dtype=getattr(lib, out))} if out else {}
        return lib.addbmm(self, b1, b2, beta=beta, **kw)
    _same_result(call)


@pytest.mark.parametrize('case', [((0, 5), (0, 4), (4, 5), 1), ((0, 5), (0, 4), (4, 5), 2), ((5, 0), (5, 4), (4, 0), 3),
                                  ((3, 5), (3, 0), (0, 5), 2)])
@pytest.mark.parametrize('inplace', [False, True])
def test_addmm_bool_with_an_empty_result(case, inplace):
    s, a, b, beta = case
    def call(lib):
        z = lambda *sh: lib.zeros(sh, dtype=lib.bool)
        return z(*s).addmm_(z(*a), z(*b), beta=beta) if inplace else lib.addmm(z(*s), z(*a), z(*b), beta=beta)
    _same_result(call)


# F8: take_along_dim(out=) refuses an out= sharing memory with the input it gathers from (self
# broadcast, or flattened), judged before the resize and on dense layouts only
@pytest.mark.parametrize('case', ['shrink', 'same-shape', 'no-dim', 'grow', 'disjoint-view', 'overlapping-view',
                                  'broadcast-self', 'out-index'])
def test_take_along_dim_out_overlapping_the_input(case):
    def call(lib):
        a = lib.arange(24.).reshape(4, 6)
        if case == 'shrink':
            return lib.take_along_dim(a, lib.tensor([[1, 2], [0, 3], [5, 4], [2, 2]]), 1, out=a)
        if case == 'same-shape':
            return lib.take_along_dim(a, lib.tensor([[1, 2, 0, 3, 5, 4]]).expand(4, 6).contiguous(), 1, out=a)
        if case == 'no-dim':
            return lib.take_along_dim(a, lib.tensor([3, 5, 1]), out=a)
        if case == 'grow':
            b = lib.arange(4.).reshape(2, 2)
            return lib.take_along_dim(b, lib.tensor([[0, 1, 1, 0, 0], [1, 1, 0, 0, 1]]), 1, out=b)
        flat = lib.arange(24.)
        if case in ('disjoint-view', 'overlapping-view'):
            o = flat[12:14] if case == 'disjoint-view' else flat[10:12]
            return lib.take_along_dim(flat[:12].view(2, 6), lib.tensor([[1], [2]]), 1, out=o.view(2, 1))
        if case == 'broadcast-self':
            b = lib.arange(6.).reshape(1, 6)
            return lib.take_along_dim(b, lib.tensor([[1], [2]]), 1, out=b)
        idx = lib.tensor([[1], [2]])
        return lib.take_along_dim(lib.arange(6).reshape(2, 3), idx, 1, out=idx)
    _same_result(call)


# F10: median / nanmedian of an empty bool tensor answer NaN converted (True) before the dtype
# check; index_fill into a tensor without elements checks no index bounds (an empty indexed dim
# keeps PyTorch's restride error)
@pytest.mark.parametrize('op', ['median', 'nanmedian'])
@pytest.mark.parametrize('case', [('bool', (0, 4)), ('bool', ()), ('int32', (0, 4)), ('uint8', (0,))])
def test_median_of_an_empty_bool_tensor(op, case):
    dtype, shape = case
    _same_result(lambda lib: getattr(lib.zeros(shape, dtype=getattr(lib, dtype)), op)())


@pytest.mark.parametrize('case', [((0, 3), 1, [-2**63]), ((0, 3), 1, [5]), ((3, 0), 0, [5]), ((2, 0, 3), 0, [7]),
                                  ((0, 3), 0, [5]), ((0,), 0, [1]), ((2, 3), 1, [5])])
@pytest.mark.parametrize('inplace', [False, True])
def test_index_fill_of_a_tensor_without_elements(case, inplace):
    shape, dim, idx = case
    def call(lib):
        z = lib.zeros(shape, dtype=lib.uint8)
        return z.index_fill_(dim, lib.tensor(idx), lib.tensor(2)) if inplace else z.index_fill(dim, lib.tensor(idx), 2)
    _same_result(call)


# F10: nonzero(as_tuple=True) / where(cond) of a 0-d tensor index it as a one-element vector
@pytest.mark.parametrize('value', [5, 0, 2.5, True, False])
def test_nonzero_as_tuple_of_a_0d_tensor(value):
    _same_result(lambda lib: lib.nonzero(lib.tensor(value), as_tuple=True)[0])
    _same_result(lambda lib: lib.where(lib.tensor(value))[0])


# F10: where takes a uint8 condition (nonzero is true) with PyTorch's deprecation warning
@pytest.mark.parametrize('form', ['function', 'method', 'out', 'scalars'])
@pytest.mark.parametrize('dtype', ['uint8', 'int8'])
def test_where_of_a_uint8_condition(form, dtype):
    def call(lib):
        c = lib.tensor([0, 1, 2, 255]).to(getattr(lib, dtype))
        if form == 'method':
            return lib.ones(4).where(c, lib.zeros(4))
        if form == 'out':
            return lib.where(c, lib.ones(4), lib.zeros(4), out=lib.empty(4))
        if form == 'scalars':
            return lib.where(c, 1., 0.)
        return lib.where(c, lib.ones(4), lib.zeros(4))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # once a process in both: its own test below
        _same_result(call)


def test_where_of_a_uint8_condition_warns_once_a_process():
    code = ("import warnings, tensorplay as tp\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    c = tp.tensor([0, 1], dtype=tp.uint8)\n"
            "    r = tp.where(c, 1., 0.); tp.ones(2).where(c, tp.zeros(2))\n"
            "print(r.tolist(), [str(x.message)[:39] for x in w])\n")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True,
                         env={**os.environ, 'PYTHONPATH': os.pathsep.join(sys.path)}).stdout
    assert out.strip() == "[0.0, 1.0] ['where received a uint8 condition tensor']", out


# F10: index_put of a one-element CPU value through one mask (no accumulate) is PyTorch's
# masked_fill_ with that number: any value dtype that converts without overflow; a uint8 mask
# meets masked_fill_'s refusal
@pytest.mark.parametrize('case', [
    ('float16', 'bool', 'float64', (), False), ('float16', 'bool', 'float64', (1,), False),
    ('float16', 'bool', 'float64', (), True), ('float16', 'uint8', 'float64', (), False),
    ('bfloat16', 'bool', 'uint8', (), False), ('uint8', 'bool', 'float32', (), False),
    ('uint8', 'bool', 'int64', (), False), ('int8', 'bool', 'int64', (), False), ('bool', 'bool', 'float32', (), False),
    ('float16', 'row', 'float64', (), False), ('float16', '0d', 'float64', (), False), ('float16', 'bool', 'float64', (3,), False)])
@pytest.mark.parametrize('inplace', [False, True])
def test_index_put_of_a_number_through_a_mask(case, inplace):
    s_dt, m_kind, v_dt, v_shape, accumulate = case
    values = {'float64': 2.5, 'float32': 300., 'uint8': 5, 'int64': -1 if s_dt == 'uint8' else 1000}[v_dt]
    def call(lib):
        s = lib.arange(6.).reshape(2, 3).to(getattr(lib, s_dt))
        m = {'row': lib.tensor([True, False]), '0d': lib.tensor(True)}.get(m_kind)
        if m is None:
            m = lib.tensor([[True, False, True], [False, True, False]]).to(getattr(lib, m_kind))
        v = lib.full(v_shape, values, dtype=getattr(lib, v_dt))
        return s.index_put_((m,), v, accumulate) if inplace else s.index_put((m,), v, accumulate)
    _same_result(call)


# F15: conv1d/2d/3d with number paddings compare the bias' dtype with the input's first; the
# string paddings and the transposed convolutions leave it to the kernel PyTorch picks (oneDNN's
# heuristic for float32: a small unbatched ungrouped float32 convolution runs natively and casts)
@pytest.mark.parametrize('case', [
    ('conv2d', 'float64', 'float32', 1, {}), ('conv1d', 'float16', 'float64', 2, {}), ('conv3d', 'int64', 'int32', 1, {}),
    ('conv2d', 'float64', 'float32', 1, {'padding': 'valid'}), ('conv1d', 'float32', 'float64', 1, {'padding': 'same'}),
    ('conv1d', 'float32', 'float64', 2, {'padding': 'same'}), ('conv_transpose2d', 'float32', 'int32', 1, {}),
    ('conv_transpose2d', 'float32', 'int32', 2, {}), ('conv_transpose3d', 'float32', 'float64', 1, {}),
    ('conv2d', 'float32', 'float64', 1, {'stride': 2, 'padding': 'valid'}),
    ('conv2d', 'float32', 'float64', 1, {'groups': 2, 'padding': 'valid'})])
def test_conv_wrappers_bias_dtype(case):
    op, dt, bdt, n, kw = case
    nsp = int(op[-2])
    transposed = 'transpose' in op
    def call(lib):
        x = lib.ones((n, 4) + (7,) * nsp, dtype=getattr(lib, dt))
        groups = kw.get('groups', 1)
        w = lib.ones(((4, 2 // groups) if transposed else (2, 4 // groups)) + (3,) * nsp, dtype=getattr(lib, dt))
        return getattr(lib.nn.functional, op)(x, w, lib.ones(2, dtype=getattr(lib, bdt)), **kw)
    _same_result(call)


# F5: the legacy cholesky(out=) takes any dtype the factor casts to safely (checked before the
# factorization), resized contiguous
@pytest.mark.parametrize('case', [('float32', 'float64', 1), ('float64', 'float16', 1), ('float64', 'int8', 1),
                                  ('float64', 'float32', 1), ('float64', 'int8', -1), ('float64', 'float16', -1),
                                  ('float32', 'int8', 0)])
def test_legacy_cholesky_out_dtype(case):
    dt, out_dt, sign = case
    def call(lib):
        a = lib.ones(0, 2, 2, dtype=getattr(lib, dt)) if sign == 0 else sign * lib.eye(2, dtype=getattr(lib, dt))
        return lib.cholesky(a, out=lib.empty(0, dtype=getattr(lib, out_dt)))
    _same_result(call)
