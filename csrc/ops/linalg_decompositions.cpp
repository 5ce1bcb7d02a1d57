// tp.linalg decompositions on CPU through LAPACK: LU (det, slogdet, inv, solve), Cholesky,
// QR, SVD, the symmetric eigensolver and least squares, plus the legacy top-level names.
// Matrices are copied into column-major batches that LAPACK overwrites; results that
// LAPACK writes stay column-major, as PyTorch's do. CUDA tensors go to cuSOLVER
// (cuda/linalg.h) after the same checks. Functions built on these (pinv, matrix_rank,
// matrix_power, matrix_exp) live in linalg_functions.cpp.
#include "ops/linalg_common.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "linalg/lapack.h"
#include "ops/meta.h"
#include "ops/pointwise.h"
#include "ops/shape_utils.h"
#ifdef TP_USE_CUDA
#include "cuda/linalg.h"
#endif

namespace tp {
namespace linalg {

int64_t rows(const Tensor& A) { return A.size(A.dim() - 2); }
int64_t cols(const Tensor& A) { return A.size(A.dim() - 1); }

DimVector batch_of(const Tensor& A, int64_t matrix_dims) {
  return DimVector(A.sizes().data(), size_t(A.dim() - matrix_dims));
}

DimVector with_tail(IntArrayRef batch, std::initializer_list<int64_t> tail) {
  DimVector s(batch.data(), batch.size());
  for (int64_t v : tail) s.push_back(v);
  return s;
}

int64_t count(IntArrayRef batch) {
  int64_t n = 1;
  for (int64_t v : batch) n *= v;
  return n;
}

DimVector broadcast_batch(IntArrayRef a, IntArrayRef b) {
  size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i + a.size() >= n ? a[i + a.size() - n] : 1;
    int64_t y = i + b.size() >= n ? b[i + b.size() - n] : 1;
    TP_CHECK(x == y || x == 1 || y == 1, "The size of tensor a (", x,
             ") must match the size of tensor b (", y, ") at non-singleton dimension ", i);
    out[i] = x == 1 ? y : x;
  }
  return out;
}

int lapack_int(int64_t v) {
  TP_CHECK(v <= std::numeric_limits<int>::max(), "matrix dimension ", v,
           " exceeds the 32-bit LAPACK limit");
  return int(std::max<int64_t>(v, 1));
}

void check_matrix(const Tensor& A, const char* half_kernel, bool square, bool empty_returns,
                  bool complex_ok) {
  TP_CHECK(A.dim() >= 2, "The input tensor A must have at least 2 dimensions.");
  DType dt = A.dtype();
  // PyTorch solves complex matrices everywhere; ours only where complex_ok (CPU) so far
  if (is_complex(dt) && (!complex_ok || A.device().is_cuda()))
    TP_FAIL_NOT_IMPLEMENTED("complex inputs are not supported yet (got ", dtype_scalar_name(dt), ")");
  TP_CHECK(is_floating_or_complex(dt), "Expected a floating point or complex tensor as input. Got ",
           dtype_scalar_name(dt));
  if (dt == DType::Float16 || dt == DType::BFloat16) {
    // PyTorch's CPU kernels return an empty input before their dtype dispatch
    if (half_kernel) {
      if (A.numel() != 0 || !empty_returns || A.device().is_cuda())
        TP_FAIL_NOT_IMPLEMENTED("\"", half_kernel, "\" not implemented for '", dtype_scalar_name(dt), "'");
    } else {
      TP_FAIL("Low precision dtypes not supported. Got ", dtype_scalar_name(dt));
    }
  }
  if (square)
    TP_CHECK(rows(A) == cols(A), "A must be batches of square matrices, but they are ", rows(A),
             " by ", cols(A), " matrices");
  check_solver_device(A);
}

void check_solver_device(const Tensor& A) {
  if (is_meta(A)) return;  // the kernels return their outputs before solving anything
#ifdef TP_USE_CUDA
  if (A.device().is_cuda()) return;
#endif
  TP_CHECK(A.device().is_cpu(), "no ", A.device().str(), " kernel yet");
}

/// An empty input of a dtype the CPU kernels lack (only empty ones pass check_matrix and eigh's
/// check): PyTorch returns it before its dtype dispatch; ours solves it as float32 and casts back.
static bool solve_as_float(const Tensor& A) {
  DType dt = A.dtype();
  return A.numel() == 0 && A.device().is_cpu() && (dt == DType::Float16 || dt == DType::BFloat16);
}

static Tensor cast_defined(const Tensor& t, DType dt) { return t.defined() ? _to_dtype(t, dt) : t; }

bool is_vector_rhs(const Tensor& A, const Tensor& B) {
  return B.dim() == 1 || (B.dim() == A.dim() - 1 &&
                          std::equal(B.sizes().begin(), B.sizes().end(), A.sizes().begin()));
}

Tensor colmajor_empty(IntArrayRef batch, int64_t r, int64_t c, DType dt, Device device) {
  DimVector sizes = with_tail(batch, {r, c});
  size_t nd = sizes.size();
  DimVector strides(nd);
  strides[nd - 2] = 1;
  strides[nd - 1] = std::max<int64_t>(r, 1);
  int64_t s = std::max<int64_t>(r, 1) * std::max<int64_t>(c, 1);  // PyTorch's strides, empty dims too
  for (size_t i = nd - 2; i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(sizes[i], 1);
  }
  return empty_strided_tensor(sizes, strides, dt, device);
}

Tensor colmajor_copy(const Tensor& A, IntArrayRef batch) {
  Tensor buf = colmajor_empty(batch, rows(A), cols(A), A.dtype(), A.device());
  copy_(buf, expand(A, with_tail(batch, {rows(A), cols(A)})));
  return buf;
}

std::string batch_prefix(const Tensor& A, int64_t b) {
  if (A.dim() <= 2) return {};
  std::string s;
  detail::append(s, "(Batch element ");
  detail::append(s, b);
  detail::append(s, "): ");
  return s;
}

int64_t first_failure(const Tensor& info, int* value) {
  if (is_meta(info)) return -1;  // no values: no failure to report (nor does PyTorch on meta)
  Tensor h = host_copy(info);
  const int32_t* p = h.data<int32_t>();
  for (int64_t b = 0; b < h.numel(); ++b)
    if (p[b] > 0) {
      *value = p[b];
      return b;
    }
  return -1;
}

void fail_inverse(const Tensor& A, int64_t b, int info) {
  TP_FAIL_LINALG(batch_prefix(A, b), "The diagonal element ", info,
                 " is zero, the inversion could not be completed because the input matrix is "
                 "singular.");
}

void fail_solve(const Tensor& A, int64_t b) {
  TP_FAIL_LINALG(batch_prefix(A, b), "The solver failed because the input matrix is singular.");
}

void fail_cholesky(const Tensor& A, int64_t b, int info) {
  TP_FAIL_LINALG(batch_prefix(A, b), "The factorization could not be completed because the "
                 "input is not positive-definite (the leading minor of order ", info,
                 " is not positive-definite).");
}

void fail_svd(const Tensor& A, int64_t b, int info) {
  if (info < 0)
    TP_FAIL_LINALG(batch_prefix(A, b), "The algorithm failed to converge because the input "
                   "matrix contained non-finite values.");
  TP_FAIL_LINALG(batch_prefix(A, b), "The algorithm failed to converge because the input "
                 "matrix is ill-conditioned or has too many repeated singular values (error "
                 "code: ", info, ").");
}

void fail_eigh(const Tensor& A, int64_t b, int info) {
  TP_FAIL_LINALG(batch_prefix(A, b), "The algorithm failed to converge because the input "
                 "matrix is ill-conditioned or has too many repeated eigenvalues (error code: ",
                 info, ").");
}

Tensor finish_out(OutArg out, const Tensor& res) {
  if (!out.tensor) return res;
  TP_CHECK(out.tensor->dtype() == res.dtype(), "Expected out tensor to have dtype ",
           dtype_scalar_name(res.dtype()), ", but got ", dtype_scalar_name(out.tensor->dtype()),
           " instead");
  const Tensor& o = *out.tensor;
  if (!std::equal(res.sizes().begin(), res.sizes().end(), o.sizes().begin(), o.sizes().end())) {
    // a resized out= takes the result's layout (column-major LAPACK factors), as in PyTorch
    resize_out(o, res.sizes());
    o.impl()->set_sizes_and_strides(DimVector(res.sizes().data(), res.sizes().size()),
                                    preserving_strides(res.sizes(), res.strides()), 0);
  }
  copy_(o, res);
  return o;
}

Tensor finish_out_cast(OutArg out, const Tensor& res) {
  if (!out.tensor) return res;
  TP_CHECK(can_cast(res.dtype(), out.tensor->dtype()), "Expected result to be safely castable from ",
           dtype_scalar_name(res.dtype()), " dtype, but got result with dtype ",
           dtype_scalar_name(out.tensor->dtype()));
  if (out.tensor->dtype() == res.dtype()) return finish_out(out, res);
  return finish_out(out, _to_dtype(res, out.tensor->dtype()));
}

/// The workspace size a LAPACK query (lwork = -1) wrote to work[0], at least 1.
template <class T>
int query_lwork(T work0) {
  return std::max(1, int(work0));
}

// ------------------------------------------------------------------ LU
namespace {

/// LU-factors every n x n matrix of the column-major batch `lu` in place; pivots (n per
/// matrix, 1-based) and LAPACK's info per matrix (> 0: U(info, info) is zero).
template <class T>
void lu_factor(const Tensor& lu, int64_t batch, int64_t n, std::vector<int>& piv,
               std::vector<int>& info) {
  int ni = lapack_int(n);
  piv.assign(size_t(batch * n), 0);
  info.assign(size_t(batch), 0);
  T* a = lu.data<T>();
  if (n == 0) return;
  for (int64_t b = 0; b < batch; ++b)
    lapack::getrf(ni, ni, a + b * n * n, ni, piv.data() + b * n, &info[size_t(b)]);
}

/// Solves A X = B for a batch of A (n x n) and B (n x k) sharing batch sizes `batch`;
/// returns the column-major X and each matrix's getrf info (X is not solved where > 0).
template <class T>
Tensor lu_solve(const Tensor& A, const Tensor& B, IntArrayRef batch, std::vector<int>& info) {
  int64_t n = rows(A), k = cols(B), nb = count(batch);
  Tensor lu = colmajor_copy(A, batch);
  Tensor x = colmajor_copy(B, batch);
  if (is_meta(x)) return x;  // no info: nothing fails
  std::vector<int> piv;
  lu_factor<T>(lu, nb, n, piv, info);
  if (n == 0 || k == 0) return x;
  int ni = lapack_int(n), ki = lapack_int(k), rc = 0;
  for (int64_t b = 0; b < nb; ++b)
    if (info[size_t(b)] == 0)
      lapack::getrs('N', ni, ki, lu.data<T>() + b * n * n, ni, piv.data() + b * n,
                    x.data<T>() + b * n * k, ni, &rc);
  return x;
}

/// sign and log|det| of each matrix from its LU factors (writes into contiguous outputs).
template <class T>
void lu_slogdet(const Tensor& lu, const std::vector<int>& piv, int64_t batch, int64_t n,
                T* sign, T* logabs) {
  const T* a = lu.data<T>();
  for (int64_t b = 0; b < batch; ++b) {
    T s = 1, l = 0;
    for (int64_t i = 0; i < n; ++i) {
      T d = a[b * n * n + i * (n + 1)];
      if (piv[size_t(b * n + i)] != i + 1) s = -s;
      if (d < 0) s = -s, d = -d;
      if (!(d > 0)) s = 0;  // zero or NaN pivot (log|det| is then -inf or NaN)
      l += std::log(d);
    }
    sign[b] = s;
    logabs[b] = l;
  }
}

/// lu_slogdet for complex matrices: sign is the unit-modulus product of the pivots' phases
/// (and the row swaps' signs), 0 where a pivot is zero or NaN; log|det| is real.
template <class C>
void lu_slogdet_complex(const Tensor& lu, const std::vector<int>& piv, int64_t batch, int64_t n,
                        C* sign, real_t<C>* logabs) {
  using R = real_t<C>;
  const C* a = lu.data<C>();
  for (int64_t b = 0; b < batch; ++b) {
    C s = 1;
    R l = 0;
    bool zero = false;
    for (int64_t i = 0; i < n; ++i) {
      C d = a[b * n * n + i * (n + 1)];
      if (piv[size_t(b * n + i)] != i + 1) s = -s;
      R m = tp::abs(d);
      if (m > 0) s = s * (d / C(m));
      else zero = true;
      l += std::log(m);
    }
    sign[b] = zero ? C(0) : s;
    logabs[b] = l;
  }
}

}  // namespace
}  // namespace linalg

