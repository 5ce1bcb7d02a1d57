// Order statistics and scans that report indices: aminmax, cummax/cummin, logcumsumexp,
// kthvalue, median/nanmedian, mode, quantile/nanquantile. Like sorting.cpp, each moves
// `dim` last, makes rows contiguous and works row by row, rows in parallel (on the GPU:
// cuda/order_stats.h, one block or thread per row; the per-row rules shared with the
// kernels are in order_stats_math.h).
//
// Note [Index choice on ties]: PyTorch's CPU kernels fix which index a tied value
// reports, and we reproduce it. kthvalue selects with a median-of-three quickselect
// (Numerical Recipes' `select`) that swaps values and indices together; median/nanmedian
// return the index the median has in a stable sort of the row; mode sorts (value, index)
// pairs by value alone with std::sort and reports the last pair of the longest run. The
// CUDA kernels run the same quickselect and std::sort's exact steps (sort_like_std, which
// the CPU uses too) and take the median from a stable sort, so both devices agree.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"
#include "ops/meta.h"
#include "ops/order_stats_math.h"
#include "ops/pointwise.h"
#include "ops/reduce_utils.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"
#ifdef TP_USE_CUDA
#include "cuda/order_stats.h"
#include "cuda/sort.h"
#endif

namespace tp {

namespace {

using order_math::Interp;
using order_math::is_nan;

template <class T>
constexpr bool kHalfType = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <class F>
void for_each_row(int64_t rows, int64_t len, F f) {
#pragma omp parallel for num_threads(get_num_threads()) schedule(dynamic, 16) if (rows > 1 && rows * len >= 32768)
  for (int64_t r = 0; r < rows; ++r) f(r);
}

void check_device(const char* op, const Tensor& self) {
  TP_CHECK(self.device().is_cpu() || self.device().is_cuda() || is_meta(self), op, ": no ",
           device_type_name(self.device().type), " kernel");
}

/// The rows of `self` along `dim` in its compute dtype (one row for a 0-dim input).
struct Rows {
  Tensor x;         // rows x len, contiguous
  DimVector order;  // permutation used by rows_along
  int64_t d = 0, len = 1, rows = 0;
};

Rows make_rows(const Tensor& self, int64_t dim) {
  Rows r;
  r.d = wrap_dim(dim, self.dim());
  Tensor x = _to_dtype(self, opmath_dtype(self.dtype()));
  if (self.dim() == 0) {
    r.x = reshape(x, std::vector<int64_t>{1});
  } else {
    r.x = rows_along(x, r.d, r.order);
    r.len = self.size(r.d);
  }
  r.rows = r.len ? r.x.numel() / r.len : 0;
  return r;
}

#ifdef TP_USE_CUDA
/// Each row of r sorted on the GPU (stable, NaN last): (values, indices).
std::pair<Tensor, Tensor> sorted_rows(const Rows& r) {
  Tensor sv = empty_tensor(r.x.sizes(), r.x.dtype(), r.x.device());
  Tensor si = empty_tensor(r.x.sizes(), DType::Int64, r.x.device());
  cuda::sort_rows(r.x, r.rows, r.len, false, sv, si);
  return {sv, si};
}
#endif

/// (values, indices) of a reduction over `dim` whose per-row kernel is
/// fn(row, len, value&, index&) on the CPU and on_cuda(rows, values, indices) on the GPU
/// (values/indices: one element per row); the dim must not be empty.
template <class Fn, class CudaFn>
std::tuple<Tensor, Tensor> reduce_rows(const char* op, const Tensor& self, int64_t dim, bool keepdim,
                                       Fn fn, CudaFn on_cuda) {
  check_device(op, self);
  Rows r = make_rows(self, dim);
  TP_CHECK_INDEX(r.len > 0, op, "(): Expected reduction dim ", r.d, " to have non-zero size.");
  DimVector shape = reduced_shape(self, r.d, keepdim);
  Tensor values = empty_tensor(shape, r.x.dtype(), self.device());
  Tensor indices = empty_tensor(shape, DType::Int64, self.device());
  if (is_meta(self)) return {_to_dtype(values, self.dtype()), indices};
  if (self.device().is_cuda()) {
    on_cuda(r, values, indices);
    return {_to_dtype(values, self.dtype()), indices};
  }
  visit_dtype(r.x.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (!kHalfType<T>) {
      const T* in = r.x.data<T>();
      T* ov = values.data<T>();
      int64_t* oi = indices.data<int64_t>();
      for_each_row(r.rows, r.len, [&](int64_t row) { fn(in + row * r.len, r.len, ov[row], oi[row]); });
    }
  });
  return {_to_dtype(values, self.dtype()), indices};
}

void reject_bool(const char* op, const Tensor& self) {
  TP_CHECK_KIND(ErrorKind::NotImplemented, self.dtype() != DType::Bool, op,
                ": not implemented for 'Bool'");
}

// ---------------------------------------------------------------- selection

/// The index libstdc++'s nth_element picks (for PyTorch's median) in an all-NaN row of n
/// elements: PyTorch's comparator finds every pair of NaNs equivalent, so it depends on n only.
int64_t all_nan_median_index(int64_t n) {
  std::vector<int64_t> ix(static_cast<size_t>(n));
  std::iota(ix.begin(), ix.end(), int64_t(0));
  std::nth_element(ix.begin(), ix.begin(), ix.end(), [](int64_t, int64_t) { return false; });
  return ix[0];
}

/// The median of a row (the lower one for even counts) and the index it has in a stable
/// sort of the row; with `ignore_nan` NaNs are left out, else the first NaN wins.
template <class T>
void median_row(const T* row, int64_t n, bool ignore_nan, T& value, int64_t& index) {
  if (!ignore_nan) {
    for (int64_t i = 0; i < n; ++i) {
      if (is_nan(row[i])) {
        value = row[i];
        index = i;
        return;
      }
    }
  }
  std::vector<T> buf;
  buf.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) if (!is_nan(row[i])) buf.push_back(row[i]);
  int64_t m = int64_t(buf.size());
  if (m == 0) {
    index = all_nan_median_index(n);
    value = row[index];
    return;
  }
  int64_t pos = (m - 1) / 2;
  std::nth_element(buf.begin(), buf.begin() + pos, buf.end());
  T v = buf[size_t(pos)];
  int64_t skip = pos;  // equal values before the median's stable position
  for (T x : buf) skip -= x < v;
  for (int64_t i = 0; i < n; ++i) {
    if (row[i] == v && skip-- == 0) {
      index = i;
      break;
    }
  }
  value = row[index];
}

