"""Matrix products on CUDA (cuBLAS / cuBLASLt) and the matmul precision settings.

Everywhere: tp.set_float32_matmul_precision, tp.backends.cuda.matmul and tp.backends.cudnn
against torch (values, consistency, errors). On a GPU: every product against the float64
CPU result of the same (exactly representable) inputs, elementwise within tol * (|A| @ |B|),
the rounding bound of a sum of products: shapes, layouts (transposed, strided, sliced,
broadcast operands), dtypes, TF32 on and off, empty shapes and k == 0, out=, errors,
streams and threads, the workspace, gradients."""
import os
import re
import threading

import pytest
import torch

import tensorplay as tp

HAS_GPU = tp.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU")
TORCH_GPU = torch.cuda.is_available()

DTYPES = ("float32", "float64", "float16", "bfloat16")
# |result - float64 result| <= TOL * (|A| @ |B|): float32 in IEEE float32 (TF32 off); the
# half types accumulate in float32 but round the result and (allowed by default) split-K
# partial sums to their own type: about 6 unit roundoffs (2**-11, 2**-8).
TOL = {"float64": 1e-12, "float32": 1e-5, "float16": 3e-3, "bfloat16": 2.4e-2}
TF32_TOL = 4e-3  # inputs rounded to 10 mantissa bits (either rounding mode), float32 sums


@pytest.fixture(autouse=True)
def restore_settings():
    yield
    for lib in (tp, torch):
        lib.set_float32_matmul_precision("highest")
        m = lib.backends.cuda.matmul
        m.allow_fp16_reduced_precision_reduction = True
        m.allow_bf16_reduced_precision_reduction = True
        m.allow_fp16_accumulation = False
        lib.backends.cudnn.allow_tf32 = True


# ================================================================ settings (every build)


def _matmul_flags(lib):
    m = lib.backends.cuda.matmul
    halves = [getattr(m, f"allow_{h}_reduced_precision_reduction{s}")
              for h in ("fp16", "bf16") for s in ("", "_split_k")]
    return (lib.get_float32_matmul_precision(), m.allow_tf32, *halves, m.allow_fp16_accumulation,
            lib.backends.cudnn.allow_tf32)


def test_default_settings_match_torch():
    assert _matmul_flags(tp) == ("highest", False, True, True, True, True, False, True)
    assert _matmul_flags(tp) == _matmul_flags(torch)
    assert tp.backends.cuda.is_built() is bool(tp._C._cuda_compiled)


def _apply(lib, step):
    if step.startswith("P"):
        lib.set_float32_matmul_precision(step[1:])
    else:
        lib.backends.cuda.matmul.allow_tf32 = step == "T"


@pytest.mark.parametrize("steps", [["Phigh"], ["Pmedium"], ["Phigh", "Phighest"], ["T"],
                                   ["T", "F"], ["Pmedium", "Phigh"], ["T", "Phighest"],
                                   ["Phigh", "T"], ["Pmedium", "Phighest", "T", "F"]])
def test_precision_and_allow_tf32_follow_each_other(steps):
    for step in steps:
        _apply(tp, step)
        _apply(torch, step)
        assert _matmul_flags(tp) == _matmul_flags(torch), step
        tf32 = tp.get_float32_matmul_precision() != "highest"
        assert tp.backends.cuda.matmul.allow_tf32 == tf32


def test_allow_tf32_false_after_high_gives_highest():
    # (torch 2.13 raises from get_float32_matmul_precision after this mix of its two APIs;
    # TensorPlay keeps one state, so the answer is the consistent one)
    tp.set_float32_matmul_precision("high")
    tp.backends.cuda.matmul.allow_tf32 = False
    assert tp.get_float32_matmul_precision() == "highest"
    tp.set_float32_matmul_precision("medium")
    tp.backends.cuda.matmul.allow_tf32 = True
    assert tp.get_float32_matmul_precision() == "high"


@pytest.mark.parametrize("value", ["low", "HIGH", ""])
def test_unknown_precision_warns_and_changes_nothing(value):
    for lib in (tp, torch):
        lib.set_float32_matmul_precision("high")
        with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
            lib.set_float32_matmul_precision(value)
        assert lib.get_float32_matmul_precision() == "high"


@pytest.mark.parametrize("value,name", [(1, "int"), (None, "NoneType"), (1.5, "float")])
def test_precision_must_be_a_str(value, name):
    for lib in (tp, torch):
        with pytest.raises(RuntimeError,
                           match=f"set_float32_matmul_precision expects a str, but got {name}"):
            lib.set_float32_matmul_precision(value)
        assert lib.get_float32_matmul_precision() == "highest"
        lib.set_float32_matmul_precision(b"medium")  # bytes are taken as a str
        assert lib.get_float32_matmul_precision() == "medium"


@pytest.mark.parametrize("value", [1, 0, 1.0, "yes", None])
def test_flags_take_bools_only(value):
    name = type(value).__name__
    for lib in (tp, torch):
        m = lib.backends.cuda.matmul
        with pytest.raises(RuntimeError, match=f"set_allow_tf32_cublas expects a bool, but got {name}"):
            m.allow_tf32 = value
        with pytest.raises(RuntimeError,
                           match=f"set_allow_fp16_accumulation_cublas expects a bool, but got {name}"):
            m.allow_fp16_accumulation = value
        with pytest.raises(RuntimeError, match=f"expects a bool, but got {name}"):
            lib.backends.cudnn.allow_tf32 = value
        assert _matmul_flags(lib) == ("highest", False, True, True, True, True, False, True)


