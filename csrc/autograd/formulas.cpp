// Backward helpers used by the derivative formulas of csrc/ops/*.yaml. Each is written
// with differentiable ops, so create_graph=True differentiates them again.
#include <algorithm>
#include <vector>

#include "autograd/formula_helpers.h"
#include "ops/shape_utils.h"

namespace tp::autograd {

Tensor sum_to(const Tensor& grad, IntArrayRef sizes) {
  if (std::equal(sizes.begin(), sizes.end(), grad.sizes().begin(), grad.sizes().end())) return grad;
  size_t lead = size_t(grad.dim()) - sizes.size();
  DimVector dims;
  for (size_t i = 0; i < size_t(grad.dim()); ++i)
    if (i < lead || (sizes[i - lead] == 1 && grad.size(int64_t(i)) != 1)) dims.push_back(int64_t(i));
  Tensor r = dims.size() ? sum(grad, IntArrayRef(dims.data(), dims.size()), true) : grad;
  return reshape(r, sizes);
}

namespace {

/// The dims a reduction removed, wrapped and sorted (all of them for None / empty).
DimVector reduced_dims(OptionalIntArrayRef dim, int64_t ndim) {
  DimVector dims;
  if (!dim || dim->empty()) {
    for (int64_t d = 0; d < ndim; ++d) dims.push_back(d);
  } else {
    for (int64_t d : *dim) dims.push_back(wrap_dim(d, ndim));
    std::sort(dims.begin(), dims.end());
  }
  return dims;
}

/// grad with the reduced dims put back as size 1 (a no-op with keepdim).
Tensor unsqueeze_reduced(const Tensor& grad, IntArrayRef sizes, OptionalIntArrayRef dim,
                         bool keepdim) {
  if (keepdim || sizes.empty()) return grad;
  Tensor g = grad;
  for (int64_t d : reduced_dims(dim, int64_t(sizes.size()))) g = unsqueeze(g, d);
  return g;
}

}  // namespace

Tensor reduce_backward(const Tensor& grad, IntArrayRef sizes, OptionalIntArrayRef dim,
                       bool keepdim) {
  return expand(unsqueeze_reduced(grad, sizes, dim, keepdim), sizes);
}

Tensor mean_backward(const Tensor& grad, IntArrayRef sizes, OptionalIntArrayRef dim,
                     bool keepdim) {
  int64_t count = 1;
  for (int64_t d : reduced_dims(dim, int64_t(sizes.size()))) count *= sizes[d];
  return reduce_backward(grad, sizes, dim, keepdim) / Scalar(double(count));
}

Tensor evenly_distribute_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                                  OptionalIntArrayRef dim, bool keepdim, bool nan_picks) {
  Tensor r = unsqueeze_reduced(result, self.sizes(), dim, keepdim);
  Tensor g = unsqueeze_reduced(grad, self.sizes(), dim, keepdim);
  Tensor mask = eq(self, r);
  if (nan_picks) mask = logical_or(mask, logical_and(isnan(self), isnan(r)));
  Tensor weight = _to_dtype(mask, grad.dtype());
  Tensor hits = sum(weight, dim ? dim : OptionalIntArrayRef(), true);
  // As PyTorch: max/min mask the share in; amax/amin/aminmax multiply it in (a slice
  // whose result matches nothing, e.g. NaN, gets NaN).
  return nan_picks ? where(mask, g / hits, zeros_like_scalar(grad)) : weight * (g / hits);
}

Tensor permute_backward(const Tensor& grad, IntArrayRef dims) {
  DimVector inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) inverse[wrap_dim(dims[i], int64_t(dims.size()))] = int64_t(i);
  return permute(grad, inverse);
}

