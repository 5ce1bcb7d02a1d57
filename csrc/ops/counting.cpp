// Counting ops: unique / unique_consecutive (values or slices along a dim, with inverse
// indices and counts), bincount and histc.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "ops/reduce_utils.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"

namespace tp {

namespace {

void check_cpu(const char* op, const Tensor& self) {
  TP_CHECK(self.device().is_cpu(), op, ": no ", device_type_name(self.device().type), " kernel");
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

std::tuple<Tensor, Tensor, Tensor> results(const Tensor& values, const Groups& g, IntArrayRef inverse_shape,
                                           bool return_inverse, bool return_counts) {
  Tensor inverse = return_inverse ? reshape(index_tensor(g.inverse), inverse_shape)
                                  : empty_tensor(std::vector<int64_t>{0}, DType::Int64);
  Tensor counts = return_counts ? index_tensor(g.counts) : empty_tensor(std::vector<int64_t>{0}, DType::Int64);
  return {values, inverse, counts};
}

/// unique over the flattened input: sorted distinct values (NaNs stay apart, as NaN != NaN).
std::tuple<Tensor, Tensor, Tensor> unique_flat(const Tensor& self, bool consecutive, bool return_inverse,
                                               bool return_counts) {
  int64_t n = self.numel();
  Tensor flat = contiguous(reshape(self, std::vector<int64_t>{n}));
  Tensor sorted = flat, perm;
  if (!consecutive) std::tie(sorted, perm) = sort(flat, 0, false, /*stable=*/true);
  Tensor keys = contiguous(_to_dtype(sorted, opmath_dtype(self.dtype())));
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
  Tensor values = index_select(self, d, index_tensor(g.first));
  return results(values, g, std::vector<int64_t>{n}, return_inverse, return_counts);
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> unique_impl(const Tensor& self, bool sorted, bool return_inverse,
                                               bool return_counts, const std::optional<int64_t>& dim, OutArg) {
  (void)sorted;  // like PyTorch's CPU kernel, the result always comes sorted
  check_cpu("unique", self);
  if (dim) return unique_slices("unique", self, *dim, false, return_inverse, return_counts);
  return unique_flat(self, false, return_inverse, return_counts);
}

std::tuple<Tensor, Tensor, Tensor> unique_consecutive_impl(const Tensor& self, bool return_inverse,
                                                           bool return_counts,
                                                           const std::optional<int64_t>& dim, OutArg) {
  check_cpu("unique_consecutive", self);
  if (dim) return unique_slices("unique_consecutive", self, *dim, true, return_inverse, return_counts);
  return unique_flat(self, true, return_inverse, return_counts);
}

Tensor bincount_impl(const Tensor& self, const std::optional<Tensor>& weights, int64_t minlength, OutArg) {
  check_cpu("bincount", self);
  TP_CHECK_KIND(ErrorKind::NotImplemented, is_integral(self.dtype(), false), "bincount: not implemented for '",
                dtype_scalar_name(self.dtype()), "'");
  TP_CHECK(self.dim() == 1, "bincount only supports 1-d non-negative integral inputs.");
  TP_CHECK(minlength >= 0, "bincount: minlength should be >= 0");
  if (weights)
    TP_CHECK(weights->dim() == 1 && weights->size(0) == self.size(0),
             "bincount: weights should be 1-d and have the same length as input");
  int64_t n = self.numel();
  if (n == 0) return zeros(std::vector<int64_t>{minlength}, DType::Int64);
  Tensor x = contiguous(_to_dtype(self, DType::Int64));
  const int64_t* v = x.data<int64_t>();
  int64_t top = *std::max_element(v, v + n);
  TP_CHECK(*std::min_element(v, v + n) >= 0, "bincount only supports 1-d non-negative integral inputs.");
  int64_t bins = std::max(minlength, top + 1);
  if (!weights) {
    Tensor counts = zeros(std::vector<int64_t>{bins}, DType::Int64);
    int64_t* c = counts.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) ++c[v[i]];
    return counts;
  }
  DType result = weights->dtype() == DType::Float32 ? DType::Float32 : DType::Float64;
  Tensor w = contiguous(_to_dtype(*weights, DType::Float64));
  const double* wv = w.data<double>();
  Tensor sums = zeros(std::vector<int64_t>{bins}, DType::Float64);
  double* s = sums.data<double>();
  for (int64_t i = 0; i < n; ++i) s[v[i]] += wv[i];
  return _to_dtype(sums, result);
}

Tensor histc_impl(const Tensor& self, int64_t bins, const Scalar& min, const Scalar& max, OutArg out) {
  check_cpu("histc", self);
  TP_CHECK_KIND(ErrorKind::NotImplemented, is_floating(self.dtype()), "histc: not implemented for '",
                dtype_scalar_name(self.dtype()), "'");
  TP_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension 0");
  double lo = min.to_double(), hi = max.to_double();
  TP_CHECK(!(lo > hi), "torch.histc: max must be larger than min");
  Tensor x = contiguous(_to_dtype(self, opmath_dtype(self.dtype())));
  if (lo == hi && x.numel() > 0) {  // the data's range (NaN if the data has one)
    lo = _to_dtype(amin(x), DType::Float64).data<double>()[0];
    hi = _to_dtype(amax(x), DType::Float64).data<double>()[0];
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  TP_CHECK(std::isfinite(lo) && std::isfinite(hi), "torch.histc: range of [", lo, ", ", hi, "] is not finite");
  std::vector<int64_t> counts(size_t(bins), 0);
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
      const T* p = x.data<T>();
      T left = rnd(T(lo)), right = rnd(T(hi)), width = rnd(right - left), nbins = rnd(T(bins));
      for (int64_t i = 0; i < x.numel(); ++i) {
        T e = p[i];
        if (!(e >= left && e <= right)) continue;  // outside the range, or NaN
        auto pos = int64_t(rnd(rnd(rnd(e - left) * nbins) / width));
        ++counts[size_t(std::min(pos, bins - 1))];  // the right edge belongs to the last bin
      }
    }
  });
  Tensor res = _to_dtype(index_tensor(counts), self.dtype());
  return write_out("histc", res, out);
}

}  // namespace tp