@pytest.mark.parametrize("half", ["fp16", "bf16"])
def test_reduced_precision_reduction_forms(half):
    name = f"allow_{half}_reduced_precision_reduction"
    for value, expect in [(False, (False, True)), ([False], (False, True)),
                          ((False, False), (False, False)), (True, (True, True)),
                          ((True,), (True, True)), ([False, True], (False, True)),
                          ((True, True), (True, True))]:
        for lib in (tp, torch):
            m = lib.backends.cuda.matmul
            setattr(m, name, value)
            assert (getattr(m, name), getattr(m, name + "_split_k")) == expect, (lib, value)
    other = f"allow_{'bf16' if half == 'fp16' else 'fp16'}_reduced_precision_reduction"
    setattr(tp.backends.cuda.matmul, name, (False, False))
    assert getattr(tp.backends.cuda.matmul, other) is True  # the two dtypes are separate


@pytest.mark.parametrize("value,exc,msg", [
    (1, TypeError, "expects a bool or a tuple/list of bools, but got <class 'int'>"),
    ((), TypeError, "expects at least one boolean argument"),
    ((True, 1), TypeError, "expects a bool for allow_splitk, but got <class 'int'>"),
    ((1, True), TypeError, "expects a bool for allow_reduced_precision, but got <class 'int'>"),
    ((True, True, True), TypeError, "expects at most two boolean arguments"),
    ((True, False), RuntimeError, "allow_splitk=False is not supported when reduced precision "
                                  "reductions are enabled"),
])
def test_reduced_precision_reduction_errors(value, exc, msg):
    for lib in (tp, torch):
        m = lib.backends.cuda.matmul
        m.allow_bf16_reduced_precision_reduction = (False, False)
        for name in (f"allow_{h}_reduced_precision_reduction" for h in ("fp16", "bf16")):
            with pytest.raises(exc, match=re.escape(msg)):
                setattr(m, name, value)
        assert m.allow_fp16_reduced_precision_reduction is True
        assert m.allow_bf16_reduced_precision_reduction_split_k is False


def test_fp16_accumulation_flag():
    for lib in (tp, torch):
        lib.backends.cuda.matmul.allow_fp16_accumulation = True
        assert lib.backends.cuda.matmul.allow_fp16_accumulation is True
        lib.backends.cuda.matmul.allow_fp16_accumulation = False
        assert lib.backends.cuda.matmul.allow_fp16_accumulation is False


def test_unknown_matmul_attribute():
    for lib in (tp, torch):
        with pytest.raises(AttributeError, match="Unknown attribute foo"):
            lib.backends.cuda.matmul.foo
        with pytest.raises(AttributeError, match="Unknown attribute foo"):
            lib.backends.cuda.matmul.foo = True


def test_cudnn_flags_like_torch():
    for lib in (tp, torch):
        c = lib.backends.cudnn
        assert (c.enabled, c.benchmark, c.deterministic, c.allow_tf32) == (True, False, False, True)
        c.allow_tf32 = False
        assert c.allow_tf32 is False and lib.get_float32_matmul_precision() == "highest"
        with c.flags(enabled=False, benchmark=True, deterministic=True, allow_tf32=True):
            assert (c.enabled, c.benchmark, c.deterministic, c.allow_tf32) == (False, True, True, True)
        assert (c.enabled, c.benchmark, c.deterministic, c.allow_tf32) == (True, False, False, False)
        for flag in ("benchmark", "deterministic", "enabled"):
            with pytest.raises(RuntimeError, match=f"set_{flag}_cudnn expects a bool, but got int"):
                setattr(c, flag, 3)
    # (test_cudnn.py checks is_available() / version() against the build)
    if not tp._C._cuda_compiled:
        assert tp.backends.cudnn.is_available() is False and tp.backends.cudnn.version() is None


def test_cpu_products_ignore_the_precision():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 300, generator=g), torch.randn(300, 40, generator=g)
    x, y = tp.from_dlpack(a.clone()), tp.from_dlpack(b.clone())
    ref = tp.mm(x, y).tolist()
    for p in ("high", "medium"):
        tp.set_float32_matmul_precision(p)
        assert tp.mm(x, y).tolist() == ref


# ================================================================ products on a GPU


def _pair(shape, dtype, seed):
    """(float64 torch CPU tensor, tp CUDA tensor of `dtype`) holding the same values: random
    normal numbers rounded to `dtype` first, so the float64 reference sees exactly them."""
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(shape, generator=g, dtype=torch.float64).to(getattr(torch, dtype)).double()
    return t, tp.from_dlpack(t.clone()).to(getattr(tp, dtype)).cuda()


def _host64(x):
    """A tp tensor as a float64 torch CPU tensor."""
    return torch.from_dlpack(x.cpu().to(tp.float64).contiguous())


