// Matrix products of CUDA tensors: operand layouts for cuBLAS, compute types and math
// modes from the precision settings, cublasGemmEx / strided-batched GEMM, cuBLASLt's bias
// epilogue for addmm, cublasDotEx for dot.
#include "cuda/blas.h"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "core/half.h"
#include "core/matmul_settings.h"
#include "cuda/blas_context.h"
#include "cuda/runtime.h"
#include "tensorplay/ops_api.h"

// Note [CUDA GEMM]
// Our matrices are row-major, cuBLAS's column-major: C = A @ B runs as C^T = B^T @ A^T,
// whose column-major operands are our row-major ones as they lie. An operand with a unit
// stride in either matrix dim and a leading stride of at least the other size is read in
// place, the transpose flag saying which; any other operand is made contiguous first. A
// batch (3-D operands) is one strided-batched GEMM: run_gemm's callers fold batch dims with
// reshape, which copies when the dims do not merge, so each operand has one batch stride
// (0 for a broadcast operand). Compute types follow PyTorch: float32 in IEEE float32
// unless TF32 is allowed (set_float32_matmul_precision 'high'/'medium', allow_tf32:
// CUBLAS_COMPUTE_32F_FAST_TF32); float16 and bfloat16 accumulate in float32 (float16 in
// float16 under allow_fp16_accumulation), and while reduced-precision reduction is not
// allowed, cuBLAS's math mode forbids it (cuBLASLt: reductions only in the compute type,
// or none at all when split-K is not allowed either). k == 0 runs no GEMM: c becomes
// beta * c, zeros when beta == 0 whatever c held (NaNs included), as PyTorch.