Tensor narrow_backward(const Tensor& grad, IntArrayRef sizes, int64_t dim, int64_t start) {
  dim = wrap_dim(dim, int64_t(sizes.size()));
  int64_t len = grad.size(dim), total = sizes[dim];
  if (start < 0) start += total;
  std::vector<Tensor> parts;
  DimVector s(sizes.data(), sizes.size());
  if (start > 0) {
    s[dim] = start;
    parts.push_back(zeros(s, grad.dtype(), grad.device()));
  }
  parts.push_back(grad);
  if (start + len < total) {
    s[dim] = total - start - len;
    parts.push_back(zeros(s, grad.dtype(), grad.device()));
  }
  return parts.size() == 1 ? grad : cat(parts, dim);
}

Tensor select_backward(const Tensor& grad, IntArrayRef sizes, int64_t dim, int64_t index) {
  dim = wrap_dim(dim, int64_t(sizes.size()));
  if (index < 0) index += sizes[dim];
  return narrow_backward(unsqueeze(grad, dim), sizes, dim, index);
}

variable_list cat_backward(const Tensor& grad, const std::vector<DimVector>& sizes, int64_t dim) {
  variable_list out;
  int64_t nd = 0;
  for (const DimVector& s : sizes)
    if (!(s.size() == 1 && s[0] == 0)) nd = int64_t(s.size());
  dim = wrap_dim(dim, nd);
  int64_t at = 0;
  for (const DimVector& s : sizes) {
    if (s.size() == 1 && s[0] == 0 && nd != 1) {  // legacy skipped empty input
      out.push_back(zeros(IntArrayRef(s.data(), s.size()), grad.dtype(), grad.device()));
      continue;
    }
    out.push_back(narrow(grad, dim, at, s[dim]));
    at += s[dim];
  }
  return out;
}

variable_list stack_backward(const Tensor& grad, size_t count, int64_t dim) {
  dim = wrap_dim(dim, grad.dim());
  variable_list out;
  for (size_t i = 0; i < count; ++i) out.push_back(select(grad, dim, int64_t(i)));
  return out;
}

Tensor pow_backward_self(const Tensor& grad, const Tensor& self, const Tensor& exponent) {
  if (exponent.impl()->is_wrapped_number() && exponent.device().is_cpu() && !is_complex(exponent.dtype()) &&
      (is_floating(self.dtype()) || is_complex(self.dtype()))) {
    // A Python number: self ** (e - 1) as a Python number too, so that pow's specialised
    // exponents (Note [pow by a number]: 0.5 -> -0.5 is rsqrt) give PyTorch's special values
    const double e = *_to_dtype(exponent, DType::Float64, false).data<double>();
    if (e == 0) return zeros(grad.sizes(), grad.dtype(), grad.device());
    return grad * Scalar(e) * pow(self, wrapped_scalar(Scalar(e - 1.0)));
  }
  // bool and integer exponents too; a complex exponent of a real base keeps its imaginary part
  Tensor e = _to_dtype(exponent, promote_types(grad.dtype(), exponent.dtype()), false);
  Tensor g = grad * e * pow(self, e - Scalar(1.0));
  return where(eq(e, zeros_like_scalar(e)), zeros_like_scalar(g), g);
}

Tensor pow_backward_exponent(const Tensor& grad, const Tensor& self, const Tensor& exponent,
                             const Tensor& result) {
  // A real base of a complex power takes the complex logarithm (log(-2) = log 2 + i pi).
  Tensor g = grad * result * log(is_complex(result.dtype()) ? _to_dtype(self, result.dtype(), false) : self);
  // 0 ** e has gradient 0 for e >= 0; a complex e must be real for that, as in PyTorch
  Tensor nonneg = is_complex(exponent.dtype())
                      ? logical_and(eq(imag(exponent), zeros_like_scalar(real(exponent))),
                                    ge(real(exponent), zeros_like_scalar(real(exponent))))
                      : ge(exponent, zeros_like_scalar(exponent));
  Tensor zero_base = logical_and(eq(self, zeros_like_scalar(self)), nonneg);
  return where(zero_base, zeros_like_scalar(g), g);
}

Tensor binary_pick_backward(const Tensor& grad, const Tensor& self, const Tensor& other,
                            bool pick_max) {
  // Where self loses it gets nothing; NaN comparisons lose nowhere (both get all of it).
  Tensor loses = pick_max ? lt(self, other) : gt(self, other);
  return where(eq(self, other), grad / Scalar(2.0), masked_grad(grad, logical_not(loses)));
}

