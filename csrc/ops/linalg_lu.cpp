// tp.linalg's LU and LDL families on CPU through LAPACK (linalg_lu.yaml): linalg.lu_factor(_ex)
// (getrf), linalg.lu and lu_unpack, linalg.lu_solve and the legacy lu_solve (getrs),
// linalg.solve_ex (getrf + getrs, never raising unless asked), the legacy triangular_solve
// (BLAS trsm), linalg.ldl_factor(_ex) (sytrf) and linalg.ldl_solve (sytrs).
// As in PyTorch: pivots are LAPACK's 1-based int32 row interchanges, info is LAPACK's per
// matrix, and results LAPACK writes stay column-major (lu_solve with left=False returns the
// transpose of a column-major buffer, i.e. row-major). Every op allocates its outputs on meta
// tensors and returns before reading data; empty inputs return before the dtype dispatch
// where PyTorch's kernels do. Gradients: autograd/formulas_linalg_lu.cpp.
#include "ops/linalg_common.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "core/error.h"
#include "linalg/lapack.h"
#include "ops/meta.h"
#include "ops/shape_utils.h"

namespace tp {
namespace linalg {
namespace {

/// "[2, 3]", as PyTorch prints sizes in messages.
std::string sizes_str(IntArrayRef s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    detail::append(out, s[i]);
  }
  return out + "]";
}

/// The NotImplementedError of a PyTorch CPU kernel without an instance for dt (complex
/// types have LAPACK's c/z routines on the CPU; complex CUDA solvers are not there yet).
void require_lapack_dtype(DType dt, const char* kernel, Device device = Device(DeviceType::CPU)) {
  if (is_complex(dt) && device.is_cuda())
    TP_FAIL_NOT_IMPLEMENTED("complex inputs are not supported yet (got ", dtype_scalar_name(dt), ")");
  if (dt != DType::Float32 && dt != DType::Float64 && !is_complex(dt))
    TP_FAIL_NOT_IMPLEMENTED("\"", kernel, "\" not implemented for '", dtype_scalar_name(dt), "'");
}

/// PyTorch's checkFloatingOrComplex (a RuntimeError).
void require_floating(const Tensor& t) {
  if (is_complex(t.dtype()) && t.device().is_cuda())
    TP_FAIL_NOT_IMPLEMENTED("complex inputs are not supported yet (got ", dtype_scalar_name(t.dtype()), ")");
  TP_CHECK(is_floating_or_complex(t.dtype()), "Expected a floating point or complex tensor as input. Got ",
           dtype_scalar_name(t.dtype()));
}

/// Conjugates the first `count` elements of a complex T array (nothing for real T).
template <class T>
void conj_in_place(T* p, int64_t count) {
  if constexpr (kComplex<T>)
    for (int64_t i = 0; i < count; ++i) p[i] = conj(p[i]);
}

/// For each matrix of the broadcast batch `batch`, the index of the matrix of `sub` (a batch
/// that broadcasts to it) it reads.
std::vector<int64_t> batch_map(IntArrayRef batch, IntArrayRef sub) {
  int64_t nb = count(batch);
  std::vector<int64_t> map(size_t(std::max<int64_t>(nb, 0)), 0);
  size_t lead = batch.size() - sub.size();
  for (int64_t b = 0; b < nb; ++b) {
    int64_t rem = b, idx = 0, stride = 1;
    for (size_t d = batch.size(); d-- > 0;) {
      int64_t i = rem % batch[d];
      rem /= batch[d];
      if (d >= lead) {
        int64_t s = sub[d - lead];
        idx += (s == 1 ? 0 : i) * stride;
        stride *= s;
      }
    }
    map[size_t(b)] = idx;
  }
  return map;
}

/// A contiguous int32 host copy of integer pivots.
Tensor int32_pivots(const Tensor& pivots) {
  return host_copy(pivots.dtype() == DType::Int32 ? pivots : _to_dtype(pivots, DType::Int32));
}

// ------------------------------------------------------------------ LU factorization
struct LuFactors {
  Tensor LU, pivots, info;
};

/// getrf of every m x n matrix of A: LU column-major, pivots (..., min(m, n)) and info (...).
LuFactors lu_factor_core(const Tensor& A, bool pivot) {
  TP_CHECK(A.dim() >= 2, "Expected tensor with 2 or more dimensions. Got size: ", sizes_str(A.sizes()),
           " instead");
  DimVector batch = batch_of(A);
  int64_t m = rows(A), n = cols(A), k = std::min(m, n), nb = count(batch);
  LuFactors f;
  f.LU = colmajor_empty(batch, m, n, A.dtype(), A.device());
  f.pivots = empty_tensor(with_tail(batch, {k}), DType::Int32, A.device());
  f.info = empty_tensor(batch, DType::Int32, A.device());
  if (is_meta(A)) return f;
  if (A.numel() == 0) {  // PyTorch returns before its dtype dispatch (pivots are empty too)
    zero_(f.info);
    return f;
  }
  require_lapack_dtype(A.dtype(), "lu_cpu", A.device());
  TP_CHECK(pivot, "LU without pivoting is not implemented on the CPU");
  copy_(f.LU, A);
  int32_t* piv = f.pivots.data<int32_t>();
  int32_t* info = f.info.data<int32_t>();
  dispatch_float_or_complex(A.dtype(), [&](auto zero) {
    using T = decltype(zero);
    int mi = lapack_int(m), ni = lapack_int(n);
    T* a = f.LU.data<T>();
    for (int64_t b = 0; b < nb; ++b)
      lapack::getrf(mi, ni, a + b * m * n, mi, piv + b * k, &info[b]);
  });
  return f;
}

/// linalg.lu_factor's error for a zero pivot (a RuntimeError, not a LinAlgError, as PyTorch's).
void check_lu_factor_info(const Tensor& A, const Tensor& info) {
  int bad = 0;
  int64_t b = first_failure(info, &bad);
  if (b >= 0)
    TP_FAIL(batch_prefix(A, b), "U[", bad, ",", bad, "] is zero and using it on lu_solve would "
            "result in a division by zero. If you still want to perform the factorization, consider "
            "calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)");
}

/// P, L, U of lu_unpack from checked factors (unit diagonal on L; P from the pivots).
std::tuple<Tensor, Tensor, Tensor> lu_unpack_core(const Tensor& LU, const Tensor& pivots,
                                                  bool unpack_data, bool unpack_pivots) {
  TP_CHECK(LU.dim() >= 2, "Expected tensor with 2 or more dimensions. Got size: ", sizes_str(LU.sizes()),
           " instead");
  if (unpack_pivots)
    TP_CHECK(pivots.dtype() == DType::Int32, "LU_pivots is expected to be a contiguous tensor of torch.int32 "
             "dtype.\nNote: this function is intended to be used with the output produced by "
             "torch.linalg.lu_factor");
  DimVector batch = batch_of(LU);
  int64_t m = rows(LU), n = cols(LU), k = std::min(m, n), nb = count(batch);
  const std::array<int64_t, 1> none{0};
  Tensor P = empty_tensor(none, LU.dtype(), LU.device());
  Tensor L = empty_tensor(none, LU.dtype(), LU.device());
  Tensor U = empty_tensor(none, LU.dtype(), LU.device());
  bool meta = is_meta(LU);
  if (unpack_data) {
    if (meta) {
      L = empty_tensor(with_tail(batch, {m, k}), LU.dtype(), LU.device());
      U = empty_tensor(with_tail(batch, {k, n}), LU.dtype(), LU.device());
    } else {
      L = contiguous(tril(narrow(LU, -1, 0, k), -1));
      fill_(diagonal(L, 0, -2, -1), Scalar(int64_t(1)));
      U = contiguous(triu(narrow(LU, -2, 0, k)));
    }
  }
  if (unpack_pivots) {
    DimVector psizes = with_tail(batch, {m, m});
    if (meta) return {empty_tensor(psizes, LU.dtype(), LU.device()), L, U};
    TP_CHECK(pivots.dim() >= 1, "pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive."
             "Did you properly pass the result of lu_factor?");
    int64_t kp = pivots.size(-1);
    TP_CHECK(kp >= k || nb == 0, "pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive."
             "Did you properly pass the result of lu_factor?");
    Tensor piv = int32_pivots(expand(pivots, with_tail(batch, {kp})));
    const int32_t* p = piv.data<int32_t>();
    Tensor perm = empty_tensor(with_tail(batch, {1, m}), DType::Int64);
    int64_t* q = perm.data<int64_t>();
    for (int64_t b = 0; b < nb; ++b) {
      int64_t* row = q + b * m;
      for (int64_t i = 0; i < m; ++i) row[i] = i;
      for (int64_t i = 0; i < k; ++i) {
        int32_t v = p[b * kp + i];
        TP_CHECK(v >= 1 && v <= m, "pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive."
                 "Did you properly pass the result of lu_factor?");
        std::swap(row[i], row[v - 1]);
      }
    }
    // P[..., perm[j], j] = 1: A = P L U
    P = scatter(zeros(psizes, LU.dtype(), LU.device()), -2, perm, Scalar(int64_t(1)));
  }
  return {P, L, U};
}

// ------------------------------------------------------------------ LU solve
/// Checks pivots (any shape) lie in [1, n], with lu_solve's messages.
void check_lu_pivots(const Tensor& pivots, int64_t n) {
  Tensor piv = int32_pivots(pivots);
  const int32_t* p = piv.data<int32_t>();
  int64_t total = piv.numel();
  for (int64_t i = 0; i < total; ++i)
    TP_CHECK(p[i] >= 1, "Pivots given to lu_solve must all be greater or equal to 1. Did you properly "
             "pass the result of lu_factor?");
  for (int64_t i = 0; i < total; ++i)
    TP_CHECK(p[i] <= n, "Pivots given to lu_solve must all be smaller or equal to LU.size(-2). Did you "
             "properly pass the result of lu_factor?");
}

/// X with op(A) X = B (left) or X op(A) = B, op(A) = A^T when adjoint, from A's LU factors
/// (LU (..., n, n), int32 pivots (..., n)); B's and LU's batches broadcast. X is column-major
/// when left, else row-major (the transpose of the column-major buffer getrs solves in).
Tensor lu_solve_core(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint) {
  int64_t n = rows(LU), br = rows(B), bc = cols(B);
  DimVector batch = broadcast_batch(batch_of(B), batch_of(LU));  // B first in messages, as PyTorch
  Tensor X = left ? colmajor_empty(batch, br, bc, B.dtype(), B.device())
                  : transpose(colmajor_empty(batch, bc, br, B.dtype(), B.device()), -2, -1);
  if (is_meta(X) || X.numel() == 0) return X;
  require_lapack_dtype(LU.dtype(), "lu_solve_cpu", LU.device());
  check_lu_pivots(pivots, n);
  DimVector lu_batch = batch_of(LU);
  Tensor lu = colmajor_copy(LU, lu_batch);
  Tensor piv = int32_pivots(pivots);
  std::vector<int64_t> map = batch_map(batch, lu_batch);
  // the right-hand sides, column-major: B, or B^T for X A = B (A^T X^T = B^T)
  Tensor Y = left ? X : transpose(X, -2, -1);
  Tensor Bx = expand(B, with_tail(batch, {br, bc}));
  copy_(Y, left ? Bx : transpose(Bx, -2, -1));
  // X A^H = B is A conj(X)^T = conj(B)^T: the solve between two conjugations; A^H X = B is
  // getrs's 'C' (its 'T' for real A)
  const bool complex = is_complex(LU.dtype()), conj_rhs = complex && !left && adjoint;
  char trans = left ? (adjoint ? (complex ? 'C' : 'T') : 'N') : (adjoint ? 'N' : 'T');
  int64_t nrhs = left ? bc : br, nb = count(batch);
  dispatch_float_or_complex(LU.dtype(), [&](auto zero) {
    using T = decltype(zero);
    int ni = lapack_int(n), ki = lapack_int(nrhs), info = 0;
    const T* a = lu.data<T>();
    const int32_t* p = piv.data<int32_t>();
    T* y = Y.data<T>();
    if (conj_rhs) conj_in_place(y, nb * n * nrhs);
    for (int64_t b = 0; b < nb; ++b) {
      int64_t s = map[size_t(b)];
      lapack::getrs(trans, ni, ki, a + s * n * n, ni, p + s * n, y + b * n * nrhs, ni, &info);
    }
    if (conj_rhs) conj_in_place(y, nb * n * nrhs);
  });
  return X;
}

// ------------------------------------------------------------------ LDL
/// sytrf ('L') of every matrix of a checked A: LD (strict upper triangle zero), pivots, info.
/// Complex A: hetrf when hermitian (A = L D L^H), else the complex symmetric sytrf (L D L^T).
LuFactors ldl_factor_core(const Tensor& A, bool hermitian) {
  TP_CHECK(A.dim() >= 2, "The input tensor A must have at least 2 dimensions.");
  TP_CHECK(rows(A) == cols(A), "A must be batches of square matrices, but they are ", rows(A), " by ",
           cols(A), " matrices");
  require_floating(A);
  DimVector batch = batch_of(A);
  int64_t n = rows(A), nb = count(batch);
  LuFactors f;
  f.LU = colmajor_empty(batch, n, n, A.dtype(), A.device());
  f.pivots = empty_tensor(with_tail(batch, {n}), DType::Int32, A.device());
  f.info = empty_tensor(batch, DType::Int32, A.device());
  if (is_meta(A)) return f;
  if (A.numel() == 0) {
    zero_(f.info);
    return f;
  }
  require_lapack_dtype(A.dtype(), "ldl_factor_kernel_cpu", A.device());
  copy_(f.LU, tril(A));  // sytrf reads and writes the lower triangle only
  int32_t* piv = f.pivots.data<int32_t>();
  int32_t* info = f.info.data<int32_t>();
  dispatch_float_or_complex(A.dtype(), [&](auto zero) {
    using T = decltype(zero);
    int ni = lapack_int(n), q = 0;
    T wq = T(0);
    T* a = f.LU.data<T>();
    auto factor = [&](T* ab, int* pb, T* work, int lwork, int* ib) {
      if constexpr (kComplex<T>)
        if (hermitian) return lapack::hetrf('L', ni, ab, ni, pb, work, lwork, ib);
      lapack::sytrf('L', ni, ab, ni, pb, work, lwork, ib);
    };
    factor(a, piv, &wq, -1, &q);
    std::vector<T> work(size_t(std::max(1, int(real_t<T>(wq)))));
    for (int64_t b = 0; b < nb; ++b) factor(a + b * n * n, piv + b * n, work.data(), int(work.size()), &info[b]);
  });
  return f;
}

/// PyTorch has no message for sytrf's info > 0 (an exactly zero block of D): its internal
/// assert, a RuntimeError.
void check_ldl_info(const Tensor& info) {
  int bad = 0;
  if (first_failure(info, &bad) >= 0) TP_FAIL("Unknown error code: ", bad, ".");
}

}  // namespace
}  // namespace linalg

