"""tvm-ffi pass-through (Note [DLPack exchange API] in csrc/python/dlpack.cpp): tvm_ffi JIT
(load_inline) and AOT (build + load_module) functions take our tensors as TensorView
arguments without copies, allocate their outputs through us, and serve as custom-op
kernels. Needs the optional `apache-tvm-ffi` package and a C++ compiler (both in CI)."""
import numpy as np
import pytest

import tensorplay as tp

tvm_ffi = pytest.importorskip('tvm_ffi')
import tvm_ffi.cpp  # noqa: E402

SOURCE = r'''
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

// y[i] = alpha * x[i] + n, for float32 vectors of any stride
void axpb(tvm::ffi::TensorView x, tvm::ffi::TensorView y, double alpha, int64_t n) {
  TVM_FFI_ICHECK(x.ndim() == 1 && y.ndim() == 1 && x.size(0) == y.size(0)) << "shape mismatch";
  const float* a = static_cast<const float*>(x.data_ptr());
  float* b = static_cast<float*>(y.data_ptr());
  for (int64_t i = 0; i < x.size(0); ++i)
    b[i * y.stride(0)] = float(alpha) * a[i * x.stride(0)] + float(n);
}

// a new tensor x * x, allocated by the caller's framework (the environment allocator)
tvm::ffi::Tensor square(tvm::ffi::TensorView x) {
  tvm::ffi::Tensor out = tvm::ffi::Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, x.shape(),
                                                         x.dtype(), x.device());
  const float* a = static_cast<const float*>(x.data_ptr());
  float* b = static_cast<float*>(out.data_ptr());
  for (int64_t i = 0; i < x.numel(); ++i) b[i] = a[i] * a[i];
  return out;
}
'''


@pytest.fixture(scope='module')
def jit_module(tmp_path_factory):
    build = tmp_path_factory.mktemp('tvm_ffi_jit')
    return tvm_ffi.cpp.load_inline(name='tp_tvm_ffi_test', cpp_sources=SOURCE,
                                   functions=['axpb', 'square'], build_directory=str(build))


def test_exchange_api_capsule():
    cap = tp.Tensor.__dlpack_c_exchange_api__
    assert type(cap).__name__ == 'PyCapsule' and 'dlpack_exchange_api' in repr(cap)


def test_jit_function_writes_our_tensors_in_place(jit_module):
    x = tp.arange(5, dtype=tp.float32)
    y = tp.zeros(5)
    ptr = y.data_ptr()
    jit_module.axpb(x, y, 2.0, 1)
    assert y.tolist() == [1., 3., 5., 7., 9.] and y.data_ptr() == ptr
    # strided views pass as views (no copy): every other element of a buffer
    buf = tp.zeros(10)
    jit_module.axpb(tp.arange(10, dtype=tp.float32)[::2], buf[1::2], 1.0, 0)
    assert buf.tolist() == [0., 0., 0., 2., 0., 4., 0., 6., 0., 8.]
    # a tensor that requires grad is read as data
    w = tp.ones(5, requires_grad=True)
    jit_module.axpb(w, y, 3.0, 0)
    assert y.tolist() == [3.] * 5


def test_outputs_come_back_zero_copy(jit_module):
    x = tp.tensor([1., 2., 3.])
    r = jit_module.square(x)
    # allocated by tensorplay (the environment allocator) and handed back as our tensor
    assert type(r) is tp.Tensor and r.tolist() == [1., 4., 9.]
    assert tp.from_dlpack(r).data_ptr() == r.data_ptr()
    with pytest.raises(Exception, match='shape mismatch'):
        jit_module.axpb(x, tp.zeros(4), 1.0, 0)


def test_aot_build_and_load(tmp_path):
    src = tmp_path / 'kernels.cc'
    src.write_text(SOURCE + '\nTVM_FFI_DLL_EXPORT_TYPED_FUNC(axpb, axpb);\n')
    lib = tvm_ffi.cpp.build(name='tp_tvm_ffi_aot', cpp_files=[str(src)],
                            build_directory=str(tmp_path / 'build'))
    mod = tvm_ffi.load_module(lib)
    x, y = tp.ones(3), tp.zeros(3)
    mod.axpb(x, y, 0.5, 2)
    assert y.tolist() == [2.5, 2.5, 2.5]


def test_tvm_function_as_custom_op_kernel(jit_module):
    @tp.library.custom_op('tptvm::square', mutates_args=())
    def square(x: tp.Tensor) -> tp.Tensor:
        return jit_module.square(x.contiguous())

    @square.register_fake
    def _(x):
        return tp.empty_like(x)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
    square.register_autograd(lambda ctx, g: 2 * ctx.saved_tensors[0] * g,
                             setup_context=setup_context)
    x = tp.tensor([1., -2., 3.], requires_grad=True)
    y = square(x)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2., -4., 6.])
    assert tp.library.opcheck(square, (tp.randn(4, requires_grad=True),))['test_faketensor'] == 'SUCCESS'
