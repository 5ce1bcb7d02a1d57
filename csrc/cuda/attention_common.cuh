// What the two fused-attention kernel files share: the dtype / head-dim dispatch, and the
// mma.sync kernels' launchers (attention_mma.cu) that the entry points in
// attention_kernels.cu call after their checks, the device guard and, for the backward, the
// D = rowsum(dO * O) pre-pass.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "core/tensor_impl.h"

namespace tp::cuda {

/// Calls f(T{}, D constant) for the fused kernels' dtypes (float16, bfloat16) and head dims (64, 128).
template <class F>
void visit_flash(DType dt, int64_t d, F&& f) {
  auto by_dim = [&](auto t) {
    if (d == 64) f(t, std::integral_constant<int, 64>{});
    else f(t, std::integral_constant<int, 128>{});
  };
  if (dt == DType::Float16) by_dim(__half{});
  else by_dim(__nv_bfloat16{});
}

/// flash_attention_forward's work on the mma.sync kernels (Note [Flash attention on
/// mma.sync]), queued on s; bh * L > 0.
void flash_forward_mma(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                       bool causal, float scale, cudaStream_t s);
/// flash_attention_backward's work on the mma.sync kernels, given dsum = rowsum(dO * O)
/// (float32, one per query row), queued on s; bh * S > 0.
void flash_backward_mma(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lse,
                        const Tensor& dsum, const Tensor& dq, const Tensor& dk, const Tensor& dv, bool causal,
                        float scale, cudaStream_t s);

}  // namespace tp::cuda
