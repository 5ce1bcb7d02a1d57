// cuSOLVER handles and the tp.linalg decompositions on CUDA tensors (LU, Cholesky, QR, SVD,
// symmetric eigensolver): one cusolverDn call per matrix of a batch, on the current stream.
#include "cuda/linalg.h"

#include <cusolverDn.h>

#include <algorithm>
#include <array>
#include <cstdint>

#include "cuda/blas_context.h"
#include "cuda/handle_pool.h"
#include "cuda/runtime.h"
#include "ops/pointwise.h"
#include "ops/shape_utils.h"

// Note [cuSOLVER calls]
// Each (device, thread) has one cusolverDn handle, cached by thread_handles as the cuBLAS
// handles are (Note [cuBLAS handles and workspaces]) and bound to the thread's current
// stream before each use; the calls run on that stream under a DeviceGuard for the input's
// device. A batch is a loop of per-matrix calls over one column-major buffer (the layout
// colmajor_copy makes, matrix b at offset b * rows * cols), each with its own devInfo slot
// in an int32 tensor, except batches of small matrices (n <= kBatchedMaxN), which take the
// batched routines (cuBLAS getrfBatched/getrsBatched, cuSOLVER potrfBatched) over a device
// array of matrix pointers, saving a launch per matrix. The workspace (bufferSize is the
// same for every matrix) is one tensor from the caching allocator, reused by the calls in
// stream order and freed stream-ordered.
// Nothing here waits for the GPU except where the CPU path raises: the _ex ops return info
// on the device, while inv/solve/cholesky/svd/eigh read it back (one host copy) to raise
// the CPU's LinAlgError. Steps between the calls (pivot signs, NaN pivots, triangles) are
// tp ops on the device.

