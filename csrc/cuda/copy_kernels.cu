// Strided copy and fill kernels. See Note [Strided copies].
#include <cstdint>

#include "cuda/check.h"
#include "cuda/kernels.h"
#include "cuda/strided_index.cuh"

// Note [Strided copies]
// A layout change (contiguous(), a transposed or sliced copy_) is a grid-stride loop that
// turns each linear index into a destination and a source offset. Three things keep it at
// memory speed rather than bound by integer division:
// - simplify_layout drops size-1 dimensions and merges dimensions that run on in both
//   tensors, so a [B, S, H, D] -> [B, H, S, D] transpose divides three times, not four;
// - where the last dimension is contiguous on both sides and its bytes, the other strides
//   and both addresses are multiples of 16 (8, 4) bytes, the kernel moves 16-byte (8, 4)
//   units: the attention head split (rows of 64 bfloat16) moves 8 elements per index;
// - offsets are 32-bit where the whole layout fits (layout_fits_32bit).
// The element is moved as an unsigned integer of its size, so every dtype shares these.

namespace tp::cuda {

StridedLayout simplify_layout(const StridedLayout& m) {
  StridedLayout r;
  for (int d = 0; d < m.ndim; ++d) {
    if (m.sizes[d] == 1) continue;
    const int last = r.ndim - 1;
    if (last >= 0 && r.dst_strides[last] == m.dst_strides[d] * m.sizes[d] &&
        r.src_strides[last] == m.src_strides[d] * m.sizes[d]) {
      r.sizes[last] *= m.sizes[d];
      r.dst_strides[last] = m.dst_strides[d];
      r.src_strides[last] = m.src_strides[d];
      continue;
    }
    r.sizes[r.ndim] = m.sizes[d];
    r.dst_strides[r.ndim] = m.dst_strides[d];
    r.src_strides[r.ndim] = m.src_strides[d];
    ++r.ndim;
  }
  if (r.ndim == 0) {
    r.ndim = 1;
    r.sizes[0] = 1;
    r.dst_strides[0] = r.src_strides[0] = 1;
  }
  return r;
}

bool layout_fits_32bit(const StridedLayout& m, int64_t numel) {
  constexpr int64_t kLimit = int64_t(1) << 31;
  int64_t dmax = 0, smax = 0;
  for (int d = 0; d < m.ndim; ++d) {
    dmax += (m.sizes[d] - 1) * m.dst_strides[d];
    smax += (m.sizes[d] - 1) * m.src_strides[d];
  }
  return numel < kLimit && dmax < kLimit && smax < kLimit;
}

namespace {

constexpr int kThreads = 256;

unsigned grid_for(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  return unsigned(blocks < 65535 * 8 ? (blocks < 1 ? 1 : blocks) : 65535 * 8);
}

template <class U, class I>
__global__ void strided_copy_kernel(U* dst, const U* src, I n, StridedLayout m) {
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += I(gridDim.x) * blockDim.x) {
    I d, s;
    strided_offsets(m, i, d, s);
    dst[d] = src[s];
  }
}

template <class T, class I>
__global__ void fill_kernel(T* dst, T value, I n, StridedLayout m) {
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += I(gridDim.x) * blockDim.x) {
    I d, s;
    strided_offsets(m, i, d, s);
    dst[d] = value;
  }
}

/// The widest unit (16, 8, 4 or 2 bytes, else the element) a copy over m moves at once: the
/// last dimension contiguous on both sides, its bytes, every other stride in bytes and both
/// addresses multiples of it.
int copy_unit(const StridedLayout& m, int itemsize, const void* dst, const void* src) {
  const int last = m.ndim - 1;
  if (m.dst_strides[last] != 1 || m.src_strides[last] != 1) return itemsize;
  for (int unit = 16; unit > itemsize; unit /= 2) {
    bool ok = (m.sizes[last] * itemsize) % unit == 0 && reinterpret_cast<uintptr_t>(dst) % unit == 0 &&
              reinterpret_cast<uintptr_t>(src) % unit == 0;
    for (int d = 0; d < last && ok; ++d)
      ok = (m.dst_strides[d] * itemsize) % unit == 0 && (m.src_strides[d] * itemsize) % unit == 0;
    if (ok) return unit;
  }
  return itemsize;
}

/// m (in elements of itemsize bytes) in units of `unit` bytes (copy_unit's answer).
StridedLayout in_units(StridedLayout m, int itemsize, int unit) {
  const int per = unit / itemsize, last = m.ndim - 1;
  m.sizes[last] /= per;
  for (int d = 0; d < last; ++d) {
    m.dst_strides[d] /= per;
    m.src_strides[d] /= per;
  }
  return m;
}

template <class U>
void copy_as(void* dst, const void* src, const StridedLayout& m, cudaStream_t s) {
  int64_t n = 1;
  for (int d = 0; d < m.ndim; ++d) n *= m.sizes[d];
  if (layout_fits_32bit(m, n))
    strided_copy_kernel<U, uint32_t><<<grid_for(n), kThreads, 0, s>>>(
        static_cast<U*>(dst), static_cast<const U*>(src), uint32_t(n), m);
  else
    strided_copy_kernel<U, int64_t><<<grid_for(n), kThreads, 0, s>>>(
        static_cast<U*>(dst), static_cast<const U*>(src), n, m);
  TP_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void fill_as(void* dst, uint64_t bits, int64_t n, const StridedLayout& m, cudaStream_t s) {
  if (layout_fits_32bit(m, n))
    fill_kernel<T, uint32_t><<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(dst), T(bits), uint32_t(n), m);
  else
    fill_kernel<T, int64_t><<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(dst), T(bits), n, m);
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_strided_copy(void* dst, const void* src, int64_t numel, int itemsize,
                         const StridedLayout& layout, cudaStream_t stream) {
  if (numel == 0) return;
  TP_CHECK(itemsize == 1 || itemsize == 2 || itemsize == 4 || itemsize == 8 || itemsize == 16,
           "strided copy: unsupported element size ", itemsize);  // 16: complex128
  const StridedLayout m = simplify_layout(layout);
  const int unit = copy_unit(m, itemsize, dst, src);
  const StridedLayout u = unit == itemsize ? m : in_units(m, itemsize, unit);
  switch (unit) {
    case 1: return copy_as<uint8_t>(dst, src, u, stream);
    case 2: return copy_as<uint16_t>(dst, src, u, stream);
    case 4: return copy_as<uint32_t>(dst, src, u, stream);
    case 8: return copy_as<uint64_t>(dst, src, u, stream);
    default: return copy_as<uint4>(dst, src, u, stream);
  }
}

void launch_fill(void* dst, uint64_t bits, int64_t numel, int itemsize, const StridedLayout& layout,
                 cudaStream_t stream) {
  if (numel == 0) return;
  const StridedLayout m = simplify_layout(layout);
  switch (itemsize) {
    case 1: return fill_as<uint8_t>(dst, bits, numel, m, stream);
    case 2: return fill_as<uint16_t>(dst, bits, numel, m, stream);
    case 4: return fill_as<uint32_t>(dst, bits, numel, m, stream);
    case 8: return fill_as<uint64_t>(dst, bits, numel, m, stream);
  }
  TP_FAIL("fill: unsupported element size ", itemsize);
}

}  // namespace tp::cuda
