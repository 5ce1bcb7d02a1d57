// Backward helpers of formulas_more.h. Each is written with differentiable ops, so
// create_graph=True differentiates them again (except where PyTorch refuses too).
#include "autograd/formulas_more.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>
#include <limits>
#include <numeric>

#include "autograd/formula_helpers.h"
#include "ops/shape_utils.h"

namespace tp::autograd {

namespace {

/// t[..., start:end:step, ...] along dim as a view (Python's slice clamping).
Tensor slice_view(const Tensor& t, int64_t dim, const std::optional<int64_t>& start,
                  const std::optional<int64_t>& end, int64_t step) {
  TP_CHECK(step > 0, "slice step must be positive");
  dim = wrap_dim(dim, t.dim());
  const int64_t n = t.size(dim);
  auto clamp = [n](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + n : v, 0, n); };
  const int64_t s = clamp(start.value_or(0)), e = std::max(s, clamp(end.value_or(n)));
  DimVector sizes(t.sizes().data(), t.sizes().size()), strides(t.strides().data(), t.strides().size());
  sizes[dim] = (e - s + step - 1) / step;
  strides[dim] *= step;
  return as_strided(t, sizes, strides, t.storage_offset() + s * t.stride(dim));
}

}  // namespace

Tensor slice_inverse_self_backward(const Tensor& grad, int64_t dim, const std::optional<int64_t>& start,
                                   const std::optional<int64_t>& end, int64_t step) {
  return slice_view(grad, dim, start, end, step);
}

Tensor slice_inverse_src_backward(const Tensor& grad, int64_t dim, const std::optional<int64_t>& start,
                                  const std::optional<int64_t>& end, int64_t step) {
  Tensor r = clone(grad);
  Tensor part = slice_view(r, dim, start, end, step);
  zero_(part);
  return r;
}

namespace {

/// Whether any element of a boolean tensor (on any device) is true.
bool any_true(const Tensor& mask) {
  if (mask.numel() == 0) return false;
  return *host_copy(_to_dtype(any(mask), DType::Bool)).data<bool>();
}

/// The number of true elements of a boolean tensor (on any device).
int64_t count_true(const Tensor& mask) {
  return *host_copy(sum(mask, std::nullopt, false, DType::Int64)).data<int64_t>();
}

/// t on like's device (t itself when already there).
Tensor on_device_of(const Tensor& t, const Tensor& like) {
  if (t.device() == like.device()) return t;
  Tensor moved = empty(t.sizes(), t.dtype(), like.device());
  copy_(moved, t, false);
  return moved;
}

Tensor scalar_like(double v, const Tensor& like) {
  return full(IntArrayRef(), Scalar(v), like.dtype(), like.device());
}

/// An int64 arange 0..n-1 on `like`'s device.
Tensor positions(int64_t n, const Tensor& like) {
  return arange(Scalar(int64_t(0)), Scalar(n), Scalar(int64_t(1)), DType::Int64, like.device());
}

/// t with dim `d` cut or zero-padded (at the end) to length n.
Tensor fit_dim(const Tensor& t, int64_t d, int64_t n) {
  int64_t have = t.size(d);
  if (have == n) return t;
  if (have > n) return narrow(t, d, 0, n);
  DimVector pad(t.sizes().data(), t.sizes().size());
  pad[size_t(d)] = n - have;
  return cat(std::vector<Tensor>{t, zeros(pad, t.dtype(), t.device())}, d);
}

/// A slice of ones shaped like t with dim d of size 1.
Tensor ones_slice(const Tensor& t, int64_t d) {
  DimVector s(t.sizes().data(), t.sizes().size());
  s[size_t(d)] = 1;
  return ones(s, t.dtype(), t.device());
}

/// prod's gradient along d when zeros may be present: the product of the elements before
/// times the product of those after, each an exclusive cumulative product.
Tensor prod_safe_zeros_backward(const Tensor& grad, const Tensor& self, int64_t d) {
  if (self.numel() == 0) return expand(grad, self.sizes());
  int64_t n = self.size(d);
  int64_t flip_d[1] = {d};
  Tensor one = ones_slice(self, d);
  Tensor before = cumprod(cat(std::vector<Tensor>{one, narrow(self, d, 0, n - 1)}, d), d);
  Tensor rev = flip(narrow(self, d, 1, n - 1), flip_d);
  Tensor after = flip(cumprod(cat(std::vector<Tensor>{one, rev}, d), d), flip_d);
  return grad * (before * after);
}

}  // namespace