std::tuple<Tensor, Tensor> median_dim(const char* op, bool ignore_nan, const Tensor& self,
                                      int64_t dim, bool keepdim) {
  // the dim and its size first, then the dtype, as PyTorch
  int64_t d = wrap_dim(dim, self.dim());
  TP_CHECK_INDEX(self.dim() == 0 || self.size(d) > 0, "median(): Expected reduction dim ", d,
                 " to have non-zero size.");
  reject_bool(op, self);
  return reduce_rows(
      op, self, dim, keepdim,
      [&](const auto* row, int64_t n, auto& value, int64_t& index) { median_row(row, n, ignore_nan, value, index); },
      [&]([[maybe_unused]] const Rows& r, [[maybe_unused]] const Tensor& values,
          [[maybe_unused]] const Tensor& indices) {
#ifdef TP_USE_CUDA
        auto [sv, si] = sorted_rows(r);
        cuda::median_rows(r.x, sv, si, r.rows, r.len, ignore_nan,
                          ignore_nan ? all_nan_median_index(r.len) : 0, values, indices);
#endif
      });
}

Tensor median_all(const char* op, bool ignore_nan, const Tensor& self) {
  check_device(op, self);
  // PyTorch answers NaN (converted to the input's dtype: True for bool) before its dtype dispatch
  if (self.numel() == 0)
    return _to_dtype(full(IntArrayRef(), Scalar(std::numeric_limits<double>::quiet_NaN()),
                          DType::Float64, self.device()), self.dtype());
  reject_bool(op, self);
  Tensor flat = reshape(self, std::vector<int64_t>{self.numel()});
  return reshape(std::get<0>(median_dim(op, ignore_nan, flat, 0, false)), IntArrayRef());
}

