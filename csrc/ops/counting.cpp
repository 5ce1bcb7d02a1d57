// Counting ops: unique / unique_consecutive (values or slices along a dim, with inverse
// indices and counts), bincount and histc. On the GPU (cuda/order_stats.h) unique sorts
// with the sort op, flags run starts and scans them; bincount and histc add atomically.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "ops/meta.h"
#include "ops/order_stats_math.h"
#include "ops/reduce_utils.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"
#ifdef TP_USE_CUDA
#include "cuda/order_stats.h"
#endif

namespace tp {

namespace {

void check_device(const char* op, const Tensor& self) {
  TP_CHECK(self.device().is_cpu() || self.device().is_cuda() || is_meta(self), op, ": no ",
           device_type_name(self.device().type), " kernel");
}

Tensor index_tensor(const std::vector<int64_t>& v) {
  Tensor t = empty_tensor(std::vector<int64_t>{int64_t(v.size())}, DType::Int64);
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

/// Groups of equal elements (or slices) given in visiting order `order`: the first
/// element of each group, its size, and each element's group in `inverse`.
struct Groups {
  std::vector<int64_t> first, counts, inverse;
};

/// `same(a, b)`: whether elements a and b belong together; `order` lists the elements in
/// the order their groups are formed (sorted, or as they come for consecutive runs).
template <class Same>
Groups group_runs(const std::vector<int64_t>& order, Same same) {
  Groups g;
  g.inverse.resize(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || !same(order[i - 1], order[i])) {
      g.first.push_back(order[i]);
      g.counts.push_back(0);
    }
    ++g.counts.back();
    g.inverse[size_t(order[i])] = int64_t(g.first.size()) - 1;
  }
  return g;
}

/// unique's three results; inverse(), counts() make the requested ones (empty otherwise).
template <class Inverse, class Counts>
std::tuple<Tensor, Tensor, Tensor> results(const Tensor& values, IntArrayRef inverse_shape, bool return_inverse,
                                           bool return_counts, Inverse inverse, Counts counts) {
  Tensor none = empty_tensor(std::vector<int64_t>{0}, DType::Int64, values.device());
  return {values, return_inverse ? reshape(inverse(), inverse_shape) : none, return_counts ? counts() : none};
}

std::tuple<Tensor, Tensor, Tensor> results(const Tensor& values, const Groups& g, IntArrayRef inverse_shape,
                                           bool return_inverse, bool return_counts) {
  return results(values, inverse_shape, return_inverse, return_counts, [&] { return index_tensor(g.inverse); },
                 [&] { return index_tensor(g.counts); });
}

#ifdef TP_USE_CUDA
/// unique's results from runs found on the GPU: `pick` maps run starts to the indices
/// `values` come from (along `dim` of `from`).
std::tuple<Tensor, Tensor, Tensor> cuda_results(const Tensor& from, int64_t dim, const cuda::Runs& g,
                                                const Tensor& pick, IntArrayRef inverse_shape,
                                                bool return_inverse, bool return_counts) {
  Tensor first = pick.defined() ? index_select(pick, 0, g.first) : g.first;
  return results(index_select(from, dim, first), inverse_shape, return_inverse, return_counts,
                 [&] { return g.inverse; }, [&] { return g.counts; });
}
#endif

/// unique over the flattened input: sorted distinct values (NaNs stay apart, as NaN != NaN).
std::tuple<Tensor, Tensor, Tensor> unique_flat(const Tensor& self, bool consecutive, bool return_inverse,
                                               bool return_counts) {
  int64_t n = self.numel();
  Tensor flat = contiguous(reshape(self, std::vector<int64_t>{n}));
  Tensor sorted = flat, perm;
  if (!consecutive) std::tie(sorted, perm) = sort(flat, 0, false, /*stable=*/true);
  Tensor keys = contiguous(_to_dtype(sorted, opmath_dtype(self.dtype())));
  if (self.device().is_cuda()) {
#ifdef TP_USE_CUDA
    cuda::Runs g = cuda::runs_from_flags(cuda::run_flags(keys), perm);
    return cuda_results(sorted, 0, g, Tensor(), self.sizes(), return_inverse, return_counts);
#endif
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  if (consecutive) std::iota(order.begin(), order.end(), int64_t(0));
  else std::copy(perm.data<int64_t>(), perm.data<int64_t>() + n, order.begin());
  Groups g;
  visit_dtype(keys.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (!std::is_same_v<T, Half> && !std::is_same_v<T, BFloat16>) {
      const T* k = keys.data<T>();
      // walk positions of the sorted sequence; report original indices
      std::vector<int64_t> pos(static_cast<size_t>(n));
      std::iota(pos.begin(), pos.end(), int64_t(0));
      g = group_runs(pos, [&](int64_t a, int64_t b) { return k[a] == k[b]; });
    }
  });
  Tensor values = index_select(sorted, 0, index_tensor(g.first));
  if (return_inverse) {  // group ids were given per sorted position: move them to the originals
    std::vector<int64_t> inv(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) inv[size_t(order[size_t(i)])] = g.inverse[size_t(i)];
    g.inverse.swap(inv);
  }
  return results(values, g, self.sizes(), return_inverse, return_counts);
}

/// unique over slices along `dim`: slices sorted lexicographically (or consecutive runs).
std::tuple<Tensor, Tensor, Tensor> unique_slices(const char* op, const Tensor& self, int64_t dim,
                                                 bool consecutive, bool return_inverse, bool return_counts) {
  TP_CHECK_INDEX(self.dim() > 0, "Dimension specified as ", dim, " but tensor has no dimensions");
  int64_t d = wrap_dim(dim, self.dim());
  for (int64_t i = 0; i < self.dim(); ++i)
    TP_CHECK(i == d || self.size(i) > 0, op, ": There are 0 sized dimensions, and they aren't selected, "
             "so unique cannot be applied");
  int64_t n = self.size(d), m = n ? self.numel() / n : 0;
  Tensor x = contiguous(_to_dtype(movedim(self, std::vector<int64_t>{d}, std::vector<int64_t>{0}),
                                  opmath_dtype(self.dtype())));
  if (self.device().is_cuda()) {
#ifdef TP_USE_CUDA
    // slices sorted lexicographically by stable sorts of their columns, last column first
    Tensor rows = reshape(x, std::vector<int64_t>{n, m});
    Tensor perm = arange(Scalar(int64_t(0)), Scalar(n), Scalar(int64_t(1)), DType::Int64, self.device());
    for (int64_t c = consecutive ? -1 : m - 1; c >= 0; --c) {
      Tensor column = index_select(reshape(narrow(rows, 1, c, 1), std::vector<int64_t>{n}), 0, perm);
      perm = index_select(perm, 0, std::get<1>(sort(column, 0, false, /*stable=*/true)));
    }
    cuda::Runs g = cuda::runs_from_flags(cuda::slice_run_flags(x, perm, n, m), perm);
    return cuda_results(self, d, g, perm, std::vector<int64_t>{n}, return_inverse, return_counts);
#endif
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t(0));
  Groups g;
  visit_dtype(x.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (!std::is_same_v<T, Half> && !std::is_same_v<T, BFloat16>) {
      const T* p = x.data<T>();
      auto same = [&](int64_t a, int64_t b) { return std::equal(p + a * m, p + (a + 1) * m, p + b * m); };
      if (!consecutive) {
        std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
          return std::lexicographical_compare(p + a * m, p + (a + 1) * m, p + b * m, p + (b + 1) * m);
        });
      }
      g = group_runs(order, same);
    }
  });
  // PyTorch lays the result out with `dim` outermost (the slices are gathered along dim 0
  // of the moved input, then moved back): strides (1, n) for dim=1 of a matrix.
  Tensor moved = movedim(self, std::vector<int64_t>{d}, std::vector<int64_t>{0});
  Tensor values = movedim(contiguous(index_select(moved, 0, index_tensor(g.first))),
                          std::vector<int64_t>{0}, std::vector<int64_t>{d});
  return results(values, g, std::vector<int64_t>{n}, return_inverse, return_counts);
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> unique_impl(const Tensor& self, bool sorted, bool return_inverse,
                                               bool return_counts, const std::optional<int64_t>& dim, OutArg) {
  (void)sorted;  // like PyTorch's CPU kernel, the result always comes sorted
  check_device("unique", self);
  if (dim) return unique_slices("unique", self, *dim, false, return_inverse, return_counts);
  return unique_flat(self, false, return_inverse, return_counts);
}

