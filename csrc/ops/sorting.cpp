// Scans and orderings along one dim: cumsum, cumprod, sort, argsort, msort, topk.
// Each moves `dim` last, makes the rows contiguous, works row by row (rows in parallel),
// and moves the dim back.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"
#ifdef TP_USE_CUDA
#include "cuda/sort.h"
#endif

namespace tp {

Tensor rows_along(const Tensor& self, int64_t dim, DimVector& order) {
  int64_t nd = self.dim();
  order.resize(0);
  for (int64_t i = 0; i < nd; ++i) if (i != dim) order.push_back(i);
  if (nd) order.push_back(dim);
  return contiguous(permute(self, order));
}

Tensor back_from_rows(const Tensor& rows, const DimVector& order) {
  DimVector inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) inverse[size_t(order[i])] = int64_t(i);
  return permute(rows, inverse);
}

namespace {

DType half_to_float(DType dt) {
  return dt == DType::Float16 || dt == DType::BFloat16 ? DType::Float32 : dt;
}

template <class F>
void for_rows(int64_t rows, int64_t len, F f) {
#pragma omp parallel for num_threads(get_num_threads()) if (rows > 1 && rows * len >= 32768)
  for (int64_t r = 0; r < rows; ++r) f(r);
}

Tensor scan(const char* op, bool product, const Tensor& self, int64_t dim,
            const std::optional<DType>& dtype) {
  TP_CHECK(self.device().is_cpu() || self.device().is_cuda(), op, ": no ",
           device_type_name(self.device().type), " kernel");
  DType result = dtype ? *dtype : is_integral(self.dtype(), true) ? DType::Int64 : self.dtype();
  int64_t d = self.dim() ? wrap_dim(dim, self.dim()) : (wrap_dim(dim, 0), 0);
  DType compute = is_floating(result) ? DType::Float64 : DType::Int64;
  DimVector order;
  Tensor x = rows_along(_to_dtype(self, compute), d, order);
  int64_t len = self.dim() ? self.size(d) : 1, rows = len ? x.numel() / len : 0;
  Tensor out = empty_tensor(x.sizes(), compute, self.device());
  if (self.device().is_cuda()) {
#ifdef TP_USE_CUDA
    cuda::scan_rows(x, rows, len, product, out);
#endif
  } else visit_dtype(compute, [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, double> || std::is_same_v<T, int64_t>) {
      const T* in = x.data<T>();
      T* o = out.data<T>();
      for_rows(rows, len, [&](int64_t r) {
        T acc = product ? T(1) : T(0);
        for (int64_t i = 0; i < len; ++i) {
          acc = product ? T(acc * in[r * len + i]) : T(acc + in[r * len + i]);
          o[r * len + i] = acc;
        }
      });
    }
  });
  return _to_dtype(contiguous(back_from_rows(out, order)), result);
}

/// An unsigned key with the same order as `v` (NaN above +inf, all NaNs equal, -0 == +0).
template <class T>
auto order_key(T v) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    using U = std::conditional_t<std::is_same_v<T, float>, uint32_t, uint64_t>;
    if (v != v) return ~U(0);
    if (v == T(0)) v = T(0);  // -0 sorts equal to +0, as comparisons say
    U u;
    std::memcpy(&u, &v, sizeof(U));
    constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
    return (u & sign) ? U(~u) : U(u | sign);
  } else if constexpr (sizeof(T) == 8) {
    return uint64_t(v) ^ (std::is_signed_v<T> ? uint64_t(1) << 63 : 0);
  } else {
    int64_t w = int64_t(v);  // widen small types; the +2^31 shift keeps the order
    return uint32_t(uint64_t(w + (std::is_signed_v<T> ? int64_t(1) << 31 : 0)));
  }
}

/// Stable LSD radix sort of `idx` by `keys` (8-bit digits, passes with one digit skipped).
template <class K>
void radix_sort(std::vector<K>& keys, std::vector<int64_t>& idx) {
  size_t n = keys.size();
  std::vector<K> k2(n);
  std::vector<int64_t> i2(n);
  for (int shift = 0; shift < int(sizeof(K) * 8); shift += 8) {
    size_t count[256] = {};
    for (K k : keys) ++count[(k >> shift) & 0xff];
    if (count[(keys[0] >> shift) & 0xff] == n) continue;  // every key shares this digit
    size_t pos[256], acc = 0;
    for (int b = 0; b < 256; ++b) { pos[b] = acc; acc += count[b]; }
    for (size_t j = 0; j < n; ++j) {
      size_t p = pos[(keys[j] >> shift) & 0xff]++;
      k2[p] = keys[j];
      i2[p] = idx[j];
    }
    keys.swap(k2);
    idx.swap(i2);
  }
}