using namespace linalg;

Tensor linalg_det_impl(const Tensor& A, OutArg out) {
  check_matrix(A, "lu_cpu", true, true, /*complex_ok=*/true);
  if (solve_as_float(A)) return finish_out(out, _to_dtype(linalg_det_impl(_to_dtype(A, DType::Float32), {}), A.dtype()));
#ifdef TP_USE_CUDA
  if (A.device().is_cuda()) return finish_out(out, cuda::linalg::det(A));
#endif
  DimVector batch = batch_of(A);
  int64_t n = rows(A), nb = count(batch);
  Tensor det = empty_tensor(batch, A.dtype(), A.device());
  if (is_meta(det)) return finish_out(out, det);
  dispatch_float_or_complex(A.dtype(), [&](auto zero) {
    using T = decltype(zero);
    Tensor lu = colmajor_copy(A, batch);
    std::vector<int> piv, info;
    lu_factor<T>(lu, nb, n, piv, info);
    const T* a = lu.data<T>();
    T* d = det.data<T>();
    for (int64_t b = 0; b < nb; ++b) {
      T p = 1;
      for (int64_t i = 0; i < n; ++i) {
        p *= a[b * n * n + i * (n + 1)];
        if (piv[size_t(b * n + i)] != i + 1) p = -p;
      }
      d[b] = p;
    }
  });
  return finish_out(out, det);
}

