"""Fuzz-regression tests (docs/fuzz_findings.md): convolutions. Argument and dtype checks,
biases of another dtype, empty batches and kernels. Each test runs the same call in torch and
tensorplay and compares the outcomes (fuzz_compare.py)."""
import pytest

from fuzz_compare import _same_outcome, _same_result, _raised_both


def _conv(lib, x, w, b=None, transposed=False, groups=1):
    n = x.dim() - 2
    return lib.convolution(x, w, b, [1] * n, [0] * n, [1] * n, transposed, [0] * n, groups)


def _z(lib, *shape, dtype='float32', fill=0):
    return lib.full(shape, fill, dtype=getattr(lib, dtype))


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
