// The CUDA side of the pointwise ops: the table of device launches per functor and
// compute dtype (filled by the generated cuda_kernels_N.cu files), and dtype casts.
#pragma once
#include <cuda_runtime_api.h>
#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>
#endif

#include "cuda/kernels.h"
#include "kernels/tensor_iterator.h"
#include "tensorplay/pointwise_kernels.h"

namespace tp::cuda {

using PwLaunchTable = DeviceLaunch[int(PwKernel::kCount)][kNumDTypes];
/// [functor][compute dtype] -> launch (nullptr: the functor has no kernel for the dtype).
PwLaunchTable& pointwise_launches();

/// Converts numel elements from `sdt` to `ddt` over `layout` (StridedLayout, strides in
/// elements) on `stream` with PyTorch's conversion rules (float to int truncates, to bool
/// is `!= 0`, half types round to nearest even).
void launch_cast(void* dst, DType ddt, const void* src, DType sdt, int64_t numel,
                 const StridedLayout& layout, cudaStream_t stream);

#ifdef __CUDACC__
/// float -> float16 / bfloat16, rounding to nearest even; a NaN keeps its sign (as on
/// the CPU), where the intrinsics return one canonical NaN.
template <class H>
__device__ __forceinline__ H round_half(float v) {
  uint32_t u = __float_as_uint(v);
  if constexpr (std::is_same_v<H, __half>) {
    if (v != v) return __ushort_as_half(uint16_t(((u >> 16) & 0x8000u) | 0x7e00u));
    return __float2half_rn(v);
  } else {
    if (v != v) return __ushort_as_bfloat16(uint16_t((u >> 16) | 0x0040u));
    return __float2bfloat16_rn(v);
  }
}
#endif

}  // namespace tp::cuda
