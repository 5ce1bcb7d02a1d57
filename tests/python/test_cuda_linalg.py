"""tp.linalg decompositions on CUDA (cuSOLVER, csrc/cuda/linalg.cpp) and the functions built
on them, against our CPU results (test_linalg.py holds the CPU to torch): values on random
well-conditioned batches (float32/float64), reconstructions (Q R = A, U S Vh = A, L L^T = A,
A Q = Q diag(w)), empty batches and 0x0 matrices, LinAlgErrors and the _ex info values,
non-default streams, float64 gradients. Skipped without a GPU."""
import numpy as np
import pytest

import tensorplay as tp

HAS_GPU = tp.cuda.is_available()
pytestmark = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU")

DTYPES = ("float32", "float64")
TOL = {"float32": 2e-4, "float64": 1e-10}
# one matrix (looped cuSOLVER calls), batches of small ones (the batched routines), a batch
# of matrices above kBatchedMaxN (looped again), empty batches and 0x0 matrices
SQUARE_SHAPES = [(4, 4), (3, 5, 5), (2, 3, 6, 6), (0, 3, 3), (2, 0, 0), (40, 40), (2, 130, 130)]
RECT_SHAPES = [(5, 3), (3, 5), (2, 6, 4), (2, 4, 6), (4, 4), (0, 3, 2), (3, 0), (0, 4), (33, 70)]


def _np(x):
    return np.asarray(x.detach().cpu().tolist(), dtype=np.float64).reshape(tuple(x.shape))


def _rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _well(shape, seed=0):
    """Random square matrices made diagonally dominant (well-conditioned)."""
    a = _rand(shape, seed)
    n = shape[-1]
    return a + 2 * n * np.eye(n) if n else a


def _spd(shape, seed=0):
    a = _rand(shape, seed)
    n = shape[-1]
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n) if n else a


def _pair(a, dtype):
    """(CPU tensor, CUDA tensor) holding a."""
    cpu = tp.tensor(a, dtype=getattr(tp, dtype))
    return cpu, cpu.cuda()


def _close(actual, expected, dtype, scale=1.0):
    assert actual.device.type == "cuda"
    assert str(actual.dtype) == str(expected.dtype)
    assert tuple(actual.shape) == tuple(expected.shape)
    np.testing.assert_allclose(_np(actual), _np(expected), rtol=TOL[dtype] * scale,
                               atol=TOL[dtype] * scale)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SQUARE_SHAPES)