Tensor logit_backward(const Tensor& grad, const Tensor& self, const std::optional<double>& eps) {
  Tensor g = grad / (self * (1.0 - self));
  if (!eps || *eps < 0) {
    Tensor outside = logical_or(lt(self, scalar_like(0.0, self)), gt(self, scalar_like(1.0, self)));
    return where(outside, scalar_like(std::numeric_limits<double>::quiet_NaN(), g), g);
  }
  // NaN counts as outside, as in PyTorch's vectorized kernel.
  Tensor inside = logical_and(ge(self, scalar_like(*eps, self)), le(self, scalar_like(1.0 - *eps, self)));
  return masked_grad(g, inside);
}

Tensor copysign_backward(const Tensor& grad, const Tensor& self, const Tensor& result) {
  Tensor ratio = result / self;
  return grad * where(eq(self, zeros_like_scalar(self)), zeros_like_scalar(ratio), ratio);
}

Tensor fmaxmin_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool pick_max,
                        bool for_self) {
  Tensor self_wins = logical_or(pick_max ? ge(self, other) : le(self, other), isnan(other));
  return masked_grad(grad, for_self ? self_wins : logical_not(self_wins));
}

Tensor prod_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                     const std::optional<int64_t>& dim, bool keepdim) {
  if (self.dim() == 0) return grad;
  bool has_zero = any_true(eq(self, zeros_like_scalar(self)));
  if (!dim) {
    if (!has_zero) return grad * (result / self);
    // Two zeros or more: every gradient is 0 (PyTorch skips the products unless graphed).
    if (!grad_enabled() && count_true(eq(self, zeros_like_scalar(self))) > 1)
      return zeros_for(grad, self.sizes());
    int64_t flat[1] = {-1};
    return reshape(prod_safe_zeros_backward(grad, reshape(self, flat), 0), self.sizes());
  }
  int64_t d = wrap_dim(*dim, self.dim());
  Tensor g = keepdim ? grad : unsqueeze(grad, d);
  if (!has_zero) return g * ((keepdim ? result : unsqueeze(result, d)) / self);
  return prod_safe_zeros_backward(g, self, d);
}

Tensor cumprod_backward(const Tensor& grad, const Tensor& self, const Tensor& result, int64_t dim) {
  if (self.numel() <= 1 || self.dim() == 0) return grad;
  int64_t d = wrap_dim(dim, self.dim());
  int64_t n = self.size(d);
  if (n == 1) return grad;
  if (!any_true(eq(self, zeros_like_scalar(self)))) return cumsum_backward(result * grad, d) / self;
  // With zeros: d out_i / d x_k = prod_{j <= i, j != k} x_j, one cumulative product per k.
  std::vector<Tensor> parts;
  Tensor one = ones_slice(self, d);
  for (int64_t k = 0; k < n; ++k) {
    std::vector<Tensor> pieces;
    if (k > 0) pieces.push_back(narrow(self, d, 0, k));
    pieces.push_back(one);
    if (k + 1 < n) pieces.push_back(narrow(self, d, k + 1, n - k - 1));
    Tensor without_k = cumprod(cat(pieces, d), d);
    parts.push_back(sum(narrow(grad * without_k, d, k, n - k), IntArrayRef(&d, 1), true));
  }
  return cat(parts, d);
}

Tensor logcumsumexp_backward(const Tensor& grad, const Tensor& self, const Tensor& result, int64_t dim) {
  if (grad.dim() == 0 || grad.numel() == 0) return grad;
  int64_t d[1] = {wrap_dim(dim, grad.dim())};
  auto reverse_lcse = [&](const Tensor& x) { return flip(logcumsumexp(flip(x, d), d[0]), d); };
  // complex: one term, no split by sign (a holomorphic formula; the node conjugates)
  if (is_complex(grad.dtype())) return exp(reverse_lcse(log(grad) - result) + self);
  double lowest = grad.dtype() == DType::Float64 ? std::numeric_limits<double>::lowest()
                                                  : double(std::numeric_limits<float>::lowest());
  Tensor floor_value = scalar_like(lowest, grad);
  Tensor log_abs = log(abs(grad));
  Tensor zero = zeros_like_scalar(grad);
  Tensor log_pos = where(gt(grad, zero), log_abs, floor_value);
  Tensor log_neg = where(lt(grad, zero), log_abs, floor_value);
  return exp(reverse_lcse(log_pos - result) + self) - exp(reverse_lcse(log_neg - result) + self);
}