namespace tp::cuda::linalg {

using tp::linalg::batch_of;
using tp::linalg::cols;
using tp::linalg::colmajor_copy;
using tp::linalg::colmajor_empty;
using tp::linalg::count;
using tp::linalg::dispatch_float;
using tp::linalg::lapack_int;
using tp::linalg::rows;
using tp::linalg::with_tail;

namespace {

const char* status_name(cusolverStatus_t st) {
  switch (st) {
    case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case CUSOLVER_STATUS_ALLOC_FAILED: return "CUSOLVER_STATUS_ALLOC_FAILED";
    case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE";
    case CUSOLVER_STATUS_ARCH_MISMATCH: return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case CUSOLVER_STATUS_EXECUTION_FAILED: return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case CUSOLVER_STATUS_INTERNAL_ERROR: return "CUSOLVER_STATUS_INTERNAL_ERROR";
    case CUSOLVER_STATUS_NOT_SUPPORTED: return "CUSOLVER_STATUS_NOT_SUPPORTED";
    default: return "unknown cuSOLVER status";
  }
}

/// Runs a cuSOLVER call and raises RuntimeError if it does not succeed.
#define TP_CUSOLVER_CHECK(expr)                                                          \
  do {                                                                                   \
    cusolverStatus_t tp_cusolver_st_ = (expr);                                           \
    if (__builtin_expect(tp_cusolver_st_ != CUSOLVER_STATUS_SUCCESS, 0))                 \
      TP_FAIL("CUDA error: ", status_name(tp_cusolver_st_), " (", int(tp_cusolver_st_),  \
              ") when calling `", #expr, "`");                                           \
  } while (0)

struct SolverHandle {
  cusolverDnHandle_t handle = nullptr;
  cudaStream_t bound = nullptr;  // the stream `handle` was last bound to
  bool is_bound = false;
};

SolverHandle* make_handle() {
  auto* h = new SolverHandle;
  TP_CUSOLVER_CHECK(cusolverDnCreate(&h->handle));
  return h;
}

/// The calling thread's handle for the current device, bound to its current stream.
cusolverDnHandle_t current_handle() {
  int device = current_device();
  SolverHandle& h = thread_handles(device, make_handle);
  cudaStream_t s = current_stream(device).handle;
  if (!h.is_bound || h.bound != s) {
    TP_CUSOLVER_CHECK(cusolverDnSetStream(h.handle, s));
    h.bound = s;
    h.is_bound = true;
  }
  return h.handle;
}

// float / double overloads of the routines used here (arguments as cuSOLVER's).
#define TP_CUSOLVER_WRAP(T, p)                                                                \
  cusolverStatus_t getrf_size(cusolverDnHandle_t h, int m, int n, T* a, int lda, int* lw) {   \
    return cusolverDn##p##getrf_bufferSize(h, m, n, a, lda, lw);                              \
  }                                                                                           \
  cusolverStatus_t getrf(cusolverDnHandle_t h, int m, int n, T* a, int lda, T* w, int* piv,   \
                         int* info) {                                                         \
    return cusolverDn##p##getrf(h, m, n, a, lda, w, piv, info);                               \
  }                                                                                           \
  cusolverStatus_t getrs(cusolverDnHandle_t h, int n, int k, const T* a, int lda,             \
                         const int* piv, T* b, int ldb, int* info) {                          \
    return cusolverDn##p##getrs(h, CUBLAS_OP_N, n, k, a, lda, piv, b, ldb, info);             \
  }                                                                                           \
  cusolverStatus_t potrf_size(cusolverDnHandle_t h, cublasFillMode_t u, int n, T* a, int lda, \
                              int* lw) {                                                      \
    return cusolverDn##p##potrf_bufferSize(h, u, n, a, lda, lw);                              \
  }                                                                                           \
  cusolverStatus_t potrf(cusolverDnHandle_t h, cublasFillMode_t u, int n, T* a, int lda,      \
                         T* w, int lw, int* info) {                                           \
    return cusolverDn##p##potrf(h, u, n, a, lda, w, lw, info);                                \
  }                                                                                           \
  cusolverStatus_t geqrf_size(cusolverDnHandle_t h, int m, int n, T* a, int lda, int* lw) {   \
    return cusolverDn##p##geqrf_bufferSize(h, m, n, a, lda, lw);                              \
  }                                                                                           \
  cusolverStatus_t geqrf(cusolverDnHandle_t h, int m, int n, T* a, int lda, T* tau, T* w,     \
                         int lw, int* info) {                                                 \
    return cusolverDn##p##geqrf(h, m, n, a, lda, tau, w, lw, info);                           \
  }                                                                                           \
  cusolverStatus_t orgqr_size(cusolverDnHandle_t h, int m, int n, int k, const T* a, int lda, \
                              const T* tau, int* lw) {                                        \
    return cusolverDn##p##orgqr_bufferSize(h, m, n, k, a, lda, tau, lw);                      \
  }                                                                                           \
  cusolverStatus_t orgqr(cusolverDnHandle_t h, int m, int n, int k, T* a, int lda,            \
                         const T* tau, T* w, int lw, int* info) {                             \
    return cusolverDn##p##orgqr(h, m, n, k, a, lda, tau, w, lw, info);                        \
  }                                                                                           \
  cusolverStatus_t gesvdj_size(cusolverDnHandle_t h, cusolverEigMode_t jobz, int econ, int m, \
                               int n, const T* a, int lda, const T* s, const T* u, int ldu,   \
                               const T* v, int ldv, int* lw, gesvdjInfo_t params) {           \
    return cusolverDn##p##gesvdj_bufferSize(h, jobz, econ, m, n, a, lda, s, u, ldu, v, ldv,   \
                                            lw, params);                                      \
  }                                                                                           \
  cusolverStatus_t gesvdj(cusolverDnHandle_t h, cusolverEigMode_t jobz, int econ, int m,      \
                          int n, T* a, int lda, T* s, T* u, int ldu, T* v, int ldv, T* w,     \
                          int lw, int* info, gesvdjInfo_t params) {                           \
    return cusolverDn##p##gesvdj(h, jobz, econ, m, n, a, lda, s, u, ldu, v, ldv, w, lw, info, \
                                 params);                                                     \
  }                                                                                           \
  cusolverStatus_t syevd_size(cusolverDnHandle_t h, cusolverEigMode_t jobz,                   \
                              cublasFillMode_t u, int n, const T* a, int lda, const T* w,     \
                              int* lw) {                                                      \
    return cusolverDn##p##syevd_bufferSize(h, jobz, u, n, a, lda, w, lw);                     \
  }                                                                                           \
  cusolverStatus_t syevd(cusolverDnHandle_t h, cusolverEigMode_t jobz, cublasFillMode_t u,    \
                         int n, T* a, int lda, T* w, T* work, int lw, int* info) {            \
    return cusolverDn##p##syevd(h, jobz, u, n, a, lda, w, work, lw, info);                    \
  }
TP_CUSOLVER_WRAP(float, S)
TP_CUSOLVER_WRAP(double, D)
#undef TP_CUSOLVER_WRAP

// The batched routines, by precision.
#define TP_BATCHED_WRAP(T, p)                                                                 \
  cublasStatus_t getrf_batched(cublasHandle_t h, int n, T* const a[], int lda, int* piv,      \
                               int* info, int nb) {                                           \
    return cublas##p##getrfBatched(h, n, a, lda, piv, info, nb);                              \
  }                                                                                           \
  cublasStatus_t getrs_batched(cublasHandle_t h, int n, int k, const T* const a[], int lda,   \
                               const int* piv, T* const b[], int ldb, int* host_info,         \
                               int nb) {                                                      \
    return cublas##p##getrsBatched(h, CUBLAS_OP_N, n, k, a, lda, piv, b, ldb, host_info, nb); \
  }                                                                                           \
  cusolverStatus_t potrf_batched(cusolverDnHandle_t h, cublasFillMode_t u, int n, T* a[],     \
                                 int lda, int* info, int nb) {                                \
    return cusolverDn##p##potrfBatched(h, u, n, a, lda, info, nb);                            \
  }
TP_BATCHED_WRAP(float, S)
TP_BATCHED_WRAP(double, D)
#undef TP_BATCHED_WRAP

/// Batches of more than one matrix of at most this order take the batched routines.
constexpr int64_t kBatchedMaxN = 128;

bool use_batched(int64_t nb, int64_t n) { return nb > 1 && n <= kBatchedMaxN; }

/// A device array of the nb pointers base + b * stride (elements), for the batched routines:
/// int64 addresses computed on the device (no host transfer to wait for).
template <class T>
Tensor matrix_pointers(T* base, int64_t stride, int64_t nb, Device device) {
  Tensor offsets = mul(arange(0, nb, 1, DType::Int64, device),
                       wrapped_scalar(stride * int64_t(sizeof(T))));
  return add(offsets, wrapped_scalar(int64_t(reinterpret_cast<uintptr_t>(base))));
}

template <class T>
T** pointers_of(const Tensor& t) {
  return reinterpret_cast<T**>(t.device_data<int64_t>());
}

/// A workspace of `lwork` elements (bufferSize's count) of dtype dt on `device`.
Tensor workspace(int lwork, DType dt, Device device) {
  int64_t n = std::max(lwork, 1);
  return empty_tensor(IntArrayRef(&n, 1), dt, device);
}

/// One int32 devInfo slot for the calls whose info only reports bad arguments.
Tensor info_slot(Device device) {
  int64_t n = 1;
  return empty_tensor(IntArrayRef(&n, 1), DType::Int32, device);
}

Tensor last_dim_sum(const Tensor& t) { return sum(t, std::array<int64_t, 1>{-1}); }

/// (-1)^(number of row interchanges) of each matrix's LU pivots (batch..., n), in dtype dt.
Tensor pivot_sign(const Tensor& pivots, DType dt) {
  int64_t n = pivots.size(-1);
  Tensor unmoved = arange(1, n + 1, 1, DType::Int32, pivots.device());
  Tensor odd = remainder(last_dim_sum(ne(pivots, unmoved)), wrapped_scalar(2));
  return _to_dtype(add(mul(odd, wrapped_scalar(-2)), wrapped_scalar(1)), dt);
}

}  // namespace