Tensor clamp_backward(const Tensor& grad, const Tensor& self, const std::optional<Tensor>& min,
                      const std::optional<Tensor>& max) {
  Tensor keep;
  if (min) keep = ge(self, *min);
  if (max) keep = keep.defined() ? logical_and(keep, le(self, *max)) : le(self, *max);
  return keep.defined() ? masked_grad(grad, keep) : grad;
}

Tensor clamp_bound_backward(const Tensor& grad, const Tensor& self,
                            const std::optional<Tensor>& min, const std::optional<Tensor>& max,
                            bool is_min) {
  // Where the bounds cross (max < min) the result is max: max gets the gradient there.
  if (is_min) {
    Tensor won = lt(self, *min);
    return masked_grad(grad, max ? logical_and(won, lt(*min, *max)) : won);
  }
  Tensor won = gt(self, *max);
  return masked_grad(grad, min ? logical_or(won, lt(*max, *min)) : won);
}

Tensor index_pick_jvp(const Tensor& tangent, const Tensor& indices, int64_t dim, bool keepdim) {
  if (tangent.dim() == 0) return clone(tangent);
  dim = wrap_dim(dim, tangent.dim());
  Tensor picked = gather(tangent, dim, keepdim ? indices : unsqueeze(indices, dim));
  return keepdim ? picked : _squeeze_dims(picked, IntArrayRef(&dim, 1));
}

Tensor index_pick_backward(const Tensor& grad, const Tensor& indices, IntArrayRef sizes,
                           int64_t dim, bool keepdim) {
  if (sizes.empty()) return grad;
  dim = wrap_dim(dim, int64_t(sizes.size()));
  Tensor g = keepdim ? grad : unsqueeze(grad, dim);
  Tensor idx = keepdim ? indices : unsqueeze(indices, dim);
  DimVector pos_shape(sizes.size(), 1);
  pos_shape[dim] = sizes[dim];
  Tensor pos = reshape(arange(Scalar(int64_t(0)), Scalar(sizes[dim]), Scalar(int64_t(1)),
                              DType::Int64, grad.device()), pos_shape);
  return where(eq(pos, idx), g, zeros_like_scalar(g));
}

Tensor not_implemented_grad(const char* what) {
  TP_CHECK_KIND(ErrorKind::NotImplemented, false, "the derivative for '", what, "' is not implemented.");
  return Tensor();
}

Tensor value_selecting_backward(const Tensor& grad, int64_t dim, const Tensor& indices,
                                IntArrayRef sizes) {
  if (sizes.empty()) return grad;
  return scatter(zeros_for(grad, sizes), dim, indices, grad);
}

Tensor index_backward(const Tensor& grad, TensorList indices) {
  // Each index addresses one leading dim (a k-dim mask addresses k): one linear index.
  std::vector<Tensor> idx;
  for (const Tensor& t : indices) {
    if (t.dtype() == DType::Bool || t.dtype() == DType::UInt8) {
      Tensor nz = _nonzero(t);
      for (int64_t j = 0; j < nz.size(1); ++j) idx.push_back(select(nz, 1, j));
    } else {
      idx.push_back(t);
    }
  }
  DimVector shape(idx[0].sizes().data(), idx[0].sizes().size());
  for (size_t i = 1; i < idx.size(); ++i) {
    Tensor probe = empty_tensor(shape, DType::Bool, grad.device());
    shape = broadcast_shapes_of(probe, idx[i], "index");
  }
  Tensor linear = zeros(shape, DType::Int64, grad.device());
  int64_t stride = 1;
  for (int64_t d = int64_t(idx.size()) - 1; d >= 0; --d) {
    Tensor i = _to_dtype(idx[d], DType::Int64, false);
    i = where(lt(i, zeros_like_scalar(i)), i + Scalar(grad.size(d)), i);
    linear = linear + i * Scalar(stride);
    stride *= grad.size(d);
  }
  DimVector flat_shape{stride}, out_shape = shape;
  for (int64_t d = int64_t(idx.size()); d < grad.dim(); ++d) {
    flat_shape.push_back(grad.size(d));
    out_shape.push_back(grad.size(d));
  }
  Tensor picked = index_select(reshape(grad, flat_shape), 0, reshape(linear, DimVector{-1}));
  return reshape(picked, out_shape);
}