namespace {

/// The permutation sorting each row (last dim) of a floating x ascending, NaN last, with
/// ties in the order of PyTorch's (unstable) CPU sort, which quantile's gradient follows:
/// std::sort of (value, index) pairs compared by value. Computed on the host, also for a
/// CUDA x (the result goes back to x's device).
Tensor unstable_sort_indices(const Tensor& x) {
  Tensor values = host_copy(_to_dtype(detach(x), DType::Float64));
  Tensor idx = empty(x.sizes(), DType::Int64);
  int64_t len = x.size(x.dim() - 1), rows = len ? x.numel() / len : 0;
  const double* v = values.data<double>();
  int64_t* out = idx.data<int64_t>();
  std::vector<std::pair<double, int64_t>> row(static_cast<size_t>(len));
  auto before = [](const std::pair<double, int64_t>& a, const std::pair<double, int64_t>& b) {
    return (!std::isnan(a.first) && std::isnan(b.first)) || a.first < b.first;
  };
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < len; ++i) row[size_t(i)] = {v[r * len + i], i};
    std::sort(row.begin(), row.end(), before);
    for (int64_t i = 0; i < len; ++i) out[r * len + i] = row[size_t(i)].second;
  }
  return on_device_of(idx, x);
}

}  // namespace

Tensor quantile_backward(const Tensor& grad, const Tensor& self, const Tensor& q,
                         const std::optional<int64_t>& dim, bool keepdim,
                         const std::string& interpolation, bool ignore_nan, bool for_self) {
  (void)keepdim;  // grad's layout is recovered by reshaping
  // Rows along the last dim of x; the quantiles come first: ranks are [nq, rows..., 1].
  int64_t flat[1] = {-1};
  int64_t d = dim ? (self.dim() ? wrap_dim(*dim, self.dim()) : 0) : 0;
  Tensor x = !dim ? reshape(self, flat) : self.dim() ? movedim(self, IntArrayRef(&d, 1), IntArrayRef(flat, 1))
                                                      : reshape(self, std::array<int64_t, 1>{1});
  Tensor idx = unstable_sort_indices(x);
  Tensor sorted = gather(x, -1, idx);
  int64_t len = x.size(x.dim() - 1), nq = q.numel();
  DimVector qshape(size_t(x.dim()) + 1, 1), gshape{nq};
  qshape[0] = nq;
  for (int64_t i = 0; i + 1 < x.dim(); ++i) gshape.push_back(x.size(i));
  gshape.push_back(1);
  Tensor qv = reshape(on_device_of(_to_dtype(q, self.dtype()), self), qshape);  // a float q is a CPU tensor
  Tensor nan = isnan(sorted);
  Tensor slope;  // d rank / d q
  if (ignore_nan) {
    slope = sum(_to_dtype(logical_not(nan), self.dtype()), IntArrayRef(flat, 1), true) - 1.0;
  } else {
    slope = where(any(nan, IntArrayRef(flat, 1), true), zeros_like_scalar(qv), scalar_like(double(len - 1), qv));
  }
  Tensor ranks = qv * slope;
  Tensor fixed = ignore_nan ? lt(ranks, zeros_like_scalar(ranks)) : any(nan, IntArrayRef(flat, 1), true);
  ranks = where(fixed, ignore_nan ? zeros_like_scalar(ranks) : scalar_like(double(len - 1), ranks), ranks);
  bool lerps = interpolation == "linear" || interpolation == "midpoint";
  if (interpolation == "lower") ranks = floor(ranks);
  else if (interpolation == "higher") ranks = ceil(ranks);
  else if (interpolation == "nearest") ranks = round(ranks);
  Tensor below = _to_dtype(ranks, DType::Int64);
  Tensor above = _to_dtype(ceil(ranks), DType::Int64);
  Tensor g = reshape(grad, gshape);
  DimVector expanded(gshape.data(), gshape.size());
  expanded[expanded.size() - 1] = len;
  if (!for_self) {
    if (interpolation != "linear") return zeros_for(grad, q.sizes());
    Tensor rows = expand(unsqueeze(sorted, 0), expanded);
    Tensor step = gather(rows, -1, above) - gather(rows, -1, below);
    Tensor dq = masked_grad(g * step * slope, logical_not(fixed));
    DimVector rest;
    for (int64_t i = 1; i < dq.dim(); ++i) rest.push_back(i);
    return reshape(sum(dq, IntArrayRef(rest.data(), rest.size()), false), q.sizes());
  }
  Tensor zeros_rows = zeros_for(grad, expanded);
  Tensor picked;
  if (lerps) {
    Tensor w = interpolation == "midpoint" ? scalar_like(0.5, ranks) : ranks - _to_dtype(below, ranks.dtype());
    picked = scatter_add(zeros_rows, -1, below, g * (1.0 - w)) + scatter_add(zeros_rows, -1, above, g * w);
  } else {
    picked = scatter_add(zeros_rows, -1, below, g);
  }
  int64_t quantile_dim[1] = {0};
  Tensor in_rows = value_selecting_backward(sum(picked, IntArrayRef(quantile_dim, 1), false), -1, idx,
                                            x.sizes());
  if (!dim || self.dim() == 0) return reshape(in_rows, self.sizes());
  return movedim(in_rows, IntArrayRef(flat, 1), IntArrayRef(&d, 1));
}