/// Sorted (values, indices) of each row; NaN sorts above every number.
std::tuple<Tensor, Tensor> sort_rows(const char* op, const Tensor& self, int64_t dim,
                                     bool descending, int64_t k) {
  TP_CHECK(self.device().is_cpu() || self.device().is_cuda(), op, ": no ",
           device_type_name(self.device().type), " kernel");
  int64_t d = self.dim() ? wrap_dim(dim, self.dim()) : (wrap_dim(dim, 0), 0);
  DType compute = half_to_float(self.dtype());
  DimVector order;
  Tensor x = rows_along(_to_dtype(self, compute), d, order);
  int64_t len = self.dim() ? self.size(d) : 1, rows = len ? x.numel() / len : 0;
  if (k < 0) k = len;
  DimVector out_sizes(x.sizes().data(), x.sizes().size());
  if (!out_sizes.empty()) out_sizes[out_sizes.size() - 1] = k;
  if (self.device().is_cuda()) {  // a full stable sort of each row, then the first k
    Tensor values = empty_tensor(x.sizes(), compute, self.device());
    Tensor indices = empty_tensor(x.sizes(), DType::Int64, self.device());
#ifdef TP_USE_CUDA
    cuda::sort_rows(x, rows, len, descending, values, indices);
#endif
    if (k < len) {
      int64_t last = std::max<int64_t>(x.dim() - 1, 0);
      values = contiguous(narrow(values, last, 0, k));
      indices = contiguous(narrow(indices, last, 0, k));
    }
    return {_to_dtype(contiguous(back_from_rows(values, order)), self.dtype()),
            contiguous(back_from_rows(indices, order))};
  }
  Tensor values = empty_tensor(out_sizes, compute), indices = empty_tensor(out_sizes, DType::Int64);
  visit_dtype(compute, [&](auto v) {
    using T = decltype(v);
    if constexpr (!std::is_same_v<T, Half> && !std::is_same_v<T, BFloat16>) {
      const T* in = x.data<T>();
      T* ov = values.data<T>();
      int64_t* oi = indices.data<int64_t>();
      for_rows(rows, len, [&](int64_t r) {
        const T* row = in + r * len;
        std::vector<int64_t> idx(static_cast<size_t>(len));
        std::iota(idx.begin(), idx.end(), int64_t(0));
        auto less = [&](int64_t a, int64_t b) {
          T x = row[a], y = row[b];
          if constexpr (std::is_floating_point_v<T>) {
            if (y != y) return x == x;  // NaN is the largest
            if (x != x) return false;
          }
          return x < y;
        };
        auto cmp = [&](int64_t a, int64_t b) { return descending ? less(b, a) : less(a, b); };
        if (k < len) {
          std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int64_t a, int64_t b) {
            return cmp(a, b) || (!cmp(b, a) && a < b);  // ties keep input order
          });
        } else if (len >= 256) {  // long rows: radix sort on order-preserving keys
          using K = decltype(order_key(T{}));
          std::vector<K> keys(static_cast<size_t>(len));
          for (int64_t i = 0; i < len; ++i) keys[size_t(i)] = descending ? K(~order_key(row[i])) : order_key(row[i]);
          radix_sort(keys, idx);
        } else {
          std::stable_sort(idx.begin(), idx.end(), cmp);
        }
        for (int64_t i = 0; i < k; ++i) {
          ov[r * k + i] = row[idx[size_t(i)]];
          oi[r * k + i] = idx[size_t(i)];
        }
      });
    }
  });
  return {_to_dtype(contiguous(back_from_rows(values, order)), self.dtype()),
          contiguous(back_from_rows(indices, order))};
}

}  // namespace

Tensor cumsum_impl(const Tensor& self, int64_t dim, const std::optional<DType>& dtype, OutArg) {
  return scan("cumsum", false, self, dim, dtype);
}

Tensor cumprod_impl(const Tensor& self, int64_t dim, const std::optional<DType>& dtype, OutArg) {
  return scan("cumprod", true, self, dim, dtype);
}

std::tuple<Tensor, Tensor> sort_impl(const Tensor& self, int64_t dim, bool descending, bool stable,
                                     OutArg) {
  (void)stable;  // the sort is always stable, which also satisfies stable=False
  return sort_rows("sort", self, dim, descending, -1);
}

Tensor argsort_impl(const Tensor& self, int64_t dim, bool descending, bool stable, OutArg) {
  (void)stable;
  return std::get<1>(sort_rows("argsort", self, dim, descending, -1));
}

Tensor msort_impl(const Tensor& self, OutArg) {
  return std::get<0>(sort_rows("msort", self, 0, false, -1));
}

std::tuple<Tensor, Tensor> topk_impl(const Tensor& self, int64_t k, int64_t dim, bool largest,
                                     bool sorted, OutArg) {
  (void)sorted;  // results always come sorted (PyTorch's sorted=False order is unspecified)
  int64_t len = self.dim() ? self.size(wrap_dim(dim, self.dim())) : 1;
  TP_CHECK(k >= 0 && k <= len, "selected index k out of range");
  TP_CHECK(self.dtype() != DType::Bool, "topk does not support bool dtypes on CPU");
  return sort_rows("topk", self, dim, largest, k);
}

}  // namespace tp
