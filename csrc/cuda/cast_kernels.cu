// Dtype conversion on the device: one kernel per (destination, source) dtype pair, used by
// copy_ between CUDA tensors of different dtypes and by the elementwise engine's staging.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "cuda/block_reduce.cuh"
#include "cuda/check.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"
#include "cuda/pointwise.h"
#include "cuda/strided_index.cuh"

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

/// dst[i] = convert(src[i]) over a strided layout (offsets from strided_offsets).
template <class D, class S, class I>
__global__ void cast_kernel(D* dst, const S* src, I n, StridedLayout m) {
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += I(gridDim.x) * blockDim.x) {
    I d, s;
    strided_offsets(m, i, d, s);
    dst[d] = convert<D>(src[s]);
  }
}

/// Contiguous dst[i] = convert(src[i]), V elements a step (both addresses aligned to V
/// elements of each type); the n % V tail one element a thread.
template <class D, class S, int V>
__global__ void cast_contig_kernel(D* dst, const S* src, int64_t n) {
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x, step = int64_t(gridDim.x) * blockDim.x;
  const int64_t packs = n / V;
  for (int64_t p = first; p < packs; p += step) {
    const Pack<S, V> a = reinterpret_cast<const Pack<S, V>*>(src)[p];
    Pack<D, V> b;
#pragma unroll
    for (int e = 0; e < V; ++e) b.v[e] = convert<D>(a.v[e]);
    reinterpret_cast<Pack<D, V>*>(dst)[p] = b;
  }
  for (int64_t i = packs * V + first; i < n; i += step) dst[i] = convert<D>(src[i]);
}

/// Elements per step of cast_contig_kernel for D <- S: 16 bytes of the wider type, 2 to 8.
template <class D, class S>
constexpr int kCastPack = sizeof(D) > sizeof(S) ? (16 / sizeof(D) < 2 ? 2 : (16 / sizeof(D) > 8 ? 8 : 16 / sizeof(D)))
                                                : (16 / sizeof(S) < 2 ? 2 : (16 / sizeof(S) > 8 ? 8 : 16 / sizeof(S)));

constexpr int kThreads = 256;

unsigned blocks_for(int64_t work) {
  const int64_t blocks = (work + kThreads - 1) / kThreads;
  return unsigned(blocks < 1 ? 1 : blocks > 65535 * 16 ? 65535 * 16 : blocks);
}

}  // namespace

void launch_cast(void* dst, DType ddt, const void* src, DType sdt, int64_t numel, const StridedLayout& layout,
                 cudaStream_t stream) {
  if (numel == 0) return;
  const StridedLayout m = simplify_layout(layout);
  const bool contiguous = m.ndim == 1 && m.dst_strides[0] == 1 && m.src_strides[0] == 1;
  visit_device_dtype(ddt, [&](auto d) {
    visit_device_dtype(sdt, [&](auto s) {
      using D = decltype(d);
      using S = decltype(s);
      D* out = static_cast<D*>(dst);
      const S* in = static_cast<const S*>(src);
      constexpr int V = kCastPack<D, S>;
      if (contiguous && reinterpret_cast<uintptr_t>(out) % (V * sizeof(D)) == 0 &&
          reinterpret_cast<uintptr_t>(in) % (V * sizeof(S)) == 0)
        cast_contig_kernel<D, S, V><<<blocks_for(numel / V + 1), kThreads, 0, stream>>>(out, in, numel);
      else if (layout_fits_32bit(m, numel))
        cast_kernel<D, S, uint32_t><<<blocks_for(numel), kThreads, 0, stream>>>(out, in, uint32_t(numel), m);
      else
        cast_kernel<D, S, int64_t><<<blocks_for(numel), kThreads, 0, stream>>>(out, in, numel, m);
    });
  });
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tp::cuda