std::tuple<Tensor, Tensor, Tensor> unique_consecutive_impl(const Tensor& self, bool return_inverse,
                                                           bool return_counts,
                                                           const std::optional<int64_t>& dim, OutArg) {
  check_device("unique_consecutive", self);
  if (dim) return unique_slices("unique_consecutive", self, *dim, true, return_inverse, return_counts);
  return unique_flat(self, true, return_inverse, return_counts);
}

Tensor bincount_impl(const Tensor& self, const std::optional<Tensor>& weights, int64_t minlength, OutArg) {
  check_device("bincount", self);
  TP_CHECK_KIND(ErrorKind::NotImplemented, is_integral(self.dtype(), false), "bincount: not implemented for '",
                dtype_scalar_name(self.dtype()), "'");
  TP_CHECK(self.dim() == 1, "bincount only supports 1-d non-negative integral inputs.");
  TP_CHECK(minlength >= 0, "bincount: minlength should be >= 0");
  // an empty input gives int64 zeros before the weights are looked at (PyTorch)
  if (self.numel() == 0) return zeros(std::vector<int64_t>{minlength}, DType::Int64, self.device());
  if (weights) {
    TP_CHECK(weights->dim() == 1 && weights->size(0) == self.size(0),
             "bincount: weights should be 1-d and have the same length as input");
    TP_CHECK(weights->device() == self.device(), "bincount: weights should be on the device of input (",
             device_type_name(self.device().type), ")");
  }
  int64_t n = self.numel();
  Tensor x = contiguous(_to_dtype(self, DType::Int64));
  int64_t top = host_copy(amax(x)).data<int64_t>()[0];  // on the GPU: reads back, as PyTorch does
  TP_CHECK(host_copy(amin(x)).data<int64_t>()[0] >= 0, "bincount only supports 1-d non-negative integral inputs.");
  TP_CHECK(top < std::numeric_limits<int64_t>::max(), "maximum value of input overflowed, it should be < ",
           std::numeric_limits<int64_t>::max(), " but got ", top);  // top + 1 bins
  int64_t bins = std::max(minlength, top + 1);
  DType result = weights && weights->dtype() == DType::Float32 ? DType::Float32 : DType::Float64;
  if (self.device().is_cuda()) {
    Tensor w = weights ? contiguous(_to_dtype(*weights, DType::Float64)) : Tensor();
    Tensor res = empty_tensor(std::vector<int64_t>{bins}, weights ? DType::Float64 : DType::Int64, self.device());
#ifdef TP_USE_CUDA
    cuda::bincount(x, w, res);
#endif
    return weights ? _to_dtype(res, result) : res;
  }
  const int64_t* v = x.data<int64_t>();
  if (!weights) {
    Tensor counts = zeros(std::vector<int64_t>{bins}, DType::Int64);
    int64_t* c = counts.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) ++c[v[i]];
    return counts;
  }
  Tensor w = contiguous(_to_dtype(*weights, DType::Float64));
  const double* wv = w.data<double>();
  Tensor sums = zeros(std::vector<int64_t>{bins}, DType::Float64);
  double* s = sums.data<double>();
  for (int64_t i = 0; i < n; ++i) s[v[i]] += wv[i];
  return _to_dtype(sums, result);
}