def _check(got, ref, scale, dtype, tol=None):
    """got (a tp CUDA tensor of `dtype`) == ref within tol * scale, elementwise."""
    assert got.device.type == "cuda", got.device
    assert got.dtype == getattr(tp, dtype)
    assert tuple(got.shape) == tuple(ref.shape)
    tol = TOL[dtype] if tol is None else tol
    err = (_host64(got) - ref).abs()
    ok = err <= tol * scale
    worst = (err / scale.clamp_min(1e-300)).max().item() if err.numel() else 0.0
    assert bool(ok.all()), f"max err / scale {worst:.3e} > {tol:.0e}"


def _run(fn, operands, dtype, tol=None, **kw):
    """fn(lib, *operands) on tp CUDA tensors against fn(torch, float64 operands), scale from
    fn on the absolute values (fn must be monotone in them: products and sums)."""
    refs = [r for r, _ in operands]
    got = fn(tp, *[x for _, x in operands], **kw)
    ref = fn(torch, *refs, **kw)
    scale = fn(torch, *[r.abs() for r in refs], **{k: abs(v) for k, v in kw.items()})
    _check(got, ref, scale, dtype, tol)
    return got


# (m, k, n): square, tall-skinny, long k, vector-like, odd, k == 1
MM_SHAPES = [(64, 64, 64), (1000, 3, 5), (3, 1000, 2), (1, 257, 1), (17, 33, 9), (1, 1, 1), (5, 1, 7)]

# How an operand of shape (r, c) is made: a view of a bigger or transposed tensor.
LAYOUTS = {
    "contiguous": ((lambda r, c: (r, c)), lambda t: t),
    "transposed": ((lambda r, c: (c, r)), lambda t: t.t()),
    "strided": ((lambda r, c: (r, 2 * c)), lambda t: t[:, ::2]),
    "sliced": ((lambda r, c: (r + 1, c + 3)), lambda t: t[1:, 2:-1]),
    "row_broadcast": ((lambda r, c: (1, c)), None),  # expanded to (r, c)
}


def _operand(r, c, dtype, layout, seed):
    make, view = LAYOUTS[layout]
    t, x = _pair(make(r, c), dtype, seed)
    if view is None:
        return t.expand(r, c), x.expand(r, c)
    return view(t), view(x)


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,k,n", MM_SHAPES)
def test_mm_shapes(dtype, m, k, n):
    _run(lambda lib, a, b: lib.mm(a, b), [_pair((m, k), dtype, 1), _pair((k, n), dtype, 2)], dtype)


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("la", list(LAYOUTS))
@pytest.mark.parametrize("lb", list(LAYOUTS))
def test_mm_layouts(dtype, la, lb):
    m, k, n = 24, 40, 16
    _run(lambda lib, a, b: lib.mm(a, b), [_operand(m, k, dtype, la, 1), _operand(k, n, dtype, lb, 2)],
         dtype)


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_bmm_layouts(dtype):
    b_, m, k, n = 4, 9, 13, 6
    mm = lambda lib, a, b: lib.bmm(a, b)  # noqa: E731
    _run(mm, [_pair((b_, m, k), dtype, 1), _pair((b_, k, n), dtype, 2)], dtype)
    ta, xa = _pair((b_, k, m), dtype, 3)  # per-matrix transposes
    tb, xb = _pair((b_, n, k), dtype, 4)
    _run(mm, [(ta.transpose(1, 2), xa.transpose(1, 2)), (tb.transpose(1, 2), xb.transpose(1, 2))], dtype)
    ta, xa = _pair((m, b_, k), dtype, 5)  # batch not outermost: batch stride k
    _run(mm, [(ta.permute(1, 0, 2), xa.permute(1, 0, 2)), _pair((b_, k, n), dtype, 6)], dtype)
    ta, xa = _pair((1, m, k), dtype, 7)  # one matrix broadcast over the batch (stride 0)
    _run(mm, [(ta.expand(b_, m, k), xa.expand(b_, m, k)), _pair((b_, k, n), dtype, 8)], dtype)
    ta, xa = _pair((b_, m, 2 * k), dtype, 9)  # no unit stride: copied
    _run(mm, [(ta[:, :, ::2], xa[:, :, ::2]), _pair((b_, k, n), dtype, 10)], dtype)


