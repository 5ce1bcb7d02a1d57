"""CUDA softmax / log_softmax, layer / RMS / batch / group norm and fused cross entropy against
our CPU kernels: row lengths crossing every kernel variant (register rows, streamed rows,
unaligned rows, columns), half types against a float32 CPU reference, gradients, the
reproducibility of layer_norm's and rms_norm's weight / bias gradients and cross entropy's
target checks.
"""
import numpy as np
import pytest

import tensorplay as tp
import tensorplay.nn.functional as F

HAS_GPU = tp.cuda.is_available()
switches = tp.cuda._kernel_switches
DEV = "cuda"
pytestmark = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU")

LENGTHS = [1, 7, 32, 1000, 4096, 8193, 50257, 100000]
TOL = {"float32": (1e-5, 1e-5), "float64": (1e-10, 1e-10), "float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1e-2)}


def rand(shape, dtype="float32", seed=0, scale=1.0):
    """The same values as a CUDA tensor of `dtype` and as a float32 (float64) CPU tensor."""
    a = np.random.default_rng(seed).standard_normal(shape) * scale
    x = tp.tensor(a, dtype=getattr(tp, dtype), device=DEV)
    ref = x.cpu().to(tp.float64 if dtype == "float64" else tp.float32)
    return x, ref


def close(ours, ref, dtype, scale=1.0):
    rtol, atol = TOL[dtype]
    assert ours.device.type == DEV
    a = ours.detach().cpu().to(tp.float64).numpy()
    b = ref.detach().cpu().to(getattr(tp, dtype)).to(tp.float64).numpy()
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol * scale)


def rows_for(n):
    return 67 if n <= 1000 else 5 if n <= 8193 else 2


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_softmax_rows(n, dtype):
    x, ref = rand((rows_for(n), n), dtype, seed=n)
    close(tp.softmax(x, -1), tp.softmax(ref, -1), dtype)
    close(tp.log_softmax(x, -1), tp.log_softmax(ref, -1), dtype, scale=10)


@pytest.mark.parametrize("pipeline", [True, False], ids=["pipelined", "register_rows"])
@pytest.mark.parametrize("n", [1, 8, 1000, 1024, 2048, 4096])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_softmax_row_pipeline(n, dtype, pipeline):
    # Note [Row pipeline]: rows streamed through shared memory (the default) or in registers,
    # more rows than blocks (half-type rows of 4096 without Note [Packed half rows])
    x, ref = rand((3000, n), dtype, seed=n + 5)
    with switches(row_pipeline=pipeline, packed_half_rows=0):
        close(tp.softmax(x, -1), tp.softmax(ref, -1), dtype)
        close(tp.log_softmax(x, -1), tp.log_softmax(ref, -1), dtype, scale=10)


@pytest.mark.parametrize("n", [7, 4096])
def test_softmax_float64_and_dtype_arg(n):
    x, ref = rand((3, n), "float64", seed=1)
    close(tp.softmax(x, 1), tp.softmax(ref, 1), "float64")
    h, href = rand((3, n), "bfloat16", seed=2)
    out = tp.softmax(h, 1, dtype=tp.float32)
    assert out.dtype == tp.float32
    close(out, tp.softmax(href, 1), "float32")


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_softmax_other_dims_and_strided(dim):
    x, ref = rand((5, 33, 7), "float32", seed=3)
    close(tp.softmax(x, dim), tp.softmax(ref, dim), "float32")
    close(tp.log_softmax(x.transpose(0, 2), dim), tp.log_softmax(ref.transpose(0, 2), dim), "float32")


def test_softmax_nan_inf_rows():
    a = np.array([[0.0, np.nan, 1.0, 2.0], [-np.inf] * 4, [np.inf, 0.0, 1.0, 2.0], [-np.inf, 0.0, 1.0, 2.0]])
    for n in (4, 8193):  # register rows and streamed rows
        b = np.concatenate([a, np.zeros((4, n - 4))], axis=1)
        x = tp.tensor(b, dtype=tp.float32, device=DEV)
        np.testing.assert_array_equal(np.isnan(tp.softmax(x, 1).cpu().numpy()),
                                      np.isnan(tp.softmax(x.cpu(), 1).numpy()))
        np.testing.assert_allclose(tp.softmax(x, 1).cpu().numpy(), tp.softmax(x.cpu(), 1).numpy(), rtol=1e-6,
                                   atol=1e-7)


