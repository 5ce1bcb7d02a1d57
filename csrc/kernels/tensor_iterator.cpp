#include "kernels/tensor_iterator.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"
#include "kernels/cpu_stubs.h"
#ifdef TP_USE_CUDA
#include "cuda/copy.h"
#endif

namespace tp {

namespace {

constexpr int64_t kGrainSize = 32768;
constexpr int64_t kCastChunk = 256;

struct ResultTypeState {
  DType dim = DType::Undefined, zero = DType::Undefined, wrapped = DType::Undefined;
};

void update_state(ResultTypeState& st, const Tensor& t) {
  DType dt = t.dtype();
  if (t.impl()->is_wrapped_number()) {
    // A Python float promotes as the default dtype; int as int64; bool as bool.
    if (is_floating(dt)) dt = default_dtype();
    else if (is_complex(dt)) dt = to_complex_dtype(default_dtype());
    st.wrapped = promote_types(st.wrapped, dt);
  } else if (t.dim() == 0) {
    st.zero = promote_types(st.zero, dt);
  } else {
    st.dim = promote_types(st.dim, dt);
  }
}

// `higher` wins unless `lower` brings a higher category (then promote).
// A complex `lower` makes a floating `higher` its complex counterpart (float64 ->
// complex128), as PyTorch's (float16 -> complex32 there; complex64 here, no complex32).
DType combine_categories(DType higher, DType lower) {
  if (is_complex(higher)) return higher;
  if (is_floating(higher)) return is_complex(lower) ? to_complex_dtype(higher) : higher;
  if (higher == DType::Bool || is_floating_or_complex(lower)) return promote_types(higher, lower);
  if (higher != DType::Undefined) return higher;
  return lower;
}

DType state_result(const ResultTypeState& st) {
  return combine_categories(st.dim, combine_categories(st.zero, st.wrapped));
}

}  // namespace

void cast_strided(const char* src, int64_t ss, DType sdt, char* dst, int64_t ds, DType ddt,
                  int64_t n) {
  if (n <= 0) return;  // an empty operand may have no storage (null pointers)
  if (sdt == ddt && ss == ds && ss == int64_t(element_size(sdt))) {
    std::memcpy(dst, src, size_t(n) * element_size(sdt));
    return;
  }
  cpu::cast_stub(src, ss, sdt, dst, ds, ddt, n);
}

std::string shape_str(IntArrayRef sizes) {
  std::string r = "[";
  for (size_t i = 0; i < sizes.size(); ++i) r += (i ? ", " : "") + std::to_string(sizes[i]);
  return r + "]";
}

void resize_out(const Tensor& out, IntArrayRef sizes) {
  if (std::equal(sizes.begin(), sizes.end(), out.sizes().begin(), out.sizes().end())) return;
  Tensor fresh = empty_tensor(sizes, out.dtype(), out.device());
  out.impl()->set_storage(fresh.impl()->storage());
  out.impl()->set_sizes_and_strides(DimVector(sizes.data(), sizes.size()), contiguous_strides(sizes), 0);
}

DType result_type(std::initializer_list<const Tensor*> tensors) {
  ResultTypeState st;
  for (const Tensor* t : tensors) update_state(st, *t);
  return state_result(st);
}

TensorIterator::TensorIterator(const IterConfig& cfg, OutArg out,
                               std::initializer_list<const Tensor*> inputs) {
  for (const Tensor* t : inputs) inputs_[ninputs_++] = t;
  // Device: all inputs on one device, except 0-dim CPU tensors (scalars) beside CUDA ones.
  device_ = ninputs_ ? inputs_[0]->device() : out.tensor->device();
  for (int i = 0; i < ninputs_; ++i) {
    Device d = inputs_[i]->device();
    if (d.is_cpu() && inputs_[i]->dim() == 0) continue;
    if (device_.is_cpu() && inputs_[0]->dim() == 0) device_ = d;
    TP_CHECK(d == device_, "Expected all tensors to be on the same device, but found at least "
             "two devices, ", device_.str(), " and ", d.str(), "!");
  }
#ifdef TP_USE_CUDA
  if (out.tensor && ninputs_ && out.tensor->device() != device_)
    TP_CHECK(false, "Expected all tensors to be on the same device, but found at least "
             "two devices, ", device_.str(), " and ", out.tensor->device().str(), "!");
#endif
  first_fixed_ = cfg.first_input_fixed;
  if (out.tensor) out_shape_ = out.tensor->sizes();
  inplace_ = out.inplace;
  compute_shape(cfg.op);
  compute_dtypes(cfg);
  allocate_or_check_output(cfg, out);
  check_overlap(cfg.op, cfg.check_internal_overlap);
  if (device_.is_cuda()) prepare_device_operands();
  reorder_and_coalesce();
}

// Note [CUDA elementwise engine]
// A device kernel reads and writes one storage dtype per operand role, fixed at compile
// time, so that contiguous operands move as 16-byte vectors: inputs and output in
// storage_dtype_ (the promoted dtype; float16/bfloat16 are converted to float32 in
// registers), a bool output for predicates, and where's condition as it is. An operand
// stored in another dtype (mixed-dtype inputs, an out= of another dtype) is converted by
// a device copy first (output: written to a staging tensor, copied back afterwards), so
// the kernels need no per-element dtype switch. CPU scalars beside CUDA tensors reach
// the kernel by value.
void TensorIterator::prepare_device_operands() {
#ifdef TP_USE_CUDA
  storage_dtype_ = compute_dtype_;
  if (compute_dtype_ == DType::Float32 &&
      (common_dtype_ == DType::Float16 || common_dtype_ == DType::BFloat16))
    storage_dtype_ = common_dtype_;
  auto staged = [&](const Tensor& t, DType dt) {
    DimVector st = preserving_strides(t.sizes(), t.strides());
    return empty_strided_tensor(t.sizes(), st, dt, t.device());
  };
  for (int i = 0; i < ninputs_; ++i) {
    const Tensor& t = *inputs_[i];
    if (t.device().is_cpu()) continue;  // a scalar: passed by value
    DType target = (i == 0 && first_fixed_) ? t.dtype() : storage_dtype_;
    if (t.dtype() == target) continue;
    converted_[i] = staged(t, target);
    cuda::copy_(converted_[i], t, false);
    inputs_[i] = &converted_[i];
  }
  DType out_target = kernel_out_dtype_ == DType::Bool ? DType::Bool : storage_dtype_;
  if (out_.dtype() != out_target) {
    write_back_ = out_;
    out_ = staged(write_back_, out_target);
  }
#endif
}

void TensorIterator::for_each_device(DeviceLaunch launch, const KernelParams& p) {
  if (numel_ > 0) launch(p, *this);
  if (write_back_.defined()) {
#ifdef TP_USE_CUDA
    cuda::copy_(write_back_, out_, false);
#endif
    out_ = write_back_;
    write_back_ = Tensor();
  }
}

void TensorIterator::compute_shape(const char* op) {
  if (ninputs_ == 0) {  // nullary (fill): iterate over the output
    shape_ = DimVector(out_shape_.data(), out_shape_.size());
    numel_ = 1;
    for (int64_t s : shape_) numel_ *= s;
    return;
  }
  // In-place ops broadcast against the output too (its shape must be the result's).
  size_t nd = inplace_ ? out_shape_.size() : 0;
  for (int i = 0; i < ninputs_; ++i) nd = std::max<size_t>(nd, inputs_[i]->dim());
  shape_.resize(nd, 1);
  for (int i = inplace_ ? -1 : 0; i < ninputs_; ++i) {
    IntArrayRef s = i < 0 ? out_shape_ : inputs_[i]->sizes();
    size_t off = nd - s.size();
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t& r = shape_[off + d];
      if (s[d] == r || s[d] == 1) continue;
      if (r == 1) { r = s[d]; continue; }
      TP_FAIL(op, ": The size of tensor a (", r, ") must match the size of tensor b (", s[d],
              ") at non-singleton dimension ", off + d);
    }
  }
  numel_ = 1;
  for (int64_t s : shape_) numel_ *= s;
}