Tensor det_composite(const Tensor& self, OutArg) { return linalg_det(self); }

std::tuple<Tensor, Tensor> linalg_slogdet_impl(const Tensor& A, OutArg) {
  check_matrix(A, nullptr, true, true, /*complex_ok=*/true);
#ifdef TP_USE_CUDA
  if (A.device().is_cuda()) return cuda::linalg::slogdet(A);
#endif
  DimVector batch = batch_of(A);
  int64_t n = rows(A), nb = count(batch);
  Tensor sign = empty_tensor(batch, A.dtype(), A.device());
  Tensor logabs = empty_tensor(batch, to_real_dtype(A.dtype()), A.device());
  if (is_meta(sign)) return {sign, logabs};
  dispatch_float_or_complex(A.dtype(), [&](auto zero) {
    using T = decltype(zero);
    Tensor lu = colmajor_copy(A, batch);
    std::vector<int> piv, info;
    lu_factor<T>(lu, nb, n, piv, info);
    if constexpr (kComplex<T>)
      lu_slogdet_complex<T>(lu, piv, nb, n, sign.data<T>(), logabs.data<real_t<T>>());
    else
      lu_slogdet<T>(lu, piv, nb, n, sign.data<T>(), logabs.data<T>());
  });
  return {sign, logabs};
}

std::tuple<Tensor, Tensor> slogdet_composite(const Tensor& self, OutArg) {
  return linalg_slogdet(self);
}

Tensor logdet_composite(const Tensor& self, OutArg) {
  auto [sign, logabs] = linalg_slogdet(self);
  // complex: log(det) = log|det| + i arg(det), the principal branch (as PyTorch)
  if (is_complex(sign.dtype())) return add(log(sign), logabs);
  // log|det| where the determinant is not negative, NaN where it is (as PyTorch).
  Tensor negative = lt(sign, zeros(IntArrayRef(), sign.dtype()));
  return where(negative, full(IntArrayRef(), std::numeric_limits<double>::quiet_NaN(), logabs.dtype()),
               logabs);
}

std::tuple<Tensor, Tensor> linalg_inv_ex_impl(const Tensor& A, bool check_errors, OutArg) {
  check_matrix(A, nullptr, true, true, /*complex_ok=*/true);
  DimVector batch = batch_of(A);
  int64_t n = rows(A);
  Tensor eye_n = eye(n, std::nullopt, A.dtype(), A.device());
  Tensor inv, info_t;
#ifdef TP_USE_CUDA
  if (A.device().is_cuda()) {
    cuda::linalg::Lu f = cuda::linalg::lu_factor(A, batch);
    inv = cuda::linalg::lu_solve(f, eye_n, batch);
    info_t = f.info;
    // a singular matrix's "inverse" is the identity, as on the CPU (which skips getrs)
    if (n > 0) inv = where(gt(unsqueeze(unsqueeze(info_t, -1), -1), wrapped_scalar(0)), eye_n, inv);
  }
#endif
  if (!inv.defined()) {
    std::vector<int> info;
    inv = dispatch_float_or_complex(A.dtype(), [&](auto zero) {
      return lu_solve<decltype(zero)>(A, eye_n, batch, info);
    });
    info_t = empty_tensor(batch, DType::Int32, A.device());
    if (!is_meta(info_t)) std::copy(info.begin(), info.end(), info_t.data<int32_t>());
  }
  int bad = 0;
  if (check_errors) {
    int64_t b = first_failure(info_t, &bad);
    if (b >= 0) fail_inverse(A, b, bad);
  }
  return {inv, info_t};
}

Tensor linalg_inv_impl(const Tensor& A, OutArg out) {
  return finish_out(out, std::get<0>(linalg_inv_ex_impl(A, true, OutArg::none())));
}

Tensor inverse_composite(const Tensor& self, OutArg out) {
  if (out.tensor) return linalg_inv_out(const_cast<Tensor&>(*out.tensor), self);
  return linalg_inv(self);
}

