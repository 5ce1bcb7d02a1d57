// View ops: new geometry over the same storage (composite: they run on every backend).
#include <optional>

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

Tensor reshape_impl(const Tensor& self, IntArrayRef shape, OutArg) {
  DimVector sizes = infer_size(shape, self.numel());
  if (auto strides = view_strides(self.sizes(), self.strides(), sizes))
    return make_view(self, std::move(sizes), std::move(*strides), self.storage_offset());
  return view_impl(contiguous_impl(self, OutArg::none()), sizes, OutArg::none());
}

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
    sizes[i] = want;
    strides[i] = have == want ? self.stride(j) : 0;
  }
  return make_view(self, std::move(sizes), std::move(strides), self.storage_offset());
}

}  // namespace tp
