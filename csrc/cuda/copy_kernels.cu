// Strided copy and fill kernels: grid-stride loops, one element per iteration; the
// element is moved as an unsigned integer of its size, so every dtype shares them.
#include <cstdint>

#include "cuda/check.h"
#include "cuda/kernels.h"

namespace tp::cuda {

namespace {

constexpr int kThreads = 256;

int grid_for(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  return int(blocks < 65535 * 8 ? (blocks < 1 ? 1 : blocks) : 65535 * 8);
}

template <class T>
__global__ void strided_copy_kernel(T* dst, const T* src, int64_t n, StridedLayout m) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, so = 0, doff = 0;
    for (int d = m.ndim - 1; d >= 0; --d) {
      int64_t idx = rem % m.sizes[d];
      rem /= m.sizes[d];
      so += idx * m.src_strides[d];
      doff += idx * m.dst_strides[d];
    }
    dst[doff] = src[so];
  }
}

template <class T>
__global__ void fill_kernel(T* dst, T value, int64_t n, StridedLayout m) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, doff = 0;
    for (int d = m.ndim - 1; d >= 0; --d) {
      int64_t idx = rem % m.sizes[d];
      rem /= m.sizes[d];
      doff += idx * m.dst_strides[d];
    }
    dst[doff] = value;
  }
}

template <class T>
void copy_as(void* dst, const void* src, int64_t n, const StridedLayout& m, cudaStream_t s) {
  strided_copy_kernel<T><<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(dst),
                                                            static_cast<const T*>(src), n, m);
  TP_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void fill_as(void* dst, uint64_t bits, int64_t n, const StridedLayout& m, cudaStream_t s) {
  fill_kernel<T><<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(dst), T(bits), n, m);
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_strided_copy(void* dst, const void* src, int64_t numel, int itemsize,
                         const StridedLayout& layout, cudaStream_t stream) {
  if (numel == 0) return;
  switch (itemsize) {
    case 1: return copy_as<uint8_t>(dst, src, numel, layout, stream);
    case 2: return copy_as<uint16_t>(dst, src, numel, layout, stream);
    case 4: return copy_as<uint32_t>(dst, src, numel, layout, stream);
    case 8: return copy_as<uint64_t>(dst, src, numel, layout, stream);
  }
  TP_FAIL("strided copy: unsupported element size ", itemsize);
}

void launch_fill(void* dst, uint64_t bits, int64_t numel, int itemsize, const StridedLayout& layout,
                 cudaStream_t stream) {
  if (numel == 0) return;
  switch (itemsize) {
    case 1: return fill_as<uint8_t>(dst, bits, numel, layout, stream);
    case 2: return fill_as<uint16_t>(dst, bits, numel, layout, stream);
    case 4: return fill_as<uint32_t>(dst, bits, numel, layout, stream);
    case 8: return fill_as<uint64_t>(dst, bits, numel, layout, stream);
  }
  TP_FAIL("fill: unsupported element size ", itemsize);
}

}  // namespace tp::cuda
