// Reductions over dims (sum, mean, prod, amax, amin, all, any): dim as int, list or None,
// keepdim, dtype= and out=. Layouts: reduced dims innermost, outermost or one block in the
// middle run in place; anything else is permuted to "kept dims first" and made contiguous.
#include <cmath>
#include <limits>

#include "core/error.h"
#include "kernels/cpu_stubs.h"
#include "ops/complex/complex.h"
#include "ops/meta.h"
#include "ops/pointwise.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"
#ifdef TP_USE_CUDA
#include "cuda/reduce.h"
#endif

namespace tp {

namespace {

using Kind = cpu::ReduceKind;

struct Plan {
  std::vector<bool> reduced;  // per input dim
  DimVector out_shape;        // with keepdim applied
  int64_t count = 1;          // elements folded into each result
};

/// `dim=()` reduces every dim for sum/mean/amax/amin but none for all/any (PyTorch).
Plan make_plan(const char* op, const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
               bool empty_means_all) {
  int64_t nd = self.dim();
  Plan p;
  p.reduced.assign(size_t(std::max<int64_t>(nd, 1)), false);
  bool all = !dim || (dim->empty() && empty_means_all);
  if (all) {
    std::fill(p.reduced.begin(), p.reduced.end(), true);
  } else {
    for (int64_t d : *dim) {
      int64_t w = wrap_dim(d, nd);
      TP_CHECK(!p.reduced[size_t(w)], op, ": dim ", w, " appears multiple times in the list of dims");
      p.reduced[size_t(w)] = true;
    }
  }
  for (int64_t i = 0; i < nd; ++i) {
    if (p.reduced[size_t(i)]) {
      p.count *= self.size(i);
      if (keepdim) p.out_shape.push_back(1);
    } else {
      p.out_shape.push_back(self.size(i));
    }
  }
  return p;
}

/// The input as a contiguous [B, R, K] block reduced over R (R = p.count, B * K results).
struct Block3 {
  Tensor src;
  int64_t B, R, K;
};

Block3 as_block(const Tensor& x, const Plan& p, int64_t results) {
  int64_t nd = x.dim();
  // A contiguous input whose reduced dims (ignoring size-1 dims) all come after the
  // kept ones reduces rows in place ("inner"); all before them, columns ("outer").
  bool any_reduced = false, kept_after_reduced = false, reduced_after_kept = false;
  bool seen_kept = false;
  for (int64_t i = 0; i < nd; ++i) {
    if (x.size(i) == 1) continue;
    if (p.reduced[size_t(i)]) {
      any_reduced = true;
      reduced_after_kept |= seen_kept;
    } else {
      seen_kept = true;
      kept_after_reduced |= any_reduced;
    }
  }
  int64_t R = p.count, K = results;
  bool dense = x.is_contiguous();
  // Reduced dims forming one block between kept dims: `before` slabs of R rows of
  // `inner` columns, reduced one after another.
  if (dense && any_reduced && kept_after_reduced && reduced_after_kept) {
    int first = -1, last = -1;
    for (int64_t i = 0; i < nd; ++i)
      if (x.size(i) != 1 && p.reduced[size_t(i)]) last = int(i), first = first < 0 ? int(i) : first;
    int64_t before = 1, inner = 1;
    bool slabs = true;
    for (int64_t i = 0; i < nd; ++i) {
      if (i < first) before *= x.size(i);
      else if (i > last) inner *= x.size(i);
      else slabs &= x.size(i) == 1 || p.reduced[size_t(i)];
    }
    if (slabs) return {x, before, R, inner};
  }
  if (dense && any_reduced && kept_after_reduced && !reduced_after_kept) return {x, 1, R, K};
  if (dense && !kept_after_reduced) return {x, K, R, 1};
  DimVector order;  // kept dims first, reduced last, then contiguous
  for (int64_t i = 0; i < nd; ++i) if (!p.reduced[size_t(i)]) order.push_back(i);
  for (int64_t i = 0; i < nd; ++i) if (p.reduced[size_t(i)]) order.push_back(i);
  return {contiguous(permute(x, order)), K, R, 1};
}

/// Result dtype of the kernel for `kind` on compute dtype `dt`.
DType kernel_dtype(Kind kind, DType dt) {
  switch (kind) {
    case Kind::Sum: return is_floating(dt) ? dt : DType::Int64;
    case Kind::Prod: return is_floating(dt) ? DType::Float64 : DType::Int64;
    case Kind::All: case Kind::Any: return DType::Bool;
    default: return dt;
  }
}

Tensor reduce(const char* op, Kind kind, const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
              DType result_dtype, DType compute_dtype, OutArg out, bool mean = false) {
  TP_CHECK(self.device().is_cpu() || self.device().is_cuda() || is_meta(self), op, ": no ",
           device_type_name(self.device().type), " kernel");
  Plan p = make_plan(op, self, dim, keepdim, kind != Kind::All && kind != Kind::Any);
  if ((kind == Kind::Max || kind == Kind::Min) && p.count == 0) {
    // PyTorch asks for a dim first (RuntimeError), then names an empty reduced one (IndexError)
    TP_CHECK(dim && !dim->empty(), op, "(): Expected reduction dim to be specified for "
             "input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
    for (int64_t i = 0; i < self.dim(); ++i)
      TP_CHECK_INDEX(!(p.reduced[size_t(i)] && self.size(i) == 0), op, "(): Expected reduction dim ",
                     i, " to have non-zero size.");
  }
  Tensor x = self.dtype() == compute_dtype ? self : _to_dtype(self, compute_dtype);
  DType kdt = kernel_dtype(kind, compute_dtype);
  // all/any over dim=() reduce nothing: PyTorch's meta result then keeps the input's layout
  // (its meta form is elementwise), its CPU kernels' and ours are contiguous.
  bool meta_elementwise = is_meta(self) && dim && dim->empty() && (kind == Kind::All || kind == Kind::Any);
  Tensor res = meta_elementwise
                   ? empty_strided_tensor(p.out_shape, preserving_strides(self.sizes(), self.strides()), kdt, self.device())
                   : empty_tensor(p.out_shape, kdt, self.device());
  if (is_meta(self)) {  // Note [Meta kernels]: no values to compute
  } else if (p.count == 0) {  // the identity everywhere (amax and amin of nothing raised above)
    fill_(res, Scalar(int64_t(kind == Kind::Prod || kind == Kind::All ? 1 : 0)));
  } else if (self.device().is_cuda()) {
#ifdef TP_USE_CUDA
    Block3 b = as_block(x, p, res.numel());
    cuda::reduce(cuda::ReduceKind(int(kind)), b.src, b.B, b.R, b.K, res);
#endif
  } else {
    TP_CHECK(compute_dtype != DType::Float16 && compute_dtype != DType::BFloat16, op,
             ": half types reach the kernel only through float32");
    Block3 b = as_block(x, p, res.numel());
    cpu::reduce_stub(kind, compute_dtype, b.src.data_ptr(), res.data_ptr(), b.B, b.R, b.K);
  }
  if (mean) res = div(res, wrapped_scalar(Scalar(int64_t(p.count))));
  if (out.tensor) {
    const Tensor& o = *out.tensor;
    TP_CHECK(o.dtype() == result_dtype, op, "(): Expected out tensor to have dtype ",
             dtype_name(result_dtype), ", but got ", dtype_name(o.dtype()), " instead");
    resize_out(o, p.out_shape);
    copy_(const_cast<Tensor&>(o), res);
    return o;
  }
  return res.dtype() == result_dtype ? res : _to_dtype(res, result_dtype);
}

/// Without dtype=, PyTorch's sum / prod write any out= dtype (the result is cast into it).
Tensor cast_into_out(const Tensor& r, OutArg out) {
  const Tensor& o = *out.tensor;
  resize_out(o, r.sizes());
  copy_(const_cast<Tensor&>(o), r);
  return o;
}

DType compute_for(DType dt) {
  return dt == DType::Float16 || dt == DType::BFloat16 ? DType::Float32 : dt;
}

}  // namespace

Tensor sum_impl(const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
                const std::optional<DType>& dtype, OutArg out) {
  if (!dtype && out.tensor && !out.inplace && out.tensor->dtype() != (is_integral(self.dtype(), true) ? DType::Int64 : self.dtype()))
    return cast_into_out(sum_impl(self, dim, keepdim, std::nullopt, OutArg::none()), out);
  DType in = dtype.value_or(self.dtype());
  if (is_complex(in)) return complex_sum(dtype ? _to_dtype(self, *dtype) : self, dim, keepdim, false, out);
  DType result = dtype ? *dtype : is_integral(in, true) ? DType::Int64 : in;
  return reduce("sum", Kind::Sum, dtype ? _to_dtype(self, *dtype) : self, dim, keepdim, result,
                compute_for(in), out);
}

Tensor mean_impl(const Tensor& self, OptionalIntArrayRef dim, bool keepdim,
                 const std::optional<DType>& dtype, OutArg out) {
  DType in = dtype.value_or(self.dtype());
  if (is_complex(in)) return complex_sum(dtype ? _to_dtype(self, *dtype) : self, dim, keepdim, true, out);
  TP_CHECK(is_floating(in), "mean(): could not infer output dtype. ",
           dtype ? "Optional" : "Input", " dtype must be either a floating point or complex "
           "dtype. Got: ", dtype_scalar_name(in));
  Tensor x = dtype ? _to_dtype(self, *dtype) : self;
  DType compute = in == DType::Float64 ? DType::Float64 : DType::Float32;
  return reduce("mean", Kind::Sum, x, dim, keepdim, in, compute, out, /*mean=*/true);
}

Tensor prod_impl(const Tensor& self, const std::optional<int64_t>& dim, bool keepdim,
                 const std::optional<DType>& dtype, OutArg out) {
  if (!dtype && out.tensor && !out.inplace && out.tensor->dtype() != (is_integral(self.dtype(), true) ? DType::Int64 : self.dtype()))
    return cast_into_out(prod_impl(self, dim, keepdim, std::nullopt, OutArg::none()), out);
  DType in = dtype.value_or(self.dtype());
  if (is_complex(in)) {
    // No complex product kernel: each slice's product is the last of its cumulative product
    // (cumprod's complex loop); an empty slice's is 1.
    Tensor x = dtype ? _to_dtype(self, *dtype) : self;
    int64_t d = 0;
    if (!dim) x = reshape(x, std::vector<int64_t>{-1});
    else if (x.dim()) d = wrap_dim(*dim, x.dim());
    else (void)wrap_dim(*dim, 1), x = reshape(x, std::vector<int64_t>{1});
    Tensor r;
    if (x.size(d) > 0) {
      r = contiguous(select(cumprod(x, d, std::nullopt), d, -1));
    } else {
      DimVector shape(x.sizes().data(), x.sizes().size());
      shape.erase(size_t(d));
      r = ones(IntArrayRef(shape.data(), shape.size()), in, x.device());
    }
    if (dim && keepdim && self.dim()) r = unsqueeze(r, d);
    if (!out.tensor) return r;
    Tensor& target = const_cast<Tensor&>(*out.tensor);
    resize_out(target, r.sizes());
    return copy_impl(target, r, false, OutArg::none());
  }
  DType result = dtype ? *dtype : is_integral(in, true) ? DType::Int64 : in;
  int64_t d = dim.value_or(0);
  OptionalIntArrayRef dims = dim ? OptionalIntArrayRef(IntArrayRef(&d, 1)) : std::nullopt;
  return reduce("prod", Kind::Prod, dtype ? _to_dtype(self, *dtype) : self, dims, keepdim && dim,
                result, compute_for(in), out);
}

// PyTorch checks a reduction's out= dtype before its dims
static void check_same_out_dtype(const Tensor& self, OutArg out) {
  if (!out.tensor || out.inplace) return;
  TP_CHECK(out.tensor->dtype() == self.dtype(), "Expected the dtype for input and out to match, but got ",
           dtype_scalar_name(self.dtype()), " for input's dtype and ", dtype_scalar_name(out.tensor->dtype()),
           " for out's dtype.");
}

static void check_bool_out(const char* op, OutArg out) {
  if (!out.tensor || out.inplace) return;
  DType dt = out.tensor->dtype();
  TP_CHECK(dt == DType::Bool || dt == DType::UInt8, op, " only supports bool tensor for result, got: ",
           dtype_scalar_name(dt));
}

Tensor amax_impl(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, OutArg out) {
  check_same_out_dtype(self, out);
  return reduce("amax", Kind::Max, self, dim, keepdim, self.dtype(), compute_for(self.dtype()), out);
}

Tensor amin_impl(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, OutArg out) {
  check_same_out_dtype(self, out);
  return reduce("amin", Kind::Min, self, dim, keepdim, self.dtype(), compute_for(self.dtype()), out);
}

Tensor all_impl(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, OutArg out) {
  check_bool_out("all", out);
  // an out= may be bool or uint8 whatever the input (PyTorch)
  DType result = out.tensor && !out.inplace          ? out.tensor->dtype()
                 : self.dtype() == DType::UInt8 ? DType::UInt8
                                                : DType::Bool;
  if (is_complex(self.dtype()))  // a complex number is true where nonzero
    return all_impl(ne(self, wrapped_scalar(Scalar(int64_t(0)))), dim, keepdim, out);
  return reduce("all", Kind::All, self, dim, keepdim, result, compute_for(self.dtype()), out);
}

Tensor any_impl(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, OutArg out) {
  check_bool_out("any", out);
  // an out= may be bool or uint8 whatever the input (PyTorch)
  DType result = out.tensor && !out.inplace          ? out.tensor->dtype()
                 : self.dtype() == DType::UInt8 ? DType::UInt8
                                                : DType::Bool;
  if (is_complex(self.dtype()))  // a complex number is true where nonzero
    return any_impl(ne(self, wrapped_scalar(Scalar(int64_t(0)))), dim, keepdim, out);
  return reduce("any", Kind::Any, self, dim, keepdim, result, compute_for(self.dtype()), out);
}

// ---------------------------------------------------------------- arg reductions

namespace {

/// Index of the first max (IsMax) or min in x[0..n); a NaN wins at its first position.
template <bool IsMax, class T>
int64_t arg_best(const T* x, int64_t n) {
  int64_t bi = 0;
  T best = x[0];
  if constexpr (std::is_floating_point_v<T>) if (best != best) return 0;
  for (int64_t i = 1; i < n; ++i) {
    T v = x[i];
    if constexpr (std::is_floating_point_v<T>) if (v != v) return i;
    if (IsMax ? v > best : v < best) {
      best = v;
      bi = i;
    }
  }
  return bi;
}

/// (values, indices) of the max/min along `dim` (all elements, flattened, when none).
std::tuple<Tensor, Tensor> arg_reduce(const char* op, bool is_max, const Tensor& self,
                                      std::optional<int64_t> dim, bool keepdim) {
  TP_CHECK(self.device().is_cpu() || self.device().is_cuda() || is_meta(self), op, ": no ",
           device_type_name(self.device().type), " kernel");
  int64_t nd = self.dim();
  Tensor x = self;
  int64_t d = 0;
  DimVector out_shape;
  if (!dim) {
    TP_CHECK_INDEX(self.numel() > 0, op, "(): Expected reduction dim to be specified for "
                   "input.numel() == 0.");
    x = reshape(self, std::vector<int64_t>{self.numel()});
    if (keepdim) out_shape = DimVector(size_t(nd), 1);
  } else {
    d = wrap_dim(*dim, nd);
    if (nd == 0) {
      x = reshape(self, std::vector<int64_t>{1});
    } else {
      TP_CHECK_INDEX(self.size(d) > 0, op, "(): Expected reduction dim ", d,
                     " to have non-zero size.");
      DimVector order;
      for (int64_t i = 0; i < nd; ++i) if (i != d) order.push_back(i);
      order.push_back(d);
      x = contiguous(permute(self, order));
    }
    for (int64_t i = 0; i < nd; ++i) {
      if (i != d) out_shape.push_back(self.size(i));
      else if (keepdim) out_shape.push_back(1);
    }
  }
  DType compute = self.dtype() == DType::Float16 || self.dtype() == DType::BFloat16
                      ? DType::Float32 : self.dtype();
  if (x.dtype() != compute) x = _to_dtype(x, compute);
  x = contiguous(x);
  int64_t len = x.dim() ? x.size(x.dim() - 1) : 1, rows = x.numel() / std::max<int64_t>(len, 1);
  Tensor indices = empty_tensor(out_shape, DType::Int64, self.device());
  if (is_meta(self)) return {empty_tensor(out_shape, self.dtype(), self.device()), indices};
  if (self.device().is_cuda()) {
    Tensor values = empty_tensor(out_shape, compute, self.device());
#ifdef TP_USE_CUDA
    cuda::arg_reduce(is_max, x, rows, len, values, indices);
#endif
    return {compute == self.dtype() ? values : _to_dtype(values, self.dtype()), indices};
  }
  Tensor values = empty_tensor(out_shape, self.dtype());
  int64_t* idx = indices.data<int64_t>();
  visit_dtype(compute, [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      TP_FAIL(op, ": half types reach the kernel only through float32");
    } else {
      const T* data = x.data<T>();
#pragma omp parallel for num_threads(get_num_threads()) if (rows * len >= 65536 && rows > 1)
      for (int64_t r = 0; r < rows; ++r)
        idx[r] = is_max ? arg_best<true>(data + r * len, len) : arg_best<false>(data + r * len, len);
      char* vals = values.data_ptr();
      size_t es = values.itemsize();
      for (int64_t r = 0; r < rows; ++r)
        cast_strided(reinterpret_cast<const char*>(data + r * len + idx[r]), 0, compute,
                     vals + size_t(r) * es, 0, values.dtype(), 1);
    }
  });
  return {values, indices};
}

}  // namespace

std::tuple<Tensor, Tensor> max_dim_impl(const Tensor& self, int64_t dim, bool keepdim, OutArg) {
  return arg_reduce("max", true, self, dim, keepdim);
}

std::tuple<Tensor, Tensor> min_dim_impl(const Tensor& self, int64_t dim, bool keepdim, OutArg) {
  return arg_reduce("min", false, self, dim, keepdim);
}

Tensor argmax_impl(const Tensor& self, const std::optional<int64_t>& dim, bool keepdim, OutArg) {
  TP_CHECK(self.dtype() != DType::Bool, "argmax(): does not support bool input");
  return std::get<1>(arg_reduce("argmax", true, self, dim, keepdim));
}

Tensor argmin_impl(const Tensor& self, const std::optional<int64_t>& dim, bool keepdim, OutArg) {
  TP_CHECK(self.dtype() != DType::Bool, "argmin(): does not support bool input");
  return std::get<1>(arg_reduce("argmin", false, self, dim, keepdim));
}

Tensor max_all_impl(const Tensor& self, OutArg out) {
  TP_CHECK(self.numel() > 0, "max(): Expected reduction dim to be specified for input.numel() "
           "== 0. Specify the reduction dim with the 'dim' argument.");
  return amax_impl(self, std::nullopt, false, out);
}

Tensor min_all_impl(const Tensor& self, OutArg out) {
  TP_CHECK(self.numel() > 0, "min(): Expected reduction dim to be specified for input.numel() "
           "== 0. Specify the reduction dim with the 'dim' argument.");
  return amin_impl(self, std::nullopt, false, out);
}

}  // namespace tp