Tensor msort_backward(const Tensor& grad, const Tensor& self) {
  if (self.dim() == 0) return grad;
  return value_selecting_backward(grad, 0, std::get<1>(sort(self, 0, false, true)), self.sizes());
}

Tensor repeat_interleave_backward(const Tensor& grad, IntArrayRef sizes, const Tensor& repeats,
                                  const std::optional<int64_t>& dim) {
  DimVector shape(sizes.data(), sizes.size());
  int64_t d = 0;
  if (!dim) {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    shape = DimVector{n};
  } else if (shape.empty()) {
    shape = DimVector{1};
  } else {
    d = wrap_dim(*dim, int64_t(shape.size()));
  }
  Tensor source = repeat_interleave(positions(shape[size_t(d)], grad), repeats, 0);
  return reshape(index_add(zeros_for(grad, shape), d, source, grad), sizes);
}

Tensor diagonal_backward(const Tensor& grad, IntArrayRef sizes, int64_t offset, int64_t dim1,
                         int64_t dim2) {
  int64_t nd = int64_t(sizes.size());
  int64_t d1 = wrap_dim(dim1, nd), d2 = wrap_dim(dim2, nd);
  Tensor placed = diag_embed(grad, offset, d1, d2);  // square: the diagonal's length + |offset|
  return fit_dim(fit_dim(placed, d1, sizes[size_t(d1)]), d2, sizes[size_t(d2)]);
}

Tensor diag_backward(const Tensor& grad, IntArrayRef sizes, int64_t diagonal) {
  if (sizes.size() == 1) return tp::diagonal(grad, diagonal, 0, 1);
  return diagonal_backward(grad, sizes, diagonal, 0, 1);
}

Tensor unfold_backward(const Tensor& grad, IntArrayRef sizes, int64_t dimension, int64_t size,
                       int64_t step) {
  if (sizes.empty()) return reshape(sum(grad), sizes);
  int64_t d = wrap_dim(dimension, int64_t(sizes.size()));
  int64_t windows = grad.size(d);
  int64_t last[1] = {-1}, next[1] = {d + 1};
  // [..., window, element, ...] flattened to the input position window * step + element.
  Tensor g = flatten(movedim(grad, IntArrayRef(last, 1), IntArrayRef(next, 1)), d, d + 1);
  int64_t col[2] = {-1, 1}, row[2] = {1, -1};
  Tensor at = reshape(positions(windows, grad), col) * Scalar(step) + reshape(positions(size, grad), row);
  return index_add(zeros_for(grad, sizes), d, reshape(at, last), g);
}