// ---------------------------------------------------------------- scans with indices

template <bool IsMax>
std::tuple<Tensor, Tensor> cum_best(const char* op, const Tensor& self, int64_t dim) {
  check_device(op, self);
  // PyTorch returns an empty input before it looks at the dim
  if (self.numel() == 0)
    return {empty_tensor(self.sizes(), self.dtype(), self.device()),
            empty_tensor(self.sizes(), DType::Int64, self.device())};
  Rows r = make_rows(self, dim);
  Tensor values = empty_tensor(r.x.sizes(), r.x.dtype(), self.device());
  Tensor indices = empty_tensor(r.x.sizes(), DType::Int64, self.device());
  if (is_meta(self)) {  // Note [Meta kernels]: no values; the layout below is the real one
  } else if (self.device().is_cuda()) {
#ifdef TP_USE_CUDA
    cuda::cum_best_rows(r.x, r.rows, r.len, IsMax, values, indices);
#endif
  } else visit_dtype(r.x.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (!kHalfType<T>) {
      const T* in = r.x.data<T>();
      T* ov = values.data<T>();
      int64_t* oi = indices.data<int64_t>();
      for_each_row(r.rows, r.len, [&](int64_t row) {
        const T* x = in + row * r.len;
        T best = x[0];
        int64_t at = 0;
        for (int64_t i = 0; i < r.len; ++i) {
          if (order_math::cum_takes<IsMax>(x[i], best)) {
            best = x[i];
            at = i;
          }
          ov[row * r.len + i] = best;
          oi[row * r.len + i] = at;
        }
      });
    }
  });
  if (self.dim() == 0) return {_to_dtype(reshape(values, IntArrayRef()), self.dtype()), reshape(indices, IntArrayRef())};
  return {_to_dtype(contiguous(back_from_rows(values, r.order)), self.dtype()),
          contiguous(back_from_rows(indices, r.order))};
}

// ---------------------------------------------------------------- quantiles

Interp parse_interpolation(const char* op, const std::string& s) {
  if (s == "linear") return Interp::Linear;
  if (s == "lower") return Interp::Lower;
  if (s == "higher") return Interp::Higher;
  if (s == "midpoint") return Interp::Midpoint;
  if (s == "nearest") return Interp::Nearest;
  TP_FAIL(op, "() interpolation must be one of linear, lower, higher, midpoint or nearest, but got ", s);
}

