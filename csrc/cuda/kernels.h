// The few device kernels of the first CUDA step: strided copy (same dtype) and fill.
// Launched on the given stream; sizes and strides in elements.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace tp::cuda {

constexpr int kMaxKernelDims = 16;

/// Sizes and the element strides of a destination and a source walked together (the
/// strided copy, fill and dtype-cast kernels).
struct StridedLayout {
  int ndim = 0;
  int64_t sizes[kMaxKernelDims];
  int64_t dst_strides[kMaxKernelDims];
  int64_t src_strides[kMaxKernelDims];
};

/// m without its size-1 dimensions and with neighbours merged where both strides run on
/// (stride[d] == stride[d + 1] * size[d + 1] for dst and src): the same elements visited in
/// the same order with fewer index divisions. Keeps at least one dimension.
StridedLayout simplify_layout(const StridedLayout& m);
/// Whether every offset of m (dst and src) and `numel` fit 32-bit index arithmetic.
bool layout_fits_32bit(const StridedLayout& m, int64_t numel);

/// dst[i] = src[i] elementwise over `layout` for elements of `itemsize` bytes (1, 2, 4, 8).
void launch_strided_copy(void* dst, const void* src, int64_t numel, int itemsize,
                         const StridedLayout& layout, cudaStream_t stream);
/// Writes the `itemsize`-byte pattern `bits` to each element of a strided tensor
/// (layout.dst_strides).
void launch_fill(void* dst, uint64_t bits, int64_t numel, int itemsize, const StridedLayout& layout,
                 cudaStream_t stream);

}  // namespace tp::cuda