void TensorIterator::compute_dtypes(const IterConfig& cfg) {
  ResultTypeState st;
  for (int i = cfg.first_input_fixed ? 1 : 0; i < ninputs_; ++i) update_state(st, *inputs_[i]);
  common_dtype_ = ninputs_ ? state_result(st) : cfg.result_dtype;
  if (cfg.promote == Promote::IntToFloat && !is_floating_or_complex(common_dtype_))
    common_dtype_ = default_dtype();
  compute_dtype_ = common_dtype_;
  if (cfg.half_to_float && (compute_dtype_ == DType::Float16 || compute_dtype_ == DType::BFloat16))
    compute_dtype_ = DType::Float32;
  bool bool_out = cfg.promote == Promote::BoolOut || cfg.promote == Promote::BoolOutOnly;
  kernel_out_dtype_ = bool_out ? DType::Bool : compute_dtype_;
}

void TensorIterator::allocate_or_check_output(const IterConfig& cfg, OutArg out) {
  DType result = cfg.result_dtype != DType::Undefined ? cfg.result_dtype
                 : cfg.promote == Promote::BoolOut || cfg.promote == Promote::BoolOutOnly
                     ? DType::Bool
                     : common_dtype_;
  // Iteration order: fastest dim first, following the inputs' memory layout.
  size_t nd = shape_.size();
  perm_.resize(nd);
  for (size_t i = 0; i < nd; ++i) perm_[i] = int64_t(nd - 1 - i);
  auto stride_of = [&](const Tensor& t, int64_t d) -> int64_t {
    int64_t off = int64_t(nd) - t.dim();
    if (d < off || (t.size(d - off) == 1 && shape_[d] != 1)) return int64_t(0);  // broadcast
    return t.stride(d - off);
  };
  const Tensor* order_ops[kMaxOperands + 1];
  int norder = 0;
  if (out.tensor && out.tensor->defined() && out.tensor->sizes().size() == nd &&
      std::equal(shape_.begin(), shape_.end(), out.tensor->sizes().begin()))
    order_ops[norder++] = out.tensor;
  for (int i = 0; i < ninputs_; ++i) order_ops[norder++] = inputs_[i];
  // 1: d0 belongs outside d1; -1: it stays inside; 0: no operand has an opinion
  auto outer = [&](int64_t d0, int64_t d1) {
    for (int k = 0; k < norder; ++k) {
      int64_t s0 = stride_of(*order_ops[k], d0), s1 = stride_of(*order_ops[k], d1);
      if (s0 == 0 || s1 == 0) continue;
      if (s0 != s1) return s0 > s1 ? 1 : -1;
      if (shape_[d0] > shape_[d1]) return 1;
    }
    return 0;
  };
  order_dims_inner_first(perm_, outer);

  if (out.tensor && out.tensor->defined()) {
    const Tensor& o = *out.tensor;
    bool same_shape = size_t(o.dim()) == nd && std::equal(shape_.begin(), shape_.end(), o.sizes().begin());
    // An out= that is one of the inputs is read and written, like self in place: PyTorch's
    // TensorIterator refuses to resize it.
    bool read_write = out.inplace;
    for (int i = 0; i < ninputs_ && !read_write && !same_shape; ++i)
      read_write = inputs_[i]->impl() == o.impl();
    if (read_write) {
      TP_CHECK(same_shape, "output with shape ", shape_str(o.sizes()),
               " doesn't match the broadcast shape ", shape_str(shape_));
    }
    if (cfg.promote == Promote::Same)
      TP_CHECK(o.dtype() == common_dtype_, "Found dtype ", dtype_scalar_name(o.dtype()),
               " but expected ", dtype_scalar_name(common_dtype_));
    else if (cfg.promote == Promote::BoolOutOnly)
      TP_CHECK(o.dtype() == DType::Bool, cfg.op, " does not support non-boolean outputs.");
    TP_CHECK(can_cast(kernel_out_dtype_ == DType::Bool ? DType::Bool : common_dtype_, o.dtype()) ||
                 cfg.result_dtype != DType::Undefined,
             "result type ", dtype_scalar_name(common_dtype_),
             " can't be cast to the desired output type ", dtype_scalar_name(o.dtype()));
    TP_CHECK(o.device().type == device_.type,
             "Expected out tensor to have device ", device_.str(), ", but got ", o.device().str(),
             " instead");
    if (!same_shape) {
      // PyTorch checks the out= against the inputs before resizing it: one that shares an
      // input's memory in another layout (outer(a, b, out=a) writes a.reshape(-1, 1)) fails
      for (int i = 0; i < ninputs_; ++i) check_partial_overlap(o, *inputs_[i], cfg.op);
      // Like PyTorch's TensorIterator, a resized out= takes the inputs' memory layout
      // (a transposed input gives a transposed result), not a contiguous one.
      IntArrayRef sizes(shape_.data(), nd);
      resize_out(o, sizes);
      o.impl()->set_sizes_and_strides(DimVector(sizes.data(), nd), strides_in_order(sizes, perm_),
                                      o.impl()->storage_offset());
    }
    out_ = o;
  } else {
    DimVector strides = strides_in_order(IntArrayRef(shape_.data(), nd), perm_);
    out_ = empty_strided_tensor(shape_, strides, result, device_);
  }
}