Tensor masked_scatter_backward(const Tensor& grad, const Tensor& mask, IntArrayRef source_sizes) {
  Tensor picked = masked_select(grad, mask);
  int64_t total = 1;
  for (int64_t s : source_sizes) total *= s;
  int64_t n = picked.numel();
  if (n < total) picked = cat(std::vector<Tensor>{picked, zeros_for(grad, DimVector{total - n})}, 0);
  return reshape(picked, source_sizes);
}

Tensor masked_select_backward(const Tensor& grad, IntArrayRef self_sizes, const Tensor& mask) {
  Tensor z = zeros_for(grad, self_sizes);
  DimVector shape = broadcast_shapes_of(z, mask, "masked_select");
  return masked_scatter(zeros_for(grad, shape), mask, grad);
}

Tensor cumsum_backward(const Tensor& grad, int64_t dim) {
  if (grad.dim() == 0) return grad;
  int64_t d[1] = {wrap_dim(dim, grad.dim())};
  return flip(cumsum(flip(grad, d), d[0]), d);
}

Tensor repeat_backward(const Tensor& grad, IntArrayRef repeats, IntArrayRef sizes) {
  size_t lead = repeats.size() - sizes.size();
  DimVector split, sum_dims;
  for (size_t i = 0; i < repeats.size(); ++i) {
    int64_t s = i < lead ? 1 : sizes[i - lead];
    sum_dims.push_back(int64_t(split.size()));
    split.push_back(repeats[i]);
    split.push_back(s);
  }
  if (grad.numel() == 0) return zeros_for(grad, sizes);
  return reshape(sum(reshape(grad, split), sum_dims, false), sizes);
}

Tensor tile_backward(const Tensor& grad, IntArrayRef dims, IntArrayRef sizes) {
  DimVector reps;
  for (size_t i = dims.size(); i < sizes.size(); ++i) reps.push_back(1);
  for (int64_t r : dims) reps.push_back(r);
  return repeat_backward(grad, reps, sizes);
}

Tensor roll_backward(const Tensor& grad, IntArrayRef shifts, IntArrayRef dims) {
  DimVector back;
  for (int64_t s : shifts) back.push_back(-s);
  return roll(grad, back, dims);
}

Tensor var_backward(const Tensor& grad, const Tensor& self, OptionalIntArrayRef dim,
                    const std::optional<Scalar>& correction, bool keepdim) {
  int64_t count = 1;
  for (int64_t d : reduced_dims(dim, self.dim())) count *= self.size(d);
  double c = correction ? correction->to_double() : 1.0;
  Tensor centered = self - mean(self, dim, true);
  return reduce_backward(grad, self.sizes(), dim, keepdim) * centered * Scalar(2.0 / (double(count) - c));
}

Tensor std_backward(const Tensor& grad, const Tensor& self, const Tensor& result,
                    OptionalIntArrayRef dim, const std::optional<Scalar>& correction, bool keepdim) {
  Tensor g = where(eq(result, zeros_like_scalar(result)), zeros_like_scalar(grad), grad / (result * 2.0));
  return var_backward(g, self, dim, correction, keepdim);
}

Tensor nanmean_backward(const Tensor& grad, const Tensor& self, OptionalIntArrayRef dim,
                        bool keepdim) {
  Tensor valid = logical_not(isnan(self));
  Tensor count = sum(_to_dtype(valid, grad.dtype(), false), dim, true);
  Tensor g = reduce_backward(grad, self.sizes(), dim, keepdim) / count;
  return masked_grad(g, valid);
}