# matmul's forms: 1-D operands, batch folding and broadcasting
MATMUL_SHAPES = [
    ((7,), (7,)), ((7,), (7, 5)), ((6, 7), (7,)), ((6, 7), (7, 5)), ((3, 6, 7), (7, 5)),
    ((3, 6, 7), (7,)), ((7,), (3, 7, 5)), ((6, 7), (3, 7, 5)), ((2, 1, 6, 7), (3, 7, 5)),
    ((2, 3, 6, 7), (3, 7, 5)), ((1, 6, 7), (4, 7, 5)), ((2, 1, 4, 6, 7), (1, 3, 1, 7, 5)),
]


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES, ids=[f"{a}@{b}" for a, b in MATMUL_SHAPES])
def test_matmul_forms(dtype, sa, sb):
    _run(lambda lib, a, b: lib.matmul(a, b), [_pair(sa, dtype, 1), _pair(sb, dtype, 2)], dtype)
    _run(lambda lib, a, b: a @ b, [_pair(sa, dtype, 1), _pair(sb, dtype, 2)], dtype)


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_vector_products(dtype):
    mv = [_pair((9, 300), dtype, 1), _pair((300,), dtype, 2)]
    _run(lambda lib, a, v: lib.mv(a, v), mv, dtype)
    t, x = _pair((300, 9), dtype, 3)  # a column-major matrix
    _run(lambda lib, a, v: lib.mv(a, v), [(t.t(), x.t()), mv[1]], dtype)
    for op in ("dot", "vdot", "inner"):
        _run(lambda lib, a, b: getattr(lib, op)(a, b),
             [_pair((1000,), dtype, 4), _pair((1000,), dtype, 5)], dtype)
    t1, x1 = _pair((2000,), dtype, 6)  # strided and broadcast vectors
    t2, x2 = _pair((1,), dtype, 7)
    _run(lambda lib, a, b: lib.dot(a, b), [(t1[::2], x1[::2]), (t2.expand(1000), x2.expand(1000))], dtype)
    _run(lambda lib, a, b: lib.dot(a, b), [_pair((1,), dtype, 8), _pair((1,), dtype, 9)], dtype)


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, -2.0), (0, 1.5), (1, 0.25)])
def test_addmm(dtype, beta, alpha):
    m, k, n = 20, 30, 12
    f = lambda lib, s, a, b, beta, alpha: lib.addmm(s, a, b, beta=beta, alpha=alpha)  # noqa: E731
    ops = [_pair((k, m), dtype, 2), _pair((n, k), dtype, 3)]
    a, b = (ops[0][0].t(), ops[0][1].t()), (ops[1][0].t(), ops[1][1].t())
    for shape in [(m, n), (n,), (1, n), (m, 1), ()]:  # 1-D bias: cuBLASLt's bias epilogue
        _run(f, [_pair(shape, dtype, 1), a, b], dtype, beta=beta, alpha=alpha)
        _run(f, [_pair(shape, dtype, 1), _pair((m, k), dtype, 4), _pair((k, n), dtype, 5)], dtype,
             beta=beta, alpha=alpha)


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_addmm_bias_edge_layouts(dtype):
    f = lambda lib, s, a, b: lib.addmm(s, a, b)  # noqa: E731
    # one row / one column (cuBLASLt is not used), a bias at an odd address, a strided bias
    for m, k, n in [(1, 8, 5), (6, 8, 1), (6, 1, 5), (2, 2, 2)]:
        _run(f, [_pair((n,), dtype, 1), _pair((m, k), dtype, 2), _pair((k, n), dtype, 3)], dtype)
    tb, xb = _pair((41,), dtype, 4)
    _run(f, [(tb[1:], xb[1:]), _pair((16, 24), dtype, 5), _pair((24, 40), dtype, 6)], dtype)
    _run(f, [(tb[::2][:20], xb[::2][:20]), _pair((16, 24), dtype, 5), _pair((24, 20), dtype, 6)], dtype)


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_batched_adds(dtype):
    B, m, k, n = 3, 7, 11, 5
    _run(lambda lib, s, a, b: lib.baddbmm(s, a, b, beta=0.5, alpha=2.0),
         [_pair((B, m, n), dtype, 1), _pair((B, m, k), dtype, 2), _pair((B, k, n), dtype, 3)], dtype)
    _run(lambda lib, s, a, b: lib.baddbmm(s, a, b), [_pair((n,), dtype, 1), _pair((B, m, k), dtype, 2),
                                                      _pair((B, k, n), dtype, 3)], dtype)
    _run(lambda lib, s, a, b: lib.addbmm(s, a, b, beta=2.0, alpha=0.5),
         [_pair((m, n), dtype, 4), _pair((B, m, k), dtype, 5), _pair((B, k, n), dtype, 6)], dtype)
    _run(lambda lib, s, a, v: lib.addmv(s, a, v, beta=-1.0, alpha=3.0),
         [_pair((m,), dtype, 7), _pair((m, k), dtype, 8), _pair((k,), dtype, 9)], dtype)


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_inplace_adds(dtype):
    ts, xs = _pair((6, 5), dtype, 1)
    (ta, xa), (tb, xb) = _pair((6, 4), dtype, 2), _pair((4, 5), dtype, 3)
    ptr = xs.data_ptr()
    xs.addmm_(xa, xb, beta=0.5, alpha=2.0)
    assert xs.data_ptr() == ptr
    _check(xs, ts.addmm(ta, tb, beta=0.5, alpha=2.0), ts.abs() * 0.5 + 2.0 * ta.abs() @ tb.abs(), dtype)
    tt, xt = _pair((5, 6), dtype, 4)  # a transposed self, written in place
    xt.t().addmm_(xa, xb)
    _check(xt.t(), tt.t() + ta @ tb, tt.abs().t() + ta.abs() @ tb.abs(), dtype)
    tv, xv = _pair((6,), dtype, 5)
    xv.addmv_(xa, _pair((4,), dtype, 6)[1])
    tw = _pair((4,), dtype, 6)[0]
    _check(xv, tv + ta @ tw, tv.abs() + ta.abs() @ tw.abs(), dtype)


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_other_gemm_shaped_ops(dtype):
    _run(lambda lib, a, b: lib.tensordot(a, b, dims=([1, 2], [0, 1])),
         [_pair((4, 5, 6), dtype, 1), _pair((5, 6, 3), dtype, 2)], dtype)
    _run(lambda lib, a, b: lib.einsum("bij,bjk->bik", a, b),
         [_pair((2, 3, 4), dtype, 3), _pair((2, 4, 5), dtype, 4)], dtype)
    _run(lambda lib, a, b: lib.einsum("ij,kj->ik", a, b),
         [_pair((3, 4), dtype, 5), _pair((6, 4), dtype, 6)], dtype)
    _run(lambda lib, a, b: lib.inner(a, b), [_pair((3, 4), dtype, 7), _pair((2, 5, 4), dtype, 8)], dtype)


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_linear(dtype):
    F = {tp: tp.nn.functional.linear, torch: torch.nn.functional.linear}
    w, bias = _pair((12, 20), dtype, 1), _pair((12,), dtype, 2)
    _run(lambda lib, x, w, b: F[lib](x, w, b), [_pair((30, 20), dtype, 3), w, bias], dtype)
    _run(lambda lib, x, w, b: F[lib](x, w, b), [_pair((2, 5, 20), dtype, 4), w, bias], dtype)
    _run(lambda lib, x, w: F[lib](x, w), [_pair((30, 20), dtype, 5), w], dtype)
    _run(lambda lib, x, w: F[lib](x, w), [_pair((3, 2, 20), dtype, 6), w], dtype)
    _run(lambda lib, x, w: F[lib](x, w), [_pair((20,), dtype, 7), w], dtype)