using namespace linalg;

// ------------------------------------------------------------------ ops
std::tuple<Tensor, Tensor, Tensor> linalg_lu_factor_ex_impl(const Tensor& A, bool pivot, bool check_errors,
                                                            OutArg) {
  LuFactors f = lu_factor_core(A, pivot);
  if (check_errors) check_lu_factor_info(A, f.info);
  return {f.LU, f.pivots, f.info};
}

std::tuple<Tensor, Tensor> linalg_lu_factor_impl(const Tensor& A, bool pivot, OutArg) {
  LuFactors f = lu_factor_core(A, pivot);
  check_lu_factor_info(A, f.info);
  return {f.LU, f.pivots};
}

std::tuple<Tensor, Tensor, Tensor> linalg_lu_impl(const Tensor& A, bool pivot, OutArg) {
  LuFactors f = lu_factor_core(A, pivot);
  return lu_unpack_core(f.LU, f.pivots, true, pivot);
}

std::tuple<Tensor, Tensor, Tensor> lu_unpack_impl(const Tensor& LU_data, const Tensor& LU_pivots,
                                                  bool unpack_data, bool unpack_pivots, OutArg) {
  if (unpack_pivots) check_same_device({&LU_data, &LU_pivots});
  return lu_unpack_core(LU_data, LU_pivots, unpack_data, unpack_pivots);
}

