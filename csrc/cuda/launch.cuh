// Helpers shared by the CUDA kernel files: grid sizes for grid-stride loops, scratch
// buffers from the caching allocator, the device C++ type of each dtype, and an unsigned
// type per element size.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include <vector>

#include "core/error.h"
#include "core/tensor_impl.h"
#include "cuda/check.h"
#include "cuda/graphs/capture.h"

namespace tp::cuda {

constexpr int kLoopThreads = 256;

/// Blocks of kLoopThreads for a grid-stride loop over n elements (capped; at least 1).
inline unsigned loop_blocks(int64_t n) {
  int64_t b = (n + kLoopThreads - 1) / kLoopThreads;
  return unsigned(b > 65535 * 32 ? 65535 * 32 : (b < 1 ? 1 : b));
}

/// A contiguous device buffer of n elements of dtype dt (freed with the tensor, stream-ordered).
inline Tensor scratch(int64_t n, DType dt, Device dev) {
  return empty_tensor(IntArrayRef(&n, 1), dt, dev);
}

/// A device copy of the host vector v (dtype dt, whose element size is sizeof(T)), queued
/// on stream s. v may go as soon as this returns: a copy from pageable memory is staged first.
template <class T>
Tensor to_device(const std::vector<T>& v, DType dt, Device dev, cudaStream_t s) {
  Tensor t = scratch(int64_t(v.size()), dt, dev);
  graphs::upload(t.data_ptr(), v.data(), v.size() * sizeof(T), s);
  return t;
}

/// Calls f(T{}) with the device type of `dt` (__half / __nv_bfloat16 for the half types).
template <class F>
void visit_device_dtype(DType dt, F&& f) {
  switch (dt) {
    case DType::Bool: return f(bool{});
    case DType::UInt8: return f(uint8_t{});
    case DType::Int8: return f(int8_t{});
    case DType::Int16: return f(int16_t{});
    case DType::Int32: return f(int32_t{});
    case DType::Int64: return f(int64_t{});
    case DType::Float16: return f(__half{});
    case DType::BFloat16: return f(__nv_bfloat16{});
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::Complex64:
    case DType::Complex128:  // refused, never a wrong result (docs/architecture.md, complex numbers)
      TP_FAIL_NOT_IMPLEMENTED("CUDA kernels: no ", dtype_scalar_name(dt), " kernel for this op yet");
    default: TP_FAIL("CUDA kernels: unsupported dtype");
  }
}

/// A complex128 element for kernels that only move bits: two words, aligned as complex128
/// is (8 bytes), so every complex128 address can be read as one.
struct Word128 {
  uint64_t lo, hi;
  Word128() = default;
  __host__ __device__ constexpr explicit Word128(uint64_t v) : lo(v), hi(0) {}
};

/// Calls f(W{}) with the unsigned type of an element of `itemsize` bytes (kernels that move
/// elements without looking at them serve every dtype so).
template <class F>
void by_size(size_t itemsize, F&& f) {
  switch (itemsize) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    case 16: return f(Word128{});
  }
  TP_FAIL("CUDA kernels: unsupported element size ", itemsize);
}

/// Calls f(T{}) with the device type of a floating dtype (float, double, __half,
/// __nv_bfloat16); other dtypes raise.
template <class F>
void visit_floating_device(DType dt, F&& f) {
  switch (dt) {
    case DType::Float16: return f(__half{});
    case DType::BFloat16: return f(__nv_bfloat16{});
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    default: TP_FAIL("CUDA kernels: expected a floating dtype");
  }
}

}  // namespace tp::cuda
