"""tvm-ffi CUDA kernels on our CUDA tensors (Note [DLPack exchange API]): the kernel reads
its stream from the environment, which tvm-ffi fills from our current stream; runs where a
GPU, nvcc and apache-tvm-ffi are (scripts/gpu_check.sh)."""
import pytest

import tensorplay as tp

tvm_ffi = pytest.importorskip('tvm_ffi')
import tvm_ffi.cpp  # noqa: E402

gpu = pytest.mark.skipif(not tp.cuda.is_available(), reason='no CUDA GPU')

CUDA_SOURCE = r'''
#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

__global__ void add_one_kernel(const float* x, float* y, int64_t n) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}

void add_one(tvm::ffi::TensorView x, tvm::ffi::TensorView y) {
  int64_t n = x.size(0);
  auto stream = static_cast<cudaStream_t>(
      TVMFFIEnvGetStream(x.device().device_type, x.device().device_id));
  add_one_kernel<<<(n + 255) / 256, 256, 0, stream>>>(
      static_cast<const float*>(x.data_ptr()), static_cast<float*>(y.data_ptr()), n);
}
'''


@gpu
def test_cuda_kernel_on_our_stream(tmp_path):
    mod = tvm_ffi.cpp.load_inline(name='tp_tvm_ffi_cuda', cuda_sources=CUDA_SOURCE,
                                  functions=['add_one'], build_directory=str(tmp_path))
    x = tp.arange(1000, dtype=tp.float32, device='cuda')
    y = tp.empty_like(x)
    mod.add_one(x, y)
    assert tp.equal(y, x + 1)
    s = tp.cuda.Stream()
    with tp.cuda.stream(s):
        big = tp.full((1 << 24,), 2.0, device='cuda') * 3  # queued on s before the kernel
        out = tp.empty_like(big)
        mod.add_one(big, out)
    s.synchronize()
    assert out.min().item() == 7.0 and out.max().item() == 7.0