def test_lu_family(shape, dtype):
    cpu, gpu = _pair(_well(shape), dtype)
    _close(tp.linalg.det(gpu), tp.linalg.det(cpu), dtype, scale=10)
    for got, want in zip(tp.linalg.slogdet(gpu), tp.linalg.slogdet(cpu)):
        _close(got, want, dtype)
    _close(tp.linalg.inv(gpu), tp.linalg.inv(cpu), dtype)
    inv, info = tp.linalg.inv_ex(gpu)
    assert info.device.type == "cuda" and str(info.dtype) == "tensorplay.int32"
    assert info.cpu().tolist() == tp.linalg.inv_ex(cpu)[1].tolist()
    b = _rand(shape[:-1] + (3,), seed=1)
    bc, bg = _pair(b, dtype)
    _close(tp.linalg.solve(gpu, bg), tp.linalg.solve(cpu, bc), dtype)
    bt = np.swapaxes(b, -1, -2).copy()
    btc, btg = _pair(bt, dtype)
    _close(tp.linalg.solve(gpu, btg, left=False), tp.linalg.solve(cpu, btc, left=False), dtype)
    vc, vg = _pair(_rand(shape[:-1], seed=2), dtype)  # vector right-hand side
    _close(tp.linalg.solve(gpu, vg), tp.linalg.solve(cpu, vc), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_det_signs_and_singular(dtype):
    a = np.stack([np.eye(3)[[1, 0, 2]], np.eye(3)[[1, 2, 0]], np.diag([1.0, 0.0, 2.0]),
                  np.diag([-2.0, 3.0, 1.0]), np.zeros((3, 3))])
    cpu, gpu = _pair(a, dtype)
    _close(tp.linalg.det(gpu), tp.linalg.det(cpu), dtype)
    for got, want in zip(tp.linalg.slogdet(gpu), tp.linalg.slogdet(cpu)):
        _close(got, want, dtype)  # signs exactly; log|det| -inf where singular
    _close(tp.logdet(gpu), tp.logdet(cpu), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("shape", SQUARE_SHAPES)
def test_cholesky(shape, upper, dtype):
    cpu, gpu = _pair(_spd(shape), dtype)
    L = tp.linalg.cholesky(gpu, upper=upper)
    _close(L, tp.linalg.cholesky(cpu, upper=upper), dtype, scale=10)
    Lh = np.swapaxes(_np(L), -1, -2)
    rebuilt = Lh @ _np(L) if upper else _np(L) @ Lh
    np.testing.assert_allclose(rebuilt, _np(cpu), rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10 * max(shape[-1], 1))
    _, info = tp.linalg.cholesky_ex(gpu, upper=upper)
    assert info.cpu().tolist() == np.zeros(shape[:-2], dtype=int).tolist()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("shape", RECT_SHAPES)
def test_qr(shape, mode, dtype):
    cpu, gpu = _pair(_rand(shape), dtype)
    Q, R = tp.linalg.qr(gpu, mode=mode)
    Qc, Rc = tp.linalg.qr(cpu, mode=mode)
    assert tuple(Q.shape) == tuple(Qc.shape) and tuple(R.shape) == tuple(Rc.shape)
    r = _np(R)
    np.testing.assert_array_equal(np.tril(r, -1), 0)
    # the factors are unique up to the signs of R's rows (Q's columns)
    np.testing.assert_allclose(np.abs(r), np.abs(_np(Rc)), rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)
    if mode == "r":
        return
    q = _np(Q)
    eye = np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2)
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, eye, atol=TOL[dtype] * 10 * max(shape[-2], 1))
    np.testing.assert_allclose(q @ r, _np(cpu), atol=TOL[dtype] * 10 * max(min(shape[-2:]), 1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("full_matrices", [False, True])
@pytest.mark.parametrize("shape", RECT_SHAPES)
def test_svd(shape, full_matrices, dtype):
    cpu, gpu = _pair(_rand(shape), dtype)
    U, S, Vh = tp.linalg.svd(gpu, full_matrices=full_matrices)
    Uc, Sc, Vhc = tp.linalg.svd(cpu, full_matrices=full_matrices)
    for got, want in ((U, Uc), (S, Sc), (Vh, Vhc)):
        assert tuple(got.shape) == tuple(want.shape) and got.device.type == "cuda"
    _close(S, Sc, dtype, scale=10)
    _close(tp.linalg.svdvals(gpu), Sc, dtype, scale=10)
    for driver in ("gesvd", "gesvdj", "gesvda"):
        _close(tp.linalg.svdvals(gpu, driver=driver), Sc, dtype, scale=10)
    with pytest.raises(RuntimeError, match="unknown svd driver qr"):
        tp.linalg.svd(gpu, driver="qr")
    u, s, vh = _np(U), _np(S), _np(Vh)
    k = s.shape[-1]
    rebuilt = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
    np.testing.assert_allclose(rebuilt, _np(cpu), atol=TOL[dtype] * 10 * max(k, 1))
    for x in (u, np.swapaxes(vh, -1, -2)):
        np.testing.assert_allclose(np.swapaxes(x, -1, -2) @ x,
                                   np.broadcast_to(np.eye(x.shape[-1]), x.shape[:-2] + (x.shape[-1],) * 2),
                                   atol=TOL[dtype] * 10 * max(x.shape[-2], 1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("shape", SQUARE_SHAPES)
def test_eigh(shape, uplo, dtype):
    a = _rand(shape)
    a = a + np.swapaxes(a, -1, -2)
    cpu, gpu = _pair(a, dtype)
    w, Q = tp.linalg.eigh(gpu, UPLO=uplo)
    wc, _ = tp.linalg.eigh(cpu, UPLO=uplo)
    _close(w, wc, dtype, scale=10)
    _close(tp.linalg.eigvalsh(gpu, UPLO=uplo), wc, dtype, scale=10)
    q = _np(Q)
    np.testing.assert_allclose(a @ q, q * _np(w)[..., None, :], atol=TOL[dtype] * 20 * max(shape[-1], 1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_reads_one_triangle(uplo, dtype):
    a = _rand((3, 4, 4))
    low = np.tril(a) if uplo == "L" else np.triu(a)
    sym = low + np.swapaxes(low, -1, -2) - a * np.eye(4)
    garbage = 100 * (np.triu(np.ones((4, 4)), 1) if uplo == "L" else np.tril(np.ones((4, 4)), -1))
    _, gpu = _pair(low + garbage, dtype)
    sym_c, _ = _pair(sym, dtype)
    _close(tp.linalg.eigvalsh(gpu, UPLO=uplo), tp.linalg.eigvalsh(sym_c), dtype, scale=10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hermitian", [False, True])
@pytest.mark.parametrize("shape", [(4, 4), (3, 5, 5), (2, 0, 0), (6, 6)])
def test_pinv_and_matrix_rank(shape, hermitian, dtype):
    a = _rand(shape)
    if shape[-1] >= 2 and dtype == "float64":  # rank-deficient: two equal columns (and rows)
        a[..., :, 1] = a[..., :, 0]
    if hermitian:
        a = a + np.swapaxes(a, -1, -2)
    cpu, gpu = _pair(a, dtype)
    _close(tp.linalg.pinv(gpu, hermitian=hermitian), tp.linalg.pinv(cpu, hermitian=hermitian), dtype, scale=100)
    rank = tp.linalg.matrix_rank(gpu, hermitian=hermitian)
    assert rank.device.type == "cuda"
    assert rank.cpu().tolist() == tp.linalg.matrix_rank(cpu, hermitian=hermitian).tolist()
    for kw in ({"atol": 0.5}, {"rtol": 0.3}, {"atol": 0.1, "rtol": 0.2}):
        assert (tp.linalg.matrix_rank(gpu, hermitian=hermitian, **kw).cpu().tolist()
                == tp.linalg.matrix_rank(cpu, hermitian=hermitian, **kw).tolist())
        _close(tp.linalg.pinv(gpu, hermitian=hermitian, **kw),
               tp.linalg.pinv(cpu, hermitian=hermitian, **kw), dtype, scale=100)


@pytest.mark.parametrize("dtype", DTYPES)
def test_pinv_rectangular(dtype):
    for shape in [(5, 3), (2, 3, 7), (0, 4), (3, 0)]:
        cpu, gpu = _pair(_rand(shape), dtype)
        _close(tp.linalg.pinv(gpu), tp.linalg.pinv(cpu), dtype, scale=100)
        assert tp.linalg.matrix_rank(gpu).cpu().tolist() == tp.linalg.matrix_rank(cpu).tolist()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, -1, -3])
def test_matrix_power(n, dtype):
    for shape in [(4, 4), (2, 3, 3), (0, 2, 2)]:
        cpu, gpu = _pair(_well(shape) / (2 * shape[-1]), dtype)
        got = tp.linalg.matrix_power(gpu, n)
        _close(got, tp.linalg.matrix_power(cpu, n), dtype, scale=100)


@pytest.mark.parametrize("dtype", ("float32", "float64", "float16"))
@pytest.mark.parametrize("scale", [1e-3, 0.1, 1.0, 3.0, 30.0])
def test_matrix_exp(scale, dtype):
    for shape in [(4, 4), (3, 5, 5), (0, 3, 3), (2, 0, 0), (1, 1)]:
        a = _rand(shape) * scale / max(shape[-1], 1)
        cpu, gpu = _pair(a, dtype)
        tol = {"float16": 1e3}.get(dtype, 100)
        np.testing.assert_allclose(_np(tp.linalg.matrix_exp(gpu)), _np(tp.linalg.matrix_exp(cpu)),
                                   rtol=TOL.get(dtype, 1e-6) * tol, atol=TOL.get(dtype, 1e-6) * tol)


def test_matrix_exp_mixed_norms_and_non_finite():
    a = np.stack([np.zeros((3, 3)), _rand((3, 3)) * 1e-3, _rand((3, 3), 1) * 20,
                  np.full((3, 3), np.nan), np.diag([np.inf, 0, 0])])
    cpu, gpu = _pair(a, "float64")
    np.testing.assert_allclose(_np(tp.linalg.matrix_exp(gpu)), _np(tp.linalg.matrix_exp(cpu)),
                               rtol=1e-9, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", [((5, 3), (5, 2)), ((3, 5), (3, 2)), ((2, 6, 4), (2, 6)),
                                    ((2, 4, 6), (2, 4, 3)), ((1, 5, 3), (4, 5, 1)), ((0, 3), (0, 2)),
                                    ((2, 5, 3), (2, 5, 0)), ((40, 20), (40, 3))])
def test_lstsq_gels(shapes, dtype):
    a_shape, b_shape = shapes
    ac, ag = _pair(_rand(a_shape), dtype)
    bc, bg = _pair(_rand(b_shape, seed=1), dtype)
    got = tp.linalg.lstsq(ag, bg)  # gels: the default (and only) driver on CUDA
    want = tp.linalg.lstsq(ac, bc, driver="gels")
    for g, w in zip(got, want):
        assert g.device.type == "cuda" and str(g.dtype) == str(w.dtype)
        assert tuple(g.shape) == tuple(w.shape)
    _close(got.solution, want.solution, dtype, scale=10)
    _close(got.residuals, want.residuals, dtype, scale=100)
    with pytest.raises(RuntimeError, match="other than `gels` is not supported on CUDA"):
        tp.linalg.lstsq(ag, bg, driver="gelsy")


@pytest.mark.parametrize("dtype", DTYPES)
def test_errors_match_cpu(dtype):
    cases = [
        (tp.linalg.inv, np.zeros((3, 3))),
        (tp.linalg.inv, np.stack([np.eye(3), np.diag([1.0, 1.0, 0.0])])),
        (lambda a: tp.linalg.solve(a, tp.ones(a.shape[:-1], dtype=a.dtype, device=a.device)),
         np.stack([np.eye(2), np.zeros((2, 2))])),
        (tp.linalg.cholesky, -np.eye(3)),
        (tp.linalg.cholesky, np.stack([np.eye(2), np.diag([1.0, -1.0])])),
        (tp.linalg.cholesky, np.diag([1.0, np.nan, 1.0])),
        (tp.linalg.svd, np.full((3, 3), np.nan)),
        (tp.linalg.svdvals, np.stack([np.eye(2), np.full((2, 2), np.nan)])),
        (lambda a: tp.linalg.lstsq(a, tp.ones(a.shape[:-1] + (1,), dtype=a.dtype, device=a.device),
                                   driver="gels"),
         np.stack([np.eye(4)[:, :3], np.array([[1.0, 0, 2], [1, 0, 2], [1, 0, 2], [1, 0, 2]])])),
    ]
    for fn, a in cases:
        cpu, gpu = _pair(a, dtype)
        with pytest.raises(tp.linalg.LinAlgError) as want:
            fn(cpu)
        with pytest.raises(tp.linalg.LinAlgError) as got:
            fn(gpu)
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("dtype", DTYPES)
def test_ex_info_values(dtype):
    a = np.stack([np.eye(3), np.diag([1.0, 0.0, 1.0]), np.diag([1.0, 1.0, 0.0]), np.zeros((3, 3))])
    cpu, gpu = _pair(a, dtype)
    inv, info = tp.linalg.inv_ex(gpu)
    inv_c, info_c = tp.linalg.inv_ex(cpu)
    assert info.device.type == "cuda" and info.cpu().tolist() == info_c.tolist()
    np.testing.assert_array_equal(_np(inv), _np(inv_c))  # singular ones: identity, as the CPU
    spd = np.stack([np.eye(3), np.diag([1.0, -1.0, 1.0]), np.diag([1.0, 1.0, -2.0]),
                    np.diag([1.0, np.nan, 1.0])])
    cpu, gpu = _pair(spd, dtype)
    L, info = tp.linalg.cholesky_ex(gpu)
    L_c, info_c = tp.linalg.cholesky_ex(cpu)
    assert info.device.type == "cuda" and info.cpu().tolist() == info_c.tolist() == [0, 2, 3, 2]
    np.testing.assert_array_equal(np.triu(_np(L), 1), 0)
    with pytest.raises(tp.linalg.LinAlgError, match="order 2"):
        tp.linalg.cholesky_ex(gpu, check_errors=True)
    for n in (3, 130):  # batched and looped routines
        d = np.ones((3, n))
        d[1, n // 2] = 0
        d[2, n - 1] = -1
        cpu, gpu = _pair(np.stack([np.diag(v) for v in d]), dtype)
        assert tp.linalg.inv_ex(gpu)[1].cpu().tolist() == tp.linalg.inv_ex(cpu)[1].tolist() == [0, n // 2 + 1, 0]
        assert (tp.linalg.cholesky_ex(gpu)[1].cpu().tolist() == tp.linalg.cholesky_ex(cpu)[1].tolist()
                == [0, n // 2 + 1, n])


def test_non_default_stream_and_threads():
    import threading
    cpu, gpu = _pair(_well((8, 16, 16)), "float64")
    want = _np(tp.linalg.inv(cpu))
    tp.cuda.synchronize()
    s = tp.cuda.Stream()
    with tp.cuda.stream(s):
        got = tp.linalg.inv(gpu)
        sv = tp.linalg.svdvals(gpu)
    s.synchronize()
    np.testing.assert_allclose(_np(sv), _np(tp.linalg.svdvals(cpu)), rtol=1e-10)
    np.testing.assert_allclose(_np(got), want, atol=1e-10)
    results = [None] * 4

    def work(i):
        results[i] = _np(tp.linalg.inv(gpu))
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        np.testing.assert_allclose(r, want, atol=1e-10)


def test_out_and_legacy_names():
    cpu, gpu = _pair(_well((2, 3, 3)), "float64")
    out = tp.empty(0, dtype=tp.float64, device="cuda")
    tp.linalg.inv(gpu, out=out)
    _close(out, tp.linalg.inv(cpu), "float64")
    _close(tp.inverse(gpu), tp.inverse(cpu), "float64")
    _close(tp.det(gpu), tp.det(cpu), "float64")
    U, S, V = tp.svd(gpu)
    _close(S, tp.svd(cpu)[1], "float64")
    for got, want in zip(tp.svd(gpu, compute_uv=False), tp.svd(cpu, compute_uv=False)):
        _close(got, want, "float64")
    Q, R = tp.qr(gpu)
    _close(R, tp.qr(cpu)[1], "float64")
    _close(tp.pinverse(gpu), tp.pinverse(cpu), "float64")
    _close(tp.matrix_exp(gpu), tp.matrix_exp(cpu), "float64")


GRAD_CASES = {
    "det": (lambda a: tp.linalg.det(a), _well),
    "slogdet": (lambda a: tp.linalg.slogdet(a)[1], _well),
    "inv": (lambda a: tp.linalg.inv(a), _well),
    "solve": (lambda a: tp.linalg.solve(a, a[..., :2] * 2 + 1), _well),
    "cholesky": (lambda a: tp.linalg.cholesky(a @ a.mT + 4 * tp.eye(4, dtype=a.dtype, device=a.device)), _rand),
    "eigvalsh": (lambda a: tp.linalg.eigvalsh(a + a.mT), _rand),
    "svdvals": (lambda a: tp.linalg.svdvals(a), _rand),
    "pinv": (lambda a: tp.linalg.pinv(a), _well),
    "matrix_power": (lambda a: tp.linalg.matrix_power(a, -2), _well),
    "matrix_exp": (lambda a: tp.linalg.matrix_exp(a), _rand),
    "qr_r": (lambda a: tp.linalg.qr(a)[1].abs(), _rand),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_float64_gradients_match_cpu(name):
    fn, make = GRAD_CASES[name]
    a = make((2, 4, 4)) / 4
    grads = []
    for device in ("cpu", "cuda"):
        x = tp.tensor(a, dtype=tp.float64, device=device).requires_grad_()
        out = fn(x)
        w = tp.tensor(np.random.default_rng(3).standard_normal(tuple(out.shape)), dtype=tp.float64,
                      device=device)
        (g,) = tp.autograd.grad((out * w).sum(), [x])
        grads.append(_np(g))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-8, atol=1e-9)