Tensor quantile(const char* op, bool ignore_nan, const Tensor& self, const Tensor& q,
                const std::optional<int64_t>& dim, bool keepdim, const std::string& interpolation,
                OutArg out) {
  check_device(op, self);
  bool scalar_q = q.impl()->is_wrapped_number();
  if (scalar_q && !is_meta(q)) {  // PyTorch's float overload checks the number before anything
    const double v = host_copy(_to_dtype(q, DType::Float64)).data<double>()[0];
    TP_CHECK(v >= 0 && v <= 1, op, "() q must be in the range [0, 1] but got ", v);
  }
  TP_CHECK(self.numel() > 0, op, "() input tensor must be non-empty");
  TP_CHECK(self.numel() <= (int64_t(1) << 24), op, "() input tensor is too large");  // PyTorch's limit
  TP_CHECK(q.dim() <= 1, op, "() q must be a scalar or 1D tensor");
  TP_CHECK(self.dtype() == DType::Float32 || self.dtype() == DType::Float64, op,
           "() input tensor must be either float or double dtype");
  TP_CHECK(scalar_q || q.dtype() == self.dtype(), op, "() q tensor must be same dtype as the input tensor");
  TP_CHECK(scalar_q || q.device() == self.device(), op, "() q tensor must be on the same device as the input tensor");
  if (out.tensor && !out.inplace)  // out='s dtype, then the dim, then q's values (PyTorch's order)
    TP_CHECK(out.tensor->dtype() == self.dtype(), op, "() out tensor must be same dtype as the input tensor");
  Interp how = parse_interpolation(op, interpolation);
  int64_t nq = q.numel();
  Rows r;
  DimVector shape;
  if (dim) (void)wrap_dim(*dim, self.dim());
  Tensor qd;
  std::vector<double> qs;
  if (!is_meta(q)) {  // q's values are checked where they can be read, as PyTorch does
    qd = host_copy(_to_dtype(q, DType::Float64));
    qs.assign(qd.data<double>(), qd.data<double>() + nq);
    for (double v : qs) TP_CHECK(v >= 0 && v <= 1, op, "() q values must be in the range [0, 1]");
  }
  if (dim) {
    r = make_rows(self, *dim);
    shape = reduced_shape(self, r.d, keepdim);
  } else {
    r.x = contiguous(reshape(self, std::vector<int64_t>{self.numel()}));
    r.len = self.numel();
    r.rows = 1;
    if (keepdim) shape.resize(size_t(self.dim()), 1);
  }
  // one row's quantiles side by side; the q dim then moves first (PyTorch's layout)
  Tensor res = empty_tensor(std::vector<int64_t>{r.rows, nq}, self.dtype(), self.device());
  if (is_meta(self)) {  // Note [Meta kernels]: no values; the layout below is the real one
  } else if (self.device().is_cuda()) {
#ifdef TP_USE_CUDA
    Tensor q_dev = empty_tensor(std::vector<int64_t>{nq}, DType::Float64, self.device());
    copy_(q_dev, qd);
    cuda::quantile_rows(sorted_rows(r).first, r.rows, r.len, q_dev, how, ignore_nan, res);
#endif
  } else visit_dtype(self.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* in = r.x.data<T>();
      T* o = res.data<T>();
      for_each_row(r.rows, r.len, [&](int64_t row) {
        const T* x = in + row * r.len;
        std::vector<T> buf;
        buf.reserve(size_t(r.len));
        bool has_nan = false;
        for (int64_t i = 0; i < r.len; ++i) {
          if (x[i] != x[i]) has_nan = true;
          else buf.push_back(x[i]);
        }
        if (has_nan && !ignore_nan) {
          for (int64_t j = 0; j < nq; ++j) o[row * nq + j] = std::numeric_limits<T>::quiet_NaN();
          return;
        }
        std::sort(buf.begin(), buf.end());
        for (int64_t j = 0; j < nq; ++j)
          o[row * nq + j] = order_math::quantile_of_sorted(buf.data(), int64_t(buf.size()), qs[size_t(j)], how);
      });
    }
  });
  if (q.dim() == 0) return write_out(op, reshape(res, shape), out);
  shape.push_back(nq);
  return write_out(op, movedim(reshape(res, shape), std::vector<int64_t>{-1}, std::vector<int64_t>{0}), out);
}

}  // namespace

std::tuple<Tensor, Tensor> aminmax_impl(const Tensor& self, const std::optional<int64_t>& dim,
                                        bool keepdim, OutArg) {
  if (!dim) {
    TP_CHECK(self.numel() > 0, "aminmax(): cannot compute aminmax over an empty dimension as the "
             "operation has no identity.");
    Tensor lo = amin(self), hi = amax(self);
    if (!keepdim) return {lo, hi};
    DimVector ones(size_t(self.dim()), 1);
    return {reshape(lo, ones), reshape(hi, ones)};
  }
  int64_t d = wrap_dim(*dim, self.dim());
  TP_CHECK_INDEX(self.dim() == 0 || self.size(d) > 0, "aminmax: Expected reduction dim ", d,
                 " to have non-zero size.");
  IntArrayRef dims(&d, 1);
  return {amin(self, dims, keepdim), amax(self, dims, keepdim)};
}

std::tuple<Tensor, Tensor> cummax_impl(const Tensor& self, int64_t dim, OutArg) {
  return cum_best<true>("cummax", self, dim);
}

