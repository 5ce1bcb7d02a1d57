// TensorImpl: storage + sizes + strides + offset + dtype; Tensor: its ref-counted handle.
#pragma once
#include <memory>
#include <optional>
#include <span>

#include "core/dtype.h"
#include "core/intrusive_ptr.h"
#include "core/small_vector.h"
#include "core/storage.h"

namespace tp {

using IntArrayRef = std::span<const int64_t>;
/// An optional list of ints (e.g. reduction dims: None means every dim).
using OptionalIntArrayRef = std::optional<IntArrayRef>;

/// Row-major strides for `sizes`.
DimVector contiguous_strides(IntArrayRef sizes);
/// The strides a copy of a (sizes, strides) tensor takes under PyTorch's preserve_format:
/// the same strides when they are dense and non-overlapping, else dense strides that keep
/// the dims' stride order (ties broken toward the smaller size; zero strides keep place).
DimVector preserving_strides(IntArrayRef sizes, IntArrayRef strides);
/// Strides of a dense (N, C, spatial...) tensor laid out channels last: C innermost, then the
/// spatial dims in order, then N (PyTorch's channels_last, channels_last_3d).
DimVector channels_last_strides(IntArrayRef sizes);
/// Whether a 4-D or 5-D tensor's strides read as channels last, as PyTorch's
/// suggest_memory_format reads them: dims 1, last, ..., 2, 0 in increasing stride order;
/// ambiguous strides (size-1 dims, a zero channel stride) read as row-major. Views such as a
/// permuted NHWC tensor or a slice of a channels-last one count.
bool suggests_channels_last(IntArrayRef sizes, IntArrayRef strides);
/// Orders dims innermost first (`perm` starts in row-major order, perm[0] the innermost)
/// with PyTorch's insertion sort: a dim moves outward past another while outer(a, b) > 0
/// (a belongs outside b), stops at < 0, and looks further out at 0 (no opinion).
template <class Outer>
void order_dims_inner_first(DimVector& perm, Outer&& outer) {
  for (size_t i = 1; i < perm.size(); ++i) {
    size_t moving = i;
    for (size_t j = i; j-- > 0;) {
      int c = outer(perm[j], perm[moving]);
      if (c > 0) {
        std::swap(perm[j], perm[moving]);
        moving = j;
      } else if (c < 0) {
        break;
      }
    }
  }
}
/// Dense strides laying the dims out in `perm`'s order (perm[0] innermost).
DimVector strides_in_order(IntArrayRef sizes, const DimVector& perm);
/// Product of sizes; raises if it overflows int64.
int64_t checked_numel(IntArrayRef sizes, const char* op);

/// Whether this thread is inside tp.inference_mode(): tensors made now are inference
/// tensors (autograd refuses them outside the mode).
bool inference_mode_enabled();
void set_inference_mode_enabled(bool enabled);

/// What autograd keeps per tensor (grad, grad_fn, hooks); defined by csrc/autograd, which
/// core does not depend on. Absent on tensors that never took part in autograd.
struct AutogradMetaBase {
  virtual ~AutogradMetaBase() = default;
};

/// Releases a tensor's Python state (set by the Python bindings; see TensorImpl::python_state).
extern void (*release_python_state)(void* state);

/// The state behind a tensor. Views share `storage_`.
class TensorImpl : public RefCounted {
 public:
  TensorImpl(intrusive_ptr<StorageImpl> storage, DType dtype, DimVector sizes,
             DimVector strides, int64_t offset);
  ~TensorImpl() override;

  IntArrayRef sizes() const { return {sizes_.data(), sizes_.size()}; }
  IntArrayRef strides() const { return {strides_.data(), strides_.size()}; }
  /// Size and stride of dim d; negative d counts from the end, as in Python.
  int64_t size(int64_t d) const { return sizes_[d < 0 ? d + dim() : d]; }
  int64_t stride(int64_t d) const { return strides_[d < 0 ? d + dim() : d]; }
  int64_t dim() const { return int64_t(sizes_.size()); }
  int64_t numel() const { return numel_; }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  int64_t storage_offset() const { return offset_; }
  const intrusive_ptr<StorageImpl>& storage() const { return storage_; }
  /// Address of element 0 (storage base + offset * itemsize).
  char* data_ptr() const {
    return static_cast<char*>(storage_->data()) + offset_ * int64_t(element_size(dtype_));
  }
  bool is_contiguous() const { return contiguous_; }
  /// True when the elements cover one dense block in some order (no gaps, no overlap).
  bool is_non_overlapping_and_dense() const;

  void set_sizes_and_strides(DimVector sizes, DimVector strides, int64_t offset);
  void set_storage(intrusive_ptr<StorageImpl> storage) { storage_ = std::move(storage); }
  /// Takes `o`'s storage, geometry and dtype, keeping this tensor's autograd state
  /// (PyTorch's `t.data = o`).
  void shallow_copy_from(const TensorImpl& o) {
    storage_ = o.storage_;
    dtype_ = o.dtype_;
    set_math_bits(o.math_bits());
    set_sizes_and_strides(o.sizes_, o.strides_, o.offset_);
  }

  uint32_t version() const { return storage_->version(); }
  void bump_version() { storage_->bump_version(); }

