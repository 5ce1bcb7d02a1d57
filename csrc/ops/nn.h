#pragma once
// Backward helpers of the nn kernels (nn_conv.cpp, nn_pool.cpp, nn_norm.cpp, ...), used by the
// derivative formulas in csrc/ops/nn_*.yaml. Each is written with differentiable ops, so
// create_graph=True differentiates it again.
#include <array>
#include <optional>
#include <tuple>

#include "tensorplay/ops_api.h"

namespace tp {

/// float16/bfloat16: the nn kernels compute these in float32 (inputs widened, result rounded once).
inline bool is_float16_or_bfloat16(DType dt) { return dt == DType::Float16 || dt == DType::BFloat16; }

/// Whether an nn kernel's result for input `t` is laid out channels last: `t` is 4-D or 5-D
/// and its strides read so (Note [Channels-last results]).
bool channels_last(const Tensor& t);
/// Whether `t` is 4-D or 5-D and dense in channels-last order (sizes-1 dims aside).
bool is_channels_last_dense(const Tensor& t);
/// `t` laid out channels last (`cl`, 4-D/5-D only: PyTorch's exact strides, size-1 dims
/// included) or row-major: `t` itself when it already is, else a copy (differentiable).
Tensor with_layout(const Tensor& t, bool cl);
/// PyTorch's RuntimeError "Expected all tensors to be on the same device ..." unless `other`
/// is on `first`'s device (the nn kernels read both with one device's code).
void check_same_device(const Tensor& first, const Tensor& other);

// With `unfold`, the convolution gradients below are those of _convolution_unfold: they
// run by unfold too (Note [Convolution by unfold]).

/// A plain convolution without bias (the gradient of the weight gradient).
Tensor plain_convolution(const Tensor& input, const Tensor& weight, IntArrayRef stride,
                         IntArrayRef padding, IntArrayRef dilation, int64_t groups, bool unfold = false);
/// The gradient of a (plain) convolution with respect to its input of size `in_sizes`:
/// a transposed convolution of `grad` with `weight`.
Tensor conv_input_grad(const Tensor& grad, const Tensor& weight, IntArrayRef in_sizes,
                       IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                       int64_t groups, bool unfold = false);
/// convolution's gradient for `input` (plain or transposed), laid out as PyTorch's from the
/// input's strides and the weight (Note [Channels-last results]).
Tensor convolution_input_backward(const Tensor& grad, const Tensor& weight, IntArrayRef in_sizes,
                                  IntArrayRef in_strides, IntArrayRef stride, IntArrayRef padding,
                                  IntArrayRef dilation, bool transposed, int64_t groups,
                                  bool unfold = false);
/// convolution's gradient for `weight` (plain or transposed), laid out as PyTorch's from the
/// input and the weight's strides.
Tensor convolution_weight_backward(const Tensor& grad, const Tensor& input, IntArrayRef w_sizes,
                                   IntArrayRef w_strides, IntArrayRef stride, IntArrayRef padding,
                                   IntArrayRef dilation, bool transposed, int64_t groups,
                                   bool unfold = false);
/// The gradient of a per-channel bias (dim 1): grad summed over every other dim.
Tensor channel_bias_backward(const Tensor& grad);

}  // namespace tp

namespace tp {

/// The gradient of _max_pool_backward: grad read back at the winners' indices.
Tensor max_pool_double_backward(const Tensor& grad, const Tensor& indices, int64_t spatial_dims);
/// avg_pool1d/2d/3d by spatial dim count (the gradient of avg pooling's backward).
Tensor avg_pool_nd(const Tensor& grad, int64_t spatial_dims, IntArrayRef kernel_size, IntArrayRef stride,
                   IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                   const std::optional<int64_t>& divisor_override);
/// adaptive_avg_pool1d/2d/3d to the last `spatial_dims` of out_sizes.
Tensor adaptive_avg_pool_nd(const Tensor& grad, IntArrayRef out_sizes, int64_t spatial_dims);

}  // namespace tp

