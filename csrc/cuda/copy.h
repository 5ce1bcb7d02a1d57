// Copies that involve CUDA tensors (host<->device, device<->device) and CUDA fills; called
// by copy_ and fill_ (csrc/ops/copy.cpp) when a tensor is on a GPU.
#pragma once
#include <cstdint>

#include "core/tensor_impl.h"

namespace tp::cuda {

/// dst <- src (broadcast to dst's shape, converted to dst's dtype), on the current stream
/// of the CUDA side. Synchronous unless `non_blocking` and the host side is pinned memory.
void copy_(const Tensor& dst, const Tensor& src, bool non_blocking);
/// Writes the element bit pattern `bits` (dst's itemsize bytes) to every element of dst.
void fill_(const Tensor& dst, uint64_t bits);
/// Whether `ptr` is page-locked host memory known to CUDA (false without a GPU).
bool is_pinned(const void* ptr);
/// A copy of the CPU tensor `t` in pinned host memory (contiguous).
Tensor pin_memory(const Tensor& t);

}  // namespace tp::cuda
