// Linear index -> (destination, source) offsets of a StridedLayout, shared by the strided
// copy, fill and dtype-cast kernels (Note [Strided copies] in copy_kernels.cu).
#pragma once
#include "cuda/kernels.h"

namespace tp::cuda {

/// The destination and source offsets (in elements) of linear index i of m, the last
/// dimension fastest. I is uint32_t where layout_fits_32bit holds (strides are never
/// negative), int64_t otherwise.
template <class I>
__device__ __forceinline__ void strided_offsets(const StridedLayout& m, I i, I& dst, I& src) {
  I d_off = 0, s_off = 0;
  for (int d = m.ndim - 1; d > 0; --d) {
    const I size = I(m.sizes[d]);
    const I idx = i % size;
    i /= size;
    d_off += idx * I(m.dst_strides[d]);
    s_off += idx * I(m.src_strides[d]);
  }
  dst = d_off + i * I(m.dst_strides[0]);
  src = s_off + i * I(m.src_strides[0]);
}

}  // namespace tp::cuda
