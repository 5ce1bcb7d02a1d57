// The per-(device, thread) cuDNN handle shared by the cuDNN callers (cudnn_conv.cpp,
// cudnn_attention.cpp); compiled only with cuDNN (TP_USE_CUDNN).
#pragma once
#include <cudnn.h>

namespace tp::cuda::cudnn {

/// The calling thread's handle for `device` (current), bound to its current stream; made on
/// first use (cudnn_conv.cpp).
cudnnHandle_t current_handle(int device);

}  // namespace tp::cuda::cudnn
