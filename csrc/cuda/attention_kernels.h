// CUDA kernels behind _flash_attention_forward / _flash_attention_backward
// (attention_kernels.cu, Note [Flash attention]). The callers in csrc/ops/attention.cpp check
// arguments; these see contiguous, 16-byte aligned (B, H, L, D) / (B, H, S, D) tensors on one device.
#pragma once
#include "core/tensor_impl.h"

namespace tp::cuda {

/// Whether the fused kernels take this dtype and head dim (float16 / bfloat16, 64 or 128).
bool flash_attention_supported(DType dt, int64_t head_dim);

/// out = softmax(q k^T * scale) v (keys j > query i masked when causal) and lse, the float32
/// (B, H, L) log-sum-exp of each query row's scaled scores (-inf for a row with no key).
void flash_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                             const Tensor& lse, bool causal, float scale);

/// The gradients of flash_attention_forward from grad g and its out and lse: dq is a
/// zeroed float32 buffer the kernel adds into; dk, dv (of q's dtype) are written whole.
void flash_attention_backward(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& out, const Tensor& lse, const Tensor& dq, const Tensor& dk,
                              const Tensor& dv, bool causal, float scale);

}  // namespace tp::cuda