Tensor linalg_lu_solve_impl(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint,
                            OutArg out) {
  check_same_device({&LU, &pivots, &B});
  require_floating(LU);
  TP_CHECK(LU.dtype() == B.dtype(), "Expected LU and B to have the same dtype, but found LU of type ",
           dtype_scalar_name(LU.dtype()), " and B of type ", dtype_scalar_name(B.dtype()), " instead");
  TP_CHECK(pivots.dtype() == DType::Int32, "pivots should be a Tensor of scalar type torch.int32");
  TP_CHECK(LU.dim() >= 2, "The input tensor A must have at least 2 dimensions.");
  int64_t n = rows(LU);
  TP_CHECK(n == cols(LU), "A must be batches of square matrices, but they are ", n, " by ", cols(LU),
           " matrices");
  TP_CHECK(B.dim() >= 2, "The input tensor B must have at least 2 dimensions.");
  TP_CHECK(left ? rows(B) == n : cols(B) == n, "Incompatible shapes of A and B for the equation ",
           left ? "AX = B (" : "XA = B (", n, "x", n, " and ", rows(B), "x", cols(B), ")");
  TP_CHECK(pivots.dim() >= 1 && pivots.size(-1) == n,
           "Number of pivots per batch should be same as the dimension of the matrix");
  TP_CHECK(pivots.dim() == LU.dim() - 1 && std::equal(pivots.sizes().begin(), pivots.sizes().end(),
                                                      LU.sizes().begin()),
           "Expected LU.shape[:-1] and pivots.shape to be the same, but got pivots with shape ",
           sizes_str(pivots.sizes()), " instead");
  return finish_out(out, lu_solve_core(LU, pivots, B, left, adjoint));
}

