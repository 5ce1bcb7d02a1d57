// Memory layout of the nn kernels' results.
//
// Note [Channels-last results]
// PyTorch's CPU kernels for convolution, pooling and batch/group norm give a 4-D (5-D)
// result laid out channels last when their input's strides read as channels last
// (suggest_memory_format; for a convolution, its input's or its weight's), and so do their
// input gradients, whatever the layout of the incoming gradient; the weight gradient of
// such a convolution is channels last too. Our kernels follow the same rule
// (`channels_last`): a kernel computes in the layout it is written for and `with_layout`
// lays the result out as the rule says. Native channels-last paths skip both copies: a
// 1x1 convolution is one GEMM over (N*H*W, C) rows, pooling and batch norm run their loops
// with the channels innermost. The backward helpers the derivative formulas call apply the
// rule from the forward input's saved strides, so an incoming gradient in another layout
// (a sum's expanded gradient, a user's cotangent) still yields PyTorch's layout.
#include <algorithm>

#include "core/error.h"
#include "core/tensor_impl.h"
#include "ops/nn.h"

namespace tp {

bool channels_last(const Tensor& t) { return suggests_channels_last(t.sizes(), t.strides()); }

void check_same_device(const Tensor& first, const Tensor& other) {
  TP_CHECK(other.device() == first.device(), "Expected all tensors to be on the same device, but found at least two "
           "devices, ", first.device().str(), " and ", other.device().str(), "!");
}

bool is_channels_last_dense(const Tensor& t) {
  if (t.dim() != 4 && t.dim() != 5) return false;
  const DimVector want = channels_last_strides(t.sizes());
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) != 1 && t.stride(d) != want[d]) return false;
  return true;
}

Tensor with_layout(const Tensor& t, bool cl) {
  if (!cl) return contiguous(t);
  const DimVector want = channels_last_strides(t.sizes());
  if (std::equal(want.begin(), want.end(), t.strides().begin(), t.strides().end())) return t;
  Tensor out = empty_strided_tensor(t.sizes(), channels_last_strides(t.sizes()), t.dtype(), t.device());
  return copy_(out, t);
}

}  // namespace tp
