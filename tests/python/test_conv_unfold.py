"""Convolution by unfold (Note [Convolution by unfold], convolution's CUDA path) checked on
the CPU against the native convolution kernels, which test_nn_kernels holds to torch: 1-D
and 2-D, groups, stride / padding / dilation, transposed with output_padding, bias, and
the weight gradient; plus its refusals (3-D, integers)."""
import numpy as np
import pytest

import tensorplay as tp

CASES = [  # (input shape, weight shape, stride, padding, dilation, transposed, output_padding, groups)
    ((2, 4, 9), (6, 2, 3), [2], [1], [1], False, [0], 2),
    ((1, 3, 11), (5, 3, 4), [1], [2], [2], False, [0], 1),
    ((2, 4, 7, 6), (6, 2, 3, 2), [2, 1], [1, 0], [1, 2], False, [0, 0], 2),
    ((2, 3, 8, 8), (8, 3, 3, 3), [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
    ((2, 4, 5, 6), (4, 3, 3, 3), [2, 2], [1, 1], [1, 1], True, [1, 1], 2),
    ((1, 2, 7), (2, 3, 3), [3], [1], [2], True, [1], 1),
    ((2, 6, 4, 4), (6, 1, 3, 3), [1, 1], [1, 1], [1, 1], False, [0, 0], 6),  # depthwise
]


def _t(shape, seed, dtype=tp.float64):
    return tp.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=dtype)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_unfold_matches_native(case, bias):
    xs, ws, stride, padding, dilation, transposed, out_pad, groups = case
    x, w = _t(xs, 0), _t(ws, 1)
    out_c = ws[1] * groups if transposed else ws[0]
    b = _t((out_c,), 2) if bias else None
    args = (stride, padding, dilation, transposed, out_pad, groups)
    want = tp.convolution(x, w, b, *args)
    got = tp._C._convolution_unfold(x, w, b, *args)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", [c for c in CASES if not c[5]], ids=lambda c: str(c[0]))
def test_unfold_weight_grad_matches_native(case):
    xs, ws, stride, padding, dilation, _, _, groups = case
    x, w = _t(xs, 0), _t(ws, 1)
    gy = _t(tuple(tp.convolution(x, w, None, stride, padding, dilation, False, [0] * len(stride),
                                 groups).shape), 3)
    want = tp._C._convolution_weight_backward(gy, x, list(ws), stride, padding, dilation, groups)
    got = tp._C._convolution_unfold_weight_backward(gy, x, list(ws), stride, padding, dilation, groups)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_unfold_float32_close_to_native():
    x, w = _t((2, 3, 9, 9), 0, tp.float32), _t((4, 3, 3, 3), 1, tp.float32)
    want = tp.convolution(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    got = tp._C._convolution_unfold(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_unfold_refusals():
    x3, w3 = tp.ones(1, 1, 3, 3, 3), tp.ones(1, 1, 2, 2, 2)
    with pytest.raises(NotImplementedError, match="3-D convolutions"):
        tp._C._convolution_unfold(x3, w3, None, [1], [0], [1], False, [0], 1)
    xi, wi = tp.ones(1, 1, 4, dtype=tp.int64), tp.ones(1, 1, 2, dtype=tp.int64)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        tp._C._convolution_unfold(xi, wi, None, [1], [0], [1], False, [0], 1)