namespace tp::cuda::blas {

bool supports(DType dt) {
  return dt == DType::Float32 || dt == DType::Float64 || dt == DType::Float16 ||
         dt == DType::BFloat16;
}

namespace {

cudaDataType_t data_type(DType dt) {
  switch (dt) {
    case DType::Float32: return CUDA_R_32F;
    case DType::Float64: return CUDA_R_64F;
    case DType::Float16: return CUDA_R_16F;
    case DType::Complex64: return CUDA_C_32F;
    case DType::Complex128: return CUDA_C_64F;
    default: return CUDA_R_16BF;
  }
}

/// The compute type of a product of `dt` under the current settings, and the type its
/// alpha and beta are given in.
struct Compute {
  cublasComputeType_t type;
  cudaDataType_t scale_type;
};

Compute compute_of(DType dt) {
  switch (dt) {
    case DType::Float32:
      return {allow_tf32_cublas() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case DType::Float64: return {CUBLAS_COMPUTE_64F, CUDA_R_64F};
    case DType::Complex64: return {CUBLAS_COMPUTE_32F, CUDA_C_32F};
    case DType::Complex128: return {CUBLAS_COMPUTE_64F, CUDA_C_64F};
    case DType::Float16:
      if (allow_fp16_accumulation()) return {CUBLAS_COMPUTE_16F, CUDA_R_16F};
      return {CUBLAS_COMPUTE_32F, CUDA_R_32F};
    default: return {CUBLAS_COMPUTE_32F, CUDA_R_32F};
  }
}

/// A scalar in a cuBLAS scale type, passed by host pointer.
class ScaleValue {
 public:
  ScaleValue(double x, cudaDataType_t type) {
    if (type == CUDA_C_64F) dc_[0] = x, dc_[1] = 0;  // the products' alpha and beta are real
    else if (type == CUDA_C_32F) fc_[0] = float(x), fc_[1] = 0;
    else if (type == CUDA_R_64F) d_ = x;
    else if (type == CUDA_R_16F) h_ = Half(float(x)).x;
    else f_ = float(x);
  }
  const void* ptr() const { return &d_; }  // every member starts there

 private:
  union {
    double d_;
    float f_;
    uint16_t h_;
    double dc_[2];
    float fc_[2];
  };
};

/// PyTorch's reduced-precision-reduction flags for float16/bfloat16 (all allowed otherwise).
ReducedPrecisionReduction reduction_of(DType dt) {
  if (dt == DType::Float16) return fp16_reduced_precision_reduction();
  if (dt == DType::BFloat16) return bf16_reduced_precision_reduction();
  return {};
}

cublasMath_t math_mode(DType dt) {
  int mode = CUBLAS_DEFAULT_MATH;
  if (!reduction_of(dt).allow) mode |= CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
  return cublasMath_t(mode);
}

/// How cuBLAS reads a row-major operand X (its last two dims, rows x cols) as the
/// column-major X^T it needs: CUBLAS_OP_N with ld = X's row stride when X's rows are
/// contiguous, CUBLAS_OP_T with ld = X's column stride when its columns are.
bool fits_layout(const Tensor& x, cublasOperation_t* op, int64_t* ld) {
  int64_t nd = x.dim(), rows = x.size(nd - 2), cols = x.size(nd - 1);
  int64_t rs = x.stride(nd - 2), cs = x.stride(nd - 1);
  if ((cols == 1 || cs == 1) && (rows == 1 || rs >= std::max<int64_t>(cols, 1))) {
    *op = CUBLAS_OP_N;
    *ld = rows == 1 ? std::max<int64_t>(cols, 1) : rs;
  } else if ((rows == 1 || rs == 1) && (cols == 1 || cs >= std::max<int64_t>(rows, 1))) {
    *op = CUBLAS_OP_T;
    *ld = cols == 1 ? std::max<int64_t>(rows, 1) : cs;
  } else {
    return false;
  }
  return *ld <= INT_MAX;
}

/// An operand as cuBLAS reads it: the tensor (a contiguous copy when its layout does not
/// fit), its op flag, leading dimension and batch stride.
struct Operand {
  Tensor t;
  cublasOperation_t op = CUBLAS_OP_N;
  int64_t ld = 0;
  int64_t batch_stride = 0;
};

Operand operand(const Tensor& x) {
  Operand o{x};
  if (!fits_layout(x, &o.op, &o.ld)) {
    o.t = contiguous(x);
    TP_CHECK(fits_layout(o.t, &o.op, &o.ld), "matrix dimension ", x.size(x.dim() - 1),
             " exceeds cuBLAS's 32-bit limit");
  }
  o.batch_stride = o.t.dim() == 3 ? o.t.stride(0) : 0;
  return o;
}

void check_int(int64_t v) {
  TP_CHECK(v <= INT_MAX, "size ", v, " exceeds cuBLAS's 32-bit limit");
}

/// c = beta * c (a product with k == 0).
void scale(const Tensor& c, double beta) {
  if (beta == 1) return;
  if (beta == 0) {
    zero_(c);
    return;
  }
  if (is_complex(c.dtype())) return scale(view_as_real_impl(c, {}), beta);  // both parts by beta
  Tensor dense = c.is_contiguous() ? c : contiguous(c);
  DType dt = c.dtype();
  cudaDataType_t exec = dt == DType::Float64 ? CUDA_R_64F : CUDA_R_32F;
  ScaleValue s(beta, exec);
  Context ctx = current_context();
  char* p = static_cast<char*>(dense.data_ptr());
  const int64_t es = int64_t(dense.itemsize()), numel = dense.numel();
  for (int64_t off = 0; off < numel; off += INT_MAX) {
    int len = int(std::min<int64_t>(INT_MAX, numel - off));
    TP_CUBLAS_CHECK(
        cublasScalEx(ctx.handle, len, s.ptr(), exec, p + off * es, data_type(dt), 1, exec));
  }
  if (!dense.is_same(c)) tp::copy_(c, dense);
}

/// Whether c (m x n, last two dims) is written in place: unit column stride, row stride
/// >= n; its ld through `ldc`.
bool output_fits(const Tensor& c, int64_t* ldc) {
  int64_t nd = c.dim(), m = c.size(nd - 2), n = c.size(nd - 1);
  int64_t rs = c.stride(nd - 2), cs = c.stride(nd - 1);
  *ldc = m == 1 ? std::max<int64_t>(n, 1) : rs;
  return (n == 1 || cs == 1) && *ldc >= std::max<int64_t>(n, 1) && *ldc <= INT_MAX;
}

/// cuBLASLt descriptors of one call, destroyed with it.
struct LtCall {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  LtCall() = default;
  LtCall(const LtCall&) = delete;
  LtCall& operator=(const LtCall&) = delete;
  ~LtCall() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

/// The largest power of two, at most 256, that divides the address (cuBLASLt otherwise
/// assumes 256-byte aligned operands).
uint32_t alignment_of(const void* p) {
  auto addr = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 1;
  while (align < 256 && addr % (uintptr_t(align) * 2) == 0) align *= 2;
  return align;
}

bool ok(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS; }

template <class T>
bool set_attr(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& v) {
  return ok(cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof(v)));
}
template <class T>
bool set_pref(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t attr, const T& v) {
  return ok(cublasLtMatmulPreferenceSetAttribute(p, attr, &v, sizeof(v)));
}

/// cublasSetPointerMode(DEVICE) for a scope.
class DevicePointerMode {
 public:
  explicit DevicePointerMode(cublasHandle_t h) : h_(h) {
    TP_CUBLAS_CHECK(cublasSetPointerMode(h_, CUBLAS_POINTER_MODE_DEVICE));
  }
  ~DevicePointerMode() { cublasSetPointerMode(h_, CUBLAS_POINTER_MODE_HOST); }
  DevicePointerMode(const DevicePointerMode&) = delete;
  DevicePointerMode& operator=(const DevicePointerMode&) = delete;

 private:
  cublasHandle_t h_;
};

}  // namespace

void gemm(const Tensor& a, const Tensor& b, const Tensor& c, double alpha, double beta) {
  int64_t nd = a.dim();
  int64_t batch = nd == 3 ? a.size(0) : 1;
  int64_t m = a.size(nd - 2), k = a.size(nd - 1), n = b.size(nd - 1);
  if (batch == 0 || m == 0 || n == 0) return;
  DeviceGuard guard(c.device().index);
  if (k == 0) return scale(c, beta);
  int64_t ldc = 0;
  if (!output_fits(c, &ldc)) {  // run_gemm's callers pass contiguous outputs; be safe anyway
    Tensor dense = empty_tensor(c.sizes(), c.dtype(), c.device());
    if (beta != 0) tp::copy_(dense, c);
    gemm(a, b, dense, alpha, beta);
    tp::copy_(c, dense);
    return;
  }
  for (int64_t v : {m, n, k, batch}) check_int(v);
  Operand A = operand(a), B = operand(b);
  DType dt = c.dtype();
  Compute comp = compute_of(dt);
  ScaleValue al(alpha, comp.scale_type), be(beta, comp.scale_type);
  cudaDataType_t type = data_type(dt);
  Context ctx = current_context();
  TP_CUBLAS_CHECK(cublasSetMathMode(ctx.handle, math_mode(dt)));
  if (batch == 1) {
    TP_CUBLAS_CHECK(cublasGemmEx(ctx.handle, B.op, A.op, int(n), int(m), int(k), al.ptr(),
                                 B.t.data_ptr(), type, int(B.ld), A.t.data_ptr(), type, int(A.ld),
                                 be.ptr(), c.data_ptr(), type, int(ldc), comp.type,
                                 CUBLAS_GEMM_DEFAULT));
    return;
  }
  TP_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      ctx.handle, B.op, A.op, int(n), int(m), int(k), al.ptr(), B.t.data_ptr(), type, int(B.ld),
      B.batch_stride, A.t.data_ptr(), type, int(A.ld), A.batch_stride, be.ptr(), c.data_ptr(),
      type, int(ldc), c.stride(0), int(batch), comp.type, CUBLAS_GEMM_DEFAULT));
}