Tensor aminmax_backward(const Tensor& grad_min, const Tensor& grad_max, const Tensor& self,
                        const Tensor& min, const Tensor& max, std::optional<int64_t> dim,
                        bool keepdim) {
  int64_t d = dim.value_or(0);
  OptionalIntArrayRef dims = dim ? OptionalIntArrayRef(IntArrayRef(&d, 1)) : std::nullopt;
  bool kd = dim ? keepdim : false;
  return evenly_distribute_backward(grad_min, self, min, dims, kd, false) +
         evenly_distribute_backward(grad_max, self, max, dims, kd, false);
}

Tensor cummaxmin_backward(const Tensor& grad, const Tensor& indices, IntArrayRef sizes, int64_t dim) {
  if (sizes.empty()) return grad;
  return scatter_add(zeros_for(grad, sizes), dim, indices, grad);
}

Tensor vector_norm_backward(const Tensor& grad, const Tensor& self, const Scalar& ord,
                            const Tensor& result, OptionalIntArrayRef dim, bool keepdim) {
  double p = ord.to_double();
  Tensor g = reduce_backward(grad, self.sizes(), dim, keepdim);
  Tensor norm = reduce_backward(result, self.sizes(), dim, keepdim);
  Tensor zero = zeros_like_scalar(g);
  if (p == 0) return zeros_for(grad, self.sizes());
  if (p == 1) return g * sgn(self);
  if (std::isinf(p)) {  // shared among the elements at the norm; none there (NaN): 0
    Tensor mask = eq(abs(self), norm);
    Tensor hits = sum(_to_dtype(mask, g.dtype(), false), dim ? dim : all_dims(), true);
    return where(mask, g / hits, zero) * sgn(self);
  }
  Tensor scaled = p == 2 ? self / norm
                         : self * pow(abs(self), wrapped_scalar(Scalar(p - 2))) /
                               pow(norm, wrapped_scalar(Scalar(p - 1)));
  return where(eq(norm, zeros_like_scalar(norm)), zero, g * scaled);
}

Tensor matmul_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool for_self) {
  Tensor a = self.dim() == 1 ? unsqueeze(self, 0) : self;
  Tensor b = other.dim() == 1 ? unsqueeze(other, 1) : other;
  Tensor g = grad;
  if (self.dim() == 1) g = unsqueeze(g, g.dim() == 0 ? 0 : -1 - (other.dim() == 1 ? 0 : 1));
  if (other.dim() == 1) g = unsqueeze(g, -1);
  if (!for_self && b.dim() == 2 && a.dim() >= 3) {
    // a 2-D right operand's gradient sums over every batch: fold the batch into one GEMM
    // (a batched product then a sum would materialise one k x n block per batch element)
    const int64_t k = a.size(a.dim() - 1), n = g.size(g.dim() - 1);
    const int64_t rows_shape[2] = {-1, k}, grad_shape[2] = {-1, n};
    Tensor r = mm(transpose(reshape(a, rows_shape), 0, 1), reshape(g, grad_shape));
    return reshape(r, other.sizes());
  }
  Tensor r = for_self ? matmul(g, transpose(b, -1, -2)) : matmul(transpose(a, -1, -2), g);
  const Tensor& target = for_self ? self : other;
  const Tensor& shaped = for_self ? a : b;
  return reshape(sum_to(r, shaped.sizes()), target.sizes());
}

namespace {
/// A 2-D geometry stored column by column (and not also row by row).
bool column_major(IntArrayRef sizes, IntArrayRef strides) {
  return strides[0] == 1 && strides[1] == sizes[0] && sizes[1] != 1;
}
}  // namespace

Tensor mm_mat1_backward(const Tensor& grad, const Tensor& mat2, IntArrayRef mat1_sizes,
                        IntArrayRef mat1_strides, const Scalar& alpha) {
  if (column_major(mat1_sizes, mat1_strides)) return maybe_multiply(t(mm(mat2, t(grad))), alpha);
  return maybe_multiply(mm(grad, t(mat2)), alpha);
}

