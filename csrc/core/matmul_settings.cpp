#include "core/matmul_settings.h"

#include <atomic>

#include "core/error.h"

namespace tp {
namespace {

std::atomic<int> g_precision{int(Float32MatmulPrecision::Highest)};
// Two bits each: bit 0 = allow, bit 1 = allow_splitk.
std::atomic<int> g_fp16_reduction{3};
std::atomic<int> g_bf16_reduction{3};
std::atomic<bool> g_fp16_accumulation{false};
std::atomic<bool> g_cudnn_tf32{true};
// bit 0 = enabled, bit 1 = benchmark, bit 2 = deterministic
std::atomic<int> g_cudnn_flags{1};

ReducedPrecisionReduction decode(int bits) { return {(bits & 1) != 0, (bits & 2) != 0}; }

int encode(ReducedPrecisionReduction r) {
  TP_CHECK(!(r.allow && !r.allow_splitk),
           "allow_splitk=False is not supported when reduced precision reductions are enabled");
  return (r.allow ? 1 : 0) | (r.allow_splitk ? 2 : 0);
}

}  // namespace

Float32MatmulPrecision float32_matmul_precision() {
  return Float32MatmulPrecision(g_precision.load(std::memory_order_relaxed));
}
void set_float32_matmul_precision(Float32MatmulPrecision p) { g_precision.store(int(p)); }

bool allow_tf32_cublas() { return float32_matmul_precision() != Float32MatmulPrecision::Highest; }
void set_allow_tf32_cublas(bool allow) {
  set_float32_matmul_precision(allow ? Float32MatmulPrecision::High
                                     : Float32MatmulPrecision::Highest);
}

ReducedPrecisionReduction fp16_reduced_precision_reduction() {
  return decode(g_fp16_reduction.load(std::memory_order_relaxed));
}
ReducedPrecisionReduction bf16_reduced_precision_reduction() {
  return decode(g_bf16_reduction.load(std::memory_order_relaxed));
}
void set_fp16_reduced_precision_reduction(ReducedPrecisionReduction r) {
  g_fp16_reduction.store(encode(r));
}
void set_bf16_reduced_precision_reduction(ReducedPrecisionReduction r) {
  g_bf16_reduction.store(encode(r));
}

bool allow_fp16_accumulation() { return g_fp16_accumulation.load(std::memory_order_relaxed); }
void set_allow_fp16_accumulation(bool allow) { g_fp16_accumulation.store(allow); }

bool cudnn_allow_tf32() { return g_cudnn_tf32.load(std::memory_order_relaxed); }
void set_cudnn_allow_tf32(bool allow) { g_cudnn_tf32.store(allow); }

CudnnFlags cudnn_flags() {
  const int bits = g_cudnn_flags.load(std::memory_order_relaxed);
  return {(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0};
}
void set_cudnn_flags(CudnnFlags f) {
  g_cudnn_flags.store((f.enabled ? 1 : 0) | (f.benchmark ? 2 : 0) | (f.deterministic ? 4 : 0));
}

}  // namespace tp