void TensorIterator::check_overlap(const char* op, bool internal) const {
  const TensorImpl* o = out_.impl();
  if (internal && o->numel() > 1 && !o->is_non_overlapping_and_dense()) {
    for (int64_t d = 0; d < o->dim(); ++d)
      TP_CHECK(!(o->stride(d) == 0 && o->size(d) > 1),
               op, ": unsupported operation: more than one element of the written-to tensor "
               "refers to a single memory location. Please clone() the tensor before "
               "performing the operation.");
  }
  for (int i = 0; i < ninputs_; ++i) check_partial_overlap(out_, *inputs_[i], op);
}

void check_partial_overlap(const Tensor& out, const Tensor& in, const char* op) {
  const TensorImpl* o = out.impl();
  const TensorImpl* s = in.impl();
  if (s == o || s->storage().get() != o->storage().get() || !s->numel() || !o->numel()) return;
  // Like PyTorch, judge only dense layouts; interleaved strided views are left alone.
  if (!s->is_non_overlapping_and_dense() || !o->is_non_overlapping_and_dense()) return;
  if (s->data_ptr() == o->data_ptr() &&
      std::equal(s->strides().begin(), s->strides().end(), o->strides().begin(), o->strides().end()))
    return;  // the same elements: a full overlap is fine
  auto bytes = [](const TensorImpl* t) { return t->numel() * int64_t(element_size(t->dtype())); };
  const char *lo1 = s->data_ptr(), *hi1 = lo1 + bytes(s);
  const char *lo2 = o->data_ptr(), *hi2 = lo2 + bytes(o);
  TP_CHECK(hi1 <= lo2 || hi2 <= lo1,
           op, ": unsupported operation: some elements of the input tensor and the written-to "
           "tensor refer to a single memory location. Please clone() the tensor before "
           "performing the operation.");
}