Tensor lu_solve_composite(const Tensor& self, const Tensor& LU_data, const Tensor& LU_pivots, OutArg out) {
  if (out.tensor) return linalg_lu_solve_out(const_cast<Tensor&>(*out.tensor), LU_data, LU_pivots, self);
  return linalg_lu_solve(LU_data, LU_pivots, self);
}

std::tuple<Tensor, Tensor> linalg_solve_ex_impl(const Tensor& A, const Tensor& B, bool left, bool check_errors,
                                                OutArg) {
  check_same_device({&A, &B});
  require_floating(A);
  TP_CHECK(A.dtype() == B.dtype(), "Expected A and B to have the same dtype, but found A of type ",
           dtype_scalar_name(A.dtype()), " and B of type ", dtype_scalar_name(B.dtype()), " instead");
  TP_CHECK(A.dim() >= 2, "The input tensor A must have at least 2 dimensions.");
  bool vector_case = is_vector_rhs(A, B);
  Tensor Bm = vector_case ? unsqueeze(B, -1) : B;
  int64_t n = rows(A);
  TP_CHECK(n == cols(A), "A must be batches of square matrices, but they are ", n, " by ", cols(A), " matrices");
  TP_CHECK(Bm.dim() >= 2, "The input tensor B must have at least 2 dimensions.");
  TP_CHECK(left ? rows(Bm) == n : cols(Bm) == n, "Incompatible shapes of A and B for the equation ",
           left ? "AX = B (" : "XA = B (", n, "x", n, " and ", rows(Bm), "x", cols(Bm), ")");
  broadcast_batch(batch_of(Bm), batch_of(A));
  TP_CHECK(left || !vector_case, "Vector broadcasting of the left hand side is not supported for left=False. "
           "In this case linalg.solve is equivalent to B / A.squeeze(-1)");
  LuFactors f = lu_factor_core(A, true);  // A's own batch: info is per matrix of A
  if (check_errors) {
    int bad = 0;
    int64_t b = first_failure(f.info, &bad);
    if (b >= 0) fail_solve(A, b);
  }
  Tensor x = lu_solve_core(f.LU, f.pivots, Bm, left, false);
  if (vector_case) {
    x = select(x, -1, 0);
    if (x.dim() >= 2) {  // PyTorch lays a batch of vectors out as column-major matrices
      Tensor r = colmajor_empty(batch_of(x), rows(x), cols(x), x.dtype(), x.device());
      if (!is_meta(r)) copy_(r, x);
      x = r;
    }
  }
  return {x, f.info};
}

