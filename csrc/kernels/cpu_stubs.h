// The entry points of the CPU kernels (csrc/kernels/cpu/*.cpp and the generated pointwise
// shards), which are compiled once per capability level (Note [CPU capability]): the
// library calls a stub, the stub runs the chosen level's kernel.
#pragma once
#include <array>
#include <cstdint>

#include "core/cpu_capability.h"
#include "kernels/tensor_iterator.h"

namespace tp::sampling {
struct Geometry;
}  // namespace tp::sampling

namespace tp::cpu {

/// Shards of the generated pointwise loop table (tools/codegen/gen.py's CPU_SHARDS): each
/// fills its functors' rows of a [PwKernel][DType] table.
constexpr int kPointwiseShards = 3;
using FillLoops = void (*)(Loop1d (*table)[kNumDTypes]);
extern KernelStub<FillLoops> pointwise_shard_stubs[kPointwiseShards];

/// cast_strided's kernel: n elements from src (dtype sdt, byte stride ss) to dst.
using CastFn = void (*)(const char* src, int64_t ss, DType sdt, char* dst, int64_t ds, DType ddt,
                        int64_t n);
extern KernelStub<CastFn> cast_stub;

/// dst[b][a][j] = src[b][j][a] for b < batch, a < A, j < B, elements of itemsize 1, 2, 4 or 8
/// bytes, both dense (Note [Transposing copies]).
using TransposeCopyFn = void (*)(int64_t itemsize, const char* src, char* dst, int64_t batch, int64_t A, int64_t B);
extern KernelStub<TransposeCopyFn> transpose_copy_stub;

/// The reductions of reductions.cpp; the order of cuda::ReduceKind.
enum class ReduceKind { Sum, Prod, Max, Min, All, Any };
/// Reduces a contiguous [B, R, K] block of dtype dt (not a half type) over R (R > 0) into
/// out's B * K results, of dtype: dt (sum of floats, max, min), int64 (sum of integers),
/// float64 / int64 (prod), bool (all, any).
using ReduceFn = void (*)(ReduceKind kind, DType dt, const void* x, void* out, int64_t B,
                          int64_t R, int64_t K);
extern KernelStub<ReduceFn> reduce_stub;

// ---- softmax_kernel.cpp: softmax, log_softmax and cross entropy's gradient (float32 / float64)

/// softmax (log: log_softmax) of a contiguous (outer, n, inner) block x along n into y.
using SoftmaxFn = void (*)(DType dt, const void* x, void* y, int64_t outer, int64_t n, int64_t inner, bool log);
extern KernelStub<SoftmaxFn> softmax_stub;

/// The input gradient gx of softmax (log: log_softmax) from its output y and gradient g, all
/// contiguous (outer, n, inner) blocks.
using SoftmaxBackwardFn = void (*)(DType dt, const void* g, const void* y, void* gx, int64_t outer, int64_t n,
                                   int64_t inner, bool log);
extern KernelStub<SoftmaxBackwardFn> softmax_backward_stub;

/// Turns the softmax rows dx (n, c) of cross entropy's logits into their gradient: row i
/// scaled by g[i], less g[i] at class t[i] (every t[i] ignore_index or in [0, c)); rows whose
/// target is ignore_index become zeros.
using CrossEntropyBackwardFn = void (*)(DType dt, void* dx, const void* g, const int64_t* t, int64_t n, int64_t c,
                                        int64_t ignore_index);
extern KernelStub<CrossEntropyBackwardFn> cross_entropy_backward_stub;

// ---- norm_kernel.cpp: layer_norm / rms_norm, batch_norm, group_norm (float32 / float64)

/// layer_norm over `rows` contiguous rows of `len` (len may be 0: the statistics are NaN):
/// y = (x - mean) * rstd * w + b, w and b may be null; mean and rstd per row. With a null
/// mean, rms_norm (Note [RMS norm as an uncentred layer norm] in ops/nn_norm.cpp).
using LayerNormFn = void (*)(DType dt, const void* x, const void* w, const void* b, void* y, void* mean, void* rstd,
                             int64_t rows, int64_t len, double eps);
extern KernelStub<LayerNormFn> layer_norm_stub;

/// layer_norm's (null mean: rms_norm's) gradients from the saved mean and rstd (rows, len >
/// 0); w, gx, gw, gb may be null, gw and gb are zeroed by the caller.
using LayerNormBackwardFn = void (*)(DType dt, const void* g, const void* x, const void* mean, const void* rstd,
                                     const void* w, void* gx, void* gw, void* gb, int64_t rows, int64_t len);
extern KernelStub<LayerNormBackwardFn> layer_norm_backward_stub;

/// batch_norm's forward on (n, c, l) data, row-major or channels last ((n, l, c) in memory):
/// training, the batch statistics (updating rm and rv when not null); else rm and rv's.
/// Writes y and the per-channel mean and invstd; w, b may be null.
using BatchNormFn = void (*)(DType dt, bool channels_last, const void* x, void* y, int64_t n, int64_t c, int64_t l,
                             bool training, double momentum, double eps, const void* w, const void* b, void* rm,
                             void* rv, void* mean, void* invstd);
extern KernelStub<BatchNormFn> batch_norm_stub;

/// batch_norm's gradients (layout as batch_norm_stub's) from the saved mean and invstd; w,
/// gx, gw, gb may be null.
using BatchNormBackwardFn = void (*)(DType dt, bool channels_last, const void* g, const void* x, int64_t n,
                                     int64_t c, int64_t l, const void* mean, const void* invstd, const void* w,
                                     bool training, void* gx, void* gw, void* gb);
extern KernelStub<BatchNormBackwardFn> batch_norm_backward_stub;

/// group_norm of N samples of C channels of L positions (row-major or channels last), G groups
/// of C / G channels: y, and mean and rstd per (sample, group); w, b may be null.
using GroupNormFn = void (*)(DType dt, bool channels_last, const void* x, void* y, int64_t N, int64_t L, int64_t C,
                             int64_t G, double eps, const void* w, const void* b, void* mean, void* rstd);
extern KernelStub<GroupNormFn> group_norm_stub;

/// group_norm's gradients (layout as group_norm_stub's) from the saved mean and rstd; w, gx,
/// gw, gb may be null.
using GroupNormBackwardFn = void (*)(DType dt, bool channels_last, const void* gy, const void* x, int64_t N,
                                     int64_t L, int64_t C, int64_t G, const void* mean, const void* rstd,
                                     const void* w, void* gx, void* gw, void* gb);
extern KernelStub<GroupNormBackwardFn> group_norm_backward_stub;

// ---- optimizer_kernel.cpp: the fused optimizer steps (Note [Fused optimizer kernels])

/// One parameter's dense arrays: params, grads, then the optimizer's state lists, all
/// `numel` elements of one floating `dtype` in one memory order.
struct OptimizerRow {
  std::array<char*, 5> data{};
  int64_t numel = 0;
  DType dtype = DType::Float32;
};
/// _fused_sgd_ over `num_rows` rows (params, grads[, momentum_buffers]).
using FusedSgdFn = void (*)(const OptimizerRow* rows, int64_t num_rows, double weight_decay, double momentum,
                            double lr, double dampening, bool nesterov, bool maximize, bool is_first_step);
extern KernelStub<FusedSgdFn> fused_sgd_stub;

/// _fused_adam_ (AdamW with decoupled_weight_decay) over rows (params, grads, exp_avgs,
/// exp_avg_sqs[, max_exp_avg_sqs]); steps[i]: row i's step count, already incremented.
using FusedAdamFn = void (*)(const OptimizerRow* rows, int64_t num_rows, const double* steps, double lr,
                             double beta1, double beta2, double weight_decay, double eps, bool amsgrad,
                             bool maximize, bool decoupled_weight_decay);
extern KernelStub<FusedAdamFn> fused_adam_stub;

/// _fused_adagrad_ over rows (params, grads, state_sums); steps as for fused_adam_stub.
using FusedAdagradFn = void (*)(const OptimizerRow* rows, int64_t num_rows, const double* steps, double lr,
                                double lr_decay, double weight_decay, double eps, bool maximize);
extern KernelStub<FusedAdagradFn> fused_adagrad_stub;

// ---- embedding_bag_kernel.cpp: embedding bags (Note [Embedding bags]). dt is the weight's
// floating dtype, whose rows are added in float32 for float16 / bfloat16 (the accumulation
// dtype); bag b is the indices [begin[b], begin[b + 1]), D the weight's row length.

/// The forward, mode 0 / 1 / 2 (sum / mean / max, PyTorch's numbering): out[b] (num_bags x D),
/// and for mean and max bag_size[b], for max max_indices[b, d]; per_sample_weights or null.
using EmbeddingBagFn = void (*)(DType dt, const int64_t* index, const int64_t* begin, int64_t num_bags,
                                const void* weight, int64_t D, const void* per_sample_weights, int64_t mode,
                                int64_t padding_idx, void* out, int64_t* bag_size, int64_t* max_indices);
extern KernelStub<EmbeddingBagFn> embedding_bag_stub;

/// The weight gradient of sum and mean: grad_weight[rows[j]] += grad[bag_of[j]] * scale[j]
/// for j < m, in the accumulation dtype (scale and grad_weight).
using EmbeddingBagBackwardFn = void (*)(DType dt, const void* grad, int64_t D, const int64_t* rows,
                                        const int64_t* bag_of, const void* scale, int64_t m, void* grad_weight);
extern KernelStub<EmbeddingBagBackwardFn> embedding_bag_backward_stub;

/// The weight gradient of max: grad_weight[max_indices[b, d], d] += grad[b, d] for the bags
/// with bag_size[b] > 0, in the accumulation dtype.
using EmbeddingBagMaxBackwardFn = void (*)(DType dt, const void* grad, int64_t num_bags, int64_t D,
                                           const int64_t* bag_size, const int64_t* max_indices, void* grad_weight);
extern KernelStub<EmbeddingBagMaxBackwardFn> embedding_bag_max_backward_stub;

/// The per_sample_weights gradient: out[i] = grad[b] . weight[index[i]] for each index i of
/// bag b, 0 for padding_idx.
using EmbeddingBagPerSampleWeightsBackwardFn = void (*)(DType dt, const void* grad, const void* weight,
                                                        const int64_t* index, const int64_t* begin,
                                                        int64_t num_bags, int64_t D, int64_t padding_idx,
                                                        void* out);
extern KernelStub<EmbeddingBagPerSampleWeightsBackwardFn> embedding_bag_per_sample_weights_backward_stub;

// ---- lstm_kernel.cpp: the cell updates of _lstm_layer (csrc/ops/nn_rnn.cpp), float32 / float64

/// The LSTM cell update of one time step for B rows: activates gates (B x 4H: i, f, g, o)
/// in place, then c = f * c_prev + i * g and h = o * tanh(c) (B x H each).
using LstmCellFn = void (*)(DType dt, void* gates, const void* c_prev, void* c, void* h, int64_t B, int64_t H);
extern KernelStub<LstmCellFn> lstm_cell_stub;

/// Its backward: from the step's activated gates, c and c_prev, adds grad_output (B x H, or
/// null) to dh, writes d_gates (B x 4H, of the pre-activations) and moves dc (B x H) to c_prev.
using LstmCellBackwardFn = void (*)(DType dt, const void* gates, const void* c, const void* c_prev,
                                    const void* grad_output, void* dh, void* dc, void* d_gates, int64_t B,
                                    int64_t H);
extern KernelStub<LstmCellBackwardFn> lstm_cell_backward_stub;

// ---- sort_kernel.cpp: sort / argsort / msort / topk (csrc/ops/sorting.cpp)

/// Sorts each of `rows` contiguous rows of `len` elements of dtype dt (not a half type),
/// stably, ascending or descending, NaN above every number; writes the first k values of
/// each row (rows x k, dtype dt) and their positions in the row (int64). k < len: only
/// those k are ordered (ties in input order). `topk` (1: sorted, 2: unsorted) selects the k
/// as PyTorch's CPU topk does, whose order among ties (and unsorted order) it reproduces.
using SortFn = void (*)(DType dt, const void* in, int64_t rows, int64_t len, int64_t k, bool descending,
                        int topk, void* values, int64_t* indices);
extern KernelStub<SortFn> sort_stub;

// ---- index_range_kernel.cpp: the bounds checks of the indexing writes (indexing_writes.cpp)

/// The smallest (*min) and largest (*max) of n > 0 int64 indices.
using IndexRangeFn = void (*)(const int64_t* index, int64_t n, int64_t* min, int64_t* max);
extern KernelStub<IndexRangeFn> index_range_stub;

// ---- grid_sample_kernel.cpp: grid_sampler_2d / 3d (csrc/ops/nn_grid_sample.cpp, Note [Grid
// sampler edges]) on contiguous float32 / float64 (dt) arrays

/// y (N, C, out...) sampled from x (N, C, in...) at grid (N, out..., nsp), with
/// interpolation `mode` and `padding` as numbered in grid_sample.h.
using GridSampleFn = void (*)(DType dt, const sampling::Geometry& geo, int64_t mode, int64_t padding,
                              bool align_corners, const void* x, const void* grid, void* y);
extern KernelStub<GridSampleFn> grid_sample_stub;

/// Its backward from gy (y's shape, at least one element): adds d(loss)/d(x) into gx (zeroed)
/// and writes d(loss)/d(grid) into gg, each only where not null.
using GridSampleBackwardFn = void (*)(DType dt, const sampling::Geometry& geo, int64_t mode, int64_t padding,
                                      bool align_corners, const void* gy, const void* x, const void* grid, void* gx,
                                      void* gg);
extern KernelStub<GridSampleBackwardFn> grid_sample_backward_stub;

}  // namespace tp::cpu

