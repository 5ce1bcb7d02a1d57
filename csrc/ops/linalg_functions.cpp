// tp.linalg functions built on the decompositions: pinv and matrix_rank (SVD or eigh),
// matrix_power (repeated squaring, inv for negative powers), matrix_exp (Padé
// scaling and squaring), and their legacy top-level names. CPU tensors take LAPACK/BLAS
// loops; CUDA tensors the same steps as tp ops over the CUDA decompositions.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "linalg/blas.h"
#include "linalg/lapack.h"
#include "ops/linalg_common.h"
#include "ops/meta.h"
#include "dispatch/math_bits.h"
#include "ops/pointwise.h"
#include "ops/shape_utils.h"

namespace tp {

using namespace linalg;

namespace {

/// Per-matrix tolerances of pinv/matrix_rank: atol and rtol (numbers or tensors) broadcast
/// with A's batch dims, as in PyTorch; `batch` is the batch of the result.
struct Tolerances {
  DimVector batch;
  std::vector<double> atol, rtol;  // one per matrix of `batch`; empty when not given

  Tolerances(const Tensor& A, const std::optional<Tensor>& atol_t,
             const std::optional<Tensor>& rtol_t)
      : batch(batch_of(A)) {
    for (const auto* t : {&atol_t, &rtol_t})
      if (*t) {
        TP_CHECK(!is_complex((*t)->dtype()), t == &atol_t ? "atol" : "rtol",
                 " tensor of complex type is not supported. Got ", dtype_scalar_name((*t)->dtype()));
        batch = broadcast_batch((*t)->sizes(), batch);
      }
    atol = values(atol_t);
    rtol = values(rtol_t);
  }

  /// The cut-off of matrix b: max(atol, rtol * largest); PyTorch's defaults: atol = 0,
  /// rtol = eps * max(m, n) unless a positive atol was given alone (then rtol = 0).
  template <class T>
  T cutoff(int64_t b, T largest, int64_t m, int64_t n) const {
    T a = atol.empty() ? T(0) : T(atol[size_t(b)]);
    T r = !rtol.empty() ? T(rtol[size_t(b)])
          : a > 0       ? T(0)
                        : std::numeric_limits<T>::epsilon() * T(std::max(m, n));
    return std::max(a, r * largest);
  }

  /// cutoff() of every matrix at once, `largest` (batch, on any device) holding each
  /// matrix's largest |value|; the result is on largest's device.
  Tensor cutoffs(const Tensor& largest, int64_t m, int64_t n) const {
    Tensor a = empty_tensor(batch, DType::Float64), r = empty_tensor(batch, DType::Float64);
    double eps = largest.dtype() == DType::Float32 ? std::numeric_limits<float>::epsilon()
                                                   : std::numeric_limits<double>::epsilon();
    for (int64_t b = 0; b < a.numel(); ++b) {
      double ab = atol.empty() ? 0.0 : atol[size_t(b)];
      a.data<double>()[b] = ab;
      r.data<double>()[b] = !rtol.empty() ? rtol[size_t(b)]
                            : ab > 0      ? 0.0
                                          : eps * double(std::max(m, n));
    }
    auto on_device = [&](const Tensor& t) {
      Tensor d = empty_tensor(batch, largest.dtype(), largest.device());
      copy_(d, t);
      return d;
    };
    return maximum(on_device(a), mul(on_device(r), largest));
  }