bool gemm_with_bias(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& c,
                    double alpha) {
  DType dt = c.dtype();
  int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  // As PyTorch: cuBLASLt's heuristic rejects a single row or column of either operand.
  if (!supports(dt) || m <= 1 || k <= 1 || n <= 1 || m > INT_MAX || n > INT_MAX || k > INT_MAX)
    return false;
  if (!c.is_contiguous() || !bias.is_contiguous() || bias.numel() != n ||
      alignment_of(bias.data_ptr()) < 16)
    return false;
  DeviceGuard guard(c.device().index);
  Operand A = operand(a), B = operand(b);
  Compute comp = compute_of(dt);
  cudaDataType_t type = data_type(dt);
  Context ctx = current_context();
  LtCall call;
  cublasOperation_t ta = B.op, tb = A.op;
  const void* bias_ptr = bias.data_ptr();
  uint32_t align_a = alignment_of(B.t.data_ptr()), align_b = alignment_of(A.t.data_ptr()),
           align_c = alignment_of(c.data_ptr());
  auto pref = [&](cublasLtMatmulPreferenceAttributes_t attr, auto v) {
    return set_pref(call.pref, attr, v);
  };
  bool ready =
      ok(cublasLtMatmulDescCreate(&call.op, comp.type, comp.scale_type)) &&
      set_attr(call.op, CUBLASLT_MATMUL_DESC_TRANSA, ta) &&
      set_attr(call.op, CUBLASLT_MATMUL_DESC_TRANSB, tb) &&
      set_attr(call.op, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS) &&
      set_attr(call.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias_ptr) &&
      ok(cublasLtMatrixLayoutCreate(&call.a, type, uint64_t(ta == CUBLAS_OP_N ? n : k),
                                    uint64_t(ta == CUBLAS_OP_N ? k : n), B.ld)) &&
      ok(cublasLtMatrixLayoutCreate(&call.b, type, uint64_t(tb == CUBLAS_OP_N ? k : m),
                                    uint64_t(tb == CUBLAS_OP_N ? m : k), A.ld)) &&
      ok(cublasLtMatrixLayoutCreate(&call.c, type, uint64_t(n), uint64_t(m), n)) &&
      ok(cublasLtMatmulPreferenceCreate(&call.pref)) &&
      pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t(ctx.workspace_size)) &&
      pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a) &&
      pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b) &&
      pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_c) &&
      pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_c);
  ReducedPrecisionReduction r = reduction_of(dt);
  if (ready && !r.allow) {  // reductions in the compute type only; none without split-K
    uint32_t mask = CUBLASLT_REDUCTION_SCHEME_NONE;
    if (r.allow_splitk) mask |= CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    ready = pref(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, mask);
  }
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  if (!ready ||
      !ok(cublasLtMatmulAlgoGetHeuristic(ctx.lt, call.op, call.a, call.b, call.c, call.c,
                                         call.pref, 1, &heuristic, &found)) ||
      found == 0)
    return false;
  ScaleValue al(alpha, comp.scale_type), zero(0.0, comp.scale_type);
  return ok(cublasLtMatmul(ctx.lt, call.op, al.ptr(), B.t.data_ptr(), call.a, A.t.data_ptr(),
                           call.b, zero.ptr(), c.data_ptr(), call.c, c.data_ptr(), call.c,
                           &heuristic.algo, ctx.workspace, ctx.workspace_size, ctx.stream));
}

