// View ops: new geometry over the same storage (composite: they run on every backend).
#include <optional>
#include <vector>

#include "kernels/tensor_iterator.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"

namespace tp {

DimVector infer_size(IntArrayRef shape, int64_t numel) {
  DimVector res(shape.data(), shape.size());
  int64_t known = 1;
  std::optional<size_t> infer;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      TP_CHECK(!infer, "only one dimension can be inferred");
      infer = i;
    } else {
      TP_CHECK(shape[i] >= 0, "invalid shape dimension ", shape[i]);
      known *= shape[i];
    }
  }
  bool ok = numel == known || (infer && known > 0 && numel % known == 0);
  TP_CHECK(ok, "shape '", shape_str(shape), "' is invalid for input of size ", numel);
  if (infer) {
    TP_CHECK(known != 0, "cannot reshape tensor of 0 elements into shape ", shape_str(shape),
             " because the unspecified dimension size -1 can be any value and is ambiguous");
    res[*infer] = numel / known;
  }
  return res;
}

DimVector broadcast_shapes_of(const Tensor& a, const Tensor& b, const char* op) {
  size_t nd = std::max<size_t>(a.dim(), b.dim());
  DimVector out(nd, 1);
  for (const Tensor* t : {&a, &b}) {
    size_t off = nd - size_t(t->dim());
    for (size_t i = 0; i < size_t(t->dim()); ++i) {
      int64_t s = t->size(int64_t(i));
      int64_t& r = out[off + i];
      TP_CHECK(s == r || s == 1 || r == 1, op, ": The size of tensor a (", r,
               ") must match the size of tensor b (", s, ") at non-singleton dimension ", off + i);
      if (r == 1) r = s;
    }
  }
  return out;
}

namespace {

// Strides for viewing (sizes, strides) as `shape`, or nullopt if the memory layout
// does not allow it (a new dim would span two non-mergeable chunks).
std::optional<DimVector> view_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef shape) {
  DimVector out(shape.size());
  if (sizes.empty()) {
    for (auto& s : out) s = 1;
    return out;
  }
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel == 0) return contiguous_strides(shape);
  int64_t view_d = int64_t(shape.size()) - 1;
  int64_t chunk_base_stride = strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    if (d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

}  // namespace