std::tuple<Tensor, Tensor> triangular_solve_impl(const Tensor& self, const Tensor& A, bool upper, bool transpose,
                                                 bool unitriangular, OutArg) {
  check_same_device({&self, &A});
  TP_CHECK(self.dim() >= 2, "Expected b to have at least 2 dimensions, but it has ", self.dim(),
           " dimensions instead");
  TP_CHECK(A.dim() >= 2, "Expected A to have at least 2 dimensions, but it has ", A.dim(), " dimensions instead");
  TP_CHECK(self.dtype() == A.dtype(), "Expected b and A to have the same dtype, but found b of type ",
           dtype_scalar_name(self.dtype()), " and A of type ", dtype_scalar_name(A.dtype()), " instead.");
  int64_t n = rows(A), k = cols(self);
  TP_CHECK(n == cols(A), "A must be batches of square matrices, but they are ", n, " by ", cols(A), " matrices");
  TP_CHECK(n == rows(self), "Incompatible matrix sizes for triangular_solve: each A matrix is ", n, " by ", n,
           " but each b matrix is ", rows(self), " by ", k);
  DimVector batch = broadcast_batch(batch_of(self), batch_of(A));
  Tensor X = colmajor_empty(batch, n, k, self.dtype(), self.device());
  Tensor C = colmajor_empty(batch, n, n, A.dtype(), A.device());
  if (is_meta(X)) return {X, C};
  require_lapack_dtype(A.dtype(), "triangular_solve_cpu", A.device());
  copy_(X, expand(self, with_tail(batch, {n, k})));
  copy_(C, expand(A, with_tail(batch, {n, n})));
  if (n == 0 || k == 0) return {X, C};
  int64_t nb = count(batch);
  dispatch_float_or_complex(A.dtype(), [&](auto zero) {  // transpose: A^T, unconjugated (as PyTorch)
    using T = decltype(zero);
    int ni = lapack_int(n), ki = lapack_int(k);
    const T* a = C.data<T>();
    T* x = X.data<T>();
    for (int64_t b = 0; b < nb; ++b)
      lapack::trsm('L', upper ? 'U' : 'L', transpose ? 'T' : 'N', unitriangular ? 'U' : 'N', ni, ki, T(1),
                   a + b * n * n, ni, x + b * n * k, ni);
  });
  return {X, C};
}

