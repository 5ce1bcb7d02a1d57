// Process-wide numerics settings of matrix products, as PyTorch's: the float32 matmul
// precision (TF32), the cuBLAS reduced-precision-reduction flags and cuDNN's flags. They
// exist in every build; the CUDA GEMMs (csrc/cuda/blas.cpp) and the cuDNN convolutions
// (csrc/cuda/cudnn_conv.cpp) read them at each call.
#pragma once

namespace tp {

/// tp.set_float32_matmul_precision: 'highest' (IEEE float32), 'high' and 'medium'
/// (both TF32 tensor cores on CUDA, as PyTorch's CUDA GEMMs).
enum class Float32MatmulPrecision { Highest, High, Medium };

Float32MatmulPrecision float32_matmul_precision();
void set_float32_matmul_precision(Float32MatmulPrecision p);
/// tp.backends.cuda.matmul.allow_tf32: true unless the precision is 'highest'; setting it
/// makes the precision 'high' (true) or 'highest' (false).
bool allow_tf32_cublas();
void set_allow_tf32_cublas(bool allow);

/// allow_{fp16,bf16}_reduced_precision_reduction: whether a float16/bfloat16 GEMM may
/// reduce partial sums in its output type, and whether it may split K (cuBLASLt only).
struct ReducedPrecisionReduction {
  bool allow = true;
  bool allow_splitk = true;
};
ReducedPrecisionReduction fp16_reduced_precision_reduction();
ReducedPrecisionReduction bf16_reduced_precision_reduction();
/// Raises RuntimeError for (allow=true, allow_splitk=false), as PyTorch does.
void set_fp16_reduced_precision_reduction(ReducedPrecisionReduction r);
void set_bf16_reduced_precision_reduction(ReducedPrecisionReduction r);

/// allow_fp16_accumulation: float16 GEMMs may accumulate in float16 (default false).
bool allow_fp16_accumulation();
void set_allow_fp16_accumulation(bool allow);

/// tp.backends.cudnn.allow_tf32 (default true): float32 convolutions may use TF32.
bool cudnn_allow_tf32();
void set_cudnn_allow_tf32(bool allow);

/// tp.backends.cudnn's switches: `enabled` (default true) sends CUDA convolutions to cuDNN
/// when the build has it; `benchmark` (default false) times the algorithms once per shape;
/// `deterministic` (default false) keeps only reproducible algorithms.
struct CudnnFlags {
  bool enabled = true;
  bool benchmark = false;
  bool deterministic = false;
};
CudnnFlags cudnn_flags();
void set_cudnn_flags(CudnnFlags f);

}  // namespace tp