@pytest.mark.parametrize("n", [7, 1000, 4096, 8193])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_backward(n, log):
    x, ref = rand((rows_for(n), n), "float32", seed=4)
    g, gref = rand((rows_for(n), n), "float32", seed=5)
    fn = tp.log_softmax if log else tp.softmax
    for dim in (1, 0):
        a = x.clone().requires_grad_()
        b = ref.clone().requires_grad_()
        (fn(a, dim) * g).sum().backward()
        (fn(b, dim) * gref).sum().backward()
        close(a.grad, b.grad, "float32", scale=10)


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_layer_norm(n, dtype):
    x, ref = rand((rows_for(n), n), dtype, seed=6)
    w, wref = rand((n,), dtype, seed=7)
    b, bref = rand((n,), dtype, seed=8)
    for args in [(w, b, wref, bref), (None, None, None, None), (w, None, wref, None)]:
        y = F.layer_norm(x, (n,), args[0], args[1])
        yref = F.layer_norm(ref, (n,), args[2], args[3])
        close(y, yref, dtype, scale=10)
    ys, ms, rs = tp.native_layer_norm(x, [n], w, b, 1e-5)
    _, mref, rref = tp.native_layer_norm(ref, [n], wref, bref, 1e-5)
    # the statistics in float32 for the half types, as PyTorch's CUDA kernel gives them
    assert ms.dtype == rs.dtype == (x.dtype if dtype == "float32" else tp.float32)
    close(ms, mref, dtype)
    close(rs, rref, dtype, scale=10)


@pytest.mark.parametrize("pipeline", [True, False], ids=["pipelined", "register_rows"])
@pytest.mark.parametrize("n", [8, 1000, 2048, 4096])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
def test_layer_norm_row_pipeline(n, dtype, pipeline):
    # Note [Row pipeline]: more rows than blocks, with and without weight and bias (without
    # Note [Packed half rows])
    x, ref = rand((3000, n), dtype, seed=n + 11)
    w, wref = rand((n,), dtype, seed=12)
    b, bref = rand((n,), dtype, seed=13)
    with switches(row_pipeline=pipeline, packed_half_rows=0):
        check_layer_norm_rows(x, ref, w, wref, b, bref, n, dtype)


def check_half_row_forwards(x, ref, w, wref, b, bref, n, dtype):
    """softmax, log_softmax and check_layer_norm_rows against the float32 CPU reference."""
    close(tp.softmax(x, -1), tp.softmax(ref, -1), dtype)
    close(tp.log_softmax(x, -1), tp.log_softmax(ref, -1), dtype, scale=10)
    check_layer_norm_rows(x, ref, w, wref, b, bref, n, dtype)


def check_layer_norm_rows(x, ref, w, wref, b, bref, n, dtype):
    """Layer norm with and without affine, and its statistics (float32 for the half types),
    against the CPU reference."""
    for args in [(w, b, wref, bref), (None, None, None, None)]:
        close(F.layer_norm(x, (n,), args[0], args[1]), F.layer_norm(ref, (n,), args[2], args[3]), dtype,
              scale=10)
    _, ms, rs = tp.native_layer_norm(x, [n], w, b, 1e-5)
    _, mref, rref = tp.native_layer_norm(ref, [n], wref, bref, 1e-5)
    close(ms, mref, dtype)
    close(rs, rref, dtype, scale=10)


def check_fused_rms_norm(x, ref, w, wref, n, dtype):
    """_fused_rms_norm's output and rstd against the CPU reference."""
    y, rs = tp._fused_rms_norm(x, [n], w, None)
    yref, rref = tp._fused_rms_norm(ref, [n], wref, None)
    close(y, yref, dtype, scale=10)
    close(rs, rref, rstd_dtype(dtype), scale=10)


