#pragma once
// Shared by the tp.linalg kernels (linalg_decompositions.cpp, linalg_functions.cpp):
// batch bookkeeping, input checks, column-major LAPACK buffers, SVD and eigh cores.
#include <optional>
#include <string>

#include "core/error.h"
#include "tensorplay/ops_api.h"

namespace tp::linalg {

/// Size of the second-to-last / last dim (a matrix's rows / columns).
int64_t rows(const Tensor& A);
int64_t cols(const Tensor& A);
/// A's sizes without its last `matrix_dims` dims.
DimVector batch_of(const Tensor& A, int64_t matrix_dims = 2);
/// batch followed by tail.
DimVector with_tail(IntArrayRef batch, std::initializer_list<int64_t> tail);
/// Product of the sizes (1 for none).
int64_t count(IntArrayRef batch);
/// Broadcast of two batch shapes, with PyTorch's message when they do not broadcast.
DimVector broadcast_batch(IntArrayRef a, IntArrayRef b);
/// v as a LAPACK dimension/leading dimension (at least 1); error above INT_MAX.
int lapack_int(int64_t v);
/// PyTorch's rule for solve/lstsq: B is a vector (batch) when 1-D or A's shape minus its last dim.
bool is_vector_rhs(const Tensor& A, const Tensor& B);

/// Checks A is a (batch of) float32/float64 matrix, square if asked. float16/bfloat16
/// raise NotImplementedError naming `half_kernel` (PyTorch's CPU kernel, e.g. "lu_cpu"),
/// or, when it is null, RuntimeError "Low precision dtypes not supported".
/// With `empty_returns`, an empty float16/bfloat16 input passes (PyTorch's kernel returns it
/// before its dtype dispatch; its geqrf does not).
/// Complex A raises NotImplementedError unless `complex_ok` (CPU kernels only).
void check_matrix(const Tensor& A, const char* half_kernel, bool square, bool empty_returns = true,
                  bool complex_ok = false);
/// Checks A is on a device with solvers (CPU or, in CUDA builds, CUDA).
void check_solver_device(const Tensor& A);

/// Uninitialised batch of r x c column-major matrices (the layout LAPACK and cuSOLVER write).
Tensor colmajor_empty(IntArrayRef batch, int64_t r, int64_t c, DType dt,
                      Device device = Device(DeviceType::CPU));
/// A column-major copy of A broadcast to `batch` on A's device, which the solver may overwrite.
Tensor colmajor_copy(const Tensor& A, IntArrayRef batch);
/// "(Batch element b): " when A is a batch, as PyTorch's messages have it; else "".
std::string batch_prefix(const Tensor& A, int64_t b);

/// The index of the first matrix whose info (int32, on any device) is > 0 (its value in
/// *value), or -1 when none is.
int64_t first_failure(const Tensor& info, int* value);
/// PyTorch's LinAlgErrors for matrix b of A, one message per failure, shared by the CPU
/// (LAPACK) and CUDA (cuSOLVER) paths. fail_svd: info < 0 means non-finite input.
[[noreturn]] void fail_inverse(const Tensor& A, int64_t b, int info);
[[noreturn]] void fail_solve(const Tensor& A, int64_t b);
[[noreturn]] void fail_cholesky(const Tensor& A, int64_t b, int info);
[[noreturn]] void fail_svd(const Tensor& A, int64_t b, int info);
[[noreturn]] void fail_eigh(const Tensor& A, int64_t b, int info);
/// res, or res copied into out= (which must have res's dtype; resized as needed).
Tensor finish_out(OutArg out, const Tensor& res);
/// res into out= of any dtype res safely casts to (PyTorch's rule for matrix_rank, pinv and
/// matrix_power's copies), else "Expected result to be safely castable ...".
Tensor finish_out_cast(OutArg out, const Tensor& res);

/// Calls f(float{}) or f(double{}) by dt (callers have checked dt is one of the two).
template <class F>
auto dispatch_float(DType dt, F&& f) {
  return dt == DType::Float32 ? f(float{}) : f(double{});
}

/// dispatch_float, plus f(complex64_t{}) / f(complex128_t{}) for the complex types.
template <class F>
auto dispatch_float_or_complex(DType dt, F&& f) {
  if (dt == DType::Complex64) return f(complex64_t{});
  if (dt == DType::Complex128) return f(complex128_t{});
  return dispatch_float(dt, std::forward<F>(f));
}

struct SvdResult {
  Tensor U, S, Vh;  // U, Vh undefined without compute_uv
};
/// Singular values (descending) and, if asked, the vectors of a checked A (gesdd; gesvdj on
/// CUDA, where Vh is the transpose of a column-major V).
SvdResult svd(const Tensor& A, bool compute_uv, bool full_matrices);
/// The checks linalg.svd/svdvals make (driver= is CUDA-only in PyTorch: gesvd, gesvdj or gesvda).
void check_svd_input(const Tensor& A, const std::optional<std::string>& driver);

struct EighResult {
  Tensor eigenvalues, eigenvectors;  // eigenvectors hold A's overwritten copy without compute_v
};
/// Ascending eigenvalues and, if asked, eigenvectors of symmetric A from triangle uplo (syevd,
/// on either device).
EighResult eigh(const Tensor& A, bool compute_v, const std::string& uplo);

}  // namespace tp::linalg
