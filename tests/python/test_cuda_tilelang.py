"""tile-lang kernels on our tensors (Note [tile-lang launches]): wrap_tilelang runs a compiled
kernel zero-copy on our current stream and allocates out_idx outputs as our tensors;
tile_lang_op makes an op whose fake kernel is its body with launches skipped. Runs where
tile-lang and a GPU are (scripts/gpu_check.sh; the tile-lang wheels are carried, see
scripts/fetch_device_wheels.sh --tilelang)."""
import pytest

import tensorplay as tp

tilelang = pytest.importorskip('tilelang')
import tilelang.language as T  # noqa: E402

gpu = pytest.mark.skipif(not tp.cuda.is_available(), reason='no CUDA GPU')


def _add_program(n, block=256, dtype='float32'):
    @T.prim_func
    def add(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
    return add


def _gemm_program(m, n, k, bm=64, bn=64, bk=32, dtype='float16', accum='float32'):
    @T.prim_func
    def gemm(A: T.Tensor((m, k), dtype), B: T.Tensor((k, n), dtype), C: T.Tensor((m, n), dtype)):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=128) as (bx, by):
            a_s = T.alloc_shared((bm, bk), dtype)
            b_s = T.alloc_shared((bk, bn), dtype)
            c_l = T.alloc_fragment((bm, bn), accum)
            T.clear(c_l)
            for kk in T.Pipelined(T.ceildiv(k, bk), num_stages=2):
                T.copy(A[by * bm, kk * bk], a_s)
                T.copy(B[kk * bk, bx * bn], b_s)
                T.gemm(a_s, b_s, c_l)
            T.copy(c_l, C[by * bm, bx * bn])
    return gemm


@gpu
def test_wrap_tilelang_passes_every_parameter_zero_copy():
    n = 5000
    kernel = tilelang.compile(_add_program(n), execution_backend='tvm_ffi', target='cuda')
    x, y = tp.randn(n, device='cuda'), tp.randn(n, device='cuda')
    out = tp.empty_like(x)
    ptr = out.data_ptr()
    assert tp.library.wrap_tilelang(kernel)(x, y, out) is None
    assert out.data_ptr() == ptr and tp.equal(out, x + y)


@gpu
def test_wrap_tilelang_allocates_outputs_as_our_tensors_on_our_stream():
    m, n, k = 256, 128, 192
    kernel = tilelang.compile(_gemm_program(m, n, k), out_idx=[2], execution_backend='tvm_ffi',
                              target='cuda')
    run = tp.library.wrap_tilelang(kernel)
    a = tp.randn(m, k, device='cuda', dtype=tp.float16)
    b = tp.randn(k, n, device='cuda', dtype=tp.float16)
    c = run(a, b)
    assert type(c) is tp.Tensor and c.shape == (m, n) and c.dtype == tp.float16
    ref = (a.float() @ b.float())
    assert tp.allclose(c.float(), ref, rtol=2e-2, atol=5e-2)
    # on a side stream, queued behind work on that stream: the kernel must run after it
    s = tp.cuda.Stream()
    with tp.cuda.stream(s):
        big = tp.ones(m, k, device='cuda', dtype=tp.float16)
        for _ in range(20):
            big = big * 1.0 + 0.0  # work queued on s before the kernel
        c2 = run(big, tp.ones(k, n, device='cuda', dtype=tp.float16))
    s.synchronize()
    assert c2.min().item() == k and c2.max().item() == k
    with pytest.raises(TypeError, match='takes 2 inputs'):
        run(a)


@gpu
def test_tile_lang_op_eager_fake_autograd_and_opcheck():
    n = 300
    kernel = tilelang.compile(_add_program(n), out_idx=[2], execution_backend='tvm_ffi',
                              target='cuda')

    @tp.library.tile_lang_op('tptilelang::add', mutates_args=())
    def add(x: tp.Tensor, y: tp.Tensor) -> tp.Tensor:
        return tp.library.wrap_tilelang(kernel)(x, y)

    add.register_autograd(lambda ctx, g: (g, g))
    x = tp.randn(n, device='cuda', requires_grad=True)
    y = tp.randn(n, device='cuda')
    z = add(x, y)
    assert tp.equal(z, x + y)
    z.sum().backward()
    assert tp.equal(x.grad, tp.ones_like(x))
    assert tp.ops.tptilelang.add.default(x, y).shape == (n,)
    from tensorplay._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        f = add(tp.empty(n, device='cuda'), tp.empty(n, device='cuda'))
        assert f.shape == (n,) and f.device.type == 'cuda'
    r = tp.library.opcheck(add, (tp.randn(n, device='cuda'), tp.randn(n, device='cuda')))
    assert set(r.values()) == {'SUCCESS'}
