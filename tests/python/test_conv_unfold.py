"""Convolution by unfold (Note [Convolution by unfold], convolution's CUDA path) checked on
the CPU against the native convolution kernels, which test_nn_kernels holds to torch: 1-D,
2-D and 3-D (vol2col / col2vol), groups, stride / padding / dilation, transposed with
output_padding, bias, the weight gradient, and autograd through it against torch; plus its
refusal of integers. On a GPU, 3-D convolutions and their gradients against the CPU."""
import numpy as np
import pytest
import torch

import tensorplay as tp

CASES = [  # (input shape, weight shape, stride, padding, dilation, transposed, output_padding, groups)
    ((2, 4, 9), (6, 2, 3), [2], [1], [1], False, [0], 2),
    ((1, 3, 11), (5, 3, 4), [1], [2], [2], False, [0], 1),
    ((2, 4, 7, 6), (6, 2, 3, 2), [2, 1], [1, 0], [1, 2], False, [0, 0], 2),
    ((2, 3, 8, 8), (8, 3, 3, 3), [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
    ((2, 4, 5, 6), (4, 3, 3, 3), [2, 2], [1, 1], [1, 1], True, [1, 1], 2),
    ((1, 2, 7), (2, 3, 3), [3], [1], [2], True, [1], 1),
    ((2, 6, 4, 4), (6, 1, 3, 3), [1, 1], [1, 1], [1, 1], False, [0, 0], 6),  # depthwise
    ((2, 4, 5, 6, 7), (6, 2, 3, 2, 3), [2, 1, 2], [1, 0, 1], [1, 2, 1], False, [0, 0, 0], 2),
    ((1, 3, 4, 5, 5), (4, 3, 2, 3, 3), [1, 1, 1], [0, 1, 1], [1, 1, 1], False, [0, 0, 0], 1),
    ((2, 2, 6, 5, 4), (3, 2, 3, 3, 1), [3, 2, 1], [2, 1, 0], [2, 1, 1], False, [0, 0, 0], 1),
    ((2, 4, 3, 4, 5), (4, 3, 3, 3, 2), [2, 2, 1], [1, 1, 0], [1, 1, 2], True, [1, 1, 0], 2),
    ((1, 3, 3, 3, 4), (3, 2, 2, 3, 3), [2, 3, 2], [0, 1, 1], [2, 1, 1], True, [1, 2, 0], 1),
    ((2, 4, 3, 4, 4), (4, 1, 3, 3, 3), [1, 1, 1], [1, 1, 1], [1, 1, 1], False, [0, 0, 0], 4),  # depthwise
    # output_padding at or past the stride (allowed below the dilation): the blocks stop short
    ((2, 4, 6, 7), (4, 3, 3, 3), [1, 1], [0, 0], [2, 2], True, [1, 1], 1),
    ((1, 2, 5), (2, 2, 2), [2], [0], [3], True, [2], 1),
    ((1, 2, 3, 4, 3), (2, 2, 2, 2, 2), [1, 2, 1], [0, 1, 0], [2, 3, 1], True, [1, 2, 0], 1),
]
CASES_3D = [c for c in CASES if len(c[0]) == 5]


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


def test_unfold_3d_float32_close_to_native():
    x, w = _t((2, 3, 5, 6, 6), 0, tp.float32), _t((4, 3, 3, 3, 3), 1, tp.float32)
    args = ([1, 2, 1], [1, 1, 1], [1, 1, 1], False, [0, 0, 0], 1)
    want = tp.convolution(x, w, None, *args)
    got = tp._C._convolution_unfold(x, w, None, *args)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def _torch_conv(case, x, w, b):
    _, _, stride, padding, dilation, transposed, out_pad, groups = case
    F = torch.nn.functional
    if not transposed:
        return {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[x.dim()](x, w, b, stride, padding, dilation, groups)
    fn = {3: F.conv_transpose1d, 4: F.conv_transpose2d, 5: F.conv_transpose3d}[x.dim()]
    return fn(x, w, b, stride, padding, out_pad, groups, dilation)


@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_unfold_autograd_matches_torch(case):
    """Values and input / weight / bias gradients of the unfold path (its backward runs by
    unfold too: a transposed unfold convolution and the unfold weight gradient) vs torch."""
    xs, ws, stride, padding, dilation, transposed, out_pad, groups = case
    rng = np.random.default_rng(7)
    out_c = ws[1] * groups if transposed else ws[0]
    arrays = [rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(out_c)]
    ours = [tp.tensor(a, dtype=tp.float64, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = tp._C._convolution_unfold(*ours, stride, padding, dilation, transposed, out_pad, groups)
    want = _torch_conv(case, *theirs)
    np.testing.assert_allclose(y.detach().numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-12)
    gy = rng.standard_normal(tuple(want.shape))
    y.backward(tp.tensor(gy))
    want.backward(torch.tensor(gy))
    for name, a, b in zip(("input", "weight", "bias"), ours, theirs):
        assert float(np.abs(b.grad.numpy()).max()) > 0
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-11, atol=1e-11, err_msg=name)


def test_unfold_refusals():
    xi, wi = tp.ones(1, 1, 4, dtype=tp.int64), tp.ones(1, 1, 2, dtype=tp.int64)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        tp._C._convolution_unfold(xi, wi, None, [1], [0], [1], False, [0], 1)
    x3, w3 = tp.ones(1, 1, 3, 3, 3, dtype=tp.int32), tp.ones(1, 1, 2, 2, 2, dtype=tp.int32)
    with pytest.raises(NotImplementedError, match="slow_conv3d_cpu.*not implemented for 'Int'"):
        tp._C._convolution_unfold(x3, w3, None, [1], [0], [1], False, [0], 1)


# ------------------------------------------------------------------ on the GPU (the H200)

gpu = pytest.mark.skipif(not tp.cuda.is_available(), reason="no CUDA GPU")


@gpu
@pytest.mark.parametrize("dtype", [tp.float64, tp.float32])
@pytest.mark.parametrize("case", CASES_3D, ids=range(len(CASES_3D)))
def test_conv3d_cuda_matches_cpu(case, dtype):
    """tp.convolution on CUDA (vol2col / col2vol + cuBLAS) and its three gradients vs the CPU."""
    xs, ws, stride, padding, dilation, transposed, out_pad, groups = case
    out_c = ws[1] * groups if transposed else ws[0]
    tol = 1e-10 if dtype == tp.float64 else 2e-4
    results = []
    for device in ("cpu", "cuda"):
        leaves = [_t(s, seed, dtype).to(device).requires_grad_() for s, seed in ((xs, 0), (ws, 1), ((out_c,), 2))]
        y = tp.convolution(*leaves, stride, padding, dilation, transposed, out_pad, groups)
        gy = _t(tuple(y.shape), 3, dtype).to(device)
        y.backward(gy)
        results.append([y.detach().cpu().numpy()] + [t.grad.cpu().numpy() for t in leaves])
    for name, want, got in zip(("output", "input", "weight", "bias"), *results):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=name)


@gpu
@pytest.mark.parametrize("case", CASES_3D, ids=range(len(CASES_3D)))
def test_conv3d_cuda_matches_torch_cuda(case):
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    xs, ws, stride, padding, dilation, transposed, out_pad, groups = case
    out_c = ws[1] * groups if transposed else ws[0]
    arrays = [np.random.default_rng(s).standard_normal(shape) for s, shape in ((0, xs), (1, ws), (2, (out_c,)))]
    ours = [tp.tensor(a, dtype=tp.float32).to("cuda") for a in arrays]
    theirs = [torch.tensor(a, dtype=torch.float32, device="cuda") for a in arrays]
    got = tp.convolution(*ours, stride, padding, dilation, transposed, out_pad, groups).cpu().numpy()
    want = _torch_conv(case, *theirs).cpu().numpy()
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


@gpu
def test_col2vol_cuda_deterministic():
    """A strided, dilated 3-D transposed convolution (col2vol sums many taps per voxel) gives
    the same bits twice."""
    x, w = _t((2, 4, 5, 5, 5), 0, tp.float32).to("cuda"), _t((4, 3, 3, 3, 3), 1, tp.float32).to("cuda")
    args = ([2, 2, 2], [1, 1, 1], [1, 1, 1], True, [1, 1, 1], 1)
    a = tp.convolution(x, w, None, *args).cpu().numpy()
    b = tp.convolution(x, w, None, *args).cpu().numpy()
    assert np.array_equal(a, b)
