// The entry points of the CPU kernels (csrc/kernels/cpu/*.cpp and the generated pointwise
// shards), which are compiled once per capability level (Note [CPU capability]): the
// library calls a stub, the stub runs the chosen level's kernel.
#pragma once
#include <cstdint>

#include "core/cpu_capability.h"
#include "kernels/tensor_iterator.h"

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

}  // namespace tp::cpu

namespace tp::conv {
struct ConvShape;  // ops/nn_conv.h
}

namespace tp::cpu {

// ---- conv_kernel.cpp: the convolutions' loops, on tensors of g's geometry (ops/nn_conv.h) in
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