void check_no_overlap(const Tensor& out, const Tensor& in) {
  const TensorImpl* o = out.impl();
  const TensorImpl* s = in.impl();
  bool overlap = s == o;  // the same tensor overlaps itself even when empty (PyTorch's Full)
  if (!overlap && (!s->numel() || !o->numel() || s->storage().get() != o->storage().get())) return;
  if (!overlap && s->is_non_overlapping_and_dense() && o->is_non_overlapping_and_dense()) {
    auto bytes = [](const TensorImpl* t) { return t->numel() * int64_t(element_size(t->dtype())); };
    const char *lo1 = s->data_ptr(), *lo2 = o->data_ptr();
    overlap = lo1 < lo2 + bytes(o) && lo2 < lo1 + bytes(s);
  }
  TP_CHECK(!overlap, "unsupported operation: some elements of the input tensor and the written-to "
           "tensor refer to a single memory location. Please clone() the tensor before performing "
           "the operation.");
}

void TensorIterator::reorder_and_coalesce() {
  size_t nd = shape_.size();
  int nops = ninputs_ + 1;
  const Tensor* ops[kMaxOperands + 1];
  ops[0] = &out_;
  for (int i = 0; i < ninputs_; ++i) ops[i + 1] = inputs_[i];
  for (int k = 0; k < nops; ++k) {
    const Tensor& t = *ops[k];
    op_dtype_[k] = t.dtype();
    base_[k] = t.data_ptr();
    int64_t es = int64_t(element_size(t.dtype()));
    DimVector& st = strides_[k];
    st.resize(nd);
    int64_t off = int64_t(nd) - t.dim();
    for (size_t i = 0; i < nd; ++i) {
      int64_t d = perm_[i];
      st[i] = (d < off || t.size(d - off) == 1) ? 0 : t.stride(d - off) * es;
    }
    // A single-element input of another dtype is converted once, here.
    want_[k] = k == 0 ? kernel_out_dtype_ : (k == 1 && first_fixed_) ? t.dtype() : compute_dtype_;
    DType want = want_[k];
    if (k > 0 && device_.is_cuda() && t.device().is_cpu()) {  // a CPU scalar, by value
      cast_strided(t.data_ptr(), 0, t.dtype(), scalar_slots_[k], 0, want, 1);
      base_[k] = scalar_slots_[k];
      op_dtype_[k] = want;
      host_scalar_[k] = true;
    } else if (k > 0 && t.numel() == 1 && t.dtype() != want && t.device().is_cpu()) {
      cast_strided(t.data_ptr(), 0, t.dtype(), scalar_slots_[k], 0, want, 1);
      base_[k] = scalar_slots_[k];
      op_dtype_[k] = want;
    }
  }
  DimVector shape(nd);
  for (size_t i = 0; i < nd; ++i) shape[i] = shape_[perm_[i]];
  // Merge dims that are contiguous with their neighbour in every operand.
  size_t prev = 0;
  for (size_t d = 1; d < nd; ++d) {
    bool ok = shape[prev] == 1 || shape[d] == 1;
    if (!ok) {
      ok = true;
      for (int k = 0; k < nops; ++k)
        if (shape[prev] * strides_[k][prev] != strides_[k][d]) { ok = false; break; }
    }
    if (ok) {
      if (shape[prev] == 1)
        for (int k = 0; k < nops; ++k) strides_[k][prev] = strides_[k][d];
      shape[prev] *= shape[d];
    } else {
      ++prev;
      shape[prev] = shape[d];
      for (int k = 0; k < nops; ++k) strides_[k][prev] = strides_[k][d];
    }
  }
  size_t nd2 = nd == 0 ? 1 : prev + 1;
  if (nd == 0) {
    shape.resize(1, 1);
    for (int k = 0; k < nops; ++k) strides_[k].resize(1, 0);
  }
  shape.resize(nd2);
  for (int k = 0; k < nops; ++k) strides_[k].resize(nd2);
  shape_ = std::move(shape);
  needs_cast_ = false;
  for (int k = 0; k < nops; ++k) needs_cast_ |= op_dtype_[k] != want_[k];
}

