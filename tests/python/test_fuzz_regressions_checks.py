"""Fuzz-regression tests (docs/fuzz_findings.md): argument checks. The exception class PyTorch
raises, the order of its checks, and what empty or 0-d inputs return before them. Each test runs
the same call in torch and tensorplay and compares the outcomes (fuzz_compare.py)."""
import os
import subprocess
import sys
import warnings

import pytest
import torch

from fuzz_compare import _same_outcome, _same_result, _F


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


# F6: the exception class where PyTorch reads a size of a 0-d (or too small) tensor first


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


# repeat_interleave's repeats dtypes (int32/int64 only), kthvalue over an empty dim before its dtype
@pytest.mark.parametrize('dtype', ['int8', 'uint8', 'int16', 'int32', 'int64', 'bool', 'float32'])
def test_repeat_interleave_repeats_dtype(dtype):
    _same_outcome(lambda lib: lib.repeat_interleave(lib.ones(3), lib.ones(3, dtype=getattr(lib, dtype))).shape)


@pytest.mark.parametrize('dtype', ['bool', 'float32'])
def test_kthvalue_empty_dim(dtype):
    _same_outcome(lambda lib: lib.zeros(6, 0, dtype=getattr(lib, dtype)).kthvalue(1, 1)[0].shape)


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