@pytest.mark.parametrize("n", [8, 1000, 1024, 2048, 4096, 8192])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_warp_rows(n, dtype):
    # Note [Warp rows]: one warp a half-type row (8192 is past them: the block pipeline),
    # more rows than warps; softmax, log_softmax, layer norm with and without affine, RMS norm
    # (without Note [Packed half rows])
    x, ref = rand((3000, n), dtype, seed=n + 40)
    w, wref = rand((n,), dtype, seed=41)
    b, bref = rand((n,), dtype, seed=42)
    prev = tp._C._cuda_warp_rows()
    with switches(warp_rows=True, packed_half_rows=0):
        check_half_row_forwards(x, ref, w, wref, b, bref, n, dtype)
        check_fused_rms_norm(x, ref, w, wref, n, dtype)
    assert tp._C._cuda_warp_rows() is prev and tp._C._cuda_packed_half_rows() == 256


def test_lean_half_rows_default():
    assert tp._C._cuda_lean_half_rows() is True  # Note [Lean half rows]: on by default


def check_layer_norm_backward(x, ref, g, gref, w, wref, b, bref, n, dtype):
    """native_layer_norm_backward's input, weight and bias gradients against autograd through
    the CPU reference."""
    grads = tp.native_layer_norm_backward(g, x, [n], *tp.native_layer_norm(x, [n], w, b, 1e-5)[1:], w, True, True,
                                          True)
    xr, wr, br = (t.clone().requires_grad_() for t in (ref, wref, bref))
    (F.layer_norm(xr, (n,), wr, br) * gref).sum().backward()
    for ours, expect in zip(grads, (xr.grad, wr.grad, br.grad)):
        close(ours, expect, dtype, scale=100)


def check_rows_and_grads(n, dtype, seed, rows=3000):
    """check_half_row_forwards, RMS norm, and the layer-norm and RMS-norm backward (input,
    weight and bias gradients) over `rows` rows of n, against the CPU reference."""
    x, ref = rand((rows, n), dtype, seed=n + seed)
    w, wref = rand((n,), dtype, seed=seed + 1)
    b, bref = rand((n,), dtype, seed=seed + 2)
    check_half_row_forwards(x, ref, w, wref, b, bref, n, dtype)
    close(F.rms_norm(x, (n,), w), F.rms_norm(ref, (n,), wref), dtype, scale=10)
    g, gref = rand((rows, n), dtype, seed=n + seed + 3)
    check_layer_norm_backward(x, ref, g, gref, w, wref, b, bref, n, dtype)
    xg, wg = x.detach().requires_grad_(), w.detach().requires_grad_()
    (F.rms_norm(xg, (n,), wg) * g).sum().backward()
    xr, wr = ref.clone().requires_grad_(), wref.clone().requires_grad_()
    (F.rms_norm(xr, (n,), wr) * gref).sum().backward()
    close(xg.grad, xr.grad, dtype, scale=100)
    close(wg.grad, wr.grad, dtype, scale=100)


@pytest.mark.parametrize("n", [64, 1000, 2048, 4096, 8192])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_full_and_staged_rows(n, dtype):
    # Note [Full rows]: rows that fill every thread's packs exactly (all but 64 and 1000 here,
    # for some kernel) take kernels without bounds checks; Note [Staged norm operands]: the
    # half-type backward's weight packs and rows' statistics in shared memory, 300000 rows of
    # 64 taking a block past its first chunk of 256 rows' statistics (float32 has no staging, and
    # its weight gradient over so many rows would differ from the CPU's order of sums by more
    # than float32's test tolerance)
    check_rows_and_grads(n, dtype, seed=80, rows=300_000 if n == 64 and dtype != "float32" else 3000)


def test_narrow_norm_rows_default():
    assert tp._C._cuda_narrow_norm_rows() is True  # Note [Narrow norm rows]: on by default
    assert tp._C._cuda_packed_half_rows() == 256  # Note [Packed half rows]: 256 threads by default