void TensorIterator::run_row(Loop1d loop, const KernelParams& p, char** ptrs, int64_t n) const {
  int nops = ninputs_ + 1;
  int64_t inner[kMaxOperands + 1];
  for (int k = 0; k < nops; ++k) inner[k] = strides_[k][0];
  if (!needs_cast_) {
    loop(p, ptrs, inner, n);
    return;
  }
  // Convert mismatched operands through small buffers (PyTorch's "opmath" for halves,
  // and mixed-dtype inputs), one chunk at a time.
  alignas(64) char buf[kMaxOperands + 1][kCastChunk * 8];
  char* data[kMaxOperands + 1];
  int64_t st[kMaxOperands + 1];
  for (int64_t i = 0; i < n; i += kCastChunk) {
    int64_t m = std::min(kCastChunk, n - i);
    for (int k = 0; k < nops; ++k) {
      DType want = want_[k];
      char* src = ptrs[k] + i * inner[k];
      if (op_dtype_[k] == want) {
        data[k] = src;
        st[k] = inner[k];
        continue;
      }
      data[k] = buf[k];
      st[k] = int64_t(element_size(want));
      if (k > 0) cast_strided(src, inner[k], op_dtype_[k], buf[k], st[k], want, m);
    }
    loop(p, data, st, m);
    if (op_dtype_[0] != kernel_out_dtype_)
      cast_strided(buf[0], st[0], kernel_out_dtype_, ptrs[0] + i * inner[0], inner[0],
                   op_dtype_[0], m);
  }
}

