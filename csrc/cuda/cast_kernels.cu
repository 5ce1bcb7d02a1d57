// Dtype conversion on the device: one kernel per (destination, source) dtype pair, used by
// copy_ between CUDA tensors of different dtypes and by the elementwise engine's staging.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/pointwise.h"

namespace tp::cuda {

namespace {

template <class T> constexpr bool kHalfLike =
    std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

template <class S>
__device__ __forceinline__ auto widen(S v) {
  if constexpr (std::is_same_v<S, __half>) return __half2float(v);
  else if constexpr (std::is_same_v<S, __nv_bfloat16>) return __bfloat162float(v);
  else if constexpr (std::is_same_v<S, bool>) return uint8_t(v);
  else return v;
}

/// PyTorch's conversions: `!= 0` to bool, half types through float (rounded to nearest
/// even), floating to uint8 through int64 (negative values wrap as on the CPU).
template <class D, class S>
__device__ __forceinline__ D convert(S s) {
  auto v = widen(s);
  if constexpr (std::is_same_v<D, bool>) return v != decltype(v)(0);
  else if constexpr (kHalfLike<D>) return round_half<D>(float(v));
  else if constexpr (std::is_same_v<D, uint8_t> && std::is_floating_point_v<decltype(v)>)
    return D(int64_t(v));
  else return D(v);
}

template <class D, class S>
__global__ void cast_kernel(D* dst, const S* src, int64_t n, CastLayout m, bool contiguous) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (contiguous) {
      dst[i] = convert<D>(src[i]);
      continue;
    }
    int64_t rem = i, so = 0, doff = 0;
    for (int d = m.ndim - 1; d >= 0; --d) {
      int64_t idx = rem % m.sizes[d];
      rem /= m.sizes[d];
      so += idx * m.src_strides[d];
      doff += idx * m.dst_strides[d];
    }
    dst[doff] = convert<D>(src[so]);
  }
}


bool is_contiguous_layout(const CastLayout& m) {
  int64_t expect = 1;
  for (int d = m.ndim - 1; d >= 0; --d) {
    if (m.sizes[d] == 1) continue;
    if (m.dst_strides[d] != expect || m.src_strides[d] != expect) return false;
    expect *= m.sizes[d];
  }
  return true;
}

}  // namespace

void launch_cast(void* dst, DType ddt, const void* src, DType sdt, int64_t numel,
                 const CastLayout& layout, cudaStream_t stream) {
  if (numel == 0) return;
  constexpr int kThreads = 256;
  int64_t blocks = (numel + kThreads - 1) / kThreads;
  if (blocks > 65535 * 16) blocks = 65535 * 16;
  bool contiguous = is_contiguous_layout(layout);
  visit_device_dtype(ddt, [&](auto d) {
    visit_device_dtype(sdt, [&](auto s) {
      using D = decltype(d);
      using S = decltype(s);
      cast_kernel<D, S><<<unsigned(blocks), kThreads, 0, stream>>>(
          static_cast<D*>(dst), static_cast<const S*>(src), numel, layout, contiguous);
    });
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tp::cuda