# ---------------------------------------------------------------- empty shapes and k == 0


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_products(dtype):
    for sa, sb in [((0, 5), (5, 3)), ((4, 5), (5, 0)), ((0, 5), (5, 0)), ((0, 2, 3), (0, 3, 4)),
                   ((2, 0, 3), (2, 3, 4)), ((0,), (0, 3))]:
        _run(lambda lib, a, b: lib.matmul(a, b), [_pair(sa, dtype, 1), _pair(sb, dtype, 2)], dtype)


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_k_zero(dtype):
    nan = float("nan")
    z = lambda *s: tp.empty(*s, dtype=getattr(tp, dtype), device="cuda")  # noqa: E731
    for got, shape in [(tp.mm(z(3, 0), z(0, 4)), (3, 4)), (tp.bmm(z(2, 3, 0), z(2, 0, 4)), (2, 3, 4)),
                       (tp.matmul(z(0), z(0)), ()), (tp.mv(z(3, 0), z(0)), (3,)),
                       (tp.matmul(z(5, 3, 0), z(0, 2)), (5, 3, 2))]:
        zero = torch.zeros(shape, dtype=torch.float64)
        _check(got, zero, zero, dtype)
    # beta == 0 ignores self, NaNs included; other betas scale it
    full = lambda s, v: tp.full(s, v, dtype=getattr(tp, dtype), device="cuda")  # noqa: E731
    got = tp.addmm(full((3, 4), nan), z(3, 0), z(0, 4), beta=0)
    _check(got, torch.zeros(3, 4, dtype=torch.float64), torch.zeros(3, 4, dtype=torch.float64), dtype)
    for beta in (1, 2.5, -0.5):
        ts, xs = _pair((3, 4), dtype, 1)
        exact = ts * beta  # beta * self is exact (or one rounding) in every dtype
        _check(tp.addmm(xs, z(3, 0), z(0, 4), beta=beta, alpha=3), exact, exact.abs(), dtype)
        _check(tp.baddbmm(xs.expand(2, 3, 4), z(2, 3, 0), z(2, 0, 4), beta=beta),
               exact.expand(2, 3, 4), exact.abs().expand(2, 3, 4), dtype)
        tv, xv = _pair((3,), dtype, 2)
        _check(tp.addmv(xv, z(3, 0), z(0), beta=beta), tv * beta, (tv * beta).abs(), dtype)
    xs = full((3, 4), nan)
    xs.addmm_(z(3, 0), z(0, 4), beta=0)
    assert _host64(xs).tolist() == [[0.0] * 4] * 3


# ---------------------------------------------------------------- out=


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_out(dtype):
    dt = getattr(tp, dtype)
    (ta, xa), (tb, xb) = _pair((6, 4), dtype, 1), _pair((4, 5), dtype, 2)
    ref, scale = ta @ tb, ta.abs() @ tb.abs()
    out = tp.empty(6, 5, dtype=dt, device="cuda")
    ptr = out.data_ptr()
    tp.mm(xa, xb, out=out)
    assert out.data_ptr() == ptr
    _check(out, ref, scale, dtype)
    base = tp.empty(5, 6, dtype=dt, device="cuda")  # a transposed (non-contiguous) out
    tp.matmul(xa, xb, out=base.t())
    _check(base.t(), ref, scale, dtype)
    out = tp.empty(0, dtype=dt, device="cuda")  # resized
    tp.mm(xa, xb, out=out)
    _check(out, ref, scale, dtype)
    out = tp.empty(6, 5, dtype=dt, device="cuda")  # addmm with a bias row (cuBLASLt) into out
    tbias, xbias = _pair((5,), dtype, 3)
    tp.addmm(xbias, xa, xb, out=out)
    _check(out, tbias + ref, tbias.abs() + scale, dtype)
    x = xa.clone()  # out aliasing an input
    tp.mm(x, tp.eye(4, dtype=dt).cuda(), out=x)
    _check(x, ta, ta.abs(), dtype)
    d = tp.empty((), dtype=dt, device="cuda")
    (tv, xv), (tw, xw) = _pair((50,), dtype, 4), _pair((50,), dtype, 5)
    tp.dot(xv, xw, out=d)
    _check(d, tv @ tw, tv.abs() @ tw.abs(), dtype)
    ob = tp.empty(3, 6, 5, dtype=dt, device="cuda")
    (t3, x3) = _pair((3, 6, 4), dtype, 6)
    tp.bmm(x3, xb.expand(3, 4, 5), out=ob)
    _check(ob, t3 @ tb, t3.abs() @ tb.abs(), dtype)


