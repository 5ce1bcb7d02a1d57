// In-place view ops (t_, transpose_, squeeze_, unsqueeze_, as_strided_), resize_ and set_:
// they change a tensor's own sizes, strides, offset or storage (csrc/ops/views_inplace.yaml).
// Composite kernels: metadata only, so they serve every backend (a storage grows on its own
// device, Note [Resizable storage]).
#include <algorithm>
#include <optional>

#include "autograd/variable.h"
#include "kernels/tensor_iterator.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"

namespace tp {

namespace {

DimVector dims_of(IntArrayRef a) { return DimVector(a.data(), a.size()); }

/// self takes `view`'s geometry (a view of self's own storage) and its version moves.
Tensor take_geometry(const Tensor& self, const Tensor& view) {
  self.impl()->set_sizes_and_strides(dims_of(view.sizes()), dims_of(view.strides()),
                                     view.storage_offset());
  self.impl()->bump_version();
  return self;
}

}  // namespace

Tensor t_inplace_impl(const Tensor& self, OutArg) {
  TP_CHECK(self.dim() <= 2, "t_() expects a tensor with <= 2 dimensions, but self is ", self.dim(), "D");
  return take_geometry(self, t_impl(self, OutArg::none()));
}

Tensor transpose_inplace_impl(const Tensor& self, int64_t dim0, int64_t dim1, OutArg) {
  return take_geometry(self, transpose_impl(self, dim0, dim1, OutArg::none()));
}

Tensor squeeze_inplace_impl(const Tensor& self, OutArg) {
  DimVector dims;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (self.size(d) == 1) dims.push_back(d);
  return take_geometry(self, _squeeze_dims_impl(self, dims, OutArg::none()));
}

Tensor squeeze_dim_inplace_impl(const Tensor& self, int64_t dim, OutArg) {
  return take_geometry(self, _squeeze_dims_impl(self, IntArrayRef(&dim, 1), OutArg::none()));
}

Tensor squeeze_dims_inplace_impl(const Tensor& self, IntArrayRef dim, OutArg) {
  return take_geometry(self, _squeeze_dims_impl(self, dim, OutArg::none()));
}

Tensor unsqueeze_inplace_impl(const Tensor& self, int64_t dim, OutArg) {
  return take_geometry(self, unsqueeze_impl(self, dim, OutArg::none()));
}

Tensor as_strided_inplace_impl(const Tensor& self, IntArrayRef size, IntArrayRef stride,
                               const std::optional<int64_t>& storage_offset, OutArg) {
  return take_geometry(self, as_strided_impl(self, size, stride, storage_offset, OutArg::none()));
}

namespace {

/// The bytes a (size, stride, offset) tensor of `itemsize` reaches in its storage (0 when
/// it has no elements); raises on negative sizes.
size_t bytes_needed(IntArrayRef size, IntArrayRef stride, int64_t offset, size_t itemsize,
                    const char* op) {
  const int64_t n = checked_numel(size, op);
  if (n == 0) return 0;
  int64_t extent = 1;
  for (size_t d = 0; d < size.size(); ++d) {
    int64_t span = 0;
    TP_CHECK(!__builtin_mul_overflow(size[d] - 1, stride[d], &span) &&
                 !__builtin_add_overflow(extent, span, &extent),
             op, ": storage size calculation overflowed with sizes=", shape_str(size),
             " and strides=", shape_str(stride));
  }
  int64_t bytes = 0;
  TP_CHECK(!__builtin_add_overflow(offset, extent, &bytes) &&
               !__builtin_mul_overflow(bytes, int64_t(itemsize), &bytes),
           op, ": storage size calculation overflowed with sizes=", shape_str(size),
           " and strides=", shape_str(stride));
  return size_t(bytes);
}

/// Grows `storage` to hold `bytes` (never shrinks it), as PyTorch's resize_ and set_ do.
void grow_storage(StorageImpl& storage, size_t bytes) {
  if (bytes > storage.nbytes()) storage.resize(bytes);
}

void check_set_device(const Tensor& self, Device storage_device) {
  TP_CHECK(self.device() == storage_device, "Attempted to set the storage of a tensor on device \"",
           self.device().str(), "\" to a storage on different device \"", storage_device.str(),
           "\".  This is no longer allowed; the devices must match.");
}

/// self becomes a tensor on `storage` with the geometry given (set_'s common part).
Tensor set_storage_geometry(const Tensor& self, const intrusive_ptr<StorageImpl>& storage,
                            int64_t offset, IntArrayRef size, IntArrayRef stride) {
  check_set_device(self, storage->device());
  TP_CHECK(offset >= 0, "Tensor: invalid storage offset ", offset);
  DimVector st = stride.empty() && !size.empty() ? contiguous_strides(size) : dims_of(stride);
  TP_CHECK(st.size() == size.size(), "mismatch in length of strides and shape");
  for (int64_t s : st) TP_CHECK(s >= 0, "set_: negative strides are not supported, got strides: ", shape_str(st));
  grow_storage(*storage, bytes_needed(size, st, offset, self.itemsize(), "set_"));
  const uint32_t old_version = self.impl()->version();
  autograd::forget_view(self);
  self.impl()->set_storage(storage);
  self.impl()->set_sizes_and_strides(dims_of(size), std::move(st), offset);
  storage->bump_version_past(old_version);
  return self;
}

}  // namespace

Tensor resize_inplace_impl(const Tensor& self, IntArrayRef size, OutArg) {
  TP_CHECK(!self.requires_grad(), "cannot resize variables that require grad");
  TensorImpl* impl = self.impl();
  const bool same = std::equal(size.begin(), size.end(), self.sizes().begin(), self.sizes().end());
  if (same) return self;  // PyTorch keeps the strides then (and does not bump the version)
  DimVector strides = contiguous_strides(size);
  const size_t bytes = bytes_needed(size, strides, self.storage_offset(), self.itemsize(), "resize_");
  grow_storage(*impl->storage(), bytes);
  impl->set_sizes_and_strides(dims_of(size), std::move(strides), self.storage_offset());
  impl->bump_version();
  return self;
}

Tensor set_empty_impl(const Tensor& self, OutArg) {
  auto storage = make_intrusive<StorageImpl>(size_t(0), self.device());
  const int64_t zero = 0, one = 1;
  return set_storage_geometry(self, storage, 0, IntArrayRef(&zero, 1), IntArrayRef(&one, 1));
}

Tensor set_tensor_impl(const Tensor& self, const Tensor& source, OutArg) {
  TP_CHECK(self.dtype() == source.dtype(), "Could not set tensor of type ", cpp_type_name(source.dtype()),
           " to a tensor of type ", cpp_type_name(self.dtype()));
  if (self.is_same(source)) {
    self.impl()->bump_version();
    return self;
  }
  DimVector size = dims_of(source.sizes()), stride = dims_of(source.strides());
  return set_storage_geometry(self, source.impl()->storage(), source.storage_offset(), size, stride);
}

Tensor set_tensor_storage_offset_impl(const Tensor& self, const Tensor& source, int64_t storage_offset,
                                      IntArrayRef size, IntArrayRef stride, OutArg) {
  TP_CHECK(self.dtype() == source.dtype(), "Could not set tensor of type ", cpp_type_name(source.dtype()),
           " to a tensor of type ", cpp_type_name(self.dtype()));
  return set_storage_geometry(self, source.impl()->storage(), storage_offset, size, stride);
}

}  // namespace tp

namespace tp {

Tensor slice_inverse_impl(const Tensor& self, const Tensor& src, int64_t, const std::optional<int64_t>&,
                          const std::optional<int64_t>&, int64_t, OutArg) {
  const int64_t offset = src.storage_offset();
  return as_strided_impl(self, src.sizes(), src.strides(), offset, OutArg::none());
}

}  // namespace tp