void TensorIterator::serial_for_each(Loop1d loop, const KernelParams& p, int64_t begin,
                                     int64_t end) const {
  int nops = ninputs_ + 1;
  size_t nd = shape_.size();
  int64_t inner = shape_[0];
  int64_t counter[16] = {0};
  int64_t rest = begin / inner, i0 = begin % inner;
  char* ptrs[kMaxOperands + 1];
  for (int k = 0; k < nops; ++k) ptrs[k] = base_[k];
  for (size_t d = 1; d < nd; ++d) {
    counter[d] = rest % shape_[d];
    rest /= shape_[d];
    for (int k = 0; k < nops; ++k) ptrs[k] += counter[d] * strides_[k][d];
  }
  while (begin < end) {
    int64_t n = std::min(inner - i0, end - begin);
    char* row[kMaxOperands + 1];
    for (int k = 0; k < nops; ++k) row[k] = ptrs[k] + i0 * strides_[k][0];
    run_row(loop, p, row, n);
    begin += n;
    i0 = 0;
    for (size_t d = 1; d < nd; ++d) {
      for (int k = 0; k < nops; ++k) ptrs[k] += strides_[k][d];
      if (++counter[d] < shape_[d]) break;
      for (int k = 0; k < nops; ++k) ptrs[k] -= counter[d] * strides_[k][d];
      counter[d] = 0;
    }
  }
}

void TensorIterator::for_each(Loop1d loop, const KernelParams& p) const {
  if (numel_ == 0) return;
  TP_CHECK(shape_.size() <= 16, "tensors with more than 16 dimensions are not supported");
  int nth = get_num_threads();
  if (numel_ < kGrainSize || nth == 1) {
    serial_for_each(loop, p, 0, numel_);
    return;
  }
  int64_t chunks = std::min<int64_t>(nth, (numel_ + kGrainSize - 1) / kGrainSize);
#pragma omp parallel num_threads(chunks)
  {
    int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
    // Split on 64-element boundaries so threads do not share cache lines.
    int64_t per = ((numel_ + T - 1) / T + 63) / 64 * 64;
    int64_t b = std::min(numel_, t * per), e = std::min(numel_, b + per);
    if (b < e) serial_for_each(loop, p, b, e);
  }
}

}  // namespace tp
