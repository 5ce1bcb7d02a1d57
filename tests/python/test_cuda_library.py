"""tp.library custom ops on CUDA tensors (runs in scripts/gpu_check.sh): the CUDA kernel is
picked by device, autograd flows, a CPU-only op names the CUDA backend it lacks."""
import pytest

import tensorplay as tp

gpu = pytest.mark.skipif(not tp.cuda.is_available(), reason="no CUDA GPU")


@gpu
def test_custom_op_on_cuda():
    @tp.library.custom_op('tpcudalib::scaled_sin', mutates_args=())
    def scaled_sin(x: tp.Tensor, k: float) -> tp.Tensor:
        return x.sin() * k

    @scaled_sin.register_kernel('cuda')
    def _(x, k):
        return x.sin() * k + 0  # the CUDA kernel: the same values, a device check below

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.k = inputs[1]
    scaled_sin.register_autograd(lambda ctx, g: (g * ctx.saved_tensors[0].cos() * ctx.k, None),
                                 setup_context=setup_context)
    x = tp.linspace(-1, 1, 9, device='cuda', requires_grad=True)
    y = scaled_sin(x, 2.0)
    assert y.device.type == 'cuda'
    y.sum().backward()
    ref = x.detach().cpu()
    assert tp.allclose(y.detach().cpu(), ref.sin() * 2, atol=1e-6)
    assert tp.allclose(x.grad.cpu(), ref.cos() * 2, atol=1e-6)

    @tp.library.custom_op('tpcudalib::cpu_only', mutates_args=(), device_types='cpu')
    def cpu_only(x: tp.Tensor) -> tp.Tensor:
        return x + 1
    with pytest.raises(NotImplementedError, match="'CUDA' backend"):
        cpu_only(tp.ones(2, device='cuda'))