Tensor histc_impl(const Tensor& self, int64_t bins, const Scalar& min, const Scalar& max, OutArg out) {
  check_device("histc", self);
  TP_CHECK_KIND(ErrorKind::NotImplemented, is_floating(self.dtype()), "histc: not implemented for '",
                dtype_scalar_name(self.dtype()), "'");
  TP_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension 0");
  double lo = min.to_double(), hi = max.to_double();
  TP_CHECK(!(lo > hi), "torch.histc: max must be larger than min");
  if (is_meta(self)) {  // Note [Meta kernels]: no data, so no data range; PyTorch then checks
    TP_CHECK(lo <= hi, "histc(): max must be larger than min");  // NaN bounds only
    return write_out("histc", empty_tensor(std::vector<int64_t>{bins}, self.dtype(), self.device()), out);
  }
  Tensor x = contiguous(_to_dtype(self, opmath_dtype(self.dtype())));
  if (lo == hi && x.numel() > 0) {  // the data's range (NaN if the data has one)
    lo = host_copy(_to_dtype(amin(x), DType::Float64)).data<double>()[0];
    hi = host_copy(_to_dtype(amax(x), DType::Float64)).data<double>()[0];
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  TP_CHECK(std::isfinite(lo) && std::isfinite(hi), "torch.histc: range of [", lo, ", ", hi, "] is not finite");
  Tensor res;
  visit_dtype(x.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      // float16/bfloat16 round every step to their own precision, as PyTorch's kernel does
      DType dt = self.dtype();
      auto rnd = [dt](T v) -> T {
        if (dt == DType::Float16) return T(float(Half(float(v))));
        if (dt == DType::BFloat16) return T(float(BFloat16(float(v))));
        return v;
      };
      T left = rnd(T(lo)), right = rnd(T(hi)), width = rnd(right - left), nbins = rnd(T(bins));
      if (self.device().is_cuda()) {
        res = empty_tensor(std::vector<int64_t>{bins}, DType::Int64, self.device());
#ifdef TP_USE_CUDA
        cuda::histc(x, dt, double(left), double(right), double(width), double(nbins), res);
#endif
        return;
      }
      const T* p = x.data<T>();
      std::vector<int64_t> counts(size_t(bins), 0);
      for (int64_t i = 0; i < x.numel(); ++i) {
        int64_t b = order_math::histc_bin(p[i], left, right, width, nbins, bins, rnd);
        if (b >= 0) ++counts[size_t(b)];
      }
      res = index_tensor(counts);
    }
  });
  return write_out("histc", _to_dtype(res, self.dtype()), out);
}

}  // namespace tp