# the kernels of half-type rows of 4096: Note [Packed half rows] on 256 threads (the default) and
# 128, and without them the pipelined rows of Note [Narrow norm rows] on 128 threads and 256
HALF_ROW_VARIANTS = {"packed256": {}, "packed128": {"packed_half_rows": 128},
                     "narrow": {"packed_half_rows": 0},
                     "256_threads": {"packed_half_rows": 0, "narrow_norm_rows": False}}


@pytest.mark.parametrize("variant", HALF_ROW_VARIANTS)
@pytest.mark.parametrize("n", [4000, 4096])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_row_variants(n, dtype, variant):
    # HALF_ROW_VARIANTS (rows of 4000 keep the other kernels): softmax, log_softmax, layer norm
    # with each of weight and bias present or not and its statistics, RMS norm, more rows than
    # blocks, against the CPU reference
    x, ref = rand((3000, n), dtype, seed=n + 60)
    w, wref = rand((n,), dtype, seed=61)
    b, bref = rand((n,), dtype, seed=62)
    with switches(**HALF_ROW_VARIANTS[variant]):
        check_half_row_forwards(x, ref, w, wref, b, bref, n, dtype)
        for args in [(w, None, wref, None), (None, b, None, bref)]:
            close(F.layer_norm(x, (n,), args[0], args[1]), F.layer_norm(ref, (n,), args[2], args[3]), dtype,
                  scale=10)
        check_fused_rms_norm(x, ref, w, wref, n, dtype)


def test_packed_half_rows_bad_threads():
    with pytest.raises(ValueError, match="_cuda_set_packed_half_rows: threads must be 0, 128 or 256"):
        tp._C._cuda_set_packed_half_rows(64)
    assert tp._C._cuda_packed_half_rows() == 256


@pytest.mark.parametrize("variant", HALF_ROW_VARIANTS)
def test_norm_rows_far_from_zero(variant):
    # rows whose mean is far from their spread, mean 100 and standard deviation 0.5 in float16
    # rows of 4096: the statistics against the CPU's (a variance from the sum of squares, not
    # the centred one, misses rstd by 0.4%)
    x = rand((600, 4096), "float16", seed=70, scale=0.5)[0] + 100
    ref = x.cpu().to(tp.float32)

    def check():
        _, ms, rs = tp.native_layer_norm(x, [4096], None, None, 1e-5)
        _, mref, rref = tp.native_layer_norm(ref, [4096], None, None, 1e-5)
        close(ms, mref, "float32")
        close(rs, rref, "float32", scale=10)

    with switches(**HALF_ROW_VARIANTS[variant]):
        check()


@pytest.mark.parametrize("lean", [True, False])
@pytest.mark.parametrize("n", [8, 1000, 1024, 2048, 4096, 8192])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_lean_half_rows(n, dtype, lean):
    # the half-type rows with the lean forward (128-thread blocks up to 4096; 8192 stays on
    # 256) and without it, more rows than blocks (without Note [Packed half rows])
    prev = tp._C._cuda_lean_half_rows()
    with switches(lean_half_rows=lean, packed_half_rows=0):
        check_rows_and_grads(n, dtype, seed=60)
    assert tp._C._cuda_lean_half_rows() is prev