Tensor linalg_solve_impl(const Tensor& A, const Tensor& B, bool left, OutArg out) {
  check_matrix(A, "lu_cpu", true, true, /*complex_ok=*/true);
  TP_CHECK(A.dtype() == B.dtype(), "Expected A and B to have the same dtype, but found A of type ",
           dtype_scalar_name(A.dtype()), " and B of type ", dtype_scalar_name(B.dtype()),
           " instead");
  if (solve_as_float(A))
    return finish_out(out, _to_dtype(linalg_solve_impl(_to_dtype(A, DType::Float32), _to_dtype(B, DType::Float32),
                                                       left, {}), A.dtype()));
  int64_t n = rows(A);
  bool vector_case = is_vector_rhs(A, B);
  Tensor Bm = vector_case ? unsqueeze(B, -1) : B;
  int64_t br = rows(Bm), bc = cols(Bm);
  TP_CHECK(left ? br == n : bc == n, "Incompatible shapes of A and B for the equation ",
           left ? "AX = B (" : "XA = B (", n, "x", n, " and ", br, "x", bc, ")");
  DimVector batch = broadcast_batch(batch_of(Bm), batch_of(A));  // B first in messages, as in PyTorch
  // X A = B is A^T X^T = B^T.
  Tensor a = expand(A, with_tail(batch, {n, n}));
  Tensor b = expand(Bm, with_tail(batch, {br, bc}));
  if (!left) a = transpose(a, -2, -1), b = transpose(b, -2, -1);
  Tensor x;
#ifdef TP_USE_CUDA
  if (A.device().is_cuda()) {
    cuda::linalg::Lu f = cuda::linalg::lu_factor(a, batch);
    int bad = 0;
    int64_t i = first_failure(f.info, &bad);
    if (i >= 0) fail_solve(a, i);
    x = cuda::linalg::lu_solve(f, b, batch);
  }
#endif
  if (!x.defined()) {
    std::vector<int> info;
    x = dispatch_float_or_complex(A.dtype(), [&](auto zero) {
      return lu_solve<decltype(zero)>(a, b, batch, info);
    });
    for (size_t i = 0; i < info.size(); ++i)
      if (info[i] > 0) fail_solve(a, int64_t(i));
  }
  if (!left) x = transpose(x, -2, -1);
  if (vector_case) x = select(x, -1, 0);
  if (vector_case && x.dim() >= 2) {
    // PyTorch lays a batch of solution vectors out as column-major matrices over the last
    // two dims (its result's layout is that of a matrix result of the same shape).
    Tensor r = colmajor_empty(batch_of(x), rows(x), cols(x), x.dtype(), x.device());
    copy_(r, x);
    x = r;
  }
  return finish_out(out, x);
}

// ------------------------------------------------------------------ Cholesky
namespace {

/// The Cholesky factors (other triangle zeroed) and potrf's info of a checked CPU A.
std::tuple<Tensor, Tensor> cholesky_cpu(const Tensor& A, bool upper) {
  DimVector batch = batch_of(A);
  int64_t n = rows(A), nb = count(batch);
  Tensor L = colmajor_copy(A, batch);
  Tensor info_t = empty_tensor(batch, DType::Int32, A.device());
  if (is_meta(L)) return {L, info_t};
  int32_t* info = info_t.data<int32_t>();
  dispatch_float_or_complex(A.dtype(), [&](auto zero) {
    using T = decltype(zero);
    int ni = lapack_int(n);
    for (int64_t b = 0; b < nb; ++b) {
      T* a = L.data<T>() + b * n * n;
      info[b] = 0;
      if (n) lapack::potrf(upper ? 'U' : 'L', ni, a, ni, &info[b]);
      // OpenBLAS's potrf lets NaN through; a NaN pivot fails as a non-positive one would
      for (int64_t j = 0; j < n && info[b] == 0; ++j)
        if (std::isnan(real_t<T>(a[j * n + j]))) info[b] = int32_t(j + 1);  // potrf's diagonal is real
      for (int64_t j = 0; j < n; ++j)  // zero the triangle LAPACK leaves untouched
        for (int64_t i = 0; i < n; ++i)
          if (upper ? i > j : i < j) a[j * n + i] = T(0);
    }
  });
  return {L, info_t};
}

}  // namespace

std::tuple<Tensor, Tensor> linalg_cholesky_ex_impl(const Tensor& A, bool upper, bool check_errors,
                                                   OutArg) {
  check_matrix(A, "cholesky_cpu", true, true, /*complex_ok=*/true);
  if (solve_as_float(A)) {
    auto [L, info] = linalg_cholesky_ex_impl(_to_dtype(A, DType::Float32), upper, check_errors, {});
    return {_to_dtype(L, A.dtype()), info};
  }
  Tensor L, info_t;
#ifdef TP_USE_CUDA
  if (A.device().is_cuda()) std::tie(L, info_t) = cuda::linalg::cholesky(A, upper);
#endif
  if (!L.defined()) std::tie(L, info_t) = cholesky_cpu(A, upper);  // CPU and meta
  int bad = 0;
  if (check_errors) {
    int64_t b = first_failure(info_t, &bad);
    if (b >= 0) fail_cholesky(A, b, bad);
  }
  return {L, info_t};
}

Tensor linalg_cholesky_impl(const Tensor& A, bool upper, OutArg out) {
  return finish_out(out, std::get<0>(linalg_cholesky_ex_impl(A, upper, true, OutArg::none())));
}

Tensor cholesky_composite(const Tensor& self, bool upper, OutArg out) {
  DType dt = self.dtype();
  const bool square = self.dim() >= 2 && self.size(-1) == self.size(-2);
  // PyTorch's legacy cholesky returns an empty result before any check (a float batch of square
  // matrices takes the usual path, which keeps the result's autograd history)
  const bool lapack_dtype = (is_floating(dt) && dt != DType::Float16 && dt != DType::BFloat16) || is_complex(dt);
  if (self.numel() == 0 && !(square && lapack_dtype)) {
    if (out.tensor) {
      resize_out(*out.tensor, self.sizes());
      return *out.tensor;
    }
    return empty_tensor(self.sizes(), dt, self.device());
  }
  if (!lapack_dtype)
    TP_FAIL_NOT_IMPLEMENTED("\"cholesky_cpu\" not implemented for '", dtype_scalar_name(dt), "'");
  if (!out.tensor) return linalg_cholesky(self, upper);
  // the legacy out= is resized contiguous (PyTorch copies the factor into it), not column-major,
  // and takes any dtype the factor casts to safely (checked before the factorization)
  TP_CHECK(can_cast(dt, out.tensor->dtype()), "Expected result to be safely castable from ", dtype_scalar_name(dt),
           " dtype, but got result with dtype ", dtype_scalar_name(out.tensor->dtype()));
  Tensor r = linalg_cholesky(self, upper);
  resize_out(*out.tensor, r.sizes());
  copy_(*out.tensor, r);
  return *out.tensor;
}