Lu lu_factor(const Tensor& A, IntArrayRef batch) {
  DeviceGuard guard(A.device().index);
  Device dev = A.device();
  int64_t n = rows(A), nb = count(batch);
  Lu f{colmajor_copy(A, batch), zeros(with_tail(batch, {n}), DType::Int32, dev),
       zeros(batch, DType::Int32, dev)};
  if (n == 0 || nb == 0) return f;
  int ni = lapack_int(n);
  dispatch_float(A.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* a = f.lu.device_data<T>();
    if (use_batched(nb, n)) {
      Tensor ptrs = matrix_pointers(a, n * n, nb, dev);
      TP_CUBLAS_CHECK(getrf_batched(blas::current_context().handle, ni, pointers_of<T>(ptrs), ni,
                                    f.pivots.device_data<int>(), f.info.device_data<int>(),
                                    lapack_int(nb)));
      return;
    }
    cusolverDnHandle_t h = current_handle();
    int lwork = 0;
    TP_CUSOLVER_CHECK(getrf_size(h, ni, ni, a, ni, &lwork));
    Tensor ws = workspace(lwork, A.dtype(), dev);
    for (int64_t b = 0; b < nb; ++b)
      TP_CUSOLVER_CHECK(getrf(h, ni, ni, a + b * n * n, ni, ws.device_data<T>(),
                              f.pivots.device_data<int>() + b * n, f.info.device_data<int>() + b));
  });
  return f;
}

