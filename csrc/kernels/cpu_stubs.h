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

}  // namespace tp::cpu
