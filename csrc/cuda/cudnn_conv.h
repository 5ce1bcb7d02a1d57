// Convolutions through cuDNN 9's legacy convolution API, or optionally its backend API
// (cudnn_conv.cpp): compiled only when CMake finds cuDNN (TP_USE_CUDNN); Notes [cuDNN
// convolutions] and [cuDNN backend API] there say how it works.
#pragma once
#include <cstdint>

#include "core/tensor_impl.h"

namespace tp::cuda::cudnn {

/// A plain convolution's geometry, one entry per spatial dim (1 to 3).
struct ConvParams {
  DimVector stride, padding, dilation;
  int64_t groups = 1;
};

/// cudnnGetVersion(): major * 10000 + minor * 100 + patch (90801 for 9.8.1).
int64_t version();

/// Whether convolutions go through cuDNN's backend (graph) API with execution plans cached
/// per shape key (Note [cuDNN backend API] in cudnn_conv.cpp), falling back to the legacy
/// calls for what it refuses; on by default. tp._C._cudnn_set_backend_api / _cudnn_backend_api.
void set_backend_api(bool on);
bool backend_api();
/// Execution plans in the backend path's cache (keys it refused, which the legacy path
/// runs, not counted).
int64_t plan_cache_size();

/// y = conv(x, w) of sizes `y_sizes`, channels last when `channels_last` (2-D/3-D only), else
/// row-major. x and w may have any strides. An undefined tensor when cuDNN takes no such
/// convolution (a dtype it lacks, int32-overflowing sizes, no algorithm that runs): the
/// caller falls back to its own path then.
Tensor convolution_forward(const Tensor& x, const Tensor& w, IntArrayRef y_sizes, const ConvParams& p,
                           bool channels_last);
/// The input gradient dx (sizes `x_sizes`) of y = conv(x, w) from dy: also the forward of a
/// transposed convolution. Laid out and refused as convolution_forward.
Tensor convolution_backward_data(const Tensor& dy, const Tensor& w, IntArrayRef x_sizes, const ConvParams& p,
                                 bool channels_last);
/// The weight gradient dw (sizes `w_sizes`) of y = conv(x, w) from dy and x.
Tensor convolution_backward_filter(const Tensor& dy, const Tensor& x, IntArrayRef w_sizes, const ConvParams& p,
                                   bool channels_last);

}  // namespace tp::cuda::cudnn
