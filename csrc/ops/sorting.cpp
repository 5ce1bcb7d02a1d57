// Scans and orderings along one dim: cumsum, cumprod, sort, argsort, msort, topk.
// Each moves `dim` last, makes the rows contiguous, works row by row (rows in parallel),
// and moves the dim back. The sorting loop is csrc/kernels/cpu/sort_kernel.cpp.
#include <omp.h>

#include <algorithm>

#include "core/error.h"
#include "kernels/cpu_stubs.h"
#include "ops/meta.h"
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
  TP_CHECK(self.device().is_cpu() || self.device().is_cuda() || is_meta(self), op, ": no ",
           device_type_name(self.device().type), " kernel");
  DType result = dtype ? *dtype : is_integral(self.dtype(), true) ? DType::Int64 : self.dtype();
  int64_t d = self.dim() ? wrap_dim(dim, self.dim()) : (wrap_dim(dim, 0), 0);
  DType compute = is_complex(result)    ? DType::Complex128
                  : is_floating(result) ? DType::Float64
                                        : DType::Int64;
  DimVector order;
  Tensor x = rows_along(_to_dtype(self, compute), d, order);
  int64_t len = self.dim() ? self.size(d) : 1, rows = len ? x.numel() / len : 0;
  Tensor out = empty_tensor(x.sizes(), compute, self.device());
  if (is_meta(self)) {  // Note [Meta kernels]: no values; the layout below is the real one
  } else if (self.device().is_cuda()) {
#ifdef TP_USE_CUDA
    cuda::scan_rows(x, rows, len, product, out);
#endif
  } else visit_dtype_with_complex(compute, [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, double> || std::is_same_v<T, int64_t> ||
                  std::is_same_v<T, complex128_t>) {
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

/// Sorted (values, indices) along `dim` (the first k of each row for topk); NaN sorts
/// above every number. Layouts as PyTorch's: a full sort keeps self's strides (dense ones
/// in their order when self is not dense), topk's results are contiguous. The rows are
/// sorted in place in the results when their rows view is contiguous, else through a
/// contiguous buffer.
std::tuple<Tensor, Tensor> sort_rows(const char* op, const Tensor& self, int64_t dim,
                                     bool descending, int64_t k, int topk = 0) {
  TP_CHECK(self.device().is_cpu() || self.device().is_cuda() || is_meta(self), op, ": no ",
           device_type_name(self.device().type), " kernel");
  int64_t d = self.dim() ? wrap_dim(dim, self.dim()) : (wrap_dim(dim, 0), 0);
  int64_t len = self.dim() ? self.size(d) : 1;
  bool full_sort = k < 0;
  if (full_sort) k = len;
  DimVector out_sizes(self.sizes().data(), self.sizes().size());
  if (self.dim()) out_sizes[size_t(d)] = k;
  DimVector out_strides = full_sort ? preserving_strides(self.sizes(), self.strides())
                                    : contiguous_strides(out_sizes);
  Tensor values = empty_strided_tensor(out_sizes, out_strides, self.dtype(), self.device());
  Tensor indices = empty_strided_tensor(out_sizes, out_strides, DType::Int64, self.device());
  if (is_meta(self)) return {values, indices};
  DType compute = half_to_float(self.dtype());
  DimVector order;
  Tensor x = rows_along(_to_dtype(self, compute), d, order);
  int64_t rows = len ? x.numel() / len : 0;
  // the results seen as rows (dim last): written in place when contiguous
  bool dim_last = d + 1 >= self.dim();
  Tensor value_rows = dim_last ? values : permute(values, order);
  Tensor index_rows = dim_last ? indices : permute(indices, order);
  if (self.device().is_cuda()) {  // a full stable sort of each row, then the first k
    Tensor sv = empty_tensor(x.sizes(), compute, self.device());
    Tensor si = empty_tensor(x.sizes(), DType::Int64, self.device());
#ifdef TP_USE_CUDA
    cuda::sort_rows(x, rows, len, descending, sv, si);
#endif
    if (k < len) {
      int64_t last = std::max<int64_t>(x.dim() - 1, 0);
      sv = narrow(sv, last, 0, k);
      si = narrow(si, last, 0, k);
    }
    copy_(value_rows, sv);
    copy_(index_rows, si);
    return {values, indices};
  }
  bool direct_values = compute == self.dtype() && value_rows.is_contiguous();
  bool direct_indices = index_rows.is_contiguous();
  Tensor sv = direct_values ? value_rows : empty_tensor(value_rows.sizes(), compute);
  Tensor si = direct_indices ? index_rows : empty_tensor(index_rows.sizes(), DType::Int64);
  cpu::sort_stub(compute, x.data_ptr(), rows, len, k, descending, topk, sv.data_ptr(), si.data<int64_t>());
  if (!direct_values) copy_(value_rows, sv);
  if (!direct_indices) copy_(index_rows, si);
  return {values, indices};
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
  const int64_t d = wrap_dim(dim, self.dim());  // a 0-d tensor takes -1 and 0 (IndexError else)
  int64_t len = self.dim() ? self.size(d) : 1;
  TP_CHECK(k >= 0 && k <= len, "selected index k out of range");
  TP_CHECK(self.dtype() != DType::Bool, "topk does not support bool dtypes on CPU");
  if (self.dim() == 0 && !is_meta(self))  // PyTorch copies a 0-d self whatever k (0 or 1)
    return {clone(self), zeros(IntArrayRef{}, DType::Int64, self.device())};
  // on CPU the order of equal values (and the order when not sorted) is PyTorch's
  return sort_rows("topk", self, dim, largest, k, sorted ? 1 : 2);
}

}  // namespace tp