Tensor lu_solve(const Lu& f, const Tensor& B, IntArrayRef batch) {
  DeviceGuard guard(B.device().index);
  int64_t n = rows(f.lu), k = cols(B), nb = count(batch);
  Tensor x = colmajor_copy(B, batch);
  if (n == 0 || k == 0 || nb == 0) return x;
  int ni = lapack_int(n), ki = lapack_int(k);
  dispatch_float(B.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* a = f.lu.device_data<T>();
    if (use_batched(nb, n)) {
      Tensor a_ptrs = matrix_pointers(a, n * n, nb, B.device());
      Tensor x_ptrs = matrix_pointers(x.device_data<T>(), n * k, nb, B.device());
      int host_info = 0;  // getrsBatched reports bad arguments on the host
      TP_CUBLAS_CHECK(getrs_batched(blas::current_context().handle, ni, ki,
                                    pointers_of<T>(a_ptrs), ni, f.pivots.device_data<int>(),
                                    pointers_of<T>(x_ptrs), ni, &host_info, lapack_int(nb)));
      return;
    }
    cusolverDnHandle_t h = current_handle();
    Tensor info = info_slot(B.device());
    for (int64_t b = 0; b < nb; ++b)
      TP_CUSOLVER_CHECK(getrs(h, ni, ki, a + b * n * n, ni, f.pivots.device_data<int>() + b * n,
                              x.device_data<T>() + b * n * k, ni, info.device_data<int>()));
  });
  return x;
}

Tensor det(const Tensor& A) {
  Lu f = lu_factor(A, batch_of(A));
  return mul(prod(diagonal(f.lu, 0, -2, -1), -1), pivot_sign(f.pivots, A.dtype()));
}

std::tuple<Tensor, Tensor> slogdet(const Tensor& A) {
  Lu f = lu_factor(A, batch_of(A));
  Tensor d = diagonal(f.lu, 0, -2, -1);
  // a zero or NaN pivot gives sign 0 (log|det| is then -inf or NaN), as on the CPU
  Tensor signs = where(isnan(d), wrapped_scalar(0.0), sign(d));
  Tensor s = mul(prod(signs, -1), pivot_sign(f.pivots, A.dtype()));
  return {s, last_dim_sum(log(abs(d)))};
}

std::tuple<Tensor, Tensor> cholesky(const Tensor& A, bool upper) {
  DeviceGuard guard(A.device().index);
  Device dev = A.device();
  DimVector batch = batch_of(A);
  int64_t n = rows(A), nb = count(batch);
  Tensor L = colmajor_copy(A, batch);
  Tensor info = zeros(batch, DType::Int32, dev);
  if (n > 0 && nb > 0) {
    int ni = lapack_int(n);
    cublasFillMode_t uplo = upper ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
    dispatch_float(A.dtype(), [&](auto zero) {
      using T = decltype(zero);
      cusolverDnHandle_t h = current_handle();
      T* a = L.device_data<T>();
      if (use_batched(nb, n)) {
        Tensor ptrs = matrix_pointers(a, n * n, nb, dev);
        TP_CUSOLVER_CHECK(potrf_batched(h, uplo, ni, pointers_of<T>(ptrs), ni,
                                        info.device_data<int>(), lapack_int(nb)));
        return;
      }
      int lwork = 0;
      TP_CUSOLVER_CHECK(potrf_size(h, uplo, ni, a, ni, &lwork));
      Tensor ws = workspace(lwork, A.dtype(), dev);
      for (int64_t b = 0; b < nb; ++b)
        TP_CUSOLVER_CHECK(potrf(h, uplo, ni, a + b * n * n, ni, ws.device_data<T>(), lwork,
                                info.device_data<int>() + b));
    });
    // a NaN pivot where potrf reported none fails at its (1-based) order, as on the CPU
    Tensor nan = isnan(diagonal(L, 0, -2, -1));
    Tensor first = _to_dtype(add(argmax(_to_dtype(nan, DType::Int32), -1), wrapped_scalar(1)),
                             DType::Int32);
    Tensor missed = logical_and(eq(info, wrapped_scalar(0)),
                                any(nan, std::array<int64_t, 1>{-1}));
    info = where(missed, first, info);
  }
  if (upper) triu_(L);
  else tril_(L);
  return {L, info};
}