// ------------------------------------------------------------------ QR
std::tuple<Tensor, Tensor> linalg_qr_impl(const Tensor& A, const std::string& mode, OutArg) {
  TP_CHECK(mode == "reduced" || mode == "complete" || mode == "r", "qr received unrecognized mode '",
           mode, "' but expected one of 'reduced' (default), 'r', or 'complete'");
  check_matrix(A, "geqrf_cpu", false, /*empty_returns=*/false, /*complex_ok=*/true);
#ifdef TP_USE_CUDA
  if (A.device().is_cuda()) return cuda::linalg::qr(A, mode);
#endif
  DimVector batch = batch_of(A);
  int64_t m = rows(A), n = cols(A), k = std::min(m, n), nb = count(batch);
  bool complete = mode == "complete";
  int64_t rrows = complete ? m : k, qcols = complete ? m : k;
  Tensor R = colmajor_empty(batch, rrows, n, A.dtype(), A.device());
  Tensor Q = mode == "r" ? empty_tensor(std::array<int64_t, 1>{0}, A.dtype(), A.device())
                         : colmajor_empty(batch, m, qcols, A.dtype(), A.device());
  if (is_meta(R)) return {Q, R};
  Tensor a = colmajor_copy(A, batch);
  dispatch_float_or_complex(A.dtype(), [&](auto zero) {  // complex: geqrf and ungqr
    using T = decltype(zero);
    using Real = real_t<T>;
    int mi = lapack_int(m), ni = lapack_int(n), ki = int(k), qi = lapack_int(qcols), info = 0;
    std::vector<T> tau(size_t(std::max<int64_t>(k, 1)));
    T wq = T(0), wo = T(0);  // workspace queries only with arguments LAPACK accepts
    if (k) lapack::geqrf(mi, ni, a.data<T>(), mi, tau.data(), &wq, -1, &info);
    if (k && mode != "r") lapack::orgqr(mi, qi, ki, a.data<T>(), mi, tau.data(), &wo, -1, &info);
    std::vector<T> work(size_t(std::max({query_lwork(static_cast<Real>(wq)), query_lwork(static_cast<Real>(wo)), qi, ni})));
    int lwork = int(work.size());
    for (int64_t b = 0; b < nb; ++b) {
      T* ab = a.data<T>() + b * m * n;
      if (k) lapack::geqrf(mi, ni, ab, mi, tau.data(), work.data(), lwork, &info);
      T* rb = R.data<T>() + b * rrows * n;
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < rrows; ++i) rb[j * rrows + i] = i <= j ? ab[j * m + i] : T(0);
      if (mode == "r" || m == 0) continue;
      T* qb = Q.data<T>() + b * m * qcols;
      std::copy(ab, ab + m * std::min(qcols, n), qb);
      if (qcols) lapack::orgqr(mi, qi, ki, qb, mi, tau.data(), work.data(), lwork, &info);
    }
  });
  return {Q, R};
}

std::tuple<Tensor, Tensor> qr_composite(const Tensor& self, bool some, OutArg) {
  return linalg_qr(self, some ? "reduced" : "complete");
}