@gpu
def test_out_errors():
    a, b = tp.ones(2, 3, device="cuda"), tp.ones(3, 4, device="cuda")
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        tp.mm(a, b, out=tp.empty(2, 4, dtype=tp.float64, device="cuda"))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        tp.mm(a, b, out=tp.empty(2, 4))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        tp.matmul(tp.ones(2, 3), tp.ones(3, 4), out=tp.empty(2, 4, device="cuda"))


# ---------------------------------------------------------------- errors


@gpu
def test_argument_errors():
    a = tp.ones(2, 3, device="cuda")
    shapes = re.escape("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")
    with pytest.raises(RuntimeError, match=shapes):
        tp.mm(a, tp.ones(4, 5, device="cuda"))
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):
        tp.mm(a, tp.ones(3, 4, dtype=tp.float64, device="cuda"))
    with pytest.raises(RuntimeError, match="Expected size for first two dimensions of batch2 tensor"):
        tp.bmm(tp.ones(2, 2, 3, device="cuda"), tp.ones(3, 3, 4, device="cuda"))
    with pytest.raises(RuntimeError, match="size mismatch"):
        tp.mv(a, tp.ones(4, device="cuda"))
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        tp.dot(tp.ones(3, device="cuda"), tp.ones(4, device="cuda"))
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D"):
        tp.matmul(tp.ones((), device="cuda"), a)
    if TORCH_GPU:  # the same calls fail in torch too
        with pytest.raises(RuntimeError, match=shapes):
            torch.mm(torch.ones(2, 3, device="cuda"), torch.ones(4, 5, device="cuda"))


@gpu
@pytest.mark.parametrize("call", [
    lambda m, c, h: m.mm(c(2, 3), h(3, 4)),
    lambda m, c, h: m.mm(h(2, 3), c(3, 4)),
    lambda m, c, h: m.matmul(c(2, 3), h(3)),
    lambda m, c, h: m.bmm(c(2, 2, 3), h(2, 3, 4)),
    lambda m, c, h: m.mv(h(2, 3), c(3)),
    lambda m, c, h: m.dot(c(3), h(3)),
    lambda m, c, h: m.addmm(h(4), c(2, 3), c(3, 4)),
    lambda m, c, h: m.baddbmm(c(2, 2, 4), c(2, 2, 3), h(2, 3, 4)),
])
def test_device_mismatch(call):
    cuda = lambda *s: tp.ones(*s, device="cuda")  # noqa: E731
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found at "
                                           "least two devices, (cuda:0 and cpu|cpu and cuda:0)!"):
        call(tp, cuda, tp.ones)
    if TORCH_GPU:
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            call(torch, lambda *s: torch.ones(*s, device="cuda"), torch.ones)


@gpu
@pytest.mark.parametrize("dtype,name", [(tp.int64, "Long"), (tp.int32, "Int"), (tp.bool, "Bool"),
                                        (tp.uint8, "Byte")])
def test_unsupported_dtypes(dtype, name):
    c = lambda *s: tp.ones(*s, dtype=dtype, device="cuda")  # noqa: E731
    for fn, kernel in [(lambda: tp.mm(c(2, 3), c(3, 4)), "addmm_cuda"),
                       (lambda: tp.addmm(c(2, 4), c(2, 3), c(3, 4)), "addmm_cuda"),
                       (lambda: tp.bmm(c(2, 2, 3), c(2, 3, 4)), "baddbmm_cuda"),
                       (lambda: tp.matmul(c(2, 2, 3), c(2, 3, 4)), "baddbmm_cuda"),
                       (lambda: tp.mv(c(2, 3), c(3)), "addmv_impl_cuda"),
                       (lambda: tp.dot(c(3), c(3)), "dot")]:
        with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for \'{name}\''):
            fn()
    if TORCH_GPU:  # torch has no integer or bool GEMMs on CUDA either
        tdt = getattr(torch, str(dtype).split(".")[-1])
        with pytest.raises(RuntimeError, match="not implemented for"):
            torch.mm(torch.ones(2, 3, dtype=tdt, device="cuda"),
                     torch.ones(3, 4, dtype=tdt, device="cuda"))


# ---------------------------------------------------------------- precision on the GPU