@pytest.mark.parametrize("n", [8, 1000, 4096, 8192])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_layer_norm_weight_dtypes(n, dtype):
    # Note [Layer-norm weights in their dtype]: half-type rows with a weight and bias of their
    # own dtype, read as they are; the statistics in float32 and the weight / bias gradients in
    # the weight's dtype, as PyTorch's CUDA kernels give them. A float32 weight: refused by
    # layer norm (as PyTorch on CUDA), converted for the kernels by RMS norm
    x, ref = rand((3000, n), dtype, seed=n + 80)
    w, wref = rand((n,), dtype, seed=81)
    b, bref = rand((n,), dtype, seed=82)
    g, gref = rand((3000, n), dtype, seed=83)
    y, m, r = tp.native_layer_norm(x, [n], w, b, 1e-5)
    _, mref, rref = tp.native_layer_norm(ref, [n], wref, bref, 1e-5)
    assert y.dtype == x.dtype and m.dtype == tp.float32 and r.dtype == tp.float32
    close(y, F.layer_norm(ref, (n,), wref, bref), dtype, scale=10)
    close(m, mref, "float32", scale=10)
    np.testing.assert_allclose(r.cpu().numpy(), rref.numpy(), rtol=1e-4)
    gx, gw, gb = tp.native_layer_norm_backward(g, x, [n], m, r, w, True, True, True)
    assert gx.dtype == x.dtype and gw.dtype == w.dtype and gb.dtype == w.dtype
    xr, wr, br = (t.clone().requires_grad_() for t in (ref, wref, bref))
    (F.layer_norm(xr, (n,), wr, br) * gref).sum().backward()
    close(gx, xr.grad, dtype, scale=100)
    close(gw, wr.grad, dtype, scale=100)
    close(gb, br.grad, dtype, scale=100)
    name = {"float16": "Half", "bfloat16": "BFloat16"}[dtype]
    with pytest.raises(RuntimeError, match=f"expected scalar type {name} but found Float"):
        F.layer_norm(x, (n,), w.float(), b.float())
    ys, rs = tp._fused_rms_norm(x, [n], w.float(), 1e-5)
    assert ys.dtype == x.dtype and rs.dtype == tp.float32
    close(ys, F.rms_norm(ref, (n,), wref, 1e-5), dtype, scale=10)


@pytest.mark.parametrize("n", [7, 1000, 4096, 8193, 50257])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_layer_norm_backward(n, dtype):
    rows = rows_for(n)
    x, ref = rand((rows, n), dtype, seed=9)
    g, gref = rand((rows, n), dtype, seed=10)
    w, wref = rand((n,), dtype, seed=11)
    b, bref = rand((n,), dtype, seed=12)
    check_layer_norm_backward(x, ref, g, gref, w, wref, b, bref, n, dtype)


@pytest.mark.parametrize("pipeline", [True, False], ids=["pipelined", "register_rows"])
@pytest.mark.parametrize("n", [8, 1000, 4096])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
def test_layer_norm_backward_row_pipeline(n, dtype, pipeline):
    # Note [Row pipeline]: x and g streamed together, the column sums per block
    x, ref = rand((3000, n), dtype, seed=n + 21)
    g, gref = rand((3000, n), dtype, seed=22)
    w, wref = rand((n,), dtype, seed=23)
    b, bref = rand((n,), dtype, seed=24)
    with switches(row_pipeline=pipeline):
        stats = tp.native_layer_norm(x, [n], w, b, 1e-5)[1:]
        grads = tp.native_layer_norm_backward(g, x, [n], *stats, w, True, True, True)
        again = tp.native_layer_norm_backward(g, x, [n], *stats, w, True, True, True)
        only_w = tp.native_layer_norm_backward(g, x, [n], *stats, w, False, True, True)
    xr, wr, br = (t.clone().requires_grad_() for t in (ref, wref, bref))
    (F.layer_norm(xr, (n,), wr, br) * gref).sum().backward()
    for ours, expect in zip(grads, (xr.grad, wr.grad, br.grad)):
        close(ours, expect, dtype, scale=100)
    for a, c in zip(grads[1:], again[1:]):  # the column sums are reproducible
        np.testing.assert_array_equal(a.float().cpu().numpy(), c.float().cpu().numpy())
    assert only_w[0] is None
    np.testing.assert_array_equal(only_w[1].float().cpu().numpy(), grads[1].float().cpu().numpy())