 private:
  std::vector<double> values(const std::optional<Tensor>& t) const {
    if (!t || is_meta(*t)) return {};  // meta: no values (the kernels return before using them)
    Tensor v = empty_tensor(batch, DType::Float64);
    copy_(v, expand(*t, batch));
    return std::vector<double>(v.data<double>(), v.data<double>() + v.numel());
  }
};

/// A with its batch broadcast to `batch` (a view; LAPACK works on copies anyway).
Tensor with_batch(const Tensor& A, IntArrayRef batch) {
  return expand(A, with_tail(batch, {rows(A), cols(A)}));
}

/// pinv of A (batch broadcast with the tolerances) through tp ops, for devices without the
/// CPU's LAPACK loops: the kept singular values (eigenvalues when hermitian) inverted.
Tensor pinv_by_ops(const Tensor& A, const Tolerances& tols, bool hermitian) {
  int64_t m = rows(A), n = cols(A);
  std::array<int64_t, 1> last{-1};
  auto inverted = [&](const Tensor& values, const Tensor& largest) {
    Tensor tol = unsqueeze(tols.cutoffs(largest, m, n), -1);
    return where(gt(abs(values), tol), reciprocal(values), wrapped_scalar(0.0));
  };
  if (hermitian) {  // A = Q diag(w) Q^T, so pinv(A) = Q diag(1/w) Q^T over the kept w
    EighResult e = linalg::eigh(A, true, "L");
    Tensor winv = inverted(e.eigenvalues, amax(abs(e.eigenvalues), last));
    return matmul(mul(e.eigenvectors, unsqueeze(winv, -2)), transpose(e.eigenvectors, -2, -1));
  }
  // A = U diag(S) Vh, so pinv(A) = Vh^T diag(1/S) U^T over the kept S.
  SvdResult r = linalg::svd(A, true, false);
  Tensor sinv = inverted(r.S, select(r.S, -1, 0));
  return matmul(mul(transpose(r.Vh, -2, -1), unsqueeze(sinv, -2)), transpose(r.U, -2, -1));
}

void check_rank_input(const Tensor& A) {
  TP_CHECK(A.dim() >= 2, "The input tensor input must have at least 2 dimensions.");
  if (is_complex(A.dtype()) && A.device().is_cuda())
    TP_FAIL_NOT_IMPLEMENTED("complex inputs are not supported yet (got ", dtype_scalar_name(A.dtype()), ")");
  TP_CHECK(A.dtype() == DType::Float32 || A.dtype() == DType::Float64 || is_complex(A.dtype()),
           "This function doesn't handle types other than float and double");
}

}  // namespace

Tensor linalg_pinv_impl(const Tensor& input, const std::optional<Tensor>& atol,
                        const std::optional<Tensor>& rtol, bool hermitian, OutArg out) {
  if (is_complex(input.dtype()) && input.device().is_cuda())
    TP_FAIL_NOT_IMPLEMENTED("complex inputs are not supported yet (got ", dtype_scalar_name(input.dtype()), ")");
  TP_CHECK(input.dim() >= 2 && (input.dtype() == DType::Float32 || input.dtype() == DType::Float64 ||
                                is_complex(input.dtype())),
           "expected a tensor with 2 or more dimensions of float, double, cfloat or cdouble types");
  // an empty input returns its empty pinv before the tolerances are broadcast or a hermitian
  // input is checked square, as PyTorch's
  if (input.numel() == 0)
    return finish_out_cast(out, zero_(empty_tensor(with_tail(batch_of(input), {cols(input), rows(input)}),
                                                   input.dtype(), input.device())));
  Tolerances tols(input, atol, rtol);
  Tensor A = with_batch(input, tols.batch);
  const DimVector& batch = tols.batch;
  int64_t m = rows(A), n = cols(A), nb = count(batch);
  if (hermitian) check_matrix(A, nullptr, true, true, /*complex_ok=*/true);
  Tensor res = empty_tensor(with_tail(batch, {n, m}), A.dtype(), A.device());
  if (res.numel() == 0) return finish_out_cast(out, zero_(res));
  if (is_meta(res)) return finish_out_cast(out, res);
  if (!A.device().is_cpu()) {
    check_solver_device(A);
    return finish_out_cast(out, pinv_by_ops(A, tols, hermitian));
  }
  dispatch_float_or_complex(A.dtype(), [&](auto zero) {
    using T = decltype(zero);
    using R = real_t<T>;
    if (hermitian) {  // A = Q diag(w) Q^H, so pinv(A) = Q diag(1/w) Q^H over the kept w
      EighResult e = linalg::eigh(A, true, "L");
      T* q = e.eigenvectors.data<T>();
      std::vector<T> scaled(size_t(n * n));
      for (int64_t b = 0; b < nb; ++b) {
        const R* w = e.eigenvalues.data<R>() + b * n;
        T* qb = q + b * n * n;
        R largest = 0;
        for (int64_t i = 0; i < n; ++i) largest = std::max(largest, std::abs(w[i]));
        R tol = tols.cutoff(b, largest, m, n);
        for (int64_t j = 0; j < n; ++j) {
          T s = std::abs(w[j]) > tol ? T(R(1) / w[j]) : T(0);
          for (int64_t i = 0; i < n; ++i) scaled[size_t(j * n + i)] = qb[j * n + i] * s;
        }
        if constexpr (kComplex<T>)  // gemm reads Q^T below: conjugate it into Q^H
          for (int64_t i = 0; i < n * n; ++i) qb[i] = conj(qb[i]);
        blas::gemm(A.dtype(), n, n, n, 1.0, {scaled.data(), 1, n}, {qb, n, 1}, 0.0,
                   res.data<T>() + b * n * n, n);
      }
      return;
    }
    // A = U diag(S) Vh, so pinv(A) = Vh^H diag(1/S) U^H over the kept S.
    SvdResult r = linalg::svd(A, true, false);
    int64_t k = std::min(m, n);
    T* vh = r.Vh.data<T>();
    for (int64_t b = 0; b < nb; ++b) {
      R* s = r.S.data<R>() + b * k;
      R tol = tols.cutoff(b, k ? s[0] : R(0), m, n);
      T* vb = vh + b * k * n;  // k x n, column-major: row i scaled by 1/S_i
      for (int64_t i = 0; i < k; ++i) {
        T inv = s[i] > tol ? T(R(1) / s[i]) : T(0);
        for (int64_t j = 0; j < n; ++j) vb[j * k + i] *= inv;
      }
    }
    // the product of the transposes (Vh^T diag U^T); its conjugate for complex A
    blas::gemm_batched(A.dtype(), nb, n, m, k, 1.0, {vh, k, 1}, k * n, {r.U.data<T>(), m, 1},
                       m * k, 0.0, res.data_ptr(), m, n * m);
    if constexpr (kComplex<T>) {
      T* p = res.data<T>();
      for (int64_t i = 0; i < res.numel(); ++i) p[i] = conj(p[i]);
    }
  });
  return finish_out_cast(out, res);
}

Tensor pinverse_composite(const Tensor& self, double rcond, OutArg) {
  return linalg_pinv(self, wrapped_scalar(0.0), wrapped_scalar(rcond));
}

Tensor linalg_matrix_rank_impl(const Tensor& input, const std::optional<Tensor>& atol,
                               const std::optional<Tensor>& rtol, bool hermitian, OutArg out) {
  // An empty input has rank 0 in each matrix of its own batch (the tolerances are not broadcast);
  // PyTorch's path with rtol returns it before any dtype check.
  if (input.dim() >= 2 && input.numel() == 0 && rtol && !is_complex(input.dtype()))
    return finish_out_cast(out, zeros(batch_of(input), DType::Int64, input.device()));
  check_rank_input(input);
  if (input.numel() == 0) return finish_out_cast(out, zeros(batch_of(input), DType::Int64, input.device()));
  Tolerances tols(input, atol, rtol);
  Tensor A = with_batch(input, tols.batch);
  const DimVector& batch = tols.batch;
  int64_t m = rows(A), n = cols(A), nb = count(batch);
  Tensor rank = zeros(batch, DType::Int64, A.device());
  if (m == 0 || n == 0) return finish_out_cast(out, rank);
  Tensor values = hermitian ? linalg::eigh(A, false, "L").eigenvalues
                            : (check_matrix(A, "linalg_svd_cpu", false, true, true), linalg::svd(A, false, false).S);
  if (is_meta(rank)) return finish_out_cast(out, rank);
  if (!A.device().is_cpu()) {  // |values| above each matrix's cut-off
    std::array<int64_t, 1> last{-1};
    Tensor mags = abs(values);
    Tensor tol = unsqueeze(tols.cutoffs(amax(mags, last), m, n), -1);
    return finish_out_cast(out, sum(gt(mags, tol), last));
  }
  int64_t k = cols(values);
  dispatch_float(values.dtype(), [&](auto zero) {  // real: singular values or eigenvalues
    using T = decltype(zero);
    for (int64_t b = 0; b < nb; ++b) {
      const T* s = values.data<T>() + b * k;
      T largest = 0;
      for (int64_t i = 0; i < k; ++i) largest = std::max(largest, std::abs(s[i]));
      T tol = tols.cutoff(b, largest, m, n);
      int64_t r = 0;
      for (int64_t i = 0; i < k; ++i) r += std::abs(s[i]) > tol;
      rank.data<int64_t>()[b] = r;
    }
  });
  return finish_out_cast(out, rank);
}

Tensor linalg_matrix_power_impl(const Tensor& A, int64_t n, OutArg out) {
  if (A.impl()->math_bits() || key_bits(out)) [[unlikely]] {  // resolved where autograd sees it (dispatch/math_bits.h)
    Tensor r = linalg_matrix_power_impl(resolved(A), n, {});
    if (!out.tensor) return r;
    resize_out(*out.tensor, r.sizes());
    return copy_(*out.tensor, r);  // a conjugate out= is written through its bit
  }
  TP_CHECK(A.dim() >= 2, "The input tensor A must have at least 2 dimensions.");
  TP_CHECK(rows(A) == cols(A), "A must be batches of square matrices, but they are ", rows(A),
           " by ", cols(A), " matrices");
  int64_t size = rows(A);
  // out= must take the result's dtype safely; a product (n >= 2) must have it exactly (matmul's out=)
  if (out.tensor) TP_CHECK(can_cast(A.dtype(), out.tensor->dtype()), "Expected result to be safely castable from ",
                           dtype_scalar_name(A.dtype()), " dtype, but got result with dtype ",
                           dtype_scalar_name(out.tensor->dtype()));
  if (n == 0) {  // the identity; where() keeps A's history (a zero gradient), as PyTorch
    Tensor res = where(zeros(IntArrayRef(), DType::Bool, A.device()), A,
                       eye(size, std::nullopt, A.dtype(), A.device()));
    return finish_out_cast(out, contiguous(res));
  }
  // Written with tp::matmul / linalg_inv, which record their own gradients.
  Tensor base = n < 0 ? linalg_inv(A) : A;
  uint64_t p = n < 0 ? uint64_t(0) - uint64_t(n) : uint64_t(n);
  // A^1 is a new contiguous copy whatever A's layout, as in PyTorch (A^-1 keeps inv's).
  if (p == 1 && n < 0) return finish_out(out, base);  // inv's out= rule: its dtype exactly
  if (p == 1) return finish_out_cast(out, base.is_contiguous() ? clone(base) : contiguous(base));
  TP_CHECK_KIND(ErrorKind::NotImplemented, A.dtype() != DType::Bool || A.numel() == 0,
                "\"addmm_impl_cpu_\" not implemented for 'Bool'");  // an empty mm returns first
  // z runs through base^(2^i); the result gathers the z of each set bit of p.
  Tensor z, res;
  while (p) {
    z = z.defined() ? matmul(z, z) : base;
    if (p & 1) res = res.defined() ? matmul(res, z) : z;
    p >>= 1;
  }
  return finish_out(out, res);
}

Tensor matrix_power_composite(const Tensor& self, int64_t n, OutArg out) {
  if (out.tensor) return linalg_matrix_power_out(const_cast<Tensor&>(*out.tensor), self, n);
  return linalg_matrix_power(self, n);
}

// ------------------------------------------------------------------ matrix_exp
namespace {

// The Padé degrees' 1-norm bounds and coefficients (degrees 3, 5, 7, 9, 13) of Higham's
// scaling and squaring ("The scaling and squaring method for the matrix exponential
// revisited", SIAM J. Matrix Anal. Appl. 26(4), 2005).
constexpr double kTheta[] = {1.495585217958292e-2, 2.539398330063230e-1, 9.504178996162932e-1,
                             2.097847961257068e0, 5.371920351148152e0};
constexpr double kB13[] = {64764752532480000., 32382376266240000., 7771770303897600.,
                           1187353796428800.,  129060195264000.,   10559470521600.,
                           670442572800.,      33522128640.,       1323241920.,
                           40840800.,          960960.,            16380.,
                           182.,               1.};
constexpr double kB9[] = {17643225600., 8821612800., 2075673600., 302702400., 30270240.,
                          2162160.,     110880.,     3960.,       90.,        1.};
constexpr double kB7[] = {17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.};
constexpr double kB5[] = {30240., 15120., 3360., 420., 30., 1.};
constexpr double kB3[] = {120., 60., 12., 1.};

/// exp of one n x n row-major float64 or complex128 matrix `a` (overwritten) into `out`:
/// scaling and squaring with the Padé approximant of the lowest sufficient degree.
template <class T>
void expm(int64_t n, T* a, T* out) {
  using std::abs;
  constexpr DType dt = kComplex<T> ? DType::Complex128 : DType::Float64;
  size_t nn = size_t(n * n);
  auto mm = [n](const T* x, const T* y, T* z) {
    blas::gemm(dt, n, n, n, 1.0, {x, n, 1}, {y, n, 1}, 0.0, z, n);
  };
  double norm1 = 0;  // largest column sum of |a|
  for (int64_t j = 0; j < n; ++j) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += abs(a[i * n + j]);
    norm1 = std::max(norm1, s);
  }
  if (!std::isfinite(norm1)) {  // inf or NaN entries: no meaningful exponential
    std::fill(out, out + nn, T(std::numeric_limits<double>::quiet_NaN()));
    return;
  }
  int degree_index = 0;
  while (degree_index < 4 && !(norm1 <= kTheta[degree_index])) ++degree_index;
  int squarings = 0;
  if (norm1 > kTheta[4]) {
    squarings = std::max(0, int(std::ceil(std::log2(norm1 / kTheta[4]))));
    double scale = std::ldexp(1.0, -squarings);
    for (size_t i = 0; i < nn; ++i) a[i] *= scale;
  }
  // powers[j] = a^(2j) for j = 1..4 (a^2, a^4, a^6, a^8)
  std::vector<T> pw(4 * nn), u(nn), v(nn), t(nn);
  T* a2 = pw.data();
  mm(a, a, a2);
  int max_power = degree_index == 4 ? 3 : degree_index + 1;
  for (int j = 1; j < max_power; ++j) mm(pw.data() + (j - 1) * nn, a2, pw.data() + j * nn);
  auto power = [&](int j) { return pw.data() + (j - 1) * nn; };  // a^(2j)
  auto add_identity = [n](T* x, double c) {
    for (int64_t i = 0; i < n; ++i) x[i * n + i] += c;
  };
  if (degree_index < 4) {
    const double* b[] = {kB3, kB5, kB7, kB9};
    const double* c = b[degree_index];
    int terms = degree_index + 2;  // even/odd coefficient pairs
    std::fill(t.begin(), t.end(), T(0));
    std::fill(v.begin(), v.end(), T(0));
    for (int j = 1; j < terms; ++j)
      for (size_t i = 0; i < nn; ++i) {
        t[i] += T(c[2 * j + 1]) * power(j)[i];
        v[i] += T(c[2 * j]) * power(j)[i];
      }
    add_identity(t.data(), c[1]);
    add_identity(v.data(), c[0]);
    mm(a, t.data(), u.data());
  } else {
    const T *p2 = power(1), *p4 = power(2), *p6 = power(3);
    auto b = [](int i) { return T(kB13[i]); };
    for (size_t i = 0; i < nn; ++i) t[i] = b(13) * p6[i] + b(11) * p4[i] + b(9) * p2[i];
    mm(p6, t.data(), u.data());
    for (size_t i = 0; i < nn; ++i) u[i] += b(7) * p6[i] + b(5) * p4[i] + b(3) * p2[i];
    add_identity(u.data(), kB13[1]);
    mm(a, u.data(), t.data());
    std::swap(u, t);  // u = a * (...)
    for (size_t i = 0; i < nn; ++i) t[i] = b(12) * p6[i] + b(10) * p4[i] + b(8) * p2[i];
    mm(p6, t.data(), v.data());
    for (size_t i = 0; i < nn; ++i) v[i] += b(6) * p6[i] + b(4) * p4[i] + b(2) * p2[i];
    add_identity(v.data(), kB13[0]);
  }
  // exp(a) ~ (v - u)^-1 (v + u). Both are polynomials in a and commute, so solving with the
  // row-major buffers read as column-major (their transposes) gives the row-major result.
  for (size_t i = 0; i < nn; ++i) {
    T p = v[i] + u[i];
    t[i] = v[i] - u[i];
    out[i] = p;
  }
  std::vector<int> piv(static_cast<size_t>(n));
  int ni = lapack_int(n), info = 0;
  lapack::getrf(ni, ni, t.data(), ni, piv.data(), &info);
  lapack::getrs('N', ni, ni, t.data(), ni, piv.data(), out, ni, &info);
  for (int s = 0; s < squarings; ++s) {
    mm(out, out, t.data());
    std::copy(t.begin(), t.end(), out);
  }
}

/// exp of each matrix of the float64 batch `a` (..., n, n; n > 0, not empty) through tp
/// ops, for devices without expm's loops: one Padé degree for the whole batch (the one its
/// largest 1-norm needs; a higher degree than a matrix needs is no less accurate), then
/// each matrix's own scaling and squarings, as expm picks them. Non-finite matrices give NaN.
Tensor expm_by_ops(const Tensor& a) {
  int64_t n = rows(a);
  Device dev = a.device();
  Tensor column_sums = sum(abs(a), std::array<int64_t, 1>{-2});
  Tensor norms = host_copy(amax(column_sums, std::array<int64_t, 1>{-1}));
  int64_t nb = norms.numel();
  const double* norm = norms.data<double>();
  DimVector one_by_one = batch_of(a);
  one_by_one.push_back(1);
  one_by_one.push_back(1);
  Tensor scale = empty_tensor(one_by_one, DType::Float64);
  Tensor squarings = empty_tensor(one_by_one, DType::Int32);
  Tensor bad = empty_tensor(one_by_one, DType::Bool);
  double worst = 0;
  int most = 0;
  for (int64_t b = 0; b < nb; ++b) {
    bool finite = std::isfinite(norm[b]);
    int s = 0;
    if (finite && norm[b] > kTheta[4])
      s = std::max(0, int(std::ceil(std::log2(norm[b] / kTheta[4]))));
    if (finite) worst = std::max(worst, norm[b]);
    most = std::max(most, s);
    bad.data<bool>()[b] = !finite;
    squarings.data<int32_t>()[b] = s;
    scale.data<double>()[b] = finite ? std::ldexp(1.0, -s) : 0.0;  // non-finite: exp of 0, then NaN
  }
  auto to_device = [&](const Tensor& t) {
    Tensor d = empty_tensor(t.sizes(), t.dtype(), dev);
    copy_(d, t);
    return d;
  };
  Tensor bad_d = to_device(bad), squarings_d = to_device(squarings);
  Tensor x = mul(where(bad_d, wrapped_scalar(0.0), a), to_device(scale));
  int degree_index = 0;
  while (degree_index < 4 && !(worst <= kTheta[degree_index])) ++degree_index;
  Tensor I = eye(n, std::nullopt, DType::Float64, dev);
  std::vector<Tensor> pw{matmul(x, x)};  // pw[j - 1] = x^(2j)
  int max_power = degree_index == 4 ? 3 : degree_index + 1;
  for (int j = 1; j < max_power; ++j) pw.push_back(matmul(pw.back(), pw[0]));
  auto power = [&](int j) -> const Tensor& { return pw[size_t(j - 1)]; };
  Tensor u, v;
  if (degree_index < 4) {
    const double* b[] = {kB3, kB5, kB7, kB9};
    const double* c = b[degree_index];
    Tensor t = mul(I, wrapped_scalar(c[1]));
    v = mul(I, wrapped_scalar(c[0]));
    for (int j = 1; j < degree_index + 2; ++j) {
      t = add(t, power(j), c[2 * j + 1]);
      v = add(v, power(j), c[2 * j]);
    }
    u = matmul(x, t);
  } else {
    const double* b = kB13;
    const Tensor &p2 = power(1), &p4 = power(2), &p6 = power(3);
    Tensor t = add(add(mul(p6, wrapped_scalar(b[13])), p4, b[11]), p2, b[9]);
    u = add(add(add(add(matmul(p6, t), p6, b[7]), p4, b[5]), p2, b[3]), I, b[1]);
    u = matmul(x, u);
    t = add(add(mul(p6, wrapped_scalar(b[12])), p4, b[10]), p2, b[8]);
    v = add(add(add(add(matmul(p6, t), p6, b[6]), p4, b[4]), p2, b[2]), I, b[0]);
  }
  Tensor res = linalg_solve(sub(v, u), add(v, u));  // (v - u)^-1 (v + u)
  for (int s = 0; s < most; ++s)
    res = where(gt(squarings_d, wrapped_scalar(s)), matmul(res, res), res);
  return where(bad_d, wrapped_scalar(std::numeric_limits<double>::quiet_NaN()), res);
}

}  // namespace