Tensor view_impl(const Tensor& self, IntArrayRef size, OutArg) {
  DimVector shape = infer_size(size, self.numel());
  auto strides = view_strides(self.sizes(), self.strides(), shape);
  TP_CHECK(strides.has_value(),
           "view size is not compatible with input tensor's size and stride (at least one "
           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
  return make_view(self, std::move(shape), std::move(*strides), self.storage_offset());
}

Tensor view_dtype_impl(const Tensor& self, DType dtype, OutArg) {
  TP_CHECK(!self.impl()->is_conj(), "torch.Tensor.view is not supported for conjugate view tensors when "
           "converting to a different dtype.");
  TP_CHECK(!self.impl()->is_neg(), "torch.Tensor.view is not supported for tensors with negative bit set "
           "when converting to a different dtype.");
  const int64_t from = int64_t(element_size(self.dtype())), to = int64_t(element_size(dtype));
  DimVector sizes(self.sizes().data(), self.sizes().size());
  DimVector strides(self.strides().data(), self.strides().size());
  if (from == to) return make_view(self, std::move(sizes), std::move(strides), self.storage_offset(), dtype);
  const auto what = [&] {
    return std::string(" to view ") + dtype_scalar_name(self.dtype()) + " as " +
           dtype_scalar_name(dtype) + " (different element sizes)";
  };
  const int64_t n = self.dim();
  TP_CHECK(n > 0, "self.dim() cannot be 0", what());
  TP_CHECK(self.stride(n - 1) == 1, "self.stride(-1) must be 1", what(), ", but got ", self.stride(n - 1));
  int64_t offset = self.storage_offset();
  if (to > from) {  // wider elements: sizes, strides and offset shrink by the ratio
    const int64_t r = to / from;
    TP_CHECK(sizes[n - 1] % r == 0, "self.size(-1) must be divisible by ", r, what(), ", but got ",
             sizes[n - 1]);
    TP_CHECK(offset % r == 0, "self.storage_offset() must be divisible by ", r, what(),
             ", but got ", offset);
    for (int64_t i = 0; i < n - 1; ++i)
      TP_CHECK(strides[i] % r == 0, "self.stride(", i, ") must be divisible by ", r, what(),
               ", but got ", strides[i]);
    for (int64_t i = 0; i < n - 1; ++i) strides[i] /= r;
    sizes[n - 1] /= r;
    offset /= r;
  } else {  // narrower elements: they grow by the ratio
    const int64_t r = from / to;
    for (int64_t i = 0; i < n - 1; ++i) strides[i] *= r;
    sizes[n - 1] *= r;
    offset *= r;
  }
  return make_view(self, std::move(sizes), std::move(strides), offset, dtype);
}

Tensor reshape_impl(const Tensor& self, IntArrayRef shape, OutArg) {
  DimVector sizes = infer_size(shape, self.numel());
  if (auto strides = view_strides(self.sizes(), self.strides(), sizes))
    return make_view(self, std::move(sizes), std::move(*strides), self.storage_offset());
  return view_impl(contiguous_impl(self, OutArg::none()), sizes, OutArg::none());
}

namespace {

DimVector sizes_of(const Tensor& t) { return DimVector(t.sizes().data(), t.sizes().size()); }
DimVector strides_of(const Tensor& t) { return DimVector(t.strides().data(), t.strides().size()); }

/// Wraps every entry of `dims` and rejects repeats ("dim 1 appears multiple times").
DimVector wrap_dims(IntArrayRef dims, int64_t ndim, const char* what) {
  DimVector out(dims.size());
  std::vector<bool> seen(size_t(std::max<int64_t>(ndim, 1)), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    out[i] = wrap_dim(dims[i], ndim);
    TP_CHECK(!seen[size_t(out[i])], what, ": dim ", out[i], " appears multiple times in the list of dims");
    seen[size_t(out[i])] = true;
  }
  return out;
}

}  // namespace

Tensor permute_impl(const Tensor& self, IntArrayRef dims, OutArg) {
  int64_t nd = self.dim();
  TP_CHECK(int64_t(dims.size()) == nd, "permute(sparse_coo): number of dimensions in the tensor "
           "input does not match the length of the desired ordering of dimensions i.e. "
           "input.dim() = ", nd, " is not equal to len(dims) = ", dims.size());
  DimVector d = wrap_dims(dims, nd, "permute");
  DimVector sizes(nd), strides(nd);
  for (int64_t i = 0; i < nd; ++i) {
    sizes[i] = self.size(d[i]);
    strides[i] = self.stride(d[i]);
  }
  return make_view(self, std::move(sizes), std::move(strides), self.storage_offset());
}

Tensor movedim_impl(const Tensor& self, IntArrayRef source, IntArrayRef destination, OutArg) {
  int64_t nd = self.dim();
  TP_CHECK(source.size() == destination.size(), "movedim: Invalid source or destination dims: "
           "source (", shape_str(source), " dims) should contain the same number of dims as "
           "destination (", shape_str(destination), " dims)");
  DimVector src = wrap_dims(source, nd, "movedim"), dst = wrap_dims(destination, nd, "movedim");
  // Place moved dims at their destinations, the rest in their original order.
  DimVector order(nd, -1);
  std::vector<bool> used(size_t(std::max<int64_t>(nd, 1)), false);
  for (size_t i = 0; i < src.size(); ++i) {
    order[dst[i]] = src[i];
    used[size_t(src[i])] = true;
  }
  int64_t next = 0;
  for (int64_t i = 0; i < nd; ++i) {
    if (order[i] != -1) continue;
    while (used[size_t(next)]) ++next;
    order[i] = next++;
  }
  return permute_impl(self, order, {});
}

Tensor unsqueeze_impl(const Tensor& self, int64_t dim, OutArg) {
  int64_t nd = self.dim();
  dim = wrap_dim(dim, nd + 1);
  DimVector sizes = sizes_of(self), strides = strides_of(self);
  int64_t st = dim < nd ? self.size(dim) * self.stride(dim) : 1;
  sizes.insert(size_t(dim), 1);
  strides.insert(size_t(dim), st);
  return make_view(self, std::move(sizes), std::move(strides), self.storage_offset());
}

Tensor _squeeze_dims_impl(const Tensor& self, IntArrayRef dims, OutArg) {
  int64_t nd = self.dim();
  DimVector d = wrap_dims(dims, nd, "squeeze");
  std::vector<bool> drop(size_t(std::max<int64_t>(nd, 1)), false);
  for (int64_t x : d)
    if (nd > 0 && self.size(x) == 1) drop[size_t(x)] = true;
  DimVector sizes, strides;
  for (int64_t i = 0; i < nd; ++i) {
    if (drop[size_t(i)]) continue;
    sizes.push_back(self.size(i));
    strides.push_back(self.stride(i));
  }
  return make_view(self, std::move(sizes), std::move(strides), self.storage_offset());
}

Tensor narrow_impl(const Tensor& self, int64_t dim, int64_t start, int64_t length, OutArg) {
  TP_CHECK(self.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  dim = wrap_dim(dim, self.dim());
  int64_t size = self.size(dim);
  TP_CHECK(length >= 0, "narrow(): length must be non-negative.");
  TP_CHECK_INDEX(start >= -size && start <= size, "start out of range (expected to be in range of [",
                 -size, ", ", size, "], but got ", start, ")");
  if (start < 0) start += size;
  TP_CHECK(start <= size - length, "start (", start, ") + length (", length,
           ") exceeds dimension size (", size, ").");
  DimVector sizes = sizes_of(self);
  sizes[dim] = length;
  return make_view(self, std::move(sizes), strides_of(self),
                   self.storage_offset() + start * self.stride(dim));
}

Tensor select_impl(const Tensor& self, int64_t dim, int64_t index, OutArg) {
  TP_CHECK_INDEX(self.dim() > 0, "select() cannot be applied to a 0-dim tensor.");
  dim = wrap_dim(dim, self.dim());
  int64_t size = self.size(dim);
  TP_CHECK_INDEX(index >= -size && index < size, "select(): index ", index,
                 " out of range for tensor of size ", shape_str(self.sizes()), " at dimension ", dim);
  if (index < 0) index += size;
  DimVector sizes = sizes_of(self), strides = strides_of(self);
  sizes.erase(size_t(dim));
  strides.erase(size_t(dim));
  return make_view(self, std::move(sizes), std::move(strides),
                   self.storage_offset() + index * self.stride(dim));
}

Tensor unfold_impl(const Tensor& self, int64_t dimension, int64_t size, int64_t step, OutArg) {
  int64_t nd = self.dim();
  int64_t d = wrap_dim(dimension, nd);  // a 0-d tensor takes dims -1 and 0 (PyTorch's IndexError past them)
  int64_t len = nd == 0 ? 1 : self.size(d);
  TP_CHECK(size >= 0, "size is ", size, " but must be >= 0");
  TP_CHECK(size <= len, "maximum size for tensor at dimension ", d, " is ", len, " but size is ", size);
  TP_CHECK(step > 0, "step is ", step, " but must be > 0");
  DimVector sizes = sizes_of(self), strides = strides_of(self);
  int64_t st = nd == 0 ? 1 : self.stride(d);
  if (nd == 0) {
    sizes.push_back(size);
    strides.push_back(1);
  } else {
    sizes[d] = (len - size) / step + 1;
    strides[d] = step * st;
    sizes.push_back(size);
    strides.push_back(st);
  }
  return make_view(self, std::move(sizes), std::move(strides), self.storage_offset());
}

Tensor as_strided_impl(const Tensor& self, IntArrayRef size, IntArrayRef stride,
                       const std::optional<int64_t>& storage_offset, OutArg) {
  TP_CHECK(size.size() == stride.size(), "mismatch in length of strides and shape");
  int64_t offset = storage_offset.value_or(self.storage_offset());
  TP_CHECK(offset >= 0, "Tensor: invalid storage offset ", offset);
  int64_t extent = 1;
  bool empty = false, overflow = false;
  for (size_t i = 0; i < size.size(); ++i) {
    TP_CHECK(size[i] >= 0, "Trying to create tensor with negative dimension ", size[i]);
    TP_CHECK(stride[i] >= 0, "as_strided: Negative strides are not supported at the moment, got strides: ",
             shape_str(stride));
    empty |= size[i] == 0;
    int64_t span = 0;
    overflow |= size[i] > 0 && (__builtin_mul_overflow(size[i] - 1, stride[i], &span) ||
                                __builtin_add_overflow(extent, span, &extent));
  }
  if (!empty) {
    int64_t need = 0;
    overflow |= __builtin_add_overflow(offset, extent, &need) ||
                __builtin_mul_overflow(need, int64_t(self.itemsize()), &need);
    TP_CHECK(!overflow, "as_strided: storage size calculation overflowed with sizes=",
             shape_str(size), " and strides=", shape_str(stride));
    checked_numel(size, "as_strided");
    TP_CHECK(size_t(need) <= self.impl()->storage()->nbytes(), "setStorage: sizes ",
             shape_str(size), ", strides ", shape_str(stride), ", storage offset ", offset,
             ", and itemsize ", self.itemsize(), " requiring a storage size of ", need,
             " are out of bounds for storage of size ", self.impl()->storage()->nbytes());
  }
  return make_view(self, DimVector(size.data(), size.size()), DimVector(stride.data(), stride.size()),
                   offset);
}

Tensor diagonal_impl(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2, OutArg) {
  int64_t nd = self.dim();
  int64_t d1 = wrap_dim(dim1, nd), d2 = wrap_dim(dim2, nd);
  TP_CHECK(d1 != d2, "diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  int64_t len, start = self.storage_offset();
  if (offset >= 0) {
    len = std::max<int64_t>(std::min(self.size(d1), self.size(d2) - offset), 0);
    if (len > 0) start += offset * self.stride(d2);
  } else {
    len = std::max<int64_t>(std::min(self.size(d1) + offset, self.size(d2)), 0);
    if (len > 0) start -= offset * self.stride(d1);
  }
  DimVector sizes, strides;
  for (int64_t i = 0; i < nd; ++i) {
    if (i == d1 || i == d2) continue;
    sizes.push_back(self.size(i));
    strides.push_back(self.stride(i));
  }
  sizes.push_back(len);
  strides.push_back(self.stride(d1) + self.stride(d2));
  return make_view(self, std::move(sizes), std::move(strides), start);
}

Tensor flatten_impl(const Tensor& self, int64_t start_dim, int64_t end_dim, OutArg) {
  int64_t nd = self.dim();
  int64_t s = wrap_dim(start_dim, nd), e = wrap_dim(end_dim, nd);
  TP_CHECK(s <= e, "flatten() has invalid args: start_dim cannot come after end_dim");
  if (nd == 0) return reshape_impl(self, std::vector<int64_t>{1}, {});
  if (s == e) return self;
  DimVector shape;
  int64_t merged = 1;
  for (int64_t i = 0; i < nd; ++i) {
    if (i < s || i > e) {
      shape.push_back(self.size(i));
      continue;
    }
    merged *= self.size(i);
    if (i == e) shape.push_back(merged);
  }
  return reshape_impl(self, shape, {});
}

Tensor unflatten_impl(const Tensor& self, int64_t dim, IntArrayRef sizes, OutArg) {
  int64_t nd = self.dim();
  int64_t given = dim;
  dim = wrap_dim(dim, nd);  // PyTorch wraps first: IndexError past [-1, 0] on a 0-d tensor
  TP_CHECK(nd > 0, "unflatten: Dimension specified as ", given, " but tensor has no dimensions");
  TP_CHECK(!sizes.empty(), "unflatten: sizes must be non-empty");
  DimVector inner = infer_size(sizes, self.size(dim));
  DimVector shape;
  for (int64_t i = 0; i < nd; ++i) {
    if (i != dim) shape.push_back(self.size(i));
    else for (int64_t s : inner) shape.push_back(s);
  }
  return view_impl(self, shape, {});
}

Tensor lift_fresh_impl(const Tensor& self, OutArg) { return self; }

Tensor detach_impl(const Tensor& self, OutArg) {
  Tensor v = make_view(self, DimVector(self.sizes().data(), self.dim()),
                       DimVector(self.strides().data(), self.dim()), self.storage_offset());
  v.impl()->set_requires_grad(false);
  return v;
}

Tensor transpose_impl(const Tensor& self, int64_t dim0, int64_t dim1, OutArg) {
  int64_t nd = self.dim();
  if (nd == 0) {
    wrap_dim(dim0, 0);
    wrap_dim(dim1, 0);
    return make_view(self, {}, {}, self.storage_offset());
  }
  dim0 = wrap_dim(dim0, nd);
  dim1 = wrap_dim(dim1, nd);
  DimVector sizes(self.sizes().data(), nd), strides(self.strides().data(), nd);
  std::swap(sizes[dim0], sizes[dim1]);
  std::swap(strides[dim0], strides[dim1]);
  return make_view(self, std::move(sizes), std::move(strides), self.storage_offset());
}

Tensor t_impl(const Tensor& self, OutArg) {
  TP_CHECK(self.dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is ",
           self.dim(), "D");
  if (self.dim() < 2) return transpose_impl(self, 0, 0, OutArg::none());
  return transpose_impl(self, 0, 1, OutArg::none());
}

Tensor expand_impl(const Tensor& self, IntArrayRef size, OutArg) {
  int64_t nd = int64_t(size.size()), old = self.dim();
  TP_CHECK(nd >= old, "expand(", "torch.FloatTensor{", shape_str(self.sizes()),
           "}, size=", shape_str(size), "): the number of sizes provided (", nd,
           ") must be greater or equal to the number of dimensions in the tensor (", old, ")");
  DimVector sizes(nd), strides(nd);
  for (int64_t i = nd - 1; i >= 0; --i) {
    int64_t j = i - (nd - old);
    int64_t want = size[i];
    if (j < 0) {
      TP_CHECK(want >= 0, "The expanded size of the tensor (", want,
               ") isn't allowed in a leading, non-existing dimension ", i);
      sizes[i] = want;
      strides[i] = 0;
      continue;
    }
    int64_t have = self.size(j);
    if (want == -1) want = have;
    TP_CHECK(have == want || have == 1, "The expanded size of the tensor (", want,
             ") must match the existing size (", have, ") at non-singleton dimension ", i,
             ".  Target sizes: ", shape_str(size), ".  Tensor sizes: ", shape_str(self.sizes()));
    // PyTorch lets a size-1 dim take any negative size (a tensor of negative size, or its
    // "numel: integer multiplication overflow"); only -1 (keep) is meaningful
    TP_CHECK(want >= 0, "The expanded size of the tensor (", want, ") must be non-negative at dimension ",
             i, " (-1 keeps the existing size).  Target sizes: ", shape_str(size), ".  Tensor sizes: ",
             shape_str(self.sizes()));
    sizes[i] = want;
    strides[i] = have == want ? self.stride(j) : 0;
  }
  return make_view(self, std::move(sizes), std::move(strides), self.storage_offset());
}

}  // namespace tp
