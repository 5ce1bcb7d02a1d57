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