Tensor linalg_matrix_exp_impl(const Tensor& A, OutArg) {
  TP_CHECK(A.dim() >= 2, "The input tensor A must have at least 2 dimensions.");
  if (is_complex(A.dtype()) && A.device().is_cuda())
    TP_FAIL_NOT_IMPLEMENTED("complex inputs are not supported yet (got ", dtype_scalar_name(A.dtype()), ")");
  TP_CHECK(is_floating_or_complex(A.dtype()), "Expected a floating point or complex tensor as input. Got ",
           dtype_scalar_name(A.dtype()));
  TP_CHECK(rows(A) == cols(A), "A must be batches of square matrices, but they are ", rows(A),
           " by ", cols(A), " matrices");
  // Computed in float64 (complex128 for complex A) for every dtype, then rounded to A's.
  if (!A.device().is_cpu()) {
    check_solver_device(A);
    Tensor res = empty_tensor(A.sizes(), A.dtype(), A.device());
    if (res.numel() == 0 || is_meta(res)) return res;
    Tensor a64 = empty_tensor(A.sizes(), DType::Float64, A.device());
    copy_(a64, A);
    copy_(res, expm_by_ops(a64));
    return res;
  }
  const DType wide = is_complex(A.dtype()) ? DType::Complex128 : DType::Float64;
  Tensor work = empty_tensor(A.sizes(), wide);
  copy_(work, A);
  Tensor res64 = empty_tensor(A.sizes(), wide);
  int64_t n = rows(A), nb = count(batch_of(A));
  if (n > 0 && !is_meta(A))
    dispatch_float_or_complex(wide, [&](auto zero) {
      using T = decltype(zero);
      for (int64_t b = 0; b < nb; ++b) expm(n, work.data<T>() + b * n * n, res64.data<T>() + b * n * n);
    });
  if (A.dtype() == wide) return res64;
  Tensor res = empty_tensor(A.sizes(), A.dtype());
  copy_(res, res64);
  return res;
}

Tensor matrix_exp_composite(const Tensor& self, OutArg) { return linalg_matrix_exp(self); }

}  // namespace tp
