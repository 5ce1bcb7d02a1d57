// TensorIterator: broadcasting, type promotion, output allocation and the loop over the
// elements of a pointwise op. Device-neutral; the CPU and CUDA backends supply loops.
#pragma once
#include <atomic>

#include "core/parallel.h"
#include "core/scalar.h"
#include "core/tensor_impl.h"

namespace tp {

/// Extra arguments a pointwise functor reads (alpha, bounds, ...), plus the error flag
/// a kernel raises when it meets bad data (integer division by zero).
struct KernelParams {
  Scalar s0, s1, s2;
  int64_t i0 = 0;
  mutable std::atomic<int> error{0};
};
enum KernelError : int { kNoError = 0, kZeroDivision = 1 };

/// A 1-D loop: data[0] is the output, data[1..] the inputs; strides in bytes.
using Loop1d = void (*)(const KernelParams& p, char** data, const int64_t* strides, int64_t n);

class TensorIterator;
/// A device backend's whole-iteration launch (CUDA): reads the iterator's shape, strides,
/// base pointers and host scalars (Note [CUDA elementwise engine]).
using DeviceLaunch = void (*)(const KernelParams& p, const TensorIterator& it);

/// How an op's dtypes are derived.
enum class Promote : uint8_t {
  Common,      // result = promoted input dtype
  IntToFloat,  // like Common, but integral/bool results become the default float
  BoolOut,     // compute in the promoted dtype, write bool
  Same,        // like Common, but an out= must have the input's dtype (PyTorch's unary_op:
               // "Found dtype Float but expected Long")
  BoolOutOnly, // like BoolOut, but an out= must be bool ("isposinf does not support
               // non-boolean outputs.")
};

struct IterConfig {
  const char* op = "";
  Promote promote = Promote::Common;
  /// Input 0 keeps its own dtype and does not take part in promotion (where's condition).
  bool first_input_fixed = false;
  /// Half types compute in float32 (PyTorch's opmath); false keeps them for copies.
  bool half_to_float = true;
  /// fill_ may write through expanded (self-overlapping) tensors, as in PyTorch.
  bool check_internal_overlap = true;
  /// Explicit result dtype (e.g. a `dtype=` argument); Undefined: derive from inputs.
  DType result_dtype = DType::Undefined;
};

/// Where the result goes: a new tensor, an `out=` tensor (resized if needed), or `self`.
struct OutArg {
  const Tensor* tensor = nullptr;
  bool inplace = false;
  /// False when a factory initialises a tensor it just made (no user-visible write).
  bool bump_version = true;
  static OutArg none() { return {}; }
};

/// Gives an `out=` tensor the result's shape when it has another one: fresh contiguous
/// storage (PyTorch resizes out= too). A no-op when the shape already matches.
void resize_out(const Tensor& out, IntArrayRef sizes);

constexpr int kMaxOperands = 5;

class TensorIterator {
 public:
  /// Builds the iteration over `inputs` writing to `out`.
  TensorIterator(const IterConfig& cfg, OutArg out, std::initializer_list<const Tensor*> inputs);

  /// The dtype inputs are converted to before the kernel runs.
  DType compute_dtype() const { return compute_dtype_; }
  /// The dtype the kernel writes (compute dtype, or bool for BoolOut).
  DType kernel_out_dtype() const { return kernel_out_dtype_; }
  /// The promoted dtype of the inputs (before half -> float widening).
  DType common_dtype() const { return common_dtype_; }
  Device device() const { return device_; }
  const Tensor& output() const { return write_back_.defined() ? write_back_ : out_; }
  int64_t numel() const { return numel_; }
  int ninputs() const { return ninputs_; }

  /// Runs `loop` over every element, converting operands whose dtype differs from the
  /// kernel's, in parallel above the grain size.
  void for_each(Loop1d loop, const KernelParams& p) const;
  /// Runs a device launch over the whole iteration, then writes a staged output back.
  void for_each_device(DeviceLaunch launch, const KernelParams& p);

  // What a device launch reads, valid after construction. Dims are the coalesced
  // iteration dims, fastest first; strides in bytes; operand 0 is the output.
  int ndim() const { return int(shape_.size()); }
  const int64_t* shape() const { return shape_.data(); }
  const int64_t* strides(int k) const { return strides_[k].data(); }
  char* base(int k) const { return base_[k]; }
  /// Whether input k (k >= 1) is a CPU scalar whose value base(k) holds on the host,
  /// already converted to the kernel's dtype.
  bool host_scalar(int k) const { return host_scalar_[k]; }
  /// On a device: the dtype operands are stored in (float16/bfloat16 for half ops that
  /// compute in float32, else the compute dtype); the kernel reads and writes it.
  DType storage_dtype() const { return storage_dtype_; }

 private:
  void compute_shape(const char* op);
  void compute_dtypes(const IterConfig& cfg);
  void allocate_or_check_output(const IterConfig& cfg, OutArg out);
  void check_overlap(const char* op, bool internal) const;
  void reorder_and_coalesce();
  void prepare_device_operands();
  void serial_for_each(Loop1d loop, const KernelParams& p, int64_t begin, int64_t end) const;
  void run_row(Loop1d loop, const KernelParams& p, char** ptrs, int64_t n) const;

  const Tensor* inputs_[kMaxOperands];
  int ninputs_ = 0;
  Tensor out_;
  Device device_;
  DType common_dtype_ = DType::Undefined;
  DType compute_dtype_ = DType::Undefined;
  DType kernel_out_dtype_ = DType::Undefined;
  DType storage_dtype_ = DType::Undefined;
  Tensor converted_[kMaxOperands];  // device inputs converted to storage_dtype_
  Tensor write_back_;               // the visible output when out_ is a staging tensor
  bool host_scalar_[kMaxOperands + 1] = {};
  IntArrayRef out_shape_;
  DimVector shape_;                    // broadcast shape, then the iteration shape
  DimVector perm_;                     // iteration dim i <- tensor dim perm_[i] (fastest first)
  DimVector strides_[kMaxOperands + 1];    // bytes, operand 0 = output, iteration order
  char* base_[kMaxOperands + 1];
  DType op_dtype_[kMaxOperands + 1];       // each operand's stored dtype
  DType want_[kMaxOperands + 1];       // the dtype the kernel reads/writes per operand
  bool first_fixed_ = false;
  bool inplace_ = false;
  bool needs_cast_ = false;
  int64_t numel_ = 0;
  alignas(16) char scalar_slots_[kMaxOperands + 1][16];  // 1-element inputs pre-converted
};

/// Raises PyTorch's error when `in` and `out` share some, but not all, of their memory.
void check_partial_overlap(const Tensor& out, const Tensor& in, const char* op);

/// PyTorch's assert_no_overlap: the written tensor shares no element with `in` (a full overlap,
/// out= being `in` itself, fails too). Judged on dense layouts, like PyTorch.
void check_no_overlap(const Tensor& out, const Tensor& in);

/// Converts n elements between dtypes with strides in bytes (the copy kernel's core).
void cast_strided(const char* src, int64_t sstride, DType sdt, char* dst, int64_t dstride,
                  DType ddt, int64_t n);

/// The promoted dtype over tensors with PyTorch's wrapped-number and 0-dim rules.
DType result_type(std::initializer_list<const Tensor*> tensors);

/// Formats sizes as "[2, 3]".
std::string shape_str(IntArrayRef sizes);

}  // namespace tp