@gpu
@pytest.mark.parametrize("how", ["high", "medium", "allow_tf32"])
def test_tf32_is_used_only_when_allowed(how):
    # 1 + 2**-12 is a float32 but not a TF32 number: IEEE sums of n such products are exact
    # (n * (1 + 2**-12)); TF32 tensor cores see 1.0 and give n.
    n = 1024
    a = tp.full((n, n), 1 + 2 ** -12, device="cuda")
    b = tp.ones(n, n, device="cuda")
    exact = n * (1 + 2 ** -12)
    assert set(_host64(a @ b).flatten().tolist()) == {exact}
    if how == "allow_tf32":
        tp.backends.cuda.matmul.allow_tf32 = True
    else:
        tp.set_float32_matmul_precision(how)
    assert set(_host64(a @ b).flatten().tolist()) == {float(n)}
    assert set(_host64(tp.addmm(tp.zeros(n, device="cuda"), a, b)).flatten().tolist()) == {float(n)}
    assert set(_host64(tp.bmm(a.expand(2, n, n), b.expand(2, n, n))).flatten().tolist()) == {float(n)}
    tp.backends.cuda.matmul.allow_tf32 = False
    assert set(_host64(a @ b).flatten().tolist()) == {exact}
    if TORCH_GPU:  # torch's flags do the same to its products
        ta, tb = torch.full((n, n), 1 + 2 ** -12, device="cuda"), torch.ones(n, n, device="cuda")
        torch.backends.cuda.matmul.allow_tf32 = True
        assert set((ta @ tb).flatten().tolist()) == {float(n)}
        torch.backends.cuda.matmul.allow_tf32 = False
        assert set((ta @ tb).flatten().tolist()) == {exact}


@gpu
@pytest.mark.parametrize("precision", ["highest", "high"])
def test_float32_error_bounds(precision):
    tp.set_float32_matmul_precision(precision)
    tol = TOL["float32"] if precision == "highest" else TF32_TOL
    f = lambda lib, a, b: lib.matmul(a, b)  # noqa: E731
    _run(f, [_pair((256, 1024), "float32", 1), _pair((1024, 128), "float32", 2)], "float32", tol)
    _run(f, [_pair((4, 64, 512), "float32", 3), _pair((512, 96), "float32", 4)], "float32", tol)
    _run(lambda lib, s, a, b: lib.addmm(s, a, b),
         [_pair((96,), "float32", 5), _pair((64, 512), "float32", 6), _pair((512, 96), "float32", 7)],
         "float32", tol)


@gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("reduction", [True, False, (False, False)])
def test_half_reduction_settings(dtype, reduction):
    half = "fp16" if dtype == "float16" else "bf16"
    setattr(tp.backends.cuda.matmul, f"allow_{half}_reduced_precision_reduction", reduction)
    # a long k, where split-K reductions would be picked
    mm = lambda lib, a, b: lib.mm(a, b)  # noqa: E731
    _run(mm, [_pair((64, 8192), dtype, 1), _pair((8192, 64), dtype, 2)], dtype)
    _run(lambda lib, s, a, b: lib.addmm(s, a, b),
         [_pair((64,), dtype, 3), _pair((64, 8192), dtype, 4), _pair((8192, 64), dtype, 5)], dtype)
    _run(lambda lib, a, b: lib.bmm(a, b),
         [_pair((2, 32, 4096), dtype, 6), _pair((2, 4096, 32), dtype, 7)], dtype)


@gpu
def test_fp16_accumulation():
    a = tp.ones(64, 4096, dtype=tp.float16, device="cuda")
    b = tp.ones(4096, 64, dtype=tp.float16, device="cuda")
    assert set(_host64(a @ b).flatten().tolist()) == {4096.0}  # float32 accumulation: exact
    tp.backends.cuda.matmul.allow_fp16_accumulation = True
    got = _host64(a @ b)  # float16 sums may stall at 2048 (ulp 2): within a factor of 2
    assert bool(((got >= 2048) & (got <= 4096)).all())
    _run(lambda lib, x, y: lib.mm(x, y), [_pair((32, 64), "float16", 1), _pair((64, 16), "float16", 2)],
         "float16", 2e-2)


# ---------------------------------------------------------------- streams, threads, workspace


@gpu
def test_side_stream():
    (ta, xa), (tb, xb) = _pair((128, 64), "float32", 1), _pair((64, 32), "float32", 2)
    s = tp.cuda.Stream()
    s.wait_stream(tp.cuda.current_stream())
    with tp.cuda.stream(s):
        c = xa @ xb
        bias = xb[0]
        d = tp.addmm(bias, xa, xb)
    s.synchronize()
    _check(c, ta @ tb, ta.abs() @ tb.abs(), "float32")
    _check(d, tb[0] + ta @ tb, tb[0].abs() + ta.abs() @ tb.abs(), "float32")


@gpu
def test_threads_use_their_own_handles():
    results, errors = {}, []

    def work(i):
        try:
            for j in range(4):
                (ta, xa) = _pair((40, 30), "float32", 10 * i + j)
                (tb, xb) = _pair((30, 20), "float32", 99)
                results[(i, j)] = (xa @ xb, ta @ tb, ta.abs() @ tb.abs())
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 16
    for got, ref, scale in results.values():
        _check(got, ref, scale, "float32")
    later = threading.Thread(target=work, args=(7,))  # takes a finished thread's handles
    later.start()
    later.join()
    assert len(results) == 20 and not errors
    for got, ref, scale in results.values():
        _check(got, ref, scale, "float32")