std::tuple<Tensor, Tensor> qr(const Tensor& A, const std::string& mode) {
  DeviceGuard guard(A.device().index);
  Device dev = A.device();
  DType dt = A.dtype();
  DimVector batch = batch_of(A);
  int64_t m = rows(A), n = cols(A), k = std::min(m, n), nb = count(batch);
  bool complete = mode == "complete";
  int64_t rrows = complete ? m : k, qcols = complete ? m : k;
  Tensor a = colmajor_copy(A, batch);
  int mi = lapack_int(m), ni = lapack_int(n), ki = int(k), qi = lapack_int(qcols);
  Tensor tau = empty_tensor(std::array<int64_t, 1>{std::max<int64_t>(nb * k, 1)}, dt, dev);
  Tensor info = info_slot(dev);
  if (k > 0 && nb > 0)
    dispatch_float(dt, [&](auto zero) {
      using T = decltype(zero);
      cusolverDnHandle_t h = current_handle();
      T* a0 = a.device_data<T>();
      int lwork = 0;
      TP_CUSOLVER_CHECK(geqrf_size(h, mi, ni, a0, mi, &lwork));
      Tensor ws = workspace(lwork, dt, dev);
      for (int64_t b = 0; b < nb; ++b)
        TP_CUSOLVER_CHECK(geqrf(h, mi, ni, a0 + b * m * n, mi, tau.device_data<T>() + b * k,
                                ws.device_data<T>(), lwork, info.device_data<int>()));
    });
  Tensor R = colmajor_empty(batch, rrows, n, dt, dev);
  copy_(R, narrow(a, -2, 0, rrows));
  triu_(R);
  if (mode == "r") return {empty_tensor(std::array<int64_t, 1>{0}, dt, dev), R};
  Tensor Q = colmajor_empty(batch, m, qcols, dt, dev);
  if (Q.numel() == 0) return {Q, R};
  if (k == 0) {  // no reflectors (n == 0, complete): Q is the identity
    copy_(Q, eye(m, qcols, dt, dev));
    return {Q, R};
  }
  zero_(Q);
  int64_t c = std::min(qcols, n);
  copy_(narrow(Q, -1, 0, c), narrow(a, -1, 0, c));
  dispatch_float(dt, [&](auto zero) {
    using T = decltype(zero);
    cusolverDnHandle_t h = current_handle();
    T* q0 = Q.device_data<T>();
    const T* t0 = tau.device_data<T>();
    int lwork = 0;
    TP_CUSOLVER_CHECK(orgqr_size(h, mi, qi, ki, q0, mi, t0, &lwork));
    Tensor ws = workspace(lwork, dt, dev);
    for (int64_t b = 0; b < nb; ++b)
      TP_CUSOLVER_CHECK(orgqr(h, mi, qi, ki, q0 + b * m * qcols, mi, t0 + b * k,
                              ws.device_data<T>(), lwork, info.device_data<int>()));
  });
  return {Q, R};
}