namespace {

/// Negative indices counted from the end of a dim of length n, as take_along_dim reads them.
Tensor wrap_indices(const Tensor& indices, int64_t n) {
  return where(lt(indices, zeros_like_scalar(indices)), indices + Scalar(n), indices);
}

}  // namespace

Tensor take_along_dim_backward(const Tensor& grad, IntArrayRef sizes, const Tensor& indices,
                               const std::optional<int64_t>& dim) {
  if (!dim) {
    int64_t flat[1] = {-1}, n = 1;
    for (int64_t s : sizes) n *= s;
    int64_t total[1] = {n};
    Tensor r = scatter_add(zeros_for(grad, total), 0, wrap_indices(reshape(indices, flat), n), reshape(grad, flat));
    return reshape(r, sizes);
  }
  if (sizes.empty()) return grad;
  int64_t d = wrap_dim(*dim, int64_t(sizes.size()));
  DimVector target(grad.sizes().data(), grad.sizes().size());
  target[size_t(d)] = sizes[size_t(d)];
  Tensor r = scatter_add(zeros_for(grad, target), d, expand(wrap_indices(indices, sizes[size_t(d)]), grad.sizes()), grad);
  return sum_to(r, sizes);
}

Tensor scatter_reduce_minmax_jvp(const Tensor& self, const Tensor& self_t, int64_t dim,
                                 const Tensor& index, const Tensor& src, const Tensor& src_t,
                                 const Tensor& result, bool include_self) {
  Tensor self_hits = _to_dtype(eq(self, result), self_t.dtype(), false);
  if (!include_self) {  // self counts only where nothing was scattered
    Tensor touched = scatter(zeros_like_grad(self_t), dim, index, Scalar(1.0));
    self_hits = self_hits * (1.0 - touched);
  }
  Tensor src_hits = _to_dtype(eq(src, gather(result, dim, index)), src_t.dtype(), false);
  Tensor count = scatter_add(self_hits, dim, index, src_hits);
  Tensor total = scatter_add(self_t * self_hits, dim, index, src_t * src_hits);
  return total / count;
}

Tensor reduce_into_backward(const Tensor& grad, const Tensor& self, int64_t dim, const Tensor& index,
                            const Tensor& src, const std::string& reduce, bool include_self,
                            const Tensor& result, bool indexed, bool for_self) {
  const char* op = indexed ? "index_reduce" : "scatter_reduce";
  auto pick = [&](const Tensor& t) { return indexed ? index_select(t, dim, index) : gather(t, dim, index); };
  auto add_into = [&](const Tensor& into, const Tensor& v) {
    return indexed ? index_add(into, dim, index, v) : scatter_add(into, dim, index, v);
  };
  auto reduce_again = [&](const Tensor& into, const Tensor& v) {
    return indexed ? index_reduce(into, dim, index, v, reduce, include_self)
                   : scatter_reduce(into, dim, index, v, reduce, include_self);
  };
  Tensor zero = zeros_like_scalar(grad);
  Tensor g;
  if (reduce == "sum") {
    g = for_self ? grad : pick(grad);
  } else if (reduce == "prod") {
    if (for_self) {
      // Self's zeros count as 1 in the product of the others.
      Tensor self_zero = eq(self, zeros_like_scalar(self));
      Tensor masked_self = where(self_zero, scalar_like(1.0, self), self);
      g = grad * reduce_again(masked_self, src) / masked_self;
    } else {
      Tensor src_zero = eq(src, zeros_like_scalar(src));
      Tensor zeros_at = pick(add_into(zeros_for(grad, self.sizes()), _to_dtype(src_zero, grad.dtype())));
      Tensor single_zero = logical_and(src_zero, eq(zeros_at, scalar_like(1.0, zeros_at)));
      Tensor without_single = reduce_again(self, where(single_zero, scalar_like(1.0, src), src));
      Tensor divided = pick(grad * result) / where(src_zero, scalar_like(1.0, src), src);
      g = where(single_zero, pick(grad * without_single), divided);
      Tensor shared_zero = gt(zeros_at, scalar_like(1.0, zeros_at));
      if (any_true(shared_zero)) {
        TP_CHECK(!grad_enabled(), op, "(): Double backward is unsupported for src when >1 zeros in src "
                 "are scattered to the same position. Please open an issue if you need it.");
        g = masked_grad(g, logical_not(shared_zero));
      }
    }
  } else if (reduce == "mean") {
    Tensor count = include_self ? ones(grad.sizes(), grad.dtype(), grad.device()) : zeros_for(grad, grad.sizes());
    count = add_into(count, ones(src.sizes(), grad.dtype(), grad.device()));
    count = where(eq(count, zeros_like_scalar(count)), scalar_like(1.0, count), count);
    g = for_self ? grad / count : pick(grad) / pick(count);
  } else if (reduce == "amax" || reduce == "amin") {
    // Shared evenly among self and src elements equal to the result.
    Tensor self_hit = _to_dtype(eq(self, result), grad.dtype());
    Tensor src_hit = _to_dtype(eq(src, pick(result)), grad.dtype());
    Tensor share = grad / add_into(self_hit, src_hit);
    g = for_self ? self_hit * share : src_hit * pick(share);
  } else {
    TP_CHECK_KIND(ErrorKind::NotImplemented, false, op, ": the derivative for reduce='", reduce,
                  "' is not implemented.");
  }
  if (for_self && !include_self) {
    Tensor one = scalar_like(1.0, grad);
    Tensor written = indexed ? index_fill(zeros_for(grad, self.sizes()), dim, index, one)
                             : scatter(zeros_for(grad, self.sizes()), dim, index, Scalar(1.0));
    g = where(ne(written, zeros_like_scalar(written)), zero, g);
  }
  return g;
}

