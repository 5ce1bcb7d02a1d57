// tp.linalg.eig and tp.linalg.eigvals on CPU through LAPACK geev: eigenvalues and right
// eigenvectors of general square matrices. Results are complex for real input too, as in
// PyTorch; eigenvectors are LAPACK's (unit 2-norm, largest component real), column-major.
#include <cmath>
#include <vector>

#include "core/error.h"
#include "linalg/lapack.h"
#include "ops/linalg_common.h"
#include "ops/meta.h"

namespace tp {
namespace {

using linalg::batch_of;
using linalg::count;
using linalg::rows;
using linalg::with_tail;

struct EigResult {
  Tensor eigenvalues, eigenvectors;  // eigenvectors undefined without compute_v
};

int lwork_from(double w0) { return std::max(1, int(w0)); }

/// Real geev reports a conjugate pair wr +- i wi once, with the eigenvector of wr + i wi in
/// two columns (real part, imaginary part); this spreads them into complex columns.
template <class R>
void unpack_real_geev(const R* wr, const R* wi, const R* vr, int64_t n, Complex<R>* w,
                      Complex<R>* v) {
  for (int64_t j = 0; j < n; ++j) w[j] = {wr[j], wi[j]};
  if (!v) return;
  for (int64_t j = 0; j < n; ++j) {
    const R* c = vr + j * n;
    if (wi[j] == R(0) || j + 1 == n) {
      for (int64_t i = 0; i < n; ++i) v[j * n + i] = {c[i], R(0)};
      continue;
    }
    for (int64_t i = 0; i < n; ++i) {
      v[j * n + i] = {c[i], c[n + i]};
      v[(j + 1) * n + i] = {c[i], -c[n + i]};
    }
    ++j;
  }
}

[[noreturn]] void fail_eig(const Tensor& A, int64_t b, int info) {
  TP_FAIL_LINALG(linalg::batch_prefix(A, b), "The algorithm failed to converge because the "
                 "input matrix is ill-conditioned or has too many repeated eigenvalues (error "
                 "code: ", info, ").");
}

/// geev of every matrix of the column-major batch `a` (overwritten) for real R.
template <class R>
void eig_real(const Tensor& A, const Tensor& a, int64_t n, int64_t nb, EigResult& r) {
  bool compute_v = r.eigenvectors.defined();
  int ni = linalg::lapack_int(n), info = 0;
  std::vector<R> wr(static_cast<size_t>(n)), wi(static_cast<size_t>(n));
  std::vector<R> vr(compute_v ? static_cast<size_t>(n * n) : 1);
  R wq = 0;
  char jobvr = compute_v ? 'V' : 'N';
  int ldvr = compute_v ? ni : 1;
  lapack::geev(jobvr, ni, a.data<R>(), ni, wr.data(), wi.data(), vr.data(), ldvr, &wq, -1, &info);
  std::vector<R> work(static_cast<size_t>(lwork_from(double(wq))));
  auto* w = r.eigenvalues.data<Complex<R>>();
  auto* v = compute_v ? r.eigenvectors.data<Complex<R>>() : nullptr;
  for (int64_t b = 0; b < nb; ++b) {
    lapack::geev(jobvr, ni, a.data<R>() + b * n * n, ni, wr.data(), wi.data(), vr.data(), ldvr,
                 work.data(), int(work.size()), &info);
    if (info != 0) fail_eig(A, b, info);
    unpack_real_geev(wr.data(), wi.data(), vr.data(), n, w + b * n, v ? v + b * n * n : nullptr);
  }
}

/// geev of every matrix of the column-major batch `a` (overwritten) for complex C.
template <class R>
void eig_complex(const Tensor& A, const Tensor& a, int64_t n, int64_t nb, EigResult& r) {
  using C = Complex<R>;
  bool compute_v = r.eigenvectors.defined();
  int ni = linalg::lapack_int(n), info = 0;
  C wq{0, 0}, dummy{0, 0};
  std::vector<R> rwork(static_cast<size_t>(2 * n));
  char jobvr = compute_v ? 'V' : 'N';
  int ldvr = compute_v ? ni : 1;
  C* v = compute_v ? r.eigenvectors.data<C>() : &dummy;
  lapack::geev(jobvr, ni, a.data<C>(), ni, r.eigenvalues.data<C>(), v, ldvr, &wq, -1,
               rwork.data(), &info);
  std::vector<C> work(static_cast<size_t>(lwork_from(double(wq.re))));
  for (int64_t b = 0; b < nb; ++b) {
    lapack::geev(jobvr, ni, a.data<C>() + b * n * n, ni, r.eigenvalues.data<C>() + b * n,
                 compute_v ? v + b * n * n : v, ldvr, work.data(), int(work.size()),
                 rwork.data(), &info);
    if (info != 0) fail_eig(A, b, info);
  }
}

/// Whether every element of the contiguous buffer (reals, or complex pairs read as reals)
/// is finite.
template <class R>
bool all_finite(const R* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(p[i])) return false;
  return true;
}

EigResult eig(const Tensor& A, bool compute_v) {
  DType dt = A.dtype();
  TP_CHECK(A.dim() >= 2, "The input tensor A must have at least 2 dimensions.");
  TP_CHECK(is_floating_or_complex(dt), "Expected a floating point or complex tensor as input. Got ",
           dtype_scalar_name(dt));
  if (dt == DType::Float16 || dt == DType::BFloat16)
    TP_FAIL_NOT_IMPLEMENTED("\"linalg_eig_out_cpu\" not implemented for '", dtype_scalar_name(dt), "'");
  TP_CHECK(rows(A) == linalg::cols(A), "A must be batches of square matrices, but they are ",
           rows(A), " by ", linalg::cols(A), " matrices");
  linalg::check_solver_device(A);
  DimVector batch = batch_of(A);
  int64_t n = rows(A), nb = count(batch);
  DType ct = to_complex_dtype(dt);
  EigResult r;
  r.eigenvalues = empty_tensor(with_tail(batch, {n}), ct, A.device());
  if (compute_v) r.eigenvectors = linalg::colmajor_empty(batch, n, n, ct, A.device());
  if (n == 0 || nb == 0 || is_meta(A)) return r;
  Tensor a = linalg::colmajor_copy(A, batch);
  int64_t reals = a.numel() * (is_complex(dt) ? 2 : 1);
  bool finite = to_real_dtype(dt) == DType::Float32
                    ? all_finite(reinterpret_cast<const float*>(a.data_ptr()), reals)
                    : all_finite(reinterpret_cast<const double*>(a.data_ptr()), reals);
  TP_CHECK(finite, "input tensor should not contain infs or NaNs.");
  switch (dt) {
    case DType::Float32: eig_real<float>(A, a, n, nb, r); break;
    case DType::Float64: eig_real<double>(A, a, n, nb, r); break;
    case DType::Complex64: eig_complex<float>(A, a, n, nb, r); break;
    default: eig_complex<double>(A, a, n, nb, r); break;
  }
  return r;
}

}  // namespace

std::tuple<Tensor, Tensor> linalg_eig_impl(const Tensor& A, OutArg) {
  EigResult r = eig(A, true);
  return {r.eigenvalues, r.eigenvectors};
}

Tensor linalg_eigvals_impl(const Tensor& A, OutArg out) {
  return linalg::finish_out_cast(out, eig(A, false).eigenvalues);
}

}  // namespace tp
