"""Triton kernels on our tensors (Note [Triton launches]): wrap_triton launches on our
current stream, triton_op makes an op whose fake kernel is its body with launches skipped.
Runs where Triton and a GPU are (scripts/gpu_check.sh)."""
import pytest

import tensorplay as tp

triton = pytest.importorskip('triton')
import triton.language as tl  # noqa: E402

gpu = pytest.mark.skipif(not tp.cuda.is_available(), reason='no CUDA GPU')


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@gpu
def test_wrap_triton_launch_on_our_tensors_and_stream():
    x = tp.randn(5000, device='cuda')
    y = tp.randn(5000, device='cuda')
    out = tp.empty_like(x)
    tp.library.wrap_triton(_add_kernel)[(triton.cdiv(5000, 1024),)](x, y, out, 5000, BLOCK=1024)
    assert tp.equal(out, x + y)
    s = tp.cuda.Stream()
    with tp.cuda.stream(s):
        big = tp.ones(1 << 22, device='cuda') * 3  # queued on s
        res = tp.empty_like(big)
        tp.library.wrap_triton(_add_kernel)[lambda meta: (triton.cdiv(big.numel(), meta['BLOCK']),)](
            big, big, res, big.numel(), BLOCK=1024)
    s.synchronize()
    assert res.min().item() == 6.0 and res.max().item() == 6.0


@gpu
def test_triton_op_eager_fake_autograd_and_opcheck():
    @tp.library.triton_op('tptriton::add', mutates_args=())
    def add(x: tp.Tensor, y: tp.Tensor) -> tp.Tensor:
        out = tp.empty_like(x)
        n = out.numel()
        tp.library.wrap_triton(_add_kernel)[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
        return out

    add.register_autograd(lambda ctx, g: (g, g))
    x = tp.randn(300, device='cuda', requires_grad=True)
    y = tp.randn(300, device='cuda')
    z = add(x, y)
    assert tp.allclose(z, x + y)
    z.sum().backward()
    assert tp.equal(x.grad, tp.ones_like(x))
    from tensorplay._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        f = add(tp.empty(7, device='cuda'), tp.empty(7, device='cuda'))
        assert f.shape == (7,) and f.device.type == 'cuda'
    r = tp.library.opcheck(add, (tp.randn(64, device='cuda'), tp.randn(64, device='cuda')))
    assert set(r.values()) == {'SUCCESS'}