// ------------------------------------------------------------------ SVD
namespace linalg {

SvdResult svd(const Tensor& A, bool compute_uv, bool full_matrices) {
#ifdef TP_USE_CUDA
  if (A.device().is_cuda()) return cuda::linalg::svd(A, compute_uv, full_matrices);
#endif
  if (solve_as_float(A)) {  // empty float16/bfloat16 (check_matrix): no dtype dispatch
    SvdResult r = linalg::svd(_to_dtype(A, DType::Float32), compute_uv, full_matrices);
    return {cast_defined(r.U, A.dtype()), cast_defined(r.S, A.dtype()), cast_defined(r.Vh, A.dtype())};
  }
  DimVector batch = batch_of(A);
  int64_t m = rows(A), n = cols(A), k = std::min(m, n), nb = count(batch);
  int64_t ucols = full_matrices ? m : k, vrows = full_matrices ? n : k;
  SvdResult r;
  r.S = empty_tensor(with_tail(batch, {k}), to_real_dtype(A.dtype()), A.device());
  if (compute_uv) {
    r.U = colmajor_empty(batch, m, ucols, A.dtype(), A.device());
    // PyTorch's meta svd gives Vh the layout of its CUDA one (row-major; its meta kernels
    // take an unknown device for CUDA), not the CPU's column-major one.
    r.Vh = is_meta(A) ? empty_tensor(with_tail(batch, {vrows, n}), A.dtype(), A.device())
                      : colmajor_empty(batch, vrows, n, A.dtype());
  }
  if (is_meta(A)) return r;
  if (k == 0) {  // nothing to factor: U and Vh are identities where they have columns
    if (compute_uv) {
      copy_(r.U, eye(m, ucols, A.dtype()));
      copy_(r.Vh, eye(vrows, n, A.dtype()));
    }
    return r;
  }
  Tensor a = colmajor_copy(A, batch);
  dispatch_float_or_complex(A.dtype(), [&](auto zero) {
    using T = decltype(zero);
    using R = real_t<T>;
    char jobz = !compute_uv ? 'N' : full_matrices ? 'A' : 'S';
    int mi = lapack_int(m), ni = lapack_int(n), ldu = lapack_int(m), ldvt = lapack_int(vrows);
    int info = 0;
    T dummy = T(0), wq = T(0);
    T* u0 = compute_uv ? r.U.data<T>() : &dummy;
    T* v0 = compute_uv ? r.Vh.data<T>() : &dummy;
    R* s0 = r.S.data<R>();
    std::vector<int> iwork(size_t(8 * k));
    // the complex gesdd's real workspace (LAPACK's bound for its jobz)
    int64_t mx = std::max(m, n);
    std::vector<R> rwork(size_t(!kComplex<T>   ? 1
                                : jobz == 'N' ? 7 * k
                                              : std::max(5 * k * k + 5 * k, 2 * mx * k + 2 * k * k + k)));
    auto call = [&](T* ab, R* sb, T* ub, T* vb, T* work, int lwork) {
      if constexpr (kComplex<T>)
        lapack::gesdd(jobz, mi, ni, ab, mi, sb, ub, ldu, vb, ldvt, work, lwork, rwork.data(), iwork.data(),
                      &info);
      else
        lapack::gesdd(jobz, mi, ni, ab, mi, sb, ub, ldu, vb, ldvt, work, lwork, iwork.data(), &info);
    };
    call(a.data<T>(), s0, u0, v0, &wq, -1);
    std::vector<T> work(static_cast<size_t>(query_lwork(static_cast<real_t<T>>(wq))));
    // gesdd computing vectors does not return on inf or NaN input (it iterates forever):
    // PyTorch's error first (singular values alone come back NaN, as PyTorch's do)
    const R* ad = reinterpret_cast<const R*>(a.data<T>());  // complex: both parts
    for (int64_t i = 0, total = compute_uv ? nb * m * n * (kComplex<T> ? 2 : 1) : 0; i < total; ++i)
      if (!std::isfinite(ad[i]))
        TP_FAIL_LINALG("linalg.svd: The algorithm failed to converge because the input matrix "
                       "contained non-finite values.");
    for (int64_t b = 0; b < nb; ++b) {
      T* ub = compute_uv ? u0 + b * m * ucols : u0;
      T* vb = compute_uv ? v0 + b * vrows * n : v0;
      call(a.data<T>() + b * m * n, s0 + b * k, ub, vb, work.data(), int(work.size()));
      if (info != 0) fail_svd(A, b, info);
    }
  });
  return r;
}

EighResult eigh(const Tensor& A, bool compute_v, const std::string& uplo) {
  TP_CHECK(uplo == "L" || uplo == "U", "Expected UPLO argument to be 'L' or 'U', but got ", uplo);
  DType dt = A.dtype();
  TP_CHECK(A.dim() >= 2, "The input tensor A must have at least 2 dimensions.");
  TP_CHECK(rows(A) == cols(A), "A must be batches of square matrices, but they are ", rows(A), " by ", cols(A),
           " matrices");
  // PyTorch's CPU kernel returns an empty input, of any dtype, before its dtype dispatch
  if (A.numel() == 0 && A.device().is_cpu() && dt != DType::Float32 && dt != DType::Float64 && !is_complex(dt)) {
    EighResult r = eigh(_to_dtype(A, DType::Float32), compute_v, uplo);
    return {_to_dtype(r.eigenvalues, to_real_dtype(dt)), _to_dtype(r.eigenvectors, dt)};
  }
  if (dt != DType::Float32 && dt != DType::Float64 && !is_complex(dt))
    TP_FAIL_NOT_IMPLEMENTED("\"linalg_eigh_cpu\" not implemented for '", dtype_scalar_name(dt), "'");
  check_matrix(A, nullptr, true, true, /*complex_ok=*/true);
#ifdef TP_USE_CUDA
  if (A.device().is_cuda()) return cuda::linalg::eigh(A, compute_v, uplo[0]);
#endif
  DimVector batch = batch_of(A);
  int64_t n = rows(A), nb = count(batch);
  EighResult r;
  r.eigenvalues = empty_tensor(with_tail(batch, {n}), to_real_dtype(dt), A.device());
  r.eigenvectors = colmajor_copy(A, batch);
  if (n == 0 || is_meta(A)) return r;
  dispatch_float_or_complex(dt, [&](auto zero) {
    using T = decltype(zero);
    using R = real_t<T>;
    char jobz = compute_v ? 'V' : 'N';
    int ni = lapack_int(n), info = 0, iq = 0;
    T wq = T(0);
    R rq = 0;
    T* a = r.eigenvectors.data<T>();
    R* w = r.eigenvalues.data<R>();
    if constexpr (kComplex<T>)  // heevd: the Hermitian counterpart, with a real workspace too
      lapack::heevd(jobz, uplo[0], ni, a, ni, w, &wq, -1, &rq, -1, &iq, -1, &info);
    else
      lapack::syevd(jobz, uplo[0], ni, a, ni, w, &wq, -1, &iq, -1, &info);
    std::vector<T> work(static_cast<size_t>(query_lwork(static_cast<real_t<T>>(wq))));
    std::vector<R> rwork(size_t(query_lwork(rq)));
    std::vector<int> iwork(size_t(std::max(iq, 1)));
    for (int64_t b = 0; b < nb; ++b) {
      if constexpr (kComplex<T>)
        lapack::heevd(jobz, uplo[0], ni, a + b * n * n, ni, w + b * n, work.data(), int(work.size()),
                      rwork.data(), int(rwork.size()), iwork.data(), int(iwork.size()), &info);
      else
        lapack::syevd(jobz, uplo[0], ni, a + b * n * n, ni, w + b * n, work.data(), int(work.size()),
                      iwork.data(), int(iwork.size()), &info);
      if (info > 0) fail_eigh(A, b, info);
    }
  });
  return r;
}

void check_svd_input(const Tensor& A, const std::optional<std::string>& driver) {
  bool cuda = A.device().is_cuda();
  TP_CHECK(cuda || !driver, "keyword argument `driver=` is only supported on CUDA inputs with "
           "cuSOLVER backend.");
  check_matrix(A, "linalg_svd_cpu", false, true, /*complex_ok=*/true);
  // CUDA names cuSOLVER's drivers; all of them give gesvdj's result here
  TP_CHECK(!driver || *driver == "gesvd" || *driver == "gesvdj" || *driver == "gesvda",
           "unknown svd driver ", *driver, " in svd_cusolver computation.");
}

}  // namespace linalg

std::tuple<Tensor, Tensor, Tensor> linalg_svd_impl(const Tensor& A, bool full_matrices,
                                                   const std::optional<std::string>& driver,
                                                   OutArg) {
  check_svd_input(A, driver);
  SvdResult r = linalg::svd(A, true, full_matrices);
  return {r.U, r.S, r.Vh};
}

Tensor linalg_svdvals_impl(const Tensor& A, const std::optional<std::string>& driver, OutArg out) {
  check_svd_input(A, driver);
  return finish_out(out, linalg::svd(A, false, false).S);
}

std::tuple<Tensor, Tensor, Tensor> svd_composite(const Tensor& self, bool some, bool compute_uv,
                                                 OutArg) {
  if (compute_uv) {
    auto [U, S, Vh] = linalg_svd(self, !some);
    return {U, S, transpose(Vh, -2, -1)};
  }
  Tensor S = linalg_svdvals(self);
  DimVector batch = batch_of(self);
  int64_t m = rows(self), n = cols(self);
  // V is column-major, as PyTorch's (its zeros read the same either way)
  return {zeros(with_tail(batch, {m, m}), self.dtype(), self.device()), S,
          transpose(zeros(with_tail(batch, {n, n}), self.dtype(), self.device()), -2, -1)};
}

// ------------------------------------------------------------------ eigh
std::tuple<Tensor, Tensor> linalg_eigh_impl(const Tensor& A, const std::string& UPLO, OutArg) {
  EighResult r = linalg::eigh(A, true, UPLO);
  return {r.eigenvalues, r.eigenvectors};
}

Tensor linalg_eigvalsh_impl(const Tensor& A, const std::string& UPLO, OutArg out) {
  return finish_out(out, linalg::eigh(A, false, UPLO).eigenvalues);
}