tp::linalg::SvdResult svd(const Tensor& A, bool compute_uv, bool full_matrices) {
  DeviceGuard guard(A.device().index);
  Device dev = A.device();
  DType dt = A.dtype();
  DimVector batch = batch_of(A);
  int64_t m = rows(A), n = cols(A), k = std::min(m, n), nb = count(batch);
  int64_t ucols = compute_uv && full_matrices ? m : k, vcols = compute_uv && full_matrices ? n : k;
  tp::linalg::SvdResult r;
  r.S = empty_tensor(with_tail(batch, {k}), dt, dev);
  // gesvdj writes V (n x vcols); Vh is its transpose. Without compute_uv the vectors go to
  // scratch: gesvdj's NOVECTOR mode failed (CUSOLVER_STATUS_EXECUTION_FAILED and an
  // illegal address) on the H200 with CUDA 13.
  Tensor U = colmajor_empty(batch, m, ucols, dt, dev), V = colmajor_empty(batch, n, vcols, dt, dev);
  if (compute_uv) r.U = U;
  if (k == 0 || nb == 0) {  // nothing to factor: U and V are identities where they have columns
    if (compute_uv) {
      copy_(r.U, eye(m, ucols, dt, dev));
      copy_(V, eye(n, vcols, dt, dev));
      r.Vh = transpose(V, -2, -1);
    }
    return r;
  }
  Tensor a = colmajor_copy(A, batch);
  // the CPU's gesdd refuses non-finite input; gesvdj is not asked to tell
  Tensor finite = all(isfinite(a), std::array<int64_t, 2>{-2, -1});
  Tensor info = zeros(batch, DType::Int32, dev);
  int mi = lapack_int(m), ni = lapack_int(n), ldu = lapack_int(m), ldv = lapack_int(n);
  cusolverEigMode_t jobz = CUSOLVER_EIG_MODE_VECTOR;
  int econ = compute_uv && full_matrices ? 0 : 1;
  gesvdjInfo_t params = nullptr;
  TP_CUSOLVER_CHECK(cusolverDnCreateGesvdjInfo(&params));
  struct ParamsGuard {
    gesvdjInfo_t p;
    ~ParamsGuard() { cusolverDnDestroyGesvdjInfo(p); }
  } params_guard{params};
  dispatch_float(dt, [&](auto zero) {
    using T = decltype(zero);
    cusolverDnHandle_t h = current_handle();
    T* a0 = a.device_data<T>();
    T* s0 = r.S.device_data<T>();
    T* u0 = U.device_data<T>();
    T* v0 = V.device_data<T>();
    int lwork = 0;
    TP_CUSOLVER_CHECK(gesvdj_size(h, jobz, econ, mi, ni, a0, mi, s0, u0, ldu, v0, ldv, &lwork,
                                  params));
    Tensor ws = workspace(lwork, dt, dev);
    for (int64_t b = 0; b < nb; ++b)
      TP_CUSOLVER_CHECK(gesvdj(h, jobz, econ, mi, ni, a0 + b * m * n, mi, s0 + b * k,
                               u0 + b * m * ucols, ldu, v0 + b * n * vcols, ldv, ws.device_data<T>(), lwork,
                               info.device_data<int>() + b, params));
  });
  Tensor ok = host_copy(finite), codes = host_copy(info);
  for (int64_t b = 0; b < nb; ++b) {
    if (!ok.data<bool>()[b]) tp::linalg::fail_svd(A, b, -1);
    if (codes.data<int32_t>()[b] > 0) tp::linalg::fail_svd(A, b, codes.data<int32_t>()[b]);
  }
  if (compute_uv) r.Vh = transpose(V, -2, -1);
  return r;
}

tp::linalg::EighResult eigh(const Tensor& A, bool compute_v, char uplo) {
  DeviceGuard guard(A.device().index);
  Device dev = A.device();
  DType dt = A.dtype();
  DimVector batch = batch_of(A);
  int64_t n = rows(A), nb = count(batch);
  tp::linalg::EighResult r;
  r.eigenvalues = empty_tensor(with_tail(batch, {n}), dt, dev);
  r.eigenvectors = colmajor_copy(A, batch);
  if (n == 0 || nb == 0) return r;
  Tensor info = zeros(batch, DType::Int32, dev);
  int ni = lapack_int(n);
  cusolverEigMode_t jobz = compute_v ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  cublasFillMode_t fill = uplo == 'U' ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
  dispatch_float(dt, [&](auto zero) {
    using T = decltype(zero);
    cusolverDnHandle_t h = current_handle();
    T* a0 = r.eigenvectors.device_data<T>();
    T* w0 = r.eigenvalues.device_data<T>();
    int lwork = 0;
    TP_CUSOLVER_CHECK(syevd_size(h, jobz, fill, ni, a0, ni, w0, &lwork));
    Tensor ws = workspace(lwork, dt, dev);
    for (int64_t b = 0; b < nb; ++b)
      TP_CUSOLVER_CHECK(syevd(h, jobz, fill, ni, a0 + b * n * n, ni, w0 + b * n,
                              ws.device_data<T>(), lwork, info.device_data<int>() + b));
  });
  int bad = 0;
  int64_t b = tp::linalg::first_failure(info, &bad);
  if (b >= 0) tp::linalg::fail_eigh(A, b, bad);
  return r;
}

}  // namespace tp::cuda::linalg
