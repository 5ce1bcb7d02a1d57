"""The fused optimizer steps on CUDA (csrc/cuda/optim_kernels.cu): the same updates as the
CPU kernels (which test_optim.py holds to torch), for every optimizer form, dtype, step
placement (CPU steps; GPU steps with fused=True / capturable=True) and for groups that
fill several launch tables (many tensors, a tensor of many chunks, strided tensors)."""
import numpy as np
import pytest

import tensorplay as tp

HAS_GPU = tp.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU")

SHAPES = [(7,), (33, 17), (3, 1000), (65537,)]


def _params(shapes, dtype, seed=0):
    g = np.random.default_rng(seed)
    return [g.standard_normal(s).astype(np.float64) for s in shapes]


def _run(opt_cls, kwargs, device, shapes, dtype, steps=4, transpose=False):
    values = _params(shapes, dtype)
    grads = _params(shapes, dtype, seed=1)
    params = []
    for v in values:
        t = tp.tensor(v, dtype=dtype, device=device)
        if transpose and t.dim() == 2:
            t = t.t().contiguous().t()  # same values, column-major storage
        params.append(t.requires_grad_())
    opt = opt_cls(params, **kwargs)
    for k in range(steps):
        for p, gv in zip(params, grads):
            # row-major grads of column-major params: the rows run on contiguous copies
            p.grad = tp.tensor(gv * (k + 1), dtype=dtype, device=device)
        opt.step()
    return [p.detach().cpu().double().numpy() for p in params], opt


CASES = [
    (tp.optim.SGD, dict(lr=0.1)),
    (tp.optim.SGD, dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
    (tp.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, dampening=0.0, maximize=True)),
    (tp.optim.Adam, dict(lr=0.01)),
    (tp.optim.Adam, dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    (tp.optim.AdamW, dict(lr=0.01, weight_decay=0.1)),
    (tp.optim.AdamW, dict(lr=0.01, weight_decay=0.1, amsgrad=True, maximize=True)),
    (tp.optim.Adagrad, dict(lr=0.1, lr_decay=0.01, weight_decay=0.1)),
]


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("opt_cls,kwargs", CASES)
def test_cuda_step_matches_cpu(opt_cls, kwargs, dtype):
    dt = getattr(tp, dtype)
    want, _ = _run(opt_cls, kwargs, "cpu", SHAPES, dt)
    got, _ = _run(opt_cls, kwargs, "cuda", SHAPES, dt)
    tol = 1e-6 if dtype == "float32" else 1e-13
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@gpu
@pytest.mark.parametrize("opt_cls,kwargs", [c for c in CASES if c[0] is not tp.optim.SGD])
@pytest.mark.parametrize("flag", ["fused", "capturable"])
def test_cuda_steps_on_the_gpu(opt_cls, kwargs, flag):
    if flag == "capturable" and opt_cls is tp.optim.Adagrad:
        pytest.skip("Adagrad has no capturable flag")
    want, _ = _run(opt_cls, kwargs, "cpu", SHAPES, tp.float32)
    got, opt = _run(opt_cls, {**kwargs, flag: True}, "cuda", SHAPES, tp.float32)
    step = next(iter(opt.state.values()))["step"]
    assert step.device.type == "cuda" and float(step.item()) == 4.0
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("opt_cls,kwargs", [CASES[1], CASES[5], CASES[7]])
def test_cuda_half_fused_matches_cpu(opt_cls, kwargs, dtype):
    dt = getattr(tp, dtype)
    want, _ = _run(opt_cls, {**kwargs, "fused": True}, "cpu", SHAPES, dt)
    got, _ = _run(opt_cls, {**kwargs, "fused": True}, "cuda", SHAPES, dt)
    for a, b in zip(got, want):  # float compute, one rounding per stored value on both
        np.testing.assert_allclose(a, b, rtol=1e-2, atol=1e-2)


@gpu
def test_cuda_group_spans_several_launch_tables():
    # 150 tensors (> 64 a table) and one of 21M elements (> 320 chunks of 64K), strided ones too
    shapes = [(5, 3)] * 150 + [(21_000_001,), (40, 30)]
    for opt_cls, kwargs in [CASES[1], CASES[4]]:
        want, _ = _run(opt_cls, kwargs, "cpu", shapes, tp.float32, steps=2, transpose=True)
        got, _ = _run(opt_cls, kwargs, "cuda", shapes, tp.float32, steps=2, transpose=True)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@gpu
def test_cuda_fused_kernel_rejects_mixed_devices():
    p, g = tp.zeros(3, device="cuda"), tp.zeros(3)
    with pytest.raises(RuntimeError, match="_fused_sgd_"):
        tp._C._fused_sgd_([p], [g], [], weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0,
                          nesterov=False, maximize=False, is_first_step=False)