// ------------------------------------------------------------------ least squares
namespace {

[[noreturn]] void fail_rank_deficient(const Tensor& a, int64_t b, int info) {
  TP_FAIL_LINALG(batch_prefix(a, b), "The least squares solution could not be computed "
                 "because the input matrix does not have full rank (error code: ", info, ").");
}

/// linalg.lstsq with the gels driver as tp ops, for tensors off the CPU (CUDA, where gels is
/// PyTorch's only driver): A (m x n) and Bm (m x k) broadcast to `batch`. X comes from the QR
/// factors of A (m >= n) or of A^T (m < n: the minimum-norm solution), the triangular
/// systems solved by linalg_solve; A must have full rank, as gels requires: an exactly zero
/// diagonal element of R raises the CPU's error (gels's info is its 1-based index).
std::tuple<Tensor, Tensor, Tensor, Tensor> lstsq_gels_by_ops(const Tensor& A, const Tensor& Bm,
                                                             IntArrayRef batch, bool vector_case) {
  int64_t m = rows(A), n = cols(A), k = cols(Bm), mink = std::min(m, n), nb = count(batch);
  DType dt = A.dtype();
  Device dev = A.device();
  Tensor a = expand(A, with_tail(batch, {m, n}));
  Tensor b = expand(Bm, with_tail(batch, {m, k}));
  Tensor x;
  if (mink == 0 || k == 0 || nb == 0) {
    x = zeros(with_tail(batch, {n, k}), dt, dev);
  } else {
    bool tall = m >= n;
    auto [Q, R] = linalg_qr(tall ? a : transpose(a, -2, -1), "reduced");
    Tensor diag = host_copy(_to_dtype(diagonal(R, 0, -2, -1), DType::Float64));
    for (int64_t i = 0; i < nb * mink; ++i)
      if (diag.data<double>()[i] == 0) fail_rank_deficient(a, i / mink, int(i % mink + 1));
    x = tall ? linalg_solve(R, matmul(transpose(Q, -2, -1), b))
             : matmul(Q, linalg_solve(transpose(R, -2, -1), b));
  }
  Tensor residuals = empty_tensor(std::array<int64_t, 1>{0}, dt, dev);
  if (m > n && nb > 0 && n == 0) {  // PyTorch's gels: zeros
    residuals = zeros(with_tail(batch, {k}), dt, dev);
  } else if (m > n && nb > 0) {  // |A X - B|^2 per column, which gels reads off Q^T B's last rows
    Tensor r = sub(matmul(a, x), b);
    residuals = sum(mul(r, r), std::array<int64_t, 1>{-2});
  }
  return {vector_case ? select(x, -1, 0) : x, residuals,
          empty_tensor(std::array<int64_t, 1>{0}, DType::Int64, dev),
          empty_tensor(std::array<int64_t, 1>{0}, dt, dev)};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor, Tensor> linalg_lstsq_impl(
    const Tensor& A, const Tensor& B, const std::optional<double>& rcond,
    const std::optional<std::string>& driver, OutArg) {
  TP_CHECK(A.dim() >= 2, "input must have at least 2 dimensions.");
  TP_CHECK(B.dim() >= 1, "other must have at least 1 dimension.");
  TP_CHECK(A.dim() >= B.dim() && A.dim() - B.dim() <= 1,
           "input.dim() must be greater or equal to other.dim() and (input.dim() - other.dim()) <= 1");
  for (const Tensor* t : {&A, &B}) {
    DType dt = t->dtype();
    if (dt == DType::Float32 || dt == DType::Float64) continue;
    if (is_complex(dt) && t->device().is_cpu()) continue;
    if (is_complex(dt)) TP_FAIL_NOT_IMPLEMENTED("complex inputs are not supported yet (got ", dtype_scalar_name(dt), ")");
    if (rcond)  // PyTorch's path with rcond= fails in its dtype dispatch instead
      TP_FAIL_NOT_IMPLEMENTED("\"linalg_lstsq_cpu\" not implemented for '", dtype_scalar_name(dt), "'");
    TP_FAIL("This function doesn't handle types other than float and double");
  }
  TP_CHECK(A.dtype() == B.dtype(), "Expected input and other to have the same dtype, but got "
           "input's dtype ", dtype_scalar_name(A.dtype()), " and other's dtype ",
           dtype_scalar_name(B.dtype()));
  check_solver_device(A);
  bool on_cpu = A.device().is_cpu();
  TP_CHECK(on_cpu || !driver || *driver == "gels",
           "`driver` other than `gels` is not supported on CUDA");
  std::string drv = driver.value_or(on_cpu ? "gelsy" : "gels");
  TP_CHECK(drv == "gels" || drv == "gelsy" || drv == "gelsd" || drv == "gelss",
           "parameter `driver` should be one of (gels, gelsy, gelsd, gelss)");
  bool vector_case = is_vector_rhs(A, B);
  Tensor Bm = vector_case ? unsqueeze(B, -1) : B;
  int64_t m = rows(A), n = cols(A), k = cols(Bm), mn = std::max(m, n), mink = std::min(m, n);
  TP_CHECK(rows(Bm) == m, "input.size(-2) should match other.size(-2)");
  DimVector batch = broadcast_batch(batch_of(Bm), batch_of(A));  // B first in messages, as in PyTorch
  if (!on_cpu) return lstsq_gels_by_ops(A, Bm, batch, vector_case);
  int64_t nb = count(batch);
  DType dt = A.dtype(), rdt = to_real_dtype(dt);  // residuals and singular values are real
  Tensor a = colmajor_copy(A, batch);
  // LAPACK writes the solution over B, so B's buffer has max(m, n) rows.
  Tensor x = colmajor_empty(batch, mn, k, dt);
  zero_(x);
  copy_(narrow(x, -2, 0, m), expand(Bm, with_tail(batch, {m, k})));
  bool has_rank = drv != "gels", has_sv = drv == "gelsd" || drv == "gelss";
  Tensor rank = has_rank ? zeros(batch, DType::Int64) : empty_tensor(std::array<int64_t, 1>{0}, DType::Int64);
  Tensor sv = has_sv ? zeros(with_tail(batch, {mink}), rdt) : empty_tensor(std::array<int64_t, 1>{0}, rdt);
  if (mink > 0 && k > 0) {
    dispatch_float_or_complex(dt, [&](auto zero) {
      using T = decltype(zero);
      using R = real_t<T>;
      int mi = lapack_int(m), ni = lapack_int(n), ki = lapack_int(k), ld = lapack_int(m),
          ldb = lapack_int(mn), info = 0, rk = 0, iq = 1;
      R rc = rcond ? R(*rcond) : std::numeric_limits<R>::epsilon() * R(mn);
      T* a0 = a.data<T>();
      T* x0 = x.data<T>();
      R* s0 = has_sv ? sv.data<R>() : nullptr;
      std::vector<int> jpvt(static_cast<size_t>(n));
      T wq = T(0);
      R rq = 0;
      // the complex drivers' real workspace: gelsy 2n, gelss 5 min(m, n), gelsd as queried
      std::vector<R> rwork(size_t(std::max<int64_t>({1, 2 * n, 5 * mink})));
      auto gelsy = [&](T* ab, T* xb, T* work, int lwork) {
        if constexpr (kComplex<T>)
          lapack::gelsy(mi, ni, ki, ab, ld, xb, ldb, jpvt.data(), rc, &rk, work, lwork, rwork.data(), &info);
        else
          lapack::gelsy(mi, ni, ki, ab, ld, xb, ldb, jpvt.data(), rc, &rk, work, lwork, &info);
      };
      auto gelsd = [&](T* ab, T* xb, R* sb, T* work, int lwork, R* rw, int* iwork) {
        if constexpr (kComplex<T>)
          lapack::gelsd(mi, ni, ki, ab, ld, xb, ldb, sb, rc, &rk, work, lwork, rw, iwork, &info);
        else
          lapack::gelsd(mi, ni, ki, ab, ld, xb, ldb, sb, rc, &rk, work, lwork, iwork, &info);
      };
      auto gelss = [&](T* ab, T* xb, R* sb, T* work, int lwork) {
        if constexpr (kComplex<T>)
          lapack::gelss(mi, ni, ki, ab, ld, xb, ldb, sb, rc, &rk, work, lwork, rwork.data(), &info);
        else
          lapack::gelss(mi, ni, ki, ab, ld, xb, ldb, sb, rc, &rk, work, lwork, &info);
      };
      if (drv == "gels") lapack::gels('N', mi, ni, ki, a0, ld, x0, ldb, &wq, -1, &info);
      if (drv == "gelsy") gelsy(a0, x0, &wq, -1);
      if (drv == "gelsd") gelsd(a0, x0, s0, &wq, -1, &rq, &iq);
      if (drv == "gelss") gelss(a0, x0, s0, &wq, -1);
      std::vector<T> work(static_cast<size_t>(query_lwork(static_cast<R>(wq))));
      std::vector<int> iwork(size_t(std::max(iq, 1)));
      if (drv == "gelsd") rwork.resize(std::max(rwork.size(), size_t(query_lwork(rq))));
      int lw = int(work.size());
      for (int64_t b = 0; b < nb; ++b) {
        T* ab = a0 + b * m * n;
        T* xb = x0 + b * mn * k;
        R* sb = has_sv ? s0 + b * mink : nullptr;
        // PyTorch's LAPACK (MKL) refuses a NaN in A or B as an illegal argument (its scaling by
        // a NaN norm), which PyTorch reports through an internal assert (a RuntimeError)
        auto has_nan = [](const T* p, int64_t count) {  // complex: either part (both are R)
          const R* r = reinterpret_cast<const R*>(p);
          for (int64_t i = 0; i < count * (kComplex<T> ? 2 : 1); ++i)
            if (r[i] != r[i]) return true;
          return false;
        };
        const bool nan_a = has_nan(ab, m * n);
        if (nan_a || has_nan(xb, mn * k))
          TP_FAIL("torch.linalg.lstsq: ", batch_prefix(a, b), "Argument ", nan_a ? 4 : 6, " has illegal value. "
                  "Most certainly there is a bug in the implementation calling the backend library.");
        if (drv == "gels") {
          lapack::gels('N', mi, ni, ki, ab, ld, xb, ldb, work.data(), lw, &info);
          if (info > 0) fail_rank_deficient(a, b, info);
        } else if (drv == "gelsy") {
          std::fill(jpvt.begin(), jpvt.end(), 0);
          gelsy(ab, xb, work.data(), lw);
        } else if (drv == "gelsd") {
          gelsd(ab, xb, sb, work.data(), lw, rwork.data(), iwork.data());
        } else {
          gelss(ab, xb, sb, work.data(), lw);
        }
        if (info > 0)
          TP_FAIL_LINALG(batch_prefix(a, b), "The algorithm failed to converge because the input "
                         "matrix is ill-conditioned (error code: ", info, ").");
        if (has_rank) rank.data<int64_t>()[b] = rk;
      }
    });
  }
  Tensor solution = narrow(x, -2, 0, n);
  // Residuals exist when the system is overdetermined and every matrix has full rank;
  // gelsy's B below row n holds no residual information.
  bool full_rank = true;
  if (has_rank)
    for (int64_t b = 0; b < nb; ++b) full_rank = full_rank && rank.data<int64_t>()[b] == n;
  Tensor residuals = empty_tensor(std::array<int64_t, 1>{0}, rdt);
  if (m > n && drv == "gels" && n == 0 && nb > 0) {  // PyTorch's gels: zeros, not |B|^2
    residuals = zeros(with_tail(batch, {x.size(-1)}), rdt, x.device());
  } else if (m > n && drv != "gelsy" && full_rank && nb > 0) {
    Tensor tail = narrow(x, -2, n, m - n);
    if (is_complex(dt)) tail = abs(tail);
    residuals = sum(mul(tail, tail), std::array<int64_t, 1>{-2});
  }
  if (vector_case) solution = select(solution, -1, 0);
  // rank and singular values describe A: one per matrix of A's own batch
  DimVector a_batch = batch_of(A);
  if (a_batch.size() != batch.size() || count(a_batch) != nb) {
    size_t lead = batch.size() - a_batch.size();
    for (size_t i = 0; i < batch.size(); ++i) {
      bool from_a = i >= lead && a_batch[i - lead] == batch[i];
      if (has_rank && !from_a) rank = narrow(rank, int64_t(i), 0, 1);
      if (has_sv && !from_a) sv = narrow(sv, int64_t(i), 0, 1);
    }
    if (has_rank) rank = reshape(rank, a_batch);
    if (has_sv) sv = reshape(sv, with_tail(a_batch, {mink}));
  }
  return {solution, residuals, rank, sv};
}

Tensor linalg_write_out_impl(const Tensor& result, OutArg out) { return finish_out(out, result); }

}  // namespace tp
