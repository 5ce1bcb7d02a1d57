// softmax / log_softmax, layer_norm, rms_norm, batch_norm and group_norm, forward and backward:
// checks, dtypes, layouts and autograd formulas around the fused CPU kernels (kernels/cpu/
// softmax_kernel.cpp, norm_kernel.cpp) and CUDA kernels.
//
// Note [Fused backward and create_graph]: a fused backward kernel (_softmax_backward_data,
// native_layer_norm_backward, native_batch_norm_backward) is one pass over the data but has
// no derivative of its own. The formula helpers below call it when grad mode is off (a
// plain backward) and the same math written with differentiable ops when it is on
// (create_graph=True), so double backward works at the cost of a slower first backward.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "autograd/formula_helpers.h"
#include "autograd/grad_mode.h"
#include "core/error.h"
#include "kernels/cpu_stubs.h"
#include "ops/meta.h"
#include "ops/nn.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"

#ifdef TP_USE_CUDA
#include "cuda/nn_kernels.h"
#endif

namespace tp {

namespace {

DType compute_dtype(DType dt) { return is_float16_or_bfloat16(dt) ? DType::Float32 : dt; }
Tensor compute_input(const Tensor& t) { return contiguous(_to_dtype(t, compute_dtype(t.dtype()))); }

#ifdef TP_USE_CUDA
/// PyTorch's device check: the optional operands on `input`'s device.
void check_devices(const Tensor& input, std::initializer_list<const std::optional<Tensor>*> others) {
  for (const auto* t : others)
    TP_CHECK(!*t || (*t)->device() == input.device(), "Expected all tensors to be on the same device, but found "
             "at least two devices, ", input.device().str(), " and ", (*t)->device().str(), "!");
}

/// A per-row / per-channel operand of a CUDA kernel: contiguous, in the accumulation dtype
/// `dt` (Note [nn kernel dtypes]); undefined when absent.
Tensor kernel_vector(const std::optional<Tensor>& t, DType dt) {
  return t ? contiguous(_to_dtype(*t, dt)) : Tensor();
}

/// A layer / RMS norm weight or bias for the CUDA kernels, which take it in the input's dtype
/// dt or the accumulation dtype adt (Note [Layer-norm weights in their dtype] in
/// cuda/norm_kernels.cu): as it is when of either, else converted to adt.
Tensor norm_weight(const std::optional<Tensor>& t, DType dt, DType adt) {
  if (t && (t->dtype() == dt || t->dtype() == adt)) return contiguous(*t);
  return kernel_vector(t, adt);
}
#endif

/// NotImplementedError unless dt is float32 or float64, the dtypes the kernels compute in.
void check_floating(DType dt, const char* op) {
  TP_CHECK_KIND(ErrorKind::NotImplemented, dt == DType::Float32 || dt == DType::Float64, "\"", op,
                "\" not implemented for '", dtype_scalar_name(dt), "'");
}

/// t's data for a CPU kernel, null when t is undefined (a CUDA tensor raises, as Tensor::data).
void* cpu_data(const Tensor& t) { return t.defined() ? t.data<char>() : nullptr; }

void outer_n_inner(IntArrayRef sizes, int64_t dim, int64_t& outer, int64_t& n, int64_t& inner) {
  outer = inner = 1;
  n = sizes.empty() ? 1 : sizes[dim];
  for (int64_t i = 0; i < int64_t(sizes.size()); ++i) {
    if (i < dim) outer *= sizes[i];
    if (i > dim) inner *= sizes[i];
  }
}

Tensor softmax_run(const Tensor& self, int64_t dim, const std::optional<DType>& dtype, bool log, const char* op) {
  dim = wrap_dim(dim, self.dim());
  const DType out_dt = dtype ? *dtype : self.dtype();
  // row-major in out_dt (PyTorch's meta function checks no dtype: that is its kernels')
  if (is_meta(self)) return empty_tensor(self.sizes(), out_dt, self.device());
  // PyTorch's CPU kernel returns an empty input before its dtype dispatch
  if (self.numel() == 0 && self.device().is_cpu()) return empty_tensor(self.sizes(), out_dt, self.device());
  TP_CHECK_KIND(ErrorKind::NotImplemented, is_floating(out_dt), "\"", op, "_lastdim_kernel_impl\" not implemented for '",
                dtype_scalar_name(out_dt), "'");
#ifdef TP_USE_CUDA
  if (self.device().is_cuda()) {
    Tensor x = contiguous(_to_dtype(self, out_dt));
    Tensor y = empty_tensor(self.sizes(), out_dt, self.device());
    int64_t outer, n, inner;
    outer_n_inner(self.sizes(), dim, outer, n, inner);
    cuda::softmax_forward(x, y, outer, n, inner, log);
    return y;
  }
#endif
  TP_CHECK(self.device().is_cpu(), op, ": no ", self.device().str(), " kernel");
  Tensor x = contiguous(_to_dtype(self, compute_dtype(out_dt)));
  Tensor y = empty_tensor(self.sizes(), x.dtype());
  int64_t outer, n, inner;
  outer_n_inner(self.sizes(), dim, outer, n, inner);
  if (y.numel()) cpu::softmax_stub(x.dtype(), cpu_data(x), cpu_data(y), outer, n, inner, log);
  return _to_dtype(y, out_dt);
}

}  // namespace

// ------------------------------------------------------------------ softmax

Tensor softmax_impl(const Tensor& self, int64_t dim, const std::optional<DType>& dtype, OutArg) {
  return softmax_run(self, dim, dtype, false, "softmax");
}

Tensor log_softmax_impl(const Tensor& self, int64_t dim, const std::optional<DType>& dtype, OutArg) {
  return softmax_run(self, dim, dtype, true, "log_softmax");
}

Tensor _softmax_backward_data_impl(const Tensor& grad_output, const Tensor& output, int64_t dim, bool log, OutArg) {
  dim = wrap_dim(dim, output.dim());
  if (is_meta(output)) return empty_tensor(output.sizes(), output.dtype(), output.device());
#ifdef TP_USE_CUDA
  if (output.device().is_cuda()) {
    TP_CHECK(grad_output.device() == output.device(), "Expected all tensors to be on the same device, but found at "
             "least two devices, ", output.device().str(), " and ", grad_output.device().str(), "!");
    check_floating(compute_dtype(output.dtype()), "softmax_backward");
    Tensor g = contiguous(_to_dtype(grad_output, output.dtype())), y = contiguous(output);
    Tensor gx = empty_tensor(output.sizes(), output.dtype(), output.device());
    int64_t outer, n, inner;
    outer_n_inner(output.sizes(), dim, outer, n, inner);
    cuda::softmax_backward(g, y, gx, outer, n, inner, log);
    return gx;
  }
#endif
  Tensor g = compute_input(grad_output), y = compute_input(output);
  Tensor gx = empty_tensor(output.sizes(), y.dtype());
  int64_t outer, n, inner;
  outer_n_inner(output.sizes(), dim, outer, n, inner);
  if (gx.numel()) {
    check_floating(y.dtype(), "softmax_backward");
    cpu::softmax_backward_stub(y.dtype(), cpu_data(g), cpu_data(y), cpu_data(gx), outer, n, inner, log);
  }
  return _to_dtype(gx, output.dtype());
}

Tensor softmax_backward(const Tensor& grad, const Tensor& result, int64_t dim, DType self_dtype, bool log) {
  Tensor gx;
  if (!autograd::grad_enabled()) {
    gx = _softmax_backward_data(grad, result, dim, log);
  } else {
    int64_t d[1] = {dim};
    gx = log ? grad - exp(result) * sum(grad, IntArrayRef(d, 1), true)
             : result * (grad - sum(grad * result, IntArrayRef(d, 1), true));
  }
  return gx.dtype() == self_dtype ? gx : _to_dtype(gx, self_dtype);
}

// ------------------------------------------------------------------ layer_norm

namespace {

/// (rows, row length) of a layer norm over the trailing `normalized_shape`, with PyTorch's checks.
std::pair<int64_t, int64_t> layer_norm_rows(const Tensor& input, IntArrayRef shape, const std::optional<Tensor>& weight,
                                            const std::optional<Tensor>& bias) {
  const int64_t nd = int64_t(shape.size()), in_nd = input.dim();
  TP_CHECK(nd >= 1, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, "
           "but got normalized_shape = ", shape_str(shape));
  auto same = [&](const std::optional<Tensor>& t) {
    return !t || std::equal(t->sizes().begin(), t->sizes().end(), shape.begin(), shape.end());
  };
  TP_CHECK(same(weight), "Expected weight to be of same shape as normalized_shape, but got weight of shape ",
           shape_str(weight->sizes()), " and normalized_shape = ", shape_str(shape));
  TP_CHECK(same(bias), "Expected bias to be of same shape as normalized_shape, but got bias of shape ",
           shape_str(bias->sizes()), " and normalized_shape = ", shape_str(shape));
  bool ok = in_nd >= nd;
  for (int64_t i = 0; ok && i < nd; ++i) ok = input.size(in_nd - nd + i) == shape[i];
  if (!ok) {
    std::string s = "[*";
    for (int64_t v : shape) {
      detail::append(s, ", ");
      detail::append(s, v);
    }
    fail(ErrorKind::Runtime, "Given normalized_shape=", shape_str(shape), ", expected input with shape ", s,
         "], but got input of size", shape_str(input.sizes()));
  }
  int64_t rows = 1, len = 1;
  for (int64_t i = 0; i < in_nd; ++i) (i < in_nd - nd ? rows : len) *= input.size(i);
  return {rows, len};
}

/// native_layer_norm's weight and bias dtypes, PyTorch's rules: on CUDA the input's; on the
/// CPU the input's or, for a float16 / bfloat16 input, float32 for both (the mixed case,
/// whose statistics are float32). Returns whether the call is that mixed case.
bool layer_norm_mixed(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias) {
  const DType dt = input.dtype();
  const bool differ = (weight && weight->dtype() != dt) || (bias && bias->dtype() != dt);
  if (!differ) return false;
  const Tensor& other = weight && weight->dtype() != dt ? *weight : *bias;
  TP_CHECK(!input.device().is_cuda(), "expected scalar type ", dtype_scalar_name(dt), " but found ",
           dtype_scalar_name(other.dtype()));
  const bool is_float = (!weight || weight->dtype() == DType::Float32) && (!bias || bias->dtype() == DType::Float32);
  TP_CHECK(is_float16_or_bfloat16(dt) && is_float, "mixed dtype (CPU): expect parameter to have scalar type of Float");
  return true;
}

/// PyTorch's CPU mixed-dtype rule of batch_norm / group_norm: parameters of a dtype other than
/// the input's must all be float32, and the input then float16 / bfloat16.
bool check_mixed_cpu(const Tensor& input, std::initializer_list<const std::optional<Tensor>*> params) {
  if (!input.device().is_cpu()) return false;
  // PyTorch's is_mixed_type: the first defined parameter's dtype is not the input's (a later one
  // of another dtype is left to the kernel's dtype dispatch)
  const std::optional<Tensor>* first = nullptr;
  for (const auto* p : params)
    if (p->has_value() && !first) first = p;
  if (!first || (*first)->dtype() == input.dtype()) return false;
  for (const auto* p : params)
    TP_CHECK(!*p || (*p)->dtype() == DType::Float32, "mixed dtype (CPU): expect parameter to have scalar type of Float");
  TP_CHECK(is_float16_or_bfloat16(input.dtype()), "mixed dtype (CPU): all inputs must share same datatype.");
  return true;
}

/// Not mixed (check_mixed_cpu false), PyTorch's CPU kernels want every parameter in the
/// input's dtype (checked after their dtype dispatch).
void check_params_dtype(const Tensor& input, std::initializer_list<const std::optional<Tensor>*> params) {
  for (const auto* p : params)
    TP_CHECK(!*p || (*p)->dtype() == input.dtype(), "expected scalar type ", dtype_scalar_name(input.dtype()),
             " but found ", dtype_scalar_name((*p)->dtype()));
}

DimVector stat_sizes(const Tensor& input, int64_t nd) {
  DimVector r(input.sizes().data(), input.dim());
  for (int64_t i = input.dim() - nd; i < input.dim(); ++i) r[i] = 1;
  return r;
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_impl(const Tensor& input, IntArrayRef normalized_shape,
                                                          const std::optional<Tensor>& weight,
                                                          const std::optional<Tensor>& bias, double eps, OutArg) {
  auto [rows, len] = layer_norm_rows(input, normalized_shape, weight, bias);
  if (is_meta(input)) {  // PyTorch's meta function: the statistics in the accumulation dtype, as on CUDA
    TP_CHECK(is_floating(input.dtype()), "mean(): could not infer output dtype. Input dtype must be either a floating "
             "point or complex dtype. Got: ", dtype_scalar_name(input.dtype()));
    const DimVector ss = stat_sizes(input, int64_t(normalized_shape.size()));
    const DType adt = compute_dtype(input.dtype());
    return {empty_tensor(input.sizes(), input.dtype(), input.device()), empty_tensor(ss, adt, input.device()),
            empty_tensor(ss, adt, input.device())};
  }
  const bool mixed = layer_norm_mixed(input, weight, bias);
#ifdef TP_USE_CUDA
  if (input.device().is_cuda()) {
    check_devices(input, {&weight, &bias});
    const DType dt = input.dtype(), adt = compute_dtype(dt);
    check_floating(adt, "LayerNormKernelImpl");
    Tensor x = contiguous(input), w = norm_weight(weight, dt, adt), b = norm_weight(bias, dt, adt);
    Tensor y = empty_tensor(input.sizes(), dt, input.device());
    DimVector ss = stat_sizes(input, int64_t(normalized_shape.size()));
    Tensor mean = len ? empty_tensor(ss, adt, input.device()) : full(ss, Scalar(NAN), adt, input.device());
    Tensor rstd = len ? empty_tensor(ss, adt, input.device()) : full(ss, Scalar(NAN), adt, input.device());
    cuda::layer_norm_forward(x, w, b, eps, rows, len, y, mean, rstd);
    return {y, mean, rstd};  // the statistics in the accumulation dtype, as PyTorch's CUDA kernel
  }
#endif
  TP_CHECK(input.device().is_cpu(), "no ", input.device().str(), " kernel");
  Tensor x = compute_input(input);
  Tensor w = weight ? compute_input(*weight) : Tensor(), b = bias ? compute_input(*bias) : Tensor();
  Tensor y = empty_tensor(input.sizes(), x.dtype());
  DimVector ss = stat_sizes(input, int64_t(normalized_shape.size()));
  Tensor mean = empty_tensor(ss, x.dtype()), rstd = empty_tensor(ss, x.dtype());
  check_floating(x.dtype(), "LayerNormKernelImpl");
  if (rows)
    cpu::layer_norm_stub(x.dtype(), cpu_data(x), cpu_data(w), cpu_data(b), cpu_data(y), cpu_data(mean),
                         cpu_data(rstd), rows, len, eps);
  const DType dt = input.dtype(), sdt = mixed ? DType::Float32 : dt;  // the statistics' dtype
  return {_to_dtype(y, dt), _to_dtype(mean, sdt), _to_dtype(rstd, sdt)};
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward_impl(
    const Tensor& grad_out, const Tensor& input, IntArrayRef normalized_shape, const Tensor& mean, const Tensor& rstd,
    const std::optional<Tensor>& weight, bool input_grad, bool weight_grad, bool bias_grad, OutArg) {
  auto [rows, len] = layer_norm_rows(input, normalized_shape, weight, std::nullopt);
  if (is_meta(input)) {  // the gradients in the input's dtype, row-major
    auto grad = [&](bool wanted, IntArrayRef sizes) {
      return wanted ? empty_tensor(sizes, input.dtype(), input.device()) : Tensor();
    };
    return {grad(input_grad, input.sizes()), grad(weight_grad, normalized_shape), grad(bias_grad, normalized_shape)};
  }
#ifdef TP_USE_CUDA
  if (input.device().is_cuda()) {
    const std::optional<Tensor> others[3] = {grad_out, mean, rstd};
    check_devices(input, {&weight, &others[0], &others[1], &others[2]});
    const DType dt = input.dtype(), adt = compute_dtype(dt);
    check_floating(adt, "layer_norm_backward");
    Tensor g = contiguous(_to_dtype(grad_out, dt)), x = contiguous(input);
    Tensor m = contiguous(_to_dtype(mean, adt)), rs = contiguous(_to_dtype(rstd, adt)), w = norm_weight(weight, dt, adt);
    Tensor gx = input_grad ? empty_tensor(input.sizes(), dt, input.device()) : Tensor();
    // the weight and bias gradients in the weight's dtype (PyTorch's), written so by the kernels
    // when that is the input's or the accumulation dtype
    const DType wdt = weight ? weight->dtype() : dt, gdt = wdt == dt ? dt : adt;
    auto column_grad = [&](bool wanted) {  // the kernel writes every column unless nothing is summed
      return !wanted ? Tensor() : rows && len ? empty_tensor(normalized_shape, gdt, input.device())
                                              : zeros(normalized_shape, gdt, input.device());
    };
    Tensor gw = column_grad(weight_grad), gb = column_grad(bias_grad);
    cuda::layer_norm_backward(g, x, m, rs, w, rows, len, gx, gw, gb);
    auto back = [&](const Tensor& t) { return t.defined() ? _to_dtype(t, wdt) : t; };
    return {gx, back(gw), back(gb)};
  }
#endif
  Tensor g = compute_input(grad_out), x = compute_input(input), m = compute_input(mean), rs = compute_input(rstd);
  Tensor w = weight ? compute_input(*weight) : Tensor();
  Tensor gx = input_grad ? empty_tensor(input.sizes(), x.dtype()) : Tensor();
  Tensor gw = weight_grad ? zeros(normalized_shape, x.dtype()) : Tensor();
  Tensor gb = bias_grad ? zeros(normalized_shape, x.dtype()) : Tensor();
  check_floating(x.dtype(), "layer_norm_backward");
  if (rows && len)
    cpu::layer_norm_backward_stub(x.dtype(), cpu_data(g), cpu_data(x), cpu_data(m), cpu_data(rs), cpu_data(w),
                                  cpu_data(gx), cpu_data(gw), cpu_data(gb), rows, len);
  auto back = [&](const Tensor& t) { return t.defined() ? _to_dtype(t, input.dtype()) : t; };
  return {back(gx), back(gw), back(gb)};
}

Tensor layer_norm_impl(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                       const std::optional<Tensor>& bias, double eps, bool, OutArg) {
  return std::get<0>(native_layer_norm(input, normalized_shape, weight, bias, eps));
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(const Tensor& grad, const Tensor& input,
                                                       IntArrayRef normalized_shape, const Tensor& mean,
                                                       const Tensor& rstd, const std::optional<Tensor>& weight,
                                                       double eps, std::array<bool, 3> mask) {
  if (!autograd::grad_enabled())
    return native_layer_norm_backward(grad, input, normalized_shape, mean, rstd, weight, mask[0], mask[1], mask[2]);
  const int64_t nd = int64_t(normalized_shape.size()), in_nd = input.dim();
  DimVector norm_dims, lead_dims;
  for (int64_t i = 0; i < in_nd; ++i) (i < in_nd - nd ? lead_dims : norm_dims).push_back(i);
  // mean and rstd again, as functions of the input (the saved ones carry no history)
  Tensor m = tp::mean(input, norm_dims, true);
  Tensor rs = rsqrt(tp::mean(square(input - m), norm_dims, true) + Scalar(eps));
  Tensor xhat = (input - m) * rs;
  auto lead_sum = [&](const Tensor& t) { return lead_dims.empty() ? t : sum(t, lead_dims); };
  Tensor gx, gw, gb;
  if (mask[0]) {
    Tensor g = weight ? grad * *weight : grad;
    gx = rs * (g - tp::mean(g, norm_dims, true) - xhat * tp::mean(g * xhat, norm_dims, true));
  }
  if (mask[1]) gw = lead_sum(grad * xhat);
  if (mask[2]) gb = lead_sum(grad);
  return {gx, gw, gb};
}

// ------------------------------------------------------------------ batch_norm

namespace {

/// (N, C, L) of a batch-norm input: channels on dim 1, everything after it flattened.
void batch_dims(const Tensor& input, int64_t& n, int64_t& c, int64_t& l) {
  TP_CHECK(input.dim() >= 2, "batch_norm: expected an input with at least 2 dims, but got input of size ",
           shape_str(input.sizes()));
  n = input.size(0);
  c = input.size(1);
  l = 1;
  for (int64_t i = 2; i < input.dim(); ++i) l *= input.size(i);
}

void check_channel_vector(const std::optional<Tensor>& t, int64_t c, const char* name) {
  TP_CHECK(!t || t->numel() == c, name, " should contain ", c, " elements not ", t ? t->numel() : 0);
}

/// The (1, C, 1, ...) view of a per-channel vector, for broadcasting against the input.
Tensor channel_view(const Tensor& v, int64_t ndim) {
  DimVector s(size_t(ndim), 1);
  s[1] = v.numel();
  return reshape(v, s);
}

DimVector reduce_dims_of(int64_t ndim) {
  DimVector d{0};
  for (int64_t i = 2; i < ndim; ++i) d.push_back(i);
  return d;
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> native_batch_norm_impl(const Tensor& input, const std::optional<Tensor>& weight,
                                                          const std::optional<Tensor>& bias,
                                                          const std::optional<Tensor>& running_mean,
                                                          const std::optional<Tensor>& running_var, bool training,
                                                          double momentum, double eps, OutArg) {
  int64_t n, c, l;
  batch_dims(input, n, c, l);
  check_channel_vector(weight, c, "weight");
  check_channel_vector(bias, c, "bias");
  check_channel_vector(running_mean, c, "running_mean");
  check_channel_vector(running_var, c, "running_var");
  TP_CHECK(training || (running_mean && running_var), "running_mean and running_var must be defined in evaluation mode");
  // PyTorch's CPU kernel dispatches on the input's dtype before its mixed-dtype check
  if (input.device().is_cpu()) check_floating(compute_dtype(input.dtype()), "batch_norm");
  if (!check_mixed_cpu(input, {&weight, &bias, &running_mean, &running_var}) && input.device().is_cpu())
    check_params_dtype(input, {&weight, &bias, &running_mean, &running_var});
  if (is_meta(input)) {  // PyTorch's meta function: the output in the input's layout, statistics in the accumulation dtype
    TP_CHECK(is_floating(input.dtype()), "mean(): could not infer output dtype. Input dtype must be either a floating "
             "point or complex dtype. Got: ", dtype_scalar_name(input.dtype()));
    const DType adt = compute_dtype(input.dtype());
    return {empty_strided_tensor(input.sizes(), preserving_strides(input.sizes(), input.strides()), input.dtype(),
                                 input.device()),
            empty_tensor(IntArrayRef(&c, 1), adt, input.device()), empty_tensor(IntArrayRef(&c, 1), adt, input.device())};
  }
#ifdef TP_USE_CUDA
  if (input.device().is_cuda()) {
    check_devices(input, {&weight, &bias, &running_mean, &running_var});
    const bool cl = channels_last(input);  // Note [Channels-last results]
    const DType adt = compute_dtype(input.dtype());
    check_floating(adt, "batch_norm");
    Tensor x = with_layout(input, cl), w = kernel_vector(weight, adt), b = kernel_vector(bias, adt);
    Tensor rm = kernel_vector(running_mean, adt), rv = kernel_vector(running_var, adt);
    Tensor y = cl ? empty_strided_tensor(input.sizes(), channels_last_strides(input.sizes()), input.dtype(),
                                         input.device())
                  : empty_tensor(input.sizes(), input.dtype(), input.device());
    Tensor mean = empty_tensor(IntArrayRef(&c, 1), adt, input.device());
    Tensor invstd = empty_tensor(IntArrayRef(&c, 1), adt, input.device());
    cuda::batch_norm_forward(x, w, b, rm, rv, training, momentum, eps, cl ? n * l : n, c, cl ? 1 : l, y, mean, invstd);
    if (training) {
      if (running_mean && !rm.is_same(*running_mean)) copy_(const_cast<Tensor&>(*running_mean), rm);
      if (running_var && !rv.is_same(*running_var)) copy_(const_cast<Tensor&>(*running_var), rv);
    }
    return {y, mean, invstd};
  }
#endif
  TP_CHECK(input.device().is_cpu(), "no ", input.device().str(), " kernel");
  const bool cl = channels_last(input);  // Note [Channels-last results]
  const DType dt = compute_dtype(input.dtype());
  Tensor x = with_layout(_to_dtype(input, dt), cl);
  Tensor w = weight ? compute_input(*weight) : Tensor(), b = bias ? compute_input(*bias) : Tensor();
  Tensor y = cl ? empty_strided_tensor(input.sizes(), channels_last_strides(input.sizes()), dt, input.device())
                : empty_tensor(input.sizes(), dt);
  Tensor mean = empty_tensor(IntArrayRef(&c, 1), dt), invstd = empty_tensor(IntArrayRef(&c, 1), dt);
  Tensor rm = running_mean ? compute_input(*running_mean) : Tensor();
  Tensor rv = running_var ? compute_input(*running_var) : Tensor();
  check_floating(dt, "batch_norm");
  cpu::batch_norm_stub(dt, cl, cpu_data(x), cpu_data(y), n, c, l, training, momentum, eps, cpu_data(w), cpu_data(b),
                       cpu_data(rm), cpu_data(rv), cpu_data(mean), cpu_data(invstd));
  if (training) {  // running statistics are updated in place, as in PyTorch
    if (running_mean && !rm.is_same(*running_mean)) copy_(const_cast<Tensor&>(*running_mean), rm);
    if (running_var && !rv.is_same(*running_var)) copy_(const_cast<Tensor&>(*running_var), rv);
  }
  const DType out_dt = input.dtype();
  return {_to_dtype(y, out_dt), mean, invstd};
}

std::tuple<Tensor, Tensor, Tensor> native_batch_norm_backward_impl(
    const Tensor& grad_out, const Tensor& input, const std::optional<Tensor>& weight, const Tensor& save_mean,
    const Tensor& save_invstd, bool training, bool input_grad, bool weight_grad, bool bias_grad, OutArg) {
  int64_t n, c, l;
  batch_dims(input, n, c, l);
  const bool cl = channels_last(input);  // Note [Channels-last results]
  const DType dt = compute_dtype(input.dtype());
  if (is_meta(input)) {  // the dtypes and layouts of the CPU kernel's results
    const DType wdt = weight ? weight->dtype() : input.dtype();
    Tensor gx = !input_grad ? Tensor()
                : cl ? empty_strided_tensor(input.sizes(), channels_last_strides(input.sizes()), input.dtype(),
                                            input.device())
                     : empty_tensor(input.sizes(), input.dtype(), input.device());
    Tensor gw = weight_grad ? empty_tensor(IntArrayRef(&c, 1), wdt, input.device()) : Tensor();
    Tensor gb = bias_grad ? empty_tensor(IntArrayRef(&c, 1), wdt, input.device()) : Tensor();
    return {gx, gw, gb};
  }
#ifdef TP_USE_CUDA
  if (input.device().is_cuda()) {
    const std::optional<Tensor> others[3] = {grad_out, save_mean, save_invstd};
    check_devices(input, {&weight, &others[0], &others[1], &others[2]});
    check_floating(dt, "batch_norm_backward");
    Tensor g = with_layout(_to_dtype(grad_out, input.dtype()), cl), x = with_layout(input, cl);
    Tensor m = contiguous(_to_dtype(save_mean, dt)), is = contiguous(_to_dtype(save_invstd, dt));
    Tensor w = kernel_vector(weight, dt);
    Tensor gx = !input_grad ? Tensor()
                : cl ? empty_strided_tensor(input.sizes(), channels_last_strides(input.sizes()), input.dtype(),
                                            input.device())
                     : empty_tensor(input.sizes(), input.dtype(), input.device());
    Tensor gw = weight_grad ? empty_tensor(IntArrayRef(&c, 1), dt, input.device()) : Tensor();
    Tensor gb = bias_grad ? empty_tensor(IntArrayRef(&c, 1), dt, input.device()) : Tensor();
    cuda::batch_norm_backward(g, x, m, is, w, training, cl ? n * l : n, c, cl ? 1 : l, gx, gw, gb);
    auto back = [&](const Tensor& t, DType to) { return t.defined() ? _to_dtype(t, to) : t; };
    const DType wdt = weight ? weight->dtype() : input.dtype();
    return {gx, back(gw, wdt), back(gb, wdt)};
  }
#endif
  Tensor g = with_layout(_to_dtype(grad_out, dt), cl), x = with_layout(_to_dtype(input, dt), cl);
  Tensor m = compute_input(_to_dtype(save_mean, dt)), is = compute_input(_to_dtype(save_invstd, dt));
  Tensor w = weight ? compute_input(*weight) : Tensor();
  Tensor gx = !input_grad ? Tensor()
              : cl        ? empty_strided_tensor(input.sizes(), channels_last_strides(input.sizes()), dt, input.device())
                          : empty_tensor(input.sizes(), dt);
  Tensor gw = weight_grad ? empty_tensor(IntArrayRef(&c, 1), dt) : Tensor();
  Tensor gb = bias_grad ? empty_tensor(IntArrayRef(&c, 1), dt) : Tensor();
  check_floating(dt, "batch_norm_backward");
  cpu::batch_norm_backward_stub(dt, cl, cpu_data(g), cpu_data(x), n, c, l, cpu_data(m), cpu_data(is), cpu_data(w),
                                training, cpu_data(gx), cpu_data(gw), cpu_data(gb));
  auto back = [&](const Tensor& t, DType to) { return t.defined() ? _to_dtype(t, to) : t; };
  const DType wdt = weight ? weight->dtype() : input.dtype();
  return {back(gx, input.dtype()), back(gw, wdt), back(gb, wdt)};
}

std::tuple<Tensor, Tensor, Tensor> batch_norm_backward(const Tensor& grad, const Tensor& input,
                                                       const std::optional<Tensor>& weight, const Tensor& save_mean,
                                                       const Tensor& save_invstd, bool training, double eps,
                                                       std::array<bool, 3> mask) {
  if (!autograd::grad_enabled())
    return native_batch_norm_backward(grad, input, weight, save_mean, save_invstd, training, mask[0], mask[1], mask[2]);
  const int64_t nd = input.dim();
  DimVector dims = reduce_dims_of(nd);
  Tensor m = training ? tp::mean(input, dims, true) : channel_view(save_mean, nd);
  Tensor rs = training ? rsqrt(tp::mean(square(input - m), dims, true) + Scalar(eps)) : channel_view(save_invstd, nd);
  Tensor xhat = (input - m) * rs;
  Tensor gx, gw, gb;
  if (mask[0]) {
    Tensor g = weight ? grad * channel_view(*weight, nd) : grad;
    gx = training ? rs * (g - tp::mean(g, dims, true) - xhat * tp::mean(g * xhat, dims, true)) : g * rs;
    gx = with_layout(gx, channels_last(input));  // the fused kernel's layout (Note [Channels-last results])
  }
  if (mask[1]) gw = sum(grad * xhat, dims);
  if (mask[2]) gb = sum(grad, dims);
  return {gx, gw, gb};
}

Tensor batch_norm_impl(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                       const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
                       bool training, double momentum, double eps, bool, OutArg) {
  // PyTorch's batch_norm returns an empty input scaled by weight[0] and shifted by bias[0]
  // before any other check (so an int input, or parameters of any size, pass there)
  if (input.numel() == 0 && input.dim() >= 2) {
    Tensor out = clone(input);
    if (weight) out = out * select(*weight, 0, 0);
    if (bias) out = out + select(*bias, 0, 0);
    return out;
  }
  return std::get<0>(native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps));
}

// ------------------------------------------------------------------ group_norm, rms_norm

namespace {

/// Whether `t` (small: per-(sample, group) statistics) has a nonzero element.
bool any_nonzero(const Tensor& t) {
  if (!t.defined() || is_meta(t)) return false;  // on meta: no values (nor do the results' shapes depend on them)
  Tensor d = contiguous(_to_dtype(host_copy(t), DType::Float64));
  const double* p = d.data<double>();
  return std::any_of(p, p + d.numel(), [](double v) { return v != 0; });
}

/// The (sample, group) blocks of a tensor shaped like a group-norm input: row-major inputs
/// as (N, G, C/G * spatial) rows (normalised over dim 2); channels-last ones in their
/// (N, spatial, C) order as (N, spatial, G, C/G) (normalised over dims 1 and 3), so results
/// and gradients stay channels last, as PyTorch's (Note [Channels-last results]).
struct GroupBlocks {
  bool cl;
  DimVector sizes, nhwc_perm, back_perm, nhwc_sizes, shape, dims;
  GroupBlocks(const Tensor& input, int64_t groups) : cl(channels_last(input)) {
    const int64_t nd = input.dim(), n = input.size(0), c = input.size(1);
    const int64_t hw = n * c != 0 ? input.numel() / (n * c) : 0;
    sizes = DimVector(input.sizes().data(), input.sizes().size());
    if (!cl) {
      shape = {n, groups, c / groups * hw};
      dims = {2};
      return;
    }
    nhwc_perm = {0};
    back_perm = {0, nd - 1};
    nhwc_sizes = {n};
    for (int64_t d = 2; d < nd; ++d) {
      nhwc_perm.push_back(d);
      back_perm.push_back(d - 1);
      nhwc_sizes.push_back(input.size(d));
    }
    nhwc_perm.push_back(1);
    nhwc_sizes.push_back(c);
    shape = {n, hw, groups, c / groups};
    dims = {1, 3};
  }
  Tensor of(const Tensor& t) const { return reshape(cl ? permute(t, nhwc_perm) : t, shape); }
  Tensor back(const Tensor& t) const { return cl ? permute(reshape(t, nhwc_sizes), back_perm) : reshape(t, sizes); }
};

}  // namespace

std::tuple<Tensor, Tensor, Tensor> native_group_norm_impl(const Tensor& input, const std::optional<Tensor>& weight,
                                                          const std::optional<Tensor>& bias, int64_t N, int64_t C,
                                                          int64_t HxW, int64_t group, double eps, OutArg) {
  // PyTorch's CPU kernel checks the sizes after its dtype dispatch
  auto check_sizes = [&] {
    TP_CHECK(input.dim() >= 2 && input.numel() == N * C * HxW && input.size(0) == N && input.size(1) == C,
             "Expected X.numel() == N * C * HxW to be true, but got false.");
  };
  TP_CHECK(group > 0 && C % group == 0, "Expected number of channels in input to be divisible by num_groups, but got "
           "input of shape ", shape_str(input.sizes()), " and num_groups=", group);
  for (const auto* v : {&weight, &bias})
    TP_CHECK(!*v || ((*v)->dim() == 1 && (*v)->numel() == C), "Expected ", v == &weight ? "weight" : "bias",
             " to be a vector of size equal to the number of channels in input, but got ",
             v == &weight ? "weight" : "bias", " of shape ", shape_str((*v)->sizes()), " and input of shape ",
             shape_str(input.sizes()));
  const bool mixed = check_mixed_cpu(input, {&weight, &bias});
  if (input.dim() < 2) {  // (GroupBlocks wants two dims) the dtype dispatch, then the sizes
    if (input.device().is_cpu()) check_floating(compute_dtype(input.dtype()), "GroupNormKernelImpl");
    check_sizes();
  }
  const GroupBlocks blk(input, group);
  const int64_t stats[2] = {N, group};
  const DType dt = input.dtype(), cdt = compute_dtype(dt);
  if (is_meta(input)) {  // PyTorch's meta function: any layout in, the suggested one out; statistics in dt
    check_sizes();
    TP_CHECK(is_floating(dt), "mean(): could not infer output dtype. Input dtype must be either a floating point or "
             "complex dtype. Got: ", dtype_scalar_name(dt));
    Tensor y = blk.cl ? empty_strided_tensor(input.sizes(), channels_last_strides(input.sizes()), dt, input.device())
                      : empty_tensor(input.sizes(), dt, input.device());
    return {y, empty_tensor(IntArrayRef(stats, 2), dt, input.device()),
            empty_tensor(IntArrayRef(stats, 2), dt, input.device())};
  }
  TP_CHECK(blk.cl ? is_channels_last_dense(input) : input.is_contiguous(),
           "Expected X.is_contiguous(memory_format) to be true, but got false.");
  if (input.device().is_cpu()) {
    check_floating(cdt, "GroupNormKernelImpl");
    if (!mixed) check_params_dtype(input, {&weight, &bias});
  }
  check_sizes();
#ifdef TP_USE_CUDA
  if (input.device().is_cuda()) {  // the kernel reads row-major (N, C, HxW) data
    check_devices(input, {&weight, &bias});
    check_floating(cdt, "group_norm");
    Tensor x = contiguous(input), w = kernel_vector(weight, cdt), b = kernel_vector(bias, cdt);
    Tensor y = empty_tensor(input.sizes(), dt, input.device());
    Tensor mean = empty_tensor(IntArrayRef(stats, 2), cdt, input.device());
    Tensor rstd = empty_tensor(IntArrayRef(stats, 2), cdt, input.device());
    cuda::group_norm_forward(x, w, b, eps, N, C, HxW, group, y, mean, rstd);
    return {with_layout(y, blk.cl), _to_dtype(mean, dt), _to_dtype(rstd, dt)};
  }
#endif
  Tensor x = with_layout(_to_dtype(input, cdt), blk.cl);
  Tensor w = weight ? compute_input(*weight) : Tensor(), b = bias ? compute_input(*bias) : Tensor();
  Tensor y = blk.cl ? empty_strided_tensor(input.sizes(), channels_last_strides(input.sizes()), cdt, input.device())
                    : empty_tensor(input.sizes(), cdt);
  Tensor mean = empty_tensor(IntArrayRef(stats, 2), cdt), rstd = empty_tensor(IntArrayRef(stats, 2), cdt);
  check_floating(cdt, "group_norm");
  cpu::group_norm_stub(cdt, blk.cl, cpu_data(x), cpu_data(y), N, HxW, C, group, eps, cpu_data(w), cpu_data(b),
                       cpu_data(mean), cpu_data(rstd));
  return {_to_dtype(y, dt), _to_dtype(mean, dt), _to_dtype(rstd, dt)};
}

std::tuple<Tensor, Tensor, Tensor> group_norm_backward(const Tensor& grad, const Tensor& grad_mean,
                                                       const Tensor& grad_rstd, const Tensor& input, const Tensor& mean,
                                                       const Tensor& rstd, const std::optional<Tensor>& weight,
                                                       int64_t group, double eps, std::array<bool, 3> mask) {
  const GroupBlocks blk(input, group);
  const int64_t nd = input.dim();
  const DType dt = compute_dtype(input.dtype());
  // the engine passes zeros for the outputs nobody used (mean and rstd usually are not); with
  // grad mode on (create_graph, forward AD) the terms stay: their gradients may be asked for
  const bool stats_used =
      mask[0] && (autograd::grad_enabled() || any_nonzero(grad_mean) || any_nonzero(grad_rstd));
  // the fused kernel (CPU only; on CUDA the differentiable form below): every gradient in one go
  // (on meta its results' layouts and dtypes, from the same allocations)
  // (the fused kernel reads data: not for tensor subclasses with __torch_dispatch__)
  auto python = [](const Tensor& t) { return t.defined() && t.impl()->has_python_key(); };
  const bool plain = !python(grad) && !python(input) && !python(mean) && !python(rstd) &&
                     !(weight && python(*weight));
  if (!autograd::grad_enabled() && !stats_used && plain && (input.device().is_cpu() || is_meta(input))) {
    auto back = [](const Tensor& t, DType to) { return t.defined() ? _to_dtype(t, to) : t; };
    Tensor gy = with_layout(_to_dtype(grad, dt), blk.cl), xc = with_layout(_to_dtype(input, dt), blk.cl);
    Tensor m = contiguous(_to_dtype(mean, dt)), rs = contiguous(_to_dtype(rstd, dt));
    Tensor w = weight ? compute_input(*weight) : Tensor();
    const int64_t n = input.size(0), c = input.size(1);
    Tensor gx = !mask[0] ? Tensor()
                : blk.cl ? empty_strided_tensor(input.sizes(), channels_last_strides(input.sizes()), dt, input.device())
                         : empty_tensor(input.sizes(), dt, input.device());
    Tensor gw = mask[1] ? empty_tensor(IntArrayRef(&c, 1), dt, input.device()) : Tensor();
    Tensor gb = mask[2] ? empty_tensor(IntArrayRef(&c, 1), dt, input.device()) : Tensor();
    const DType wdt = weight ? weight->dtype() : dt;
    if (is_meta(input)) return {back(gx, input.dtype()), back(gw, wdt), back(gb, grad.dtype())};
    check_floating(dt, "group_norm_backward");
    cpu::group_norm_backward_stub(dt, blk.cl, cpu_data(gy), cpu_data(xc), n, n * c != 0 ? input.numel() / (n * c) : 0,
                                  c, group, cpu_data(m), cpu_data(rs), cpu_data(w), cpu_data(gx), cpu_data(gw),
                                  cpu_data(gb));
    return {back(gx, input.dtype()), back(gw, wdt), back(gb, grad.dtype())};
  }
  // differentiable (Note [Fused backward and create_graph]); mean and 1/std again from the input
  Tensor x = blk.of(_to_dtype(input, dt)), g = _to_dtype(weight ? grad * channel_view(*weight, nd) : grad, dt);
  Tensor m = tp::mean(x, blk.dims, true);
  Tensor rs = rsqrt(tp::mean(square(x - m), blk.dims, true) + Scalar(eps));
  Tensor xhat = (x - m) * rs, gx;
  if (mask[0]) {
    Tensor gb = blk.of(g);
    Tensor gx4 = rs * (gb - tp::mean(gb, blk.dims, true) - xhat * tp::mean(gb * xhat, blk.dims, true));
    if (stats_used) {  // d mean / dx = 1 / n, d rstd / dx = -rstd^3 (x - mean) / n
      const Scalar n(double(blk.shape[blk.cl ? 1 : 2] * (blk.cl ? blk.shape[3] : 1)));
      Tensor gm = reshape(_to_dtype(grad_mean, dt), m.sizes()), gr = reshape(_to_dtype(grad_rstd, dt), m.sizes());
      gx4 = gx4 + gm / n - gr * rs * rs * rs * (x - m) / n;
    }
    gx = with_layout(blk.back(gx4), blk.cl);
  }
  const DimVector red = reduce_dims_of(nd);
  Tensor gw = mask[1] ? _to_dtype(sum(_to_dtype(grad, dt) * blk.back(xhat), red), weight->dtype()) : Tensor();
  Tensor gb = mask[2] ? sum(grad, red) : Tensor();
  return {gx.defined() ? _to_dtype(gx, input.dtype()) : gx, gw, gb};
}

Tensor group_norm_impl(const Tensor& input, int64_t num_groups, const std::optional<Tensor>& weight,
                       const std::optional<Tensor>& bias, double eps, bool, OutArg) {
  (void)size_at(input, 0), (void)size_at(input, 1);  // PyTorch reads N and C first: IndexError
  TP_CHECK(input.dim() >= 2, "Expected at least 2 dimensions for input tensor but received ", input.dim());
  const int64_t n = input.size(0), c = input.size(1);
  TP_CHECK(num_groups > 0 && c % num_groups == 0, "Expected number of channels in input to be divisible by ",
           "num_groups, but got input of shape ", shape_str(input.sizes()), " and num_groups=", num_groups);
  check_channel_vector(weight, c, "weight");
  check_channel_vector(bias, c, "bias");
  // dense in its own layout, as native_group_norm takes it (PyTorch's group_norm does the same;
  // on meta its math form gives row-major results)
  const bool cl = channels_last(input) && !is_meta(input);
  Tensor x = !cl ? contiguous(input) : is_channels_last_dense(input) ? input : with_layout(input, true);
  return std::get<0>(
      native_group_norm(x, weight, bias, n, c, n * c != 0 ? input.numel() / (n * c) : 0, num_groups, eps));
}

// ------------------------------------------------------------------ rms_norm
//
// Note [RMS norm as an uncentred layer norm]: y = x * rstd * w with rstd = 1 / sqrt(mean(x^2)
// + eps) is a layer norm whose mean is taken as 0, and its input gradient
// rstd * (g*w - x * rstd^2 * mean(g*w*x)) is layer norm's without the mean(g*w) term. So the
// layer-norm kernels (CPU in kernels/cpu/norm_kernel.cpp, CUDA in norm_kernels.cu) serve
// both: given no mean buffer they neither centre nor store a mean, and the weight gradient
// keeps their fixed-order sums.

namespace {

/// rms_norm's eps: the given one, else the machine epsilon of the accumulation dtype (PyTorch's).
double rms_eps(const std::optional<double>& eps, DType acc) {
  return eps ? *eps : acc == DType::Float64 || acc == DType::Complex128 ? 2.220446049250313e-16 : 1.1920928955078125e-07;
}

void check_rms_dtype(const Tensor& input) {
  TP_CHECK_KIND(ErrorKind::NotImplemented, is_floating(input.dtype()) || is_complex(input.dtype()), "\"rms_norm\" not implemented for '",
                dtype_scalar_name(input.dtype()), "'");
}

}  // namespace

std::tuple<Tensor, Tensor> _fused_rms_norm_impl(const Tensor& input, IntArrayRef normalized_shape,
                                                const std::optional<Tensor>& weight, const std::optional<double>& eps,
                                                OutArg) {
  auto [rows, len] = layer_norm_rows(input, normalized_shape, weight, std::nullopt);
  check_rms_dtype(input);
  const DType dt = input.dtype(), adt = compute_dtype(dt);
  const double e = rms_eps(eps, adt);
  const DimVector ss = stat_sizes(input, int64_t(normalized_shape.size()));
  if (is_complex(dt)) {
    // Note [Complex RMS norm]: PyTorch's is holomorphic, x * rsqrt(mean(x * x) + eps) with x * x,
    // not |x|^2 (so rstd is complex); composed of the complex ops, as its gradient is
    // (rms_norm_backward's composed path).
    DimVector norm_dims;
    for (int64_t i = input.dim() - int64_t(normalized_shape.size()); i < input.dim(); ++i) norm_dims.push_back(i);
    Tensor x = contiguous(input);  // the result is contiguous, as PyTorch's
    Tensor rstd = rsqrt(add(tp::mean(square(x), IntArrayRef(norm_dims.data(), norm_dims.size()), true),
                            wrapped_scalar(Scalar(e))));
    Tensor y = mul(x, rstd);
    return {weight ? mul(y, *weight) : y, reshape(rstd, IntArrayRef(ss.data(), ss.size()))};
  }
#ifdef TP_USE_CUDA
  check_devices(input, {&weight});
  if (input.device().is_cuda()) {
    Tensor x = contiguous(input), w = norm_weight(weight, dt, adt);
    Tensor y = empty_tensor(input.sizes(), dt, input.device());
    Tensor rstd = len ? empty_tensor(ss, adt, input.device()) : full(ss, Scalar(NAN), adt, input.device());
    cuda::layer_norm_forward(x, w, Tensor(), e, rows, len, y, Tensor(), rstd);
    return {y, rstd};
  }
#endif
  if (is_meta(input)) return {empty_tensor(input.sizes(), dt, input.device()), empty_tensor(ss, adt, input.device())};
  TP_CHECK(input.device().is_cpu(), "no ", input.device().str(), " kernel");
  Tensor x = compute_input(input);
  Tensor w = weight ? contiguous(_to_dtype(*weight, adt)) : Tensor();  // scaled in the input's opmath type
  Tensor y = empty_tensor(input.sizes(), adt), rstd = empty_tensor(ss, adt);
  check_floating(adt, "rms_norm");
  if (rows)
    cpu::layer_norm_stub(adt, cpu_data(x), cpu_data(w), nullptr, cpu_data(y), nullptr, cpu_data(rstd), rows, len, e);
  return {_to_dtype(y, dt), rstd};
}

std::tuple<Tensor, Tensor> _fused_rms_norm_backward_impl(const Tensor& grad_out, const Tensor& input,
                                                         IntArrayRef normalized_shape, const Tensor& rstd,
                                                         const std::optional<Tensor>& weight, bool input_grad,
                                                         bool weight_grad, OutArg) {
  auto [rows, len] = layer_norm_rows(input, normalized_shape, weight, std::nullopt);
  check_rms_dtype(input);
  const DType dt = input.dtype(), adt = compute_dtype(dt), wdt = weight ? weight->dtype() : dt;
  TP_CHECK(std::ranges::equal(grad_out.sizes(), input.sizes()), "_fused_rms_norm_backward: grad_out of shape ",
           shape_str(grad_out.sizes()), " for an input of shape ", shape_str(input.sizes()));
  TP_CHECK(rstd.numel() == rows, "_fused_rms_norm_backward: rstd has ", rstd.numel(), " values for ", rows, " rows");
#ifdef TP_USE_CUDA
  const std::optional<Tensor> others[2] = {grad_out, rstd};
  check_devices(input, {&weight, &others[0], &others[1]});
  if (input.device().is_cuda()) {
    Tensor g = contiguous(_to_dtype(grad_out, dt)), x = contiguous(input);
    Tensor rs = contiguous(_to_dtype(rstd, adt)), w = norm_weight(weight, dt, adt);
    Tensor gx = input_grad ? empty_tensor(input.sizes(), dt, input.device()) : Tensor();
    const DType gdt = wdt == dt ? dt : adt;  // the kernel writes the input's or the accumulation dtype
    Tensor gw = !weight_grad ? Tensor() : rows && len ? empty_tensor(normalized_shape, gdt, input.device())
                                                      : zeros(normalized_shape, gdt, input.device());
    cuda::layer_norm_backward(g, x, Tensor(), rs, w, rows, len, gx, gw, Tensor());
    return {gx, gw.defined() ? _to_dtype(gw, wdt) : gw};
  }
#endif
  if (is_meta(input))
    return {input_grad ? empty_tensor(input.sizes(), dt, input.device()) : Tensor(),
            weight_grad ? empty_tensor(normalized_shape, wdt, input.device()) : Tensor()};
  TP_CHECK(input.device().is_cpu(), "no ", input.device().str(), " kernel");
  Tensor g = compute_input(grad_out), x = compute_input(input), rs = contiguous(_to_dtype(rstd, adt));
  Tensor w = weight ? contiguous(_to_dtype(*weight, adt)) : Tensor();
  Tensor gx = input_grad ? empty_tensor(input.sizes(), adt) : Tensor();
  Tensor gw = weight_grad ? zeros(normalized_shape, adt) : Tensor();
  check_floating(adt, "rms_norm");
  if (rows && len)
    cpu::layer_norm_backward_stub(adt, cpu_data(g), cpu_data(x), nullptr, cpu_data(rs), cpu_data(w), cpu_data(gx),
                                  cpu_data(gw), nullptr, rows, len);
  return {gx.defined() ? _to_dtype(gx, dt) : gx, gw.defined() ? _to_dtype(gw, wdt) : gw};
}

std::tuple<Tensor, Tensor> rms_norm_backward(const Tensor& grad, const Tensor& grad_rstd, const Tensor& input,
                                             IntArrayRef normalized_shape, const Tensor& rstd,
                                             const std::optional<Tensor>& weight, const std::optional<double>& eps,
                                             std::array<bool, 2> mask) {
  const int64_t nd = int64_t(normalized_shape.size()), in_nd = input.dim();
  const DType adt = compute_dtype(input.dtype());
  // the node leaves an unused output's gradient undefined (zero_fill: false in nn_norm.yaml)
  const bool rstd_used = mask[0] && grad_rstd.defined();
  // rstd does not depend on the weight: with only rstd used, the weight's gradient is undefined
  // (None), as PyTorch's
  const bool weight_grad = mask[1] && grad.defined();
  const Tensor grad_out = grad.defined() ? grad : zeros(input.sizes(), input.dtype(), input.device());
  const Scalar n(double(std::accumulate(normalized_shape.begin(), normalized_shape.end(), int64_t(1),
                                        std::multiplies<int64_t>())));
  auto rstd_term = [&](const Tensor& rs, const Tensor& x) {  // d rstd / dx = -rstd^3 x / n
    return _to_dtype(grad_rstd, adt) * rs * rs * rs * x / n;
  };
  if (!autograd::grad_enabled() && !is_complex(input.dtype())) {  // complex: composed below
    auto [gx, gw] = _fused_rms_norm_backward(grad_out, input, normalized_shape, rstd, weight, mask[0], weight_grad);
    if (rstd_used)
      gx = _to_dtype(_to_dtype(gx, adt) - rstd_term(_to_dtype(rstd, adt), _to_dtype(input, adt)), input.dtype());
    return {gx, gw};
  }
  DimVector norm_dims, lead_dims;
  for (int64_t i = 0; i < in_nd; ++i) (i < in_nd - nd ? lead_dims : norm_dims).push_back(i);
  // rstd again, as a function of the input (the saved one carries no history), in the opmath type
  Tensor x = _to_dtype(input, adt), g = _to_dtype(grad_out, adt);
  Tensor rs = rsqrt(tp::mean(square(x), norm_dims, true) + Scalar(rms_eps(eps, adt)));
  Tensor xhat = x * rs;
  Tensor gx, gw;
  if (mask[0]) {
    Tensor gs = weight ? g * _to_dtype(*weight, adt) : g;
    gx = rs * (gs - xhat * tp::mean(gs * xhat, norm_dims, true));
    if (rstd_used) gx = gx - rstd_term(rs, x);
    gx = _to_dtype(gx, input.dtype());
  }
  if (weight_grad) {
    Tensor s = g * xhat;
    gw = _to_dtype(lead_dims.empty() ? s : sum(s, lead_dims), weight ? weight->dtype() : input.dtype());
  }
  return {gx, gw};
}

Tensor rms_norm_impl(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                     const std::optional<double>& eps, OutArg) {
  return std::get<0>(_fused_rms_norm(input, normalized_shape, weight, eps));
}

}  // namespace tp
