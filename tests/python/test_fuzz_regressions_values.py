"""Fuzz-regression tests (docs/fuzz_findings.md): values compared element for element with
PyTorch's, and calls that once crashed. Each test runs the same call in torch and tensorplay and
compares the outcomes (fuzz_compare.py)."""
import pytest
import torch

import tensorplay as tp
from fuzz_compare import _same_outcome, _same_result, _same_exactly


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