namespace tp {

/// softmax's (log=false) or log_softmax's gradient from its output (Note [Fused backward and
/// create_graph]), returned in the input's dtype.
Tensor softmax_backward(const Tensor& grad, const Tensor& result, int64_t dim, DType self_dtype, bool log);
/// native_layer_norm's gradients for (input, weight, bias), those `mask` asks for.
std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(const Tensor& grad, const Tensor& input,
                                                       IntArrayRef normalized_shape, const Tensor& mean,
                                                       const Tensor& rstd, const std::optional<Tensor>& weight,
                                                       double eps, std::array<bool, 3> mask);
/// _fused_rms_norm's gradients for (input, weight), those `mask` asks for, from the gradients
/// of its output and rstd (Note [Fused backward and create_graph]).
std::tuple<Tensor, Tensor> rms_norm_backward(const Tensor& grad, const Tensor& grad_rstd, const Tensor& input,
                                             IntArrayRef normalized_shape, const Tensor& rstd,
                                             const std::optional<Tensor>& weight, const std::optional<double>& eps,
                                             std::array<bool, 2> mask);

}  // namespace tp

namespace tp {

/// native_group_norm's gradients for (input, weight, bias), those `mask` asks for, from the
/// gradients of its output, mean and rstd.
std::tuple<Tensor, Tensor, Tensor> group_norm_backward(const Tensor& grad, const Tensor& grad_mean,
                                                       const Tensor& grad_rstd, const Tensor& input, const Tensor& mean,
                                                       const Tensor& rstd, const std::optional<Tensor>& weight,
                                                       int64_t group, double eps, std::array<bool, 3> mask);
/// native_batch_norm's gradients for (input, weight, bias), those `mask` asks for.
std::tuple<Tensor, Tensor, Tensor> batch_norm_backward(const Tensor& grad, const Tensor& input,
                                                       const std::optional<Tensor>& weight, const Tensor& save_mean,
                                                       const Tensor& save_invstd, bool training, double eps,
                                                       std::array<bool, 3> mask);

}  // namespace tp

namespace tp {

/// _cross_entropy_rows's gradient (csrc/ops/nn_loss.cpp): the fused kernel in a plain
/// backward, differentiable ops under create_graph (Note [Fused backward and create_graph]).
Tensor cross_entropy_rows_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                                   int64_t ignore_index, const Tensor& lse);
/// constant_pad_nd's gradient: grad cropped by the negated padding.
Tensor constant_pad_backward(const Tensor& grad, IntArrayRef pad);
/// reflection_pad*d (reflect) or replication_pad*d by the padding's length.
Tensor pad_nd(const Tensor& grad, IntArrayRef padding, bool reflect);
/// im2col's gradient: col2im back to the input's spatial size.
Tensor im2col_backward(const Tensor& grad, IntArrayRef self_sizes, IntArrayRef kernel_size, IntArrayRef dilation,
                       IntArrayRef padding, IntArrayRef stride);

}  // namespace tp

namespace tp {

/// grid_sampler_2d/3d's gradients for (input, grid), those `mask` asks for (csrc/ops/nn_grid_sample.cpp):
/// the fused kernel in a plain backward, differentiable ops under create_graph.
std::tuple<Tensor, Tensor> grid_sampler_backward(const Tensor& grad, const Tensor& input, const Tensor& grid,
                                                 int64_t interpolation_mode, int64_t padding_mode, bool align_corners,
                                                 std::array<bool, 2> mask);

}  // namespace tp

namespace tp {

/// The tangent of _embedding_bag's output (csrc/ops/nn_embedding.cpp): the bags of the weight's
/// tangent (the winners' rows for mode max) plus the bags weighted by per_sample_weights' tangent.
Tensor embedding_bag_jvp(const Tensor& weight_t, const Tensor& per_sample_weights_t, const Tensor& weight,
                         const Tensor& indices, const Tensor& offsets, int64_t mode,
                         const std::optional<Tensor>& per_sample_weights, bool include_last_offset, int64_t padding_idx,
                         const Tensor& max_indices, const Tensor& bag_size);

}  // namespace tp