def _expected_workspace():
    config = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
    pairs = re.findall(r":(\d+):(\d+)", config or "")
    if pairs:
        return sum(int(s) * 1024 * int(c) for s, c in pairs)
    major = tp.cuda.get_device_capability()[0]
    return 32 * 2 ** 20 if 9 <= major <= 12 else 8 * 2 ** 20 + 128 * 1024


@gpu
def test_workspace_comes_from_the_caching_allocator():
    if not TORCH_GPU:
        pytest.skip("a fresh stream handle comes from torch here")
    a, b = tp.ones(64, 64, device="cuda"), tp.ones(64, 64, device="cuda")
    ts = torch.cuda.Stream()  # a stream no TensorPlay product has run on
    s = tp.cuda.ExternalStream(ts.cuda_stream)
    s.wait_stream(tp.cuda.current_stream())
    with tp.cuda.stream(s):
        before = tp.cuda.memory_allocated()
        c = a @ b
        first = tp.cuda.memory_allocated() - before
        d = a @ b  # the workspace is kept and reused
        second = tp.cuda.memory_allocated() - before - first
    s.synchronize()
    assert first == 64 * 64 * 4 + _expected_workspace()
    assert second == 64 * 64 * 4
    assert _host64(c).tolist() == _host64(d).tolist() == [[64.0] * 64] * 64


# ---------------------------------------------------------------- gradients


def _cuda_elementwise():
    """Whether the CUDA elementwise ops and reductions the other formulas use exist yet."""
    if not HAS_GPU:
        return False
    try:
        x = tp.ones(2, 2, device="cuda")
        (x * x).sum(0)
        return True
    except NotImplementedError:
        return False


needs_elementwise = pytest.mark.skipif(not _cuda_elementwise(),
                                       reason="needs the CUDA elementwise engine and reductions")


def _grads(fn, shapes, dtype, seeds):
    """tp.autograd.grad of fn on CUDA against torch's on float64 CPU, given a random grad."""
    pairs = [_pair(s, dtype, seed) for s, seed in zip(shapes, seeds)]
    ts = [t.clone().requires_grad_() for t, _ in pairs]
    xs = [x.requires_grad_() for _, x in pairs]
    out_t = fn(torch, *ts)
    tg, xg = _pair(tuple(out_t.shape), dtype, 1234)
    got = tp.autograd.grad(fn(tp, *xs), xs, grad_outputs=xg)
    ref = torch.autograd.grad(out_t, ts, grad_outputs=tg)
    tsa = [t.detach().abs().requires_grad_() for t in ts]
    scale = torch.autograd.grad(fn(torch, *tsa), tsa, grad_outputs=tg.abs())
    for g, r, s in zip(got, ref, scale):
        _check(g, r, s, dtype)


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradients(dtype):
    _grads(lambda lib, a, b: lib.mm(a, b), [(6, 4), (4, 5)], dtype, [1, 2])
    _grads(lambda lib, a, b: lib.mm(a.t(), b), [(4, 6), (4, 5)], dtype, [3, 4])
    _grads(lambda lib, a, b: lib.bmm(a, b), [(3, 6, 4), (3, 4, 5)], dtype, [5, 6])
    _grads(lambda lib, a, b: lib.matmul(a, b), [(6, 4), (4, 5)], dtype, [7, 8])
    _grads(lambda lib, a, b: lib.matmul(a, b), [(3, 6, 4), (3, 4, 5)], dtype, [9, 10])
    _grads(lambda lib, s, a, b: lib.addmm(s, a, b), [(6, 5), (6, 4), (4, 5)], dtype, [13, 14, 15])
    _grads(lambda lib, a, b: lib.baddbmm(lib.zeros((), dtype=a.dtype, device=a.device), a, b),
           [(2, 6, 4), (2, 4, 5)], dtype, [16, 17])


@gpu
@needs_elementwise
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradients_with_elementwise(dtype):
    """Formulas that also sum over broadcast dims (bias, batch) or multiply (dot, mv)."""
    lin = {tp: tp.nn.functional.linear, torch: torch.nn.functional.linear}
    _grads(lambda lib, x, w, b: lin[lib](x, w, b), [(8, 5), (3, 5), (3,)], dtype, [1, 2, 3])
    _grads(lambda lib, x, w, b: lin[lib](x, w, b), [(2, 4, 5), (3, 5), (3,)], dtype, [4, 5, 6])
    _grads(lambda lib, a, b: lib.matmul(a, b), [(2, 3, 6, 4), (4, 5)], dtype, [7, 8])
    _grads(lambda lib, a, b: lib.matmul(a, b), [(2, 1, 6, 4), (3, 4, 5)], dtype, [9, 10])
    _grads(lambda lib, s, a, b: lib.addmm(s, a, b, beta=0.5), [(5,), (6, 4), (4, 5)], dtype, [11, 12, 13])
    _grads(lambda lib, a, b: lib.dot(a, b), [(7,), (7,)], dtype, [14, 15])
    _grads(lambda lib, a, b: lib.mv(a, b), [(6, 4), (4,)], dtype, [16, 17])
