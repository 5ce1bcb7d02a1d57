"""Fuzz-regression tests (docs/fuzz_findings.md): out= arguments (dtypes, resizing, layouts),
result layouts, and writes into overlapping or expanded tensors. Each test runs the same call in
torch and tensorplay and compares the outcomes (fuzz_compare.py)."""
import pytest
import torch

import tensorplay as tp
from fuzz_compare import _both, _same_outcome, _same_layout, _same_result, _raised_both


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