Tensor tensordot_backward(const Tensor& grad, const Tensor& self, const Tensor& other,
                          IntArrayRef dims_self, IntArrayRef dims_other, bool for_self) {
  // `target` is the input differentiated, `partner` the other one; grad's dims are the free
  // dims of self (in order) then those of other.
  const Tensor& target = for_self ? self : other;
  const Tensor& partner = for_self ? other : self;
  IntArrayRef target_dims = for_self ? dims_self : dims_other;
  IntArrayRef partner_dims = for_self ? dims_other : dims_self;
  int64_t nt = target.dim(), np = partner.dim();
  std::vector<bool> contracted(size_t(np), false);
  for (int64_t p : partner_dims) contracted[size_t(wrap_dim(p, np))] = true;
  DimVector partner_free, grad_dims;
  for (int64_t i = 0; i < np; ++i)
    if (!contracted[size_t(i)]) partner_free.push_back(i);
  int64_t target_free = nt - int64_t(target_dims.size());
  int64_t first = for_self ? target_free : 0;
  for (size_t i = 0; i < partner_free.size(); ++i) grad_dims.push_back(first + int64_t(i));
  // for_self: [target free..., partner's contracted dims in partner order]; else the
  // partner's contracted dims come first.
  Tensor r = for_self ? tensordot(grad, partner, grad_dims, partner_free)
                      : tensordot(partner, grad, partner_free, grad_dims);
  // Where each of r's dims belongs in target.
  DimVector source;
  std::vector<bool> is_contracted(size_t(nt), false);
  for (int64_t t : target_dims) is_contracted[size_t(wrap_dim(t, nt))] = true;
  DimVector free_dims, matched;
  for (int64_t i = 0; i < nt; ++i)
    if (!is_contracted[size_t(i)]) free_dims.push_back(i);
  for (int64_t p = 0; p < np; ++p) {
    if (!contracted[size_t(p)]) continue;
    for (size_t k = 0; k < partner_dims.size(); ++k)
      if (wrap_dim(partner_dims[k], np) == p) matched.push_back(wrap_dim(target_dims[k], nt));
  }
  DimVector order;
  if (for_self) {
    order = free_dims;
    for (int64_t m : matched) order.push_back(m);
  } else {
    order = matched;
    for (int64_t f : free_dims) order.push_back(f);
  }
  DimVector perm(size_t(nt), 0);
  for (int64_t i = 0; i < nt; ++i) perm[size_t(order[size_t(i)])] = i;
  return permute(r, perm);
}

Tensor inner_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool for_self) {
  if (self.dim() == 0 || other.dim() == 0) return grad * (for_self ? other : self);
  int64_t last[1] = {-1};
  return tensordot_backward(grad, self, other, last, last, for_self);
}

}  // namespace tp::autograd