  /// True for leaves that require grad and for results with a grad_fn.
  bool requires_grad() const { return requires_grad_; }
  void set_requires_grad(bool r) { requires_grad_ = r; }
  AutogradMetaBase* autograd_meta() const { return autograd_meta_.get(); }
  /// Made inside inference_mode (or a view of such a tensor).
  bool is_inference() const { return inference_; }
  void set_inference(bool i) { inference_ = i; }
  void set_autograd_meta(std::unique_ptr<AutogradMetaBase> m) { autograd_meta_ = std::move(m); }
  /// Python numbers turned into 0-dim tensors promote as "wrapped numbers".
  bool is_wrapped_number() const { return wrapped_number_; }
  void set_wrapped_number(bool w) { wrapped_number_ = w; }
  /// The tensor's dispatch key bits (Note [Dispatch keys] in dispatch/dispatch_key.h): one
  /// byte, so a call reads every key its tensors ask for at once.
  static constexpr uint8_t kPythonKeyBit = 1, kConjBit = 2, kNegBit = 4;
  static constexpr uint8_t kMathBits = kConjBit | kNegBit;
  uint8_t key_bits() const { return key_bits_; }
  /// Calls with this tensor go to the Python dispatch key (a tensor subclass with
  /// __torch_dispatch__, a fake tensor).
  uint8_t has_python_key() const { return key_bits_ & kPythonKeyBit; }
  void set_python_key(bool p) { set_key_bit(kPythonKeyBit, p); }
  /// A lazily conjugated / negated view: its elements read as the conjugate / negation of
  /// what its storage holds (Note [Conjugate and negative bits] in dispatch/math_bits.cpp).
  bool is_conj() const { return key_bits_ & kConjBit; }
  bool is_neg() const { return key_bits_ & kNegBit; }
  uint8_t math_bits() const { return key_bits_ & kMathBits; }
  void set_math_bits(uint8_t bits) { key_bits_ = uint8_t((key_bits_ & ~kMathBits) | (bits & kMathBits)); }
  void set_key_bit(uint8_t bit, bool on) { key_bits_ = uint8_t(on ? key_bits_ | bit : key_bits_ & ~bit); }
  /// What the Python bindings keep with a tensor of a Python subclass (its type and
  /// attributes), so the tensor comes back to Python as that subclass; owned by the tensor
  /// and released with it through release_python_state.
  void* python_state() const { return python_state_; }
  void set_python_state(void* state) { python_state_ = state; }

 private:
  void refresh();

  intrusive_ptr<StorageImpl> storage_;
  DimVector sizes_;
  DimVector strides_;
  int64_t offset_ = 0;
  int64_t numel_ = 1;
  DType dtype_;
  std::unique_ptr<AutogradMetaBase> autograd_meta_;
  bool contiguous_ = true;
  bool requires_grad_ = false;
  bool wrapped_number_ = false;
  bool inference_ = false;
  uint8_t key_bits_ = 0;
  void* python_state_ = nullptr;
};

/// A handle to a TensorImpl; copying shares the tensor (as in Python).
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(intrusive_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return bool(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  const intrusive_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

  IntArrayRef sizes() const { return impl_->sizes(); }
  IntArrayRef strides() const { return impl_->strides(); }
  int64_t size(int64_t d) const { return impl_->size(d); }
  int64_t stride(int64_t d) const { return impl_->stride(d); }
  int64_t dim() const { return impl_->dim(); }
  int64_t numel() const { return impl_->numel(); }
  DType dtype() const { return impl_->dtype(); }
  Device device() const { return impl_->device(); }
  int64_t storage_offset() const { return impl_->storage_offset(); }
  char* data_ptr() const { return impl_->data_ptr(); }
  /// Typed host access for CPU kernels. A CUDA or meta tensor that reaches host code (an op
  /// with no kernel for its device) raises NotImplementedError instead of being read.
  template <class T> T* data() const {
    if (impl_->device().type != DeviceType::CPU) [[unlikely]] no_host_data();
    return reinterpret_cast<T*>(impl_->data_ptr());
  }
  /// A typed device pointer for CUDA kernels (no check).
  template <class T> T* device_data() const { return reinterpret_cast<T*>(impl_->data_ptr()); }
  bool is_contiguous() const { return impl_->is_contiguous(); }
  size_t itemsize() const { return element_size(dtype()); }
  bool requires_grad() const { return impl_->requires_grad(); }
  [[noreturn]] void no_host_data() const;

 private:
  intrusive_ptr<TensorImpl> impl_;
};

/// Uninitialised tensor (PyTorch's empty) with contiguous strides.
Tensor empty_tensor(IntArrayRef sizes, DType dtype, Device device = Device(DeviceType::CPU));
/// Uninitialised tensor with the given strides; storage covers the furthest element.
Tensor empty_strided_tensor(IntArrayRef sizes, IntArrayRef strides, DType dtype, Device device);
/// A view of `base`'s storage with new geometry (shares the version counter), read as
/// `dtype` when given (offset and strides then count elements of `dtype`). A view of the same
/// dtype keeps base's conjugate and negative bits; one of another dtype has none.
Tensor make_view(const Tensor& base, DimVector sizes, DimVector strides, int64_t offset,
                 std::optional<DType> dtype = std::nullopt);

}  // namespace tp