namespace tp::conv {
struct ConvShape;  // ops/nn_conv.h
}

namespace tp::cpu {

// ---- conv/conv_kernel.cpp: the convolutions' loops, on tensors of g's geometry (ops/nn_conv.h) in
// the compute dtype dt (float32, float64 or an integer type; im2col and col2im: bool too);
// channels_last: dense channels last (Note [Channels-last results]), else contiguous

/// A direct convolution's forward (Note [Direct convolution taps]): y = conv(x, w) + bias
/// (null: none), w contiguous; channels last only for a depthwise one.
using ConvForwardFn = void (*)(const conv::ConvShape& g, DType dt, bool channels_last, const void* x,
                               const void* w, const void* bias, void* y);
extern KernelStub<ConvForwardFn> conv_direct_forward_stub;

/// A direct convolution's gradients from gy: the input's (b = w, out = gx) and the weight's
/// (b = x, out = gw, contiguous); channels last only for a depthwise one.
using ConvBackwardFn = void (*)(const conv::ConvShape& g, DType dt, bool channels_last, const void* gy,
                                const void* b, void* out);
extern KernelStub<ConvBackwardFn> conv_direct_input_stub, conv_direct_weight_stub;

/// Winograd F(4x4, 3x3) (conv/conv_winograd_kernel.cpp, Note [Winograd convolution]) of a 3x3,
/// stride-1, undilated, ungrouped 2-D float32 convolution of geometry g on contiguous tensors:
/// out = conv(in, w) + bias (null: none), or with `transposed` the transposed convolution (the
/// input gradient) out = conv_transpose(in, w) + bias; w is the plain convolution's weight.
using ConvWinogradFn = void (*)(const conv::ConvShape& g, bool transposed, const float* in, const float* w,
                                const float* bias, float* out);
extern KernelStub<ConvWinogradFn> conv_winograd_stub;

/// The register-tiled direct convolution (conv/conv_tiled_kernel.cpp, Note [Register-tiled
/// convolution]) of a 1-D or 2-D float32 convolution of geometry g on contiguous tensors (or
/// with `channels_last` dense channels-last ones, groups 1): out = conv(in, w) + bias (null:
/// none), or with `transposed` (stride 1, no output padding, padding at most the kernel's
/// reach) its input gradient out = conv_transpose(in, w) + bias; w is the plain convolution's
/// weight, row-major.
using ConvTiledFn = void (*)(const conv::ConvShape& g, bool transposed, bool channels_last, const float* in,
                             const float* w, const float* bias, float* out);
extern KernelStub<ConvTiledFn> conv_tiled_stub;

/// Its weight gradient: gw (contiguous) of the 1-D or 2-D float32 convolution g from its
/// input x and output gradient gy (contiguous).
using ConvTiledWeightFn = void (*)(const conv::ConvShape& g, const float* x, const float* gy, float* gw);
extern KernelStub<ConvTiledWeightFn> conv_tiled_weight_stub;

/// The weight gradient's Winograd transforms (Note [Winograd weight gradient] in
/// ops/nn_conv.cpp) of output tiles [t0, t0 + nt) of the 3x3 convolution g: V (36 x cin x TB)
/// of the input x, Y (36 x cout x TB) of the output gradient gy; TB a multiple of 16.
using ConvWinogradWeightFn = void (*)(const conv::ConvShape& g, const float* x, const float* gy, int64_t t0,
                                      int64_t nt, int64_t TB, float* V, float* Y);
extern KernelStub<ConvWinogradWeightFn> conv_winograd_weight_transforms_stub;

/// One sample's columns (Note [Convolution as GEMM]): row-major (Cin * K, L), padding read as
/// zero; channels last (L, K * Cin), one input pixel per (output pixel, kernel position).
using Im2colFn = void (*)(const conv::ConvShape& g, DType dt, bool channels_last, const void* x, void* col);
extern KernelStub<Im2colFn> im2col_stub;

/// im2col's adjoint: one sample x (overwritten) = the sum of col's entries at their pixels.
using Col2imFn = void (*)(const conv::ConvShape& g, DType dt, bool channels_last, const void* col, void* x);
extern KernelStub<Col2imFn> col2im_stub;

/// Adds bias[ch] to channel ch of the (n, c, l) tensor y.
using ConvAddBiasFn = void (*)(DType dt, void* y, const void* bias, int64_t n, int64_t c, int64_t l,
                               bool channels_last);
extern KernelStub<ConvAddBiasFn> conv_add_bias_stub;

/// The bias gradient out[ch] = the sum of channel ch of the (n, c, l) tensor grad; float32 or
/// float64.
using ConvBiasGradFn = void (*)(DType dt, const void* grad, void* out, int64_t n, int64_t c, int64_t l,
                                bool channels_last);
extern KernelStub<ConvBiasGradFn> conv_bias_grad_stub;

}  // namespace tp::cpu