std::tuple<Tensor, Tensor, Tensor> linalg_ldl_factor_ex_impl(const Tensor& self, bool hermitian, bool check_errors,
                                                             OutArg) {
  LuFactors f = ldl_factor_core(self, hermitian);
  if (check_errors) check_ldl_info(f.info);
  return {f.LU, f.pivots, f.info};
}

std::tuple<Tensor, Tensor> linalg_ldl_factor_impl(const Tensor& self, bool hermitian, OutArg) {
  LuFactors f = ldl_factor_core(self, hermitian);
  check_ldl_info(f.info);
  return {f.LU, f.pivots};
}

Tensor linalg_ldl_solve_impl(const Tensor& LD, const Tensor& pivots, const Tensor& B, bool hermitian, OutArg out) {
  check_same_device({&LD, &pivots, &B});
  TP_CHECK(LD.dim() >= 2, "The input tensor A must have at least 2 dimensions.");
  int64_t n = rows(LD);
  TP_CHECK(n == cols(LD), "A must be batches of square matrices, but they are ", n, " by ", cols(LD), " matrices");
  require_floating(LD);
  TP_CHECK(B.dtype() == LD.dtype(), "Expected b and A to have the same dtype, but found b of type ",
           dtype_scalar_name(B.dtype()), " and A of type ", dtype_scalar_name(LD.dtype()), " instead.");
  // PyTorch reads B.size(-2) before checking B's rank: an IndexError for a vector
  TP_CHECK_INDEX(B.dim() >= 2,
                 B.dim() == 0 ? std::string("Dimension specified as -2 but tensor has no dimensions")
                              : "Dimension out of range (expected to be in range of [-1, 0], but got -2)");
  TP_CHECK(rows(B) == n, "Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is ", n, " by ", n,
           " but each b matrix is ", rows(B), " by ", cols(B));
  TP_CHECK(pivots.dim() == LD.dim() - 1 && std::equal(pivots.sizes().begin(), pivots.sizes().end(),
                                                      LD.sizes().begin()),
           "Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with shape ",
           sizes_str(pivots.sizes()), " instead");
  DType pd = pivots.dtype();
  TP_CHECK(!is_floating(pd) && pd != DType::Bool, "Expected pivots to be integers. Got ", dtype_scalar_name(pd));
  int64_t k = cols(B);
  DimVector batch = broadcast_batch(batch_of(B), batch_of(LD));
  Tensor X = colmajor_empty(batch, n, k, B.dtype(), B.device());
  if (is_meta(X) || LD.numel() == 0 || pivots.numel() == 0) return finish_out(out, X);
  require_lapack_dtype(LD.dtype(), "ldl_solve_kernel_cpu", LD.device());
  Tensor piv = int32_pivots(pivots);
  const int32_t* p = piv.data<int32_t>();
  for (int64_t i = 0; i < piv.numel(); ++i)
    TP_CHECK(p[i] != 0, "Pivots given to ldl_solve must all satisfy |pivot| >= 1. Did you properly pass the "
             "result of ldl_factor?");
  for (int64_t i = 0; i < piv.numel(); ++i)
    TP_CHECK(std::abs(int64_t(p[i])) <= n, "Pivots given to ldl_solve must all satisfy |pivot| <= LD.size(-2). "
             "Did you properly pass the result of ldl_factor?");
  copy_(X, expand(B, with_tail(batch, {n, k})));
  if (k == 0) return finish_out(out, X);
  DimVector ld_batch = batch_of(LD);
  Tensor ld = colmajor_copy(LD, ld_batch);
  std::vector<int64_t> map = batch_map(batch, ld_batch);
  int64_t nb = count(batch);
  dispatch_float_or_complex(LD.dtype(), [&](auto zero) {
    using T = decltype(zero);
    int ni = lapack_int(n), ki = lapack_int(k), info = 0;
    const T* a = ld.data<T>();
    T* x = X.data<T>();
    for (int64_t b = 0; b < nb; ++b) {
      int64_t s = map[size_t(b)];
      if constexpr (kComplex<T>)
        if (hermitian) {
          lapack::hetrs('L', ni, ki, a + s * n * n, ni, p + s * n, x + b * n * k, ni, &info);
          continue;
        }
      lapack::sytrs('L', ni, ki, a + s * n * n, ni, p + s * n, x + b * n * k, ni, &info);
    }
  });
  return finish_out(out, X);
}

}  // namespace tp