std::tuple<Tensor, Tensor> cummin_impl(const Tensor& self, int64_t dim, OutArg) {
  return cum_best<false>("cummin", self, dim);
}

namespace {

/// Note [Complex logcumsumexp]: PyTorch folds each row with its complex logaddexp, acc =
/// lae(x_i, acc) from acc = -inf: m + log1p(exp(n - m)) with m the operand of the larger real
/// part (x_i on a tie), NaN where a real part is NaN, n where both real parts are -inf and
/// log(exp(n) + exp(m)) where both are +inf. The imaginary part accumulates unwrapped (it
/// leaves (-pi, pi]), so this is no log of a cumulative sum. In complex128, CPU only.
Tensor complex_logcumsumexp(const Tensor& self, int64_t dim) {
  using C = std::complex<double>;
  TP_CHECK_KIND(ErrorKind::NotImplemented, is_meta(self) || self.device().is_cpu(),
                "logcumsumexp: complex inputs on ", self.device().str(), " are not supported yet");
  Rows r = make_rows(_to_dtype(self, DType::Complex128), dim);
  Tensor res = empty_tensor(r.x.sizes(), DType::Complex128, self.device());
  if (!is_meta(self)) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    auto lae = [](C x, C acc) {
      const bool x_first = x.real() >= acc.real() || acc.real() != acc.real();
      const C m = x_first ? x : acc, n = x_first ? acc : x;
      if (m.real() != m.real() || n.real() != n.real()) return C(std::nan(""), std::nan(""));
      if (std::isinf(m.real()) && m.real() == n.real())
        return m.real() < 0 ? n : std::log(std::exp(n) + std::exp(m));
      const C e = std::exp(n - m);  // log1p(e) by Kahan's device, as the log1p kernel
      const C u(e.real() + 1.0, e.imag());
      if (u.real() == 1.0 && u.imag() == 0.0) return m + e;
      const C log_u = std::log(u), um1(u.real() - 1.0, u.imag());
      return m + (um1 == e ? log_u : log_u * (e / um1));
    };
    const auto* in = reinterpret_cast<const C*>(r.x.data<complex128_t>());
    auto* o = reinterpret_cast<C*>(res.data<complex128_t>());
    for_each_row(r.rows, r.len, [&](int64_t row) {
      C acc(-kInf, 0.0);
      for (int64_t i = 0; i < r.len; ++i) o[row * r.len + i] = acc = lae(in[row * r.len + i], acc);
    });
  }
  Tensor back = self.dim() ? contiguous(back_from_rows(res, r.order)) : reshape(res, IntArrayRef());
  return _to_dtype(back, self.dtype());
}

}  // namespace

Tensor logcumsumexp_impl(const Tensor& self, int64_t dim, OutArg out) {
  check_device("logcumsumexp", self);
  // PyTorch's order: out='s dtype, the dim, then the input's dtype
  if (out.tensor && !out.inplace)
    TP_CHECK(out.tensor->dtype() == self.dtype(), "expected scalar_type ", dtype_scalar_name(self.dtype()),
             " but found ", dtype_scalar_name(out.tensor->dtype()));
  (void)wrap_dim(dim, self.dim());
  if (is_complex(self.dtype())) return write_out("logcumsumexp", complex_logcumsumexp(self, dim), out);
  TP_CHECK_KIND(ErrorKind::NotImplemented, is_floating(self.dtype()), "logcumsumexp: not implemented for '",
                dtype_scalar_name(self.dtype()), "'");
  Rows r = make_rows(_to_dtype(self, DType::Float64), dim);
  Tensor res = empty_tensor(r.x.sizes(), DType::Float64, self.device());
  if (is_meta(self)) {  // Note [Meta kernels]: no values; the layout below is the real one
  } else if (self.device().is_cuda()) {
#ifdef TP_USE_CUDA
    cuda::logcumsumexp_rows(r.x, r.rows, r.len, res);
#endif
  } else {
    const double* in = r.x.data<double>();
    double* o = res.data<double>();
    for_each_row(r.rows, r.len, [&](int64_t row) {
      double acc = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < r.len; ++i)
        o[row * r.len + i] = acc = order_math::log_add_exp(acc, in[row * r.len + i]);
    });
  }
  Tensor back = self.dim() ? contiguous(back_from_rows(res, r.order)) : reshape(res, IntArrayRef());
  return write_out("logcumsumexp", _to_dtype(back, self.dtype()), out);
}

