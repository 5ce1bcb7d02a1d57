// Fused attention through cuDNN's SDPA graphs (cudnn_attention.cpp, Note [cuDNN attention]):
// compiled only when CMake finds cuDNN (TP_USE_CUDNN); the graphs need the cuDNN frontend
// headers too (TP_USE_CUDNN_FRONTEND), without which every call declines.
#pragma once
#include <cstdint>

#include "core/tensor_impl.h"

namespace tp::cuda::cudnn {

/// Whether the fused attention ops offer their calls to cuDNN first; on by default (timed on
/// the H200). tp._C._cudnn_set_sdpa / _cudnn_sdpa.
void set_sdpa(bool on);
bool sdpa();
/// Whether this build has the cuDNN frontend (the graphs can be built at all).
bool sdpa_available();
/// Graphs built and cached (keys cuDNN refused not counted).
int64_t sdpa_graph_count();

/// flash_attention_forward's contract (cuda/attention_kernels.h) through cuDNN: true when it
/// ran; false (nothing written that matters) when switched off, unavailable or refused.
bool sdpa_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                  bool causal, float scale);
/// The gradients of sdpa_forward from g, out and lse, all three (dq too) in q's dtype,
/// written whole: true when it ran, false as sdpa_forward.
bool sdpa_backward(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                   const Tensor& lse, const Tensor& dq, const Tensor& dk, const Tensor& dv, bool causal, float scale);

}  // namespace tp::cuda::cudnn