void dot(const Tensor& x, const Tensor& y, const Tensor& dst) {
  int64_t n = x.size(0);
  DeviceGuard guard(dst.device().index);
  if (n == 0) {
    zero_(dst);
    return;
  }
  check_int(n);
  // A unit increment for one element; a zero (broadcast) or too large stride is copied.
  auto vector = [n](const Tensor& v, int* inc) {
    int64_t s = v.stride(0);
    *inc = n == 1 ? 1 : int(std::min<int64_t>(s, INT_MAX));
    if (n == 1 || (s >= 1 && s <= INT_MAX)) return v;
    *inc = 1;
    return contiguous(v);
  };
  int incx = 1, incy = 1;
  Tensor xs = vector(x, &incx), ys = vector(y, &incy);
  DType dt = dst.dtype();
  // complex: cublasDotEx is the plain sum of products (dot; vdot conjugates before)
  cudaDataType_t type = data_type(dt), exec = is_complex(dt) ? type : dt == DType::Float64 ? CUDA_R_64F : CUDA_R_32F;
  Context ctx = current_context();
  DevicePointerMode mode(ctx.handle);
  TP_CUBLAS_CHECK(cublasDotEx(ctx.handle, int(n), xs.data_ptr(), type, incx, ys.data_ptr(), type,
                              incy, dst.data_ptr(), type, exec));
}

}  // namespace tp::cuda::blas