std::tuple<Tensor, Tensor> kthvalue_impl(const Tensor& self, int64_t k, int64_t dim, bool keepdim, OutArg) {
  int64_t d = wrap_dim(dim, self.dim());
  int64_t len = self.dim() ? self.size(d) : 1;
  if (len > 0)
    TP_CHECK(k >= 1 && k <= len, "kthvalue(): selected number k out of range for dimension ", d);
  TP_CHECK_INDEX(len > 0, "kthvalue(): Expected reduction dim ", d, " to have non-zero size.");
  // after the dim, k and size checks, as PyTorch (whose 0-d case returns before its dispatch)
  if (self.dim() != 0) reject_bool("kthvalue", self);
  return reduce_rows(
      "kthvalue", self, dim, keepdim,
      [&](const auto* row, int64_t n, auto& value, int64_t& index) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(row)>>;
        std::unique_ptr<T[]> v(new T[size_t(n)]);  // not std::vector: vector<bool> has no data()
        std::copy(row, row + n, v.get());
        std::vector<int64_t> ix(static_cast<size_t>(n));
        std::iota(ix.begin(), ix.end(), int64_t(0));
        order_math::quick_select(v.get(), ix.data(), n, k - 1);
        value = v[size_t(k - 1)];
        index = ix[size_t(k - 1)];
      },
      [&]([[maybe_unused]] const Rows& r, [[maybe_unused]] const Tensor& values,
          [[maybe_unused]] const Tensor& indices) {
#ifdef TP_USE_CUDA
        cuda::kthvalue_rows(r.x, r.rows, r.len, k - 1, values, indices);
#endif
      });
}

Tensor median_all_impl(const Tensor& self, OutArg) { return median_all("median", false, self); }

Tensor nanmedian_all_impl(const Tensor& self, OutArg) { return median_all("nanmedian", true, self); }

std::tuple<Tensor, Tensor> median_dim_impl(const Tensor& self, int64_t dim, bool keepdim, OutArg) {
  return median_dim("median", false, self, dim, keepdim);
}

std::tuple<Tensor, Tensor> nanmedian_dim_impl(const Tensor& self, int64_t dim, bool keepdim, OutArg) {
  return median_dim("nanmedian", true, self, dim, keepdim);
}

std::tuple<Tensor, Tensor> mode_impl(const Tensor& self, int64_t dim, bool keepdim, OutArg) {
  auto on_cuda = [&]([[maybe_unused]] const Rows& r, [[maybe_unused]] const Tensor& values,
                     [[maybe_unused]] const Tensor& indices) {
#ifdef TP_USE_CUDA
    cuda::mode_rows(r.x, r.rows, r.len, values, indices);
#endif
  };
  return reduce_rows("mode", self, dim, keepdim, [&](const auto* row, int64_t n, auto& value, int64_t& index) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(row)>>;
    std::vector<order_math::Keyed<T>> el(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) el[size_t(i)] = {row[i], i};
    order_math::sort_like_std(el.data(), n);
    order_math::mode_of_sorted(el.data(), n, value, index);
  }, on_cuda);
}

Tensor quantile_impl(const Tensor& self, const Tensor& q, const std::optional<int64_t>& dim,
                     bool keepdim, const std::string& interpolation, OutArg out) {
  return quantile("quantile", false, self, q, dim, keepdim, interpolation, out);
}

Tensor nanquantile_impl(const Tensor& self, const Tensor& q, const std::optional<int64_t>& dim,
                        bool keepdim, const std::string& interpolation, OutArg out) {
  return quantile("nanquantile", true, self, q, dim, keepdim, interpolation, out);
}

}  // namespace tp