Tensor mm_mat2_backward(const Tensor& grad, const Tensor& mat1, IntArrayRef mat2_sizes,
                        IntArrayRef mat2_strides, const Scalar& alpha) {
  if (column_major(mat2_sizes, mat2_strides)) return maybe_multiply(t(mm(t(grad), mat1)), alpha);
  return maybe_multiply(mm(t(mat1), grad), alpha);
}

Tensor addbmm_backward(const Tensor& grad, const Tensor& batch1, const Tensor& batch2,
                       const Scalar& alpha, bool for_batch1) {
  int64_t n = batch1.size(0);
  DimVector shape{n, grad.size(0), grad.size(1)};
  Tensor g = expand(unsqueeze(grad, 0), shape);
  Tensor r = for_batch1 ? bmm(g, transpose(batch2, 1, 2)) : bmm(transpose(batch1, 1, 2), g);
  return maybe_multiply(r, alpha);
}

Tensor trace_backward(const Tensor& grad, IntArrayRef sizes) {
  return eye(sizes[0], sizes[1], grad.dtype(), grad.device()) * grad;
}

namespace {

/// The storage position of every element of a geometry, minus `lo`, flattened.
Tensor storage_positions(IntArrayRef sizes, IntArrayRef strides, int64_t offset, int64_t lo,
                         Device device) {
  Tensor pos = full(IntArrayRef(), Scalar(offset - lo), DType::Int64, device);
  for (size_t d = 0; d < sizes.size(); ++d) {
    Tensor step = arange(Scalar(int64_t(0)), Scalar(sizes[d]), Scalar(int64_t(1)), DType::Int64, device);
    pos = unsqueeze(pos, -1) + step * Scalar(strides[d]);
  }
  return reshape(pos, DimVector{-1});
}

/// One past the last storage position a geometry touches (its offset when empty).
int64_t storage_end(IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  int64_t end = offset + 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return offset;
    end += (sizes[d] - 1) * strides[d];
  }
  return end;
}

/// Whether two elements of a strided geometry share a storage element.
bool may_overlap(IntArrayRef sizes, IntArrayRef strides) {
  std::vector<size_t> order;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return false;
    if (sizes[i] > 1) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  int64_t span = 0;  // the storage extent of the dims seen so far, minus one
  for (size_t i : order) {
    if (strides[i] <= span) return true;
    span += (sizes[i] - 1) * strides[i];
  }
  return false;
}

}  // namespace

Tensor as_strided_backward(const Tensor& grad, IntArrayRef in_sizes, IntArrayRef in_strides,
                           int64_t in_offset, IntArrayRef out_sizes, IntArrayRef out_strides,
                           int64_t out_offset) {
  int64_t lo = std::min(in_offset, out_offset);
  int64_t extent = std::max(storage_end(in_sizes, in_strides, in_offset),
                            storage_end(out_sizes, out_strides, out_offset)) - lo;
  Tensor in_pos = storage_positions(in_sizes, in_strides, in_offset, lo, grad.device());
  Tensor out_pos = storage_positions(out_sizes, out_strides, out_offset, lo, grad.device());
  DimVector flat{std::max<int64_t>(extent, 0)};
  Tensor storage = index_add(zeros_for(grad, flat), 0, out_pos, reshape(grad, DimVector{-1}));
  Tensor g = index_select(storage, 0, in_pos);
  if (may_overlap(in_sizes, in_strides)) {  // aliases of one storage element share its gradient
    Tensor count = index_add(zeros_for(grad, flat), 0, in_pos,
                             ones(in_pos.sizes(), grad.dtype(), grad.device()));
    g = g / index_select(count, 0, in_pos);
  }
  return reshape(g, in_sizes);
}

Tensor masked_grad(const Tensor& grad, const Tensor& mask) {
  return where(mask, grad, zeros_like_scalar(grad));
}

Tensor scalar_tensor(const Scalar& s, const Tensor& like) {
  return _to_dtype(wrapped_scalar(s), like.dtype());
}

}  // namespace tp::autograd
