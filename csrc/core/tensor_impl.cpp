#include "core/tensor_impl.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace tp {

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector strides(sizes.size());
  int64_t s = 1;
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = s;
    s *= std::max<int64_t>(sizes[d], 1);
  }
  return strides;
}

namespace {

bool dense_non_overlapping(IntArrayRef sizes, IntArrayRef strides);

}  // namespace

DimVector preserving_strides(IntArrayRef sizes, IntArrayRef strides) {
  if (dense_non_overlapping(sizes, strides)) return DimVector(strides.data(), strides.size());
  const int64_t nd = int64_t(sizes.size());
  DimVector perm(nd);
  for (int64_t i = 0; i < nd; ++i) perm[i] = nd - 1 - i;
  auto outer = [&](int64_t a, int64_t b) {  // 1: a belongs outside b; -1: stay; 0: no opinion
    if (strides[a] == 0 || strides[b] == 0) return 0;
    if (strides[a] != strides[b]) return strides[a] < strides[b] ? -1 : 1;
    return sizes[a] > sizes[b] ? 1 : 0;
  };
  order_dims_inner_first(perm, outer);
  return strides_in_order(sizes, perm);
}

DimVector channels_last_strides(IntArrayRef sizes) {
  DimVector out(sizes.size());
  int64_t step = 1;  // innermost first: C, the spatial dims from the last, N (no floor at 1, as PyTorch)
  auto place = [&](int64_t d) {
    out[d] = step;
    step *= sizes[d];
  };
  place(1);
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 2; --d) place(d);
  place(0);
  return out;
}

bool suggests_channels_last(IntArrayRef sizes, IntArrayRef strides) {
  const int64_t nd = int64_t(sizes.size());
  if ((nd != 4 && nd != 5) || strides[1] == 0) return false;
  int64_t floor = 0;  // the least stride the next dim outward may have
  DimVector order{1};
  for (int64_t d = nd - 1; d >= 2; --d) order.push_back(d);
  order.push_back(0);
  for (int64_t d : order) {
    if (sizes[d] == 0 || strides[d] < floor) return false;
    // N with the channel dim's stride: an (N, 1, 1, 1)-like tensor, read as row-major
    if (d == 0 && floor == strides[1]) return false;
    floor = sizes[d] > 1 ? strides[d] * sizes[d] : strides[d];
  }
  return true;
}

DimVector strides_in_order(IntArrayRef sizes, const DimVector& perm) {
  DimVector out(perm.size());
  int64_t step = 1;
  for (int64_t d : perm) {
    out[d] = step;
    step *= std::max<int64_t>(sizes[d], 1);
  }
  return out;
}

int64_t checked_numel(IntArrayRef sizes, const char* op) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    if (s < 0) {
      std::string shape;
      for (size_t i = 0; i < sizes.size(); ++i) shape += (i ? ", " : "") + std::to_string(sizes[i]);
      TP_FAIL("Trying to create tensor with negative dimension ", s, ": [", shape, "]");
    }
    TP_CHECK(!__builtin_mul_overflow(n, s, &n), op, ": the number of elements overflows int64");
  }
  return n;
}

namespace {
thread_local bool t_inference_mode = false;
}  // namespace

bool inference_mode_enabled() { return t_inference_mode; }
void set_inference_mode_enabled(bool enabled) { t_inference_mode = enabled; }

void (*release_python_state)(void* state) = nullptr;

TensorImpl::~TensorImpl() {
  if (python_state_) release_python_state(python_state_);
}

TensorImpl::TensorImpl(intrusive_ptr<StorageImpl> storage, DType dtype, DimVector sizes,
                       DimVector strides, int64_t offset)
    : storage_(std::move(storage)), sizes_(std::move(sizes)), strides_(std::move(strides)),
      offset_(offset), dtype_(dtype), inference_(t_inference_mode) {
  refresh();
}

void TensorImpl::set_sizes_and_strides(DimVector sizes, DimVector strides, int64_t offset) {
  sizes_ = std::move(sizes);
  strides_ = std::move(strides);
  offset_ = offset;
  refresh();
}

void TensorImpl::refresh() {
  int64_t n = 1;
  bool contig = true;
  int64_t expected = 1;
  for (int64_t d = int64_t(sizes_.size()) - 1; d >= 0; --d) {
    n *= sizes_[d];
    if (sizes_[d] != 1) {
      if (strides_[d] != expected) contig = false;
      expected *= sizes_[d];
    }
  }
  numel_ = n;
  contiguous_ = contig || n == 0;
}

namespace {

bool dense_non_overlapping(IntArrayRef sizes, IntArrayRef strides) {
  size_t nd = sizes.size();
  DimVector perm(nd);
  for (size_t i = 0; i < nd; ++i) perm[i] = int64_t(i);
  std::sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    if (sizes[a] < 2) return false;
    if (sizes[b] < 2) return true;
    return strides[a] < strides[b];
  });
  int64_t expected = 1;
  for (size_t i = 0; i < nd; ++i) {
    int64_t d = perm[i];
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

}  // namespace

bool TensorImpl::is_non_overlapping_and_dense() const {
  return contiguous_ || dense_non_overlapping(sizes(), strides());
}

Tensor empty_tensor(IntArrayRef sizes, DType dtype, Device device) {
  int64_t n = checked_numel(sizes, "empty");
  auto storage = make_intrusive<StorageImpl>(size_t(n) * element_size(dtype), device);
  DimVector sz(sizes.data(), sizes.size());
  return Tensor(make_intrusive<TensorImpl>(std::move(storage), dtype, std::move(sz),
                                           contiguous_strides(sizes), 0));
}

void Tensor::no_host_data() const {
  if (device().type == DeviceType::Meta)
    TP_FAIL_NOT_IMPLEMENTED("no Meta kernel (host code reached a meta tensor, which has no data)");
  if (device().type == DeviceType::CUDA)
    TP_FAIL_NOT_IMPLEMENTED("no CUDA kernel (host code reached a CUDA tensor)");
  TP_FAIL("the tensor has no data of its own (a wrapper subclass made by _make_wrapper_subclass "
          "keeps its data elsewhere: read it in __torch_dispatch__)");
}

Tensor empty_strided_tensor(IntArrayRef sizes, IntArrayRef strides, DType dtype, Device device) {
  TP_CHECK(sizes.size() == strides.size(), "empty_strided: mismatch in length of strides (",
           strides.size(), ") and shape (", sizes.size(), ")");
  int64_t n = checked_numel(sizes, "empty_strided");
  int64_t extent = n == 0 ? 0 : 1;
  for (size_t d = 0; d < sizes.size() && n; ++d) {
    TP_CHECK(strides[d] >= 0, "empty_strided: negative strides are not supported");
    extent += (sizes[d] - 1) * strides[d];
  }
  auto storage = make_intrusive<StorageImpl>(size_t(extent) * element_size(dtype), device);
  return Tensor(make_intrusive<TensorImpl>(std::move(storage), dtype,
                                           DimVector(sizes.data(), sizes.size()),
                                           DimVector(strides.data(), strides.size()), 0));
}

Tensor make_view(const Tensor& base, DimVector sizes, DimVector strides, int64_t offset,
                 std::optional<DType> dtype) {
  auto impl = make_intrusive<TensorImpl>(base.impl()->storage(), dtype.value_or(base.dtype()), std::move(sizes),
                                         std::move(strides), offset);
  if (base.impl()->is_inference()) impl->set_inference(true);
  if (!dtype || *dtype == base.dtype()) impl->set_math_bits(base.impl()->math_bits());
  return Tensor(std::move(impl));
}

}  // namespace tp