@pytest.mark.parametrize("n", [4096, 8193])
def test_layer_norm_weight_grad_is_reproducible(n):
    x, _ = rand((3000, n), "float32", seed=13)
    g, _ = rand((3000, n), "float32", seed=14)
    w, _ = rand((n,), "float32", seed=15)
    _, m, r = tp.native_layer_norm(x, [n], w, None, 1e-5)
    first = tp.native_layer_norm_backward(g, x, [n], m, r, w, True, True, True)
    second = tp.native_layer_norm_backward(g, x, [n], m, r, w, True, True, True)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    # and they are right: against the CPU in float64
    _, wg, bg = tp.native_layer_norm_backward(g.cpu().double(), x.cpu().double(), [n], m.cpu().double(),
                                              r.cpu().double(), w.cpu().double(), False, True, True)
    np.testing.assert_allclose(first[1].cpu().numpy(), wg.numpy(), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(first[2].cpu().numpy(), bg.numpy(), rtol=1e-4, atol=1e-3)


# rms_norm (Note [RMS norm as an uncentred layer norm]): register rows (4096; 20000 for the
# forward), streamed rows (20000 in the backward, 20001 unaligned, 50000), short rows
RMS_LENGTHS = [7, 1000, 4096, 20000, 20001, 50000]


def rstd_dtype(dtype):
    return "float64" if dtype == "float64" else "float32"


@pytest.mark.parametrize("n", RMS_LENGTHS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_rms_norm(n, dtype):
    x, ref = rand((rows_for(n), n), dtype, seed=30)
    w, wref = rand((n,), dtype, seed=31)
    for wa, wr in [(w, wref), (None, None)]:
        for eps in (None, 1e-3):
            y, rs = tp._fused_rms_norm(x, [n], wa, eps)
            yref, rref = tp._fused_rms_norm(ref, [n], wr, eps)
            assert y.dtype == x.dtype and rs.dtype == getattr(tp, rstd_dtype(dtype))
            assert tuple(rs.shape) == (x.shape[0], 1)
            close(y, yref, dtype, scale=10)
            close(rs, rref, rstd_dtype(dtype), scale=10)
        close(F.rms_norm(x, (n,), wa), F.rms_norm(ref, (n,), wr), dtype, scale=10)


@pytest.mark.parametrize("pipeline", [True, False], ids=["pipelined", "register_rows"])
@pytest.mark.parametrize("n", [8, 1000, 4096])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_rms_norm_row_pipeline(n, dtype, pipeline):
    # Note [Row pipeline]: more rows than blocks (without Note [Packed half rows])
    x, ref = rand((3000, n), dtype, seed=n + 32)
    w, wref = rand((n,), dtype, seed=33)
    with switches(row_pipeline=pipeline, packed_half_rows=0):
        for wa, wr in [(w, wref), (None, None)]:
            y, rs = tp._fused_rms_norm(x, [n], wa, None)
            yref, rref = tp._fused_rms_norm(ref, [n], wr, None)
            close(y, yref, dtype, scale=10)
            close(rs, rref, "float32", scale=10)


@pytest.mark.parametrize("n", RMS_LENGTHS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_rms_norm_backward(n, dtype):
    x, ref = rand((rows_for(n), n), dtype, seed=34)
    g, gref = rand((rows_for(n), n), dtype, seed=35)
    w, wref = rand((n,), dtype, seed=36)
    for wa, wr in [(w, wref), (None, None)]:
        _, rs = tp._fused_rms_norm(x, [n], wa, None)
        _, rref = tp._fused_rms_norm(ref, [n], wr, None)
        gx, gw = tp._fused_rms_norm_backward(g, x, [n], rs, wa, True, wa is not None)
        gxr, gwr = tp._fused_rms_norm_backward(gref, ref, [n], rref, wr, True, wr is not None)
        assert gx.dtype == x.dtype
        close(gx, gxr, dtype, scale=100)
        if wa is not None:
            assert gw.dtype == w.dtype
            close(gw, gwr, dtype, scale=100)
        # autograd takes the same kernels
        xg, xr = x.clone().requires_grad_(), ref.clone().requires_grad_()
        (F.rms_norm(xg, (n,), wa) * g).sum().backward()
        (F.rms_norm(xr, (n,), wr) * gref).sum().backward()
        close(xg.grad, xr.grad, dtype, scale=100)


@pytest.mark.parametrize("n", [4096, 20000])
def test_rms_norm_weight_grad_is_reproducible(n):
    # 4096: register rows' per-slot sums; 20000: the column kernel's
    x, _ = rand((3000, n), "float32", seed=37)
    g, _ = rand((3000, n), "float32", seed=38)
    w, _ = rand((n,), "float32", seed=39)
    _, r = tp._fused_rms_norm(x, [n], w, None)
    first = tp._fused_rms_norm_backward(g, x, [n], r, w, True, True)
    second = tp._fused_rms_norm_backward(g, x, [n], r, w, True, True)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    _, wg = tp._fused_rms_norm_backward(g.cpu().double(), x.cpu().double(), [n], r.cpu().double(),
                                        w.cpu().double(), False, True)
    np.testing.assert_allclose(first[1].cpu().numpy(), wg.numpy(), rtol=1e-4, atol=1e-3)


def test_rms_norm_double_backward():
    x, ref = rand((5, 64), "float64", seed=40)
    w, wref = rand((64,), "float64", seed=41)
    grads = []
    for a, b in [(x, w), (ref, wref)]:
        a, b = a.clone().requires_grad_(), b.clone().requires_grad_()
        gx, gw = tp.autograd.grad((F.rms_norm(a, (64,), b) ** 2).sum(), [a, b], create_graph=True)
        ((gx * gx).sum() + (gw * gw).sum()).backward()
        grads.append((a.grad, b.grad))
    close(grads[0][0], grads[1][0], "float64", scale=10)
    close(grads[0][1], grads[1][1], "float64", scale=10)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_rms_norm_against_torch_on_cuda(dtype):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA GPU")
    for n in (4096, 20000):
        x, _ = rand((3, n), dtype, seed=42)
        w, _ = rand((n,), dtype, seed=43)
        tx = torch.tensor(x.cpu().to(tp.float64).numpy(), device="cuda").to(getattr(torch, dtype))
        tw = torch.tensor(w.cpu().to(tp.float64).numpy(), device="cuda").to(getattr(torch, dtype))
        ours = F.rms_norm(x, (n,), w).cpu().to(tp.float64).numpy()
        theirs = torch.nn.functional.rms_norm(tx, (n,), tw).double().cpu().numpy()
        rtol, atol = TOL[dtype]
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol * 10)


@pytest.mark.parametrize("shape", [(4, 3), (8, 5, 7, 9), (2, 16, 70, 70), (3, 4, 100000)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("layout", ["rows", "channels_last"])
def test_batch_norm(shape, dtype, layout):
    if layout == "channels_last" and len(shape) != 4:
        pytest.skip("channels last is 4-D")
    c = shape[1]
    x, ref = rand(shape, dtype, seed=16, scale=3.0)
    if layout == "channels_last":
        x, ref = x.contiguous(memory_format=tp.channels_last), ref.contiguous(memory_format=tp.channels_last)
    w, wref = rand((c,), "float32", seed=17)
    b, bref = rand((c,), "float32", seed=18)
    rm, rmref = rand((c,), "float32", seed=19)
    rv, rvref = (t.abs() + 0.5 for t in rand((c,), "float32", seed=20))
    for training in (True, False):
        xg, xr = x.clone().requires_grad_(), ref.clone().requires_grad_()
        wg, wr = w.clone().requires_grad_(), wref.clone().requires_grad_()
        y = F.batch_norm(xg, rm, rv, wg, b, training=training, momentum=0.2)
        yr = F.batch_norm(xr, rmref, rvref, wr, bref, training=training, momentum=0.2)
        close(y, yr, dtype, scale=10)
        assert y.is_contiguous(memory_format=tp.channels_last) == (layout == "channels_last")
        close(rm, rmref, "float32", scale=10)
        close(rv, rvref, "float32", scale=10)
        gy, gyr = rand(shape, dtype, seed=21)
        (y * gy).sum().backward()
        (yr * gyr).sum().backward()
        close(xg.grad, xr.grad, dtype, scale=100)
        close(wg.grad, wr.grad, "float32", scale=1e4)


@pytest.mark.parametrize("shape,groups", [((2, 6, 5), 3), ((4, 32, 9, 9), 8), ((2, 4, 70000), 2)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_group_norm(shape, groups, dtype):
    c = shape[1]
    x, ref = rand(shape, dtype, seed=22)
    w, wref = rand((c,), dtype, seed=23)
    b, bref = rand((c,), dtype, seed=24)
    xg, xr = x.clone().requires_grad_(), ref.clone().requires_grad_()
    y = F.group_norm(xg, groups, w, b)
    yr = F.group_norm(xr, groups, wref, bref)
    close(y, yr, dtype, scale=10)
    gy, gyr = rand(shape, dtype, seed=25)
    (y * gy).sum().backward()
    (yr * gyr).sum().backward()
    close(xg.grad, xr.grad, dtype, scale=100)
    if len(shape) == 4:
        xc = x.contiguous(memory_format=tp.channels_last)
        yc = F.group_norm(xc, groups, w, b)
        assert yc.is_contiguous(memory_format=tp.channels_last)
        close(yc, yr, dtype, scale=10)


@pytest.mark.parametrize("c", [7, 1000, 4096, 50257])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_cross_entropy(c, dtype):
    n = 33
    x, ref = rand((n, c), dtype, seed=26, scale=3.0)
    t = np.random.default_rng(27).integers(0, c, n)
    t[::5] = -100
    tc, tcpu = tp.tensor(t, device=DEV), tp.tensor(t)
    for reduction in ("none", "mean", "sum"):
        close(F.cross_entropy(x, tc, reduction=reduction), F.cross_entropy(ref, tcpu, reduction=reduction), dtype,
              scale=10)
    xg, xr = x.clone().requires_grad_(), ref.clone().requires_grad_()
    F.cross_entropy(xg, tc).backward()
    F.cross_entropy(xr, tcpu).backward()
    close(xg.grad, xr.grad, dtype)
    assert float(xg.grad[0].abs().sum().item()) == 0  # row 0 is ignored


def test_cross_entropy_targets_out_of_range():
    x, _ = rand((6, 50257), "bfloat16", seed=28)
    for bad in (50257, -1):
        t = tp.tensor([0, 1, bad, 3, -100, 5], device=DEV)
        with pytest.raises(IndexError, match=f"Target {bad} is out of bounds."):
            F.cross_entropy(x, t)
        with pytest.raises(IndexError, match=f"Target {bad} is out of bounds."):
            tp._C._cross_entropy_rows_backward(tp.ones(6, device=DEV), x, t, -100,
                                               tp.zeros(6, device=DEV))
    t = tp.tensor([0, 1, 2, 3, 4, 5], device=DEV)
    F.cross_entropy(x, t, ignore_index=7)  # still usable after the errors


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
def test_recurrent_layers_on_cuda_match_cpu(mode):
    # the per-step composite path (the fused C++ LSTM layer is CPU-only): values and grads
    tp.manual_seed(0)
    cpu = getattr(tp.nn, mode)(6, 8, num_layers=2, bidirectional=True, dropout=0.0, batch_first=True).double()
    gpu = getattr(tp.nn, mode)(6, 8, num_layers=2, bidirectional=True, dropout=0.0, batch_first=True).double()
    gpu.load_state_dict(cpu.state_dict())
    w = next(gpu.parameters())
    gpu = gpu.cuda()
    assert next(gpu.parameters()) is w and w.is_cuda  # moved in place, as PyTorch
    x = tp.tensor(np.random.default_rng(0).standard_normal((3, 5, 6)))
    xc, xg = x.clone().requires_grad_(), x.cuda().requires_grad_()
    out_c, _ = cpu(xc)
    out_g, _ = gpu(xg)
    np.testing.assert_allclose(out_g.detach().cpu().numpy(), out_c.detach().numpy(), rtol=1e-10, atol=1e-10)
    out_c.sum().backward()
    out_g.sum().backward()
    np.testing.assert_allclose(xg.grad.cpu().numpy(), xc.grad.numpy(), rtol=1e-9, atol=1e-9)
    for (name, pc), pg in zip(cpu.named_parameters(), gpu.parameters()):
        np.testing.assert_allclose(pg.grad.cpu().numpy(), pc.grad.numpy(), rtol=1e-9, atol=1e-9, err_msg=name)