namespace tp::pool {
struct PoolShape;  // ops/nn_pool.h
}

namespace tp::cpu {

// ---- pool_kernel.cpp: pooling over g's windows (ops/nn_pool.h, Note [Pooling windows]) in
// dtype dt (float32, float64 or an integer type but bool); channels_last: g.planes = samples
// x C, dense channels last, else g.planes contiguous planes (C unused)

/// Max pooling: y and idx, the flat spatial index of each window's winner (NaN wins).
using MaxPoolFn = void (*)(const pool::PoolShape& g, DType dt, bool channels_last, int64_t C, const void* x,
                           void* y, int64_t* idx);
extern KernelStub<MaxPoolFn> max_pool_stub;

/// Average pooling (a = x, b = y) and its gradient (a = gy, b = gx, overwritten): each window's
/// sum over `divisor`, or where 0 over its size (Window::pad_count); integers divide as integers.
using AvgPoolFn = void (*)(const pool::PoolShape& g, DType dt, bool channels_last, int64_t C, const void* a,
                           void* b, int64_t divisor);
extern KernelStub<AvgPoolFn> avg_pool_stub, avg_pool_backward_stub;

/// Max pooling's gradient: gx (n x plane x C, overwritten) = the sum of gy (n x per x C) at
/// idx's flat spatial indices; n planes with C = 1 (row-major), or n samples of C channels.
using MaxPoolBackwardFn = void (*)(DType dt, int64_t n, int64_t C, int64_t plane, int64_t per, const void* gy,
                                   const int64_t* idx, void* gx);
extern KernelStub<MaxPoolBackwardFn> max_pool_backward_stub;

}  // namespace tp::cpu
