// Pooling over 1-3 spatial dims: max_pool*d(_with_indices), avg_pool*d,
// adaptive_avg_pool*d, adaptive_max_pool1d/2d and their backward kernels.
//
// Note [Pooling windows]: every pooling op reduces, per output position and spatial dim, a
// window `begin + j * step` (j < count) of input positions, already clipped to the input;
// a table of windows per dim is built once, then each (batch, channel) plane is reduced
// with no materialised windows (planes in parallel). Spatial dims are padded in front to
// three, so one kernel serves 1-3d. Max pooling keeps the flat spatial index of the winner
// (NaN wins, as in PyTorch); its backward adds the gradient at those indices. The windows
// are ops/nn_pool.h's PoolShape; the loops over the planes are kernels/cpu/pool_kernel.cpp's.
#include <algorithm>
#include <string>

#include "autograd/forward_ad.h"
#include "autograd/grad_mode.h"
#include "core/error.h"
#include "dispatch/dispatch_key.h"
#include "kernels/cpu_stubs.h"
#include "kernels/tensor_iterator.h"
#include "ops/meta.h"
#include "ops/nn.h"
#include "ops/shape_utils.h"
#include "ops/nn_pool.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"
#ifdef TP_USE_CUDA
#include "cuda/nn_spatial.h"
#endif

namespace tp {

namespace {

using pool::PoolShape;
using pool::Window;

/// `v` as nsp values (a single value repeats; empty gives `fallback`).
DimVector expand(IntArrayRef v, int64_t nsp, IntArrayRef fallback, const char* op, const char* what) {
  if (v.empty()) v = fallback;
  TP_CHECK(v.size() == 1 || int64_t(v.size()) == nsp, op, ": ", what, " must either be a single int, or a tuple of ",
           nsp, " ints");
  DimVector r;
  for (int64_t i = 0; i < nsp; ++i) r.push_back(v.size() == 1 ? v[0] : v[i]);
  return r;
}

/// `adaptive`: the adaptive pools' check and message; `spatial_only`: only the pooled dims must be
/// non-empty (PyTorch's adaptive_avg_pool1d/2d pool zero channels, the others refuse them).
void check_pool_input(const Tensor& self, int64_t nsp, const char* op, bool adaptive = false,
                      bool spatial_only = false) {
  TP_CHECK(self.dim() == nsp + 1 || self.dim() == nsp + 2, op, ": Expected ", nsp + 1, "D or ", nsp + 2,
           "D (batch mode) tensor for input, but got: ", shape_str(self.sizes()));
  // the adaptive pools let an unbatched input's channels (dim 0) be empty; the others do not
  const int64_t first = spatial_only ? self.dim() - nsp : adaptive || self.dim() == nsp + 2 ? 1 : 0;
  for (int64_t i = first; i < self.dim(); ++i) {
    if (self.size(i) > 0) continue;
    TP_CHECK(!adaptive, op, "(): Expected input to have non-zero size for non-batch dimensions, but input has "
             "sizes ", shape_str(self.sizes()), " with dimension ", i, " being empty");
    TP_CHECK(false, op, ": Expected input's non-batch dimensions to have positive length, but input has "
             "a shape of ", shape_str(self.sizes()), " and non-zero size for dim ", i);
  }
  TP_CHECK(self.device().is_cpu() || self.device().is_cuda() || is_meta(self), op, ": no ", self.device().str(),
           " kernel");
}

void base_shape(PoolShape& g, const Tensor& self, int64_t nsp) {
  g.nsp = nsp;
  g.planes = 1;
  for (int64_t i = 0; i < self.dim() - nsp; ++i) g.planes *= self.size(i);
  for (int64_t i = 0; i < nsp; ++i) g.in[3 - nsp + i] = self.size(self.dim() - nsp + i);
}

/// Windows of a strided pooling (max: dilation; avg: dilation 1) with PyTorch's checks.
PoolShape sliding_shape(const Tensor& self, int64_t nsp, IntArrayRef kernel_size, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef dilation, bool ceil_mode, bool count_include_pad,
                        bool is_max, const char* op) {
  if (!is_max && nsp == 2) (void)size_at(self, -3);  // PyTorch's avg_pool2d reads it first
  check_pool_input(self, nsp, op);
  const int64_t one = 1;
  TP_CHECK(!kernel_size.empty(), op, ": kernel_size must either be a single int, or a tuple of ", nsp, " ints");
  DimVector k = expand(kernel_size, nsp, kernel_size, op, "kernel_size");
  DimVector s = expand(stride, nsp, kernel_size, op, "stride");
  DimVector p = expand(padding, nsp, IntArrayRef(&one, 0), op, "padding");
  DimVector d = expand(dilation, nsp, IntArrayRef(&one, 1), op, "dilation");
  PoolShape g;
  base_shape(g, self, nsp);
  for (int64_t i = 0; i < nsp; ++i) {
    TP_CHECK(k[i] > 0, op, ": kernel_size must be greater than zero, but got ", k[i]);
    TP_CHECK(s[i] > 0, op, ": stride must be greater than zero, but got ", s[i]);
    TP_CHECK(d[i] > 0, op, ": dilation must be greater than zero, but got ", d[i]);
    TP_CHECK(p[i] >= 0 && p[i] <= (is_max ? (k[i] - 1) * d[i] + 1 : k[i]) / 2, op,
             ": pad should be at most half of effective kernel size, but got pad=", p[i], ", kernel_size=", k[i],
             " and dilation=", d[i]);
  }
  // PyTorch's avg_pool3d wants the unpadded input at least as large as the kernel
  TP_CHECK(is_max || nsp != 3 || (g.in[0] >= k[0] && g.in[1] >= k[1] && g.in[2] >= k[2]), op,
           ": input image (T: ", g.in[0], " H: ", g.in[1], " W: ", g.in[2], ") smaller than kernel size (kT: ", k[0],
           " kH: ", k[1], " kW: ", k[2], ")");
  std::string in_s, out_s;
  bool bad = false;
  for (int64_t i = 0; i < nsp; ++i) {
    const int64_t in = g.in[3 - nsp + i], span = in + 2 * p[i] - d[i] * (k[i] - 1) - 1;
    // PyTorch's pooling_output_shape: floor division (div_rtn) of the span, rounded up in ceil mode
    const int64_t num = span + (ceil_mode ? s[i] - 1 : 0);
    int64_t o = num / s[i] + 1 - (num < 0 && num % s[i] != 0);
    if (ceil_mode && o > 0 && (o - 1) * s[i] >= in + p[i]) --o;
    g.out[3 - nsp + i] = o;
    bad = bad || o < 1;
    detail::append(in_s, i ? "x" : "");
    detail::append(in_s, in);
    detail::append(out_s, i ? "x" : "");
    detail::append(out_s, o);
  }
  TP_CHECK(!bad, op, ": Given input size: (", in_s, "). Calculated output size: (", out_s,
           "). Output size is too small");
  for (int64_t i = 0; i < nsp; ++i) {
    Window& w = g.w[3 - nsp + i];
    const int64_t in = g.in[3 - nsp + i], o_n = g.out[3 - nsp + i];
    w.step = is_max ? d[i] : 1;
    for (int64_t o = 0; o < o_n; ++o) {
      const int64_t start = o * s[i] - p[i];
      int64_t j0 = start < 0 ? (-start + w.step - 1) / w.step : 0;
      int64_t j1 = std::min<int64_t>(k[i], (in - start + w.step - 1) / w.step);
      j1 = std::max(j0, j1);
      w.begin.push_back(start + j0 * w.step);
      w.count.push_back(j1 - j0);
      const int64_t pad_end = std::min(start + k[i], in + p[i]);
      w.pad_count.push_back(double(count_include_pad ? pad_end - start : j1 - j0));
    }
  }
  return g;
}

/// Windows of an adaptive pooling: [floor(o*in/out), ceil((o+1)*in/out)).
PoolShape adaptive_shape(const Tensor& self, int64_t nsp, IntArrayRef output_size, const char* op,
                         bool spatial_only = false) {
  check_pool_input(self, nsp, op, true, spatial_only);
  TP_CHECK(int64_t(output_size.size()) == nsp || output_size.size() == 1, op, ": output_size must be ", nsp);
  PoolShape g;
  base_shape(g, self, nsp);
  for (int64_t i = 0; i < nsp; ++i) {
    const int64_t o_n = output_size.size() == 1 ? output_size[0] : output_size[i];
    TP_CHECK(o_n >= 0, op, ": elements of output_size must be greater than or equal to 0 but received ", o_n);
    const int64_t in = g.in[3 - nsp + i];
    g.out[3 - nsp + i] = o_n;
    Window& w = g.w[3 - nsp + i];
    for (int64_t o = 0; o < o_n; ++o) {
      const int64_t b = o * in / o_n, e = ((o + 1) * in + o_n - 1) / o_n;
      w.begin.push_back(b);
      w.count.push_back(e - b);
      w.pad_count.push_back(double(e - b));
    }
  }
  return g;
}

/// The three padded dims' windows for dims that are not pooled (size 1).
void fill_unit_windows(PoolShape& g) {
  for (int i = 0; i < 3 - g.nsp; ++i) g.w[i] = Window{{0}, {1}, {1.0}, 1};
}

DimVector out_sizes(const Tensor& self, const PoolShape& g) {
  DimVector r(self.sizes().data(), self.sizes().size() - g.nsp);
  for (int64_t i = 3 - g.nsp; i < 3; ++i) r.push_back(g.out[i]);
  return r;
}

/// PyTorch's error unless dt is a dtype the pooling kernels compute in (float16/bfloat16 are
/// widened first; which integer dtypes an op takes is checked before).
void check_pool_dtype(DType dt, const char* op) {
  TP_CHECK_KIND(ErrorKind::NotImplemented, is_integral(dt, false) || dt == DType::Float32 || dt == DType::Float64,
                "\"", op, "\" not implemented for '", dtype_scalar_name(dt), "'");
}

/// An uninitialised `sizes` tensor on `dev` laid out channels last (`cl`) or row-major.
Tensor empty_in_layout(IntArrayRef sizes, DType dt, bool cl, Device dev) {
  return cl ? empty_strided_tensor(sizes, channels_last_strides(sizes), dt, dev) : empty_tensor(sizes, dt, dev);
}

#ifdef TP_USE_CUDA
/// The window tables of g for the CUDA kernels (pointing into g).
cuda::PoolDims cuda_dims(const PoolShape& g) {
  cuda::PoolDims d{};
  for (int k = 0; k < 3; ++k) {
    d.in[k] = g.in[k];
    d.out[k] = g.out[k];
    d.step[k] = g.w[k].step;
    d.begin[k] = g.w[k].begin.data();
    d.count[k] = g.w[k].count.data();
    d.pad_count[k] = g.w[k].pad_count.data();
  }
  return d;
}

/// The planes of a pooling input of sizes `self_size` over `nsp` dims, channels last (`cl`) or not.
cuda::PoolLayout cuda_layout(IntArrayRef self_size, int64_t nsp, bool cl) {
  cuda::PoolLayout l;
  l.planes = 1;
  for (size_t i = 0; i + size_t(nsp) < self_size.size(); ++i) l.planes *= self_size[i];
  l.channels = cl ? self_size[1] : 1;
  l.channels_last = cl;
  return l;
}
#endif

/// float16/bfloat16 widened to float32 (the pooling kernels' compute dtype), any layout.
Tensor widen(const Tensor& t) { return is_float16_or_bfloat16(t.dtype()) ? _to_dtype(t, DType::Float32) : t; }

/// Whether a batched pooling input of (sizes, strides) over `nsp` dims reads as channels last.
/// A 1-D pooling is PyTorch's 2-D one of the input unsqueezed to (N, C, 1, L): channels last
/// (C innermost, results (N, C, L) with strides (C * L, 1, C)) when that view is.
bool pool_layout_channels_last(IntArrayRef sizes, IntArrayRef strides, int64_t nsp) {
  if (int64_t(sizes.size()) != nsp + 2) return false;
  if (nsp != 1) return suggests_channels_last(sizes, strides);
  const int64_t s4[4] = {sizes[0], sizes[1], 1, sizes[2]};
  const int64_t st4[4] = {strides[0], strides[1], sizes[2] * strides[2], strides[2]};  // unsqueeze's strides
  return suggests_channels_last(IntArrayRef(s4, 4), IntArrayRef(st4, 4));
}

/// Whether a pooling over `nsp` dims of `t` runs and returns channels last: `t` batched with
/// channels-last strides (pool_layout_channels_last), for the ops whose PyTorch kernels have
/// such a path.
bool pool_channels_last(const Tensor& t, int64_t nsp, bool has_path) {
  return has_path && pool_layout_channels_last(t.sizes(), t.strides(), nsp);
}

std::tuple<Tensor, Tensor> max_pool_run(const Tensor& self, PoolShape g, bool cl, const char* op) {
  fill_unit_windows(g);
  if (is_meta(self))  // (PyTorch's meta functions check no dtype: that is its kernels')
    return {empty_in_layout(out_sizes(self, g), self.dtype(), cl, self.device()),
            empty_in_layout(out_sizes(self, g), DType::Int64, cl, self.device())};
  TP_CHECK_KIND(ErrorKind::NotImplemented, self.dtype() != DType::Bool, "\"", op, "\" not implemented for 'Bool'");
  Tensor x = with_layout(widen(self), cl);
  Tensor y = empty_in_layout(out_sizes(self, g), x.dtype(), cl, self.device());
  Tensor idx = empty_in_layout(out_sizes(self, g), DType::Int64, cl, self.device());
  if (self.device().is_cuda()) {
#ifdef TP_USE_CUDA
    cuda::max_pool_forward(cuda_dims(g), cuda_layout(self.sizes(), g.nsp, cl), x, y, idx);
#endif
  } else if (y.numel()) {
    check_pool_dtype(x.dtype(), op);
    cpu::max_pool_stub(g, x.dtype(), cl, cl ? self.size(1) : 1, x.data_ptr(), y.data_ptr(), idx.data<int64_t>());
  }
  return {is_float16_or_bfloat16(self.dtype()) ? _to_dtype(y, self.dtype()) : y, idx};
}

/// Average pooling; `cl`: in channels-last layout. A channels-last input pooled to one
/// element per plane gets channels-last strides (the layouts coincide), as PyTorch's mean path.
Tensor avg_pool_run(const Tensor& self, PoolShape g, std::optional<int64_t> divisor, bool cl, const char* op) {
  fill_unit_windows(g);
  TP_CHECK(!divisor || *divisor != 0, op, ": divisor must be not zero");
  const bool single = g.out_numel() == 1 && self.dim() == g.nsp + 2 && channels_last(self);
  if (is_meta(self)) return empty_in_layout(out_sizes(self, g), self.dtype(), cl || single, self.device());
  TP_CHECK_KIND(ErrorKind::NotImplemented, is_floating(self.dtype()) || self.dtype() == DType::Int64, "\"", op,
                "\" not implemented for '", dtype_scalar_name(self.dtype()), "'");
  Tensor x = with_layout(widen(self), cl);
  Tensor y = empty_in_layout(out_sizes(self, g), x.dtype(), cl || single, self.device());
  if (self.device().is_cuda()) {
#ifdef TP_USE_CUDA
    cuda::avg_pool_forward(cuda_dims(g), cuda_layout(self.sizes(), g.nsp, cl), x, y, divisor);
#endif
  } else if (y.numel()) {
    check_pool_dtype(x.dtype(), op);
    cpu::avg_pool_stub(g, x.dtype(), cl, cl ? self.size(1) : 1, x.data_ptr(), y.data_ptr(), divisor.value_or(0));
  }
  return is_float16_or_bfloat16(self.dtype()) ? _to_dtype(y, self.dtype()) : y;
}

/// Average pooling's gradient for `self` from gy (dtype and layout of the kernels: `cl`).
Tensor avg_backward_run(const PoolShape& g, const Tensor& self, const Tensor& gy, std::optional<int64_t> divisor,
                        bool cl) {
  Tensor gx = empty_in_layout(self.sizes(), gy.dtype(), cl, self.device());
  if (self.device().is_cuda()) {
#ifdef TP_USE_CUDA
    cuda::avg_pool_backward(cuda_dims(g), cuda_layout(self.sizes(), g.nsp, cl), gy, gx, divisor);
#endif
  } else if (gx.numel()) {
    check_pool_dtype(gy.dtype(), "avg_pool_backward");
    cpu::avg_pool_backward_stub(g, gy.dtype(), cl, cl ? self.size(1) : 1, gy.data_ptr(), gx.data_ptr(),
                                divisor.value_or(0));
  }
  return gx;
}

/// On meta, the one dtype error of PyTorch's average-pooling meta functions (its kernels' are not raised).
void check_avg_meta_dtype(const Tensor& self, const char* op) {
  TP_CHECK(!is_meta(self) || self.dtype() != DType::UInt8, "\"", op, "\" not implemented for 'torch.uint8'");
}

/// NotImplementedError unless self is floating (the kernels' dtypes; on meta, PyTorch checks none).
void floats_only(const Tensor& self, const char* op) {
  if (is_meta(self)) return;
  TP_CHECK_KIND(ErrorKind::NotImplemented, is_floating(self.dtype()), "\"", op, "\" not implemented for '",
                dtype_scalar_name(self.dtype()), "'");
}

}  // namespace

// ------------------------------------------------------------------ max pooling

namespace {

/// Whether max_pool1d runs as PyTorch's own 1-D CPU kernel, whose results are row-major: a CPU
/// input that needs no gradient and is no subclass, with no dispatch mode to see the call (else,
/// and on other devices, max_pool1d_with_indices).
bool max_pool1d_direct(const Tensor& self) {
  return self.device().is_cpu() && !(self.requires_grad() && autograd::grad_enabled()) &&
         !(autograd::fw_grad_enabled() && autograd::fw_grad(self).defined()) && !dispatch::python_key(self);
}

}  // namespace

#define TP_MAX_POOL(N)                                                                                          \
  std::tuple<Tensor, Tensor> max_pool##N##d_with_indices_impl(const Tensor& self, IntArrayRef kernel_size,      \
                                                              IntArrayRef stride, IntArrayRef padding,          \
                                                              IntArrayRef dilation, bool ceil_mode, OutArg) {   \
    return max_pool_run(self, sliding_shape(self, N, kernel_size, stride, padding, dilation, ceil_mode, true,   \
                                            true, "max_pool" #N "d"),                                           \
                        pool_channels_last(self, N, true), "max_pool" #N "d");                                  \
  }                                                                                                             \
  Tensor max_pool##N##d_impl(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,                   \
                             IntArrayRef padding, IntArrayRef dilation, bool ceil_mode, OutArg) {               \
    if (N == 1) floats_only(self, "max_pool1d");                                                                \
    if (N == 1 && max_pool1d_direct(self))                                                                      \
      return std::get<0>(max_pool_run(self, sliding_shape(self, 1, kernel_size, stride, padding, dilation,      \
                                                          ceil_mode, true, true, "max_pool1d"),                 \
                                      false, "max_pool1d"));                                                    \
    return std::get<0>(max_pool##N##d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode));  \
  }
TP_MAX_POOL(1)
TP_MAX_POOL(2)
TP_MAX_POOL(3)
#undef TP_MAX_POOL

std::tuple<Tensor, Tensor> adaptive_max_pool1d_impl(const Tensor& self, IntArrayRef output_size, OutArg) {
  floats_only(self, "adaptive_max_pool1d");
  return max_pool_run(self, adaptive_shape(self, 1, output_size, "adaptive_max_pool1d"),
                      pool_channels_last(self, 1, true), "adaptive_max_pool1d");
}
std::tuple<Tensor, Tensor> adaptive_max_pool2d_impl(const Tensor& self, IntArrayRef output_size, OutArg) {
  floats_only(self, "adaptive_max_pool2d");
  return max_pool_run(self, adaptive_shape(self, 2, output_size, "adaptive_max_pool2d"),
                      pool_channels_last(self, 2, true), "adaptive_max_pool2d");
}

namespace {

/// (planes, input plane numel) of a pooling input whose last `nsp` dims are pooled.
std::pair<int64_t, int64_t> planes_of(IntArrayRef self_size, int64_t nsp) {
  int64_t planes = 1, plane = 1;
  for (int64_t i = 0; i < int64_t(self_size.size()); ++i) (i < int64_t(self_size.size()) - nsp ? planes : plane) *= self_size[i];
  return {planes, plane};
}

}  // namespace

Tensor _max_pool_backward_impl(const Tensor& grad_output, const Tensor& indices, IntArrayRef self_size,
                               int64_t spatial_dims, OutArg) {
  TP_CHECK(std::equal(grad_output.sizes().begin(), grad_output.sizes().end(), indices.sizes().begin(),
                      indices.sizes().end()), "grad_output and indices must have the same shape");
  check_same_device(grad_output, indices);
  auto [planes, plane] = planes_of(self_size, spatial_dims);
  const DType dt = is_float16_or_bfloat16(grad_output.dtype()) ? DType::Float32 : grad_output.dtype();
  // the indices carry the forward's layout (Note [Channels-last results])
  const bool cl = pool_layout_channels_last(indices.sizes(), indices.strides(), spatial_dims);
  if (is_meta(grad_output)) return empty_in_layout(self_size, grad_output.dtype(), cl, grad_output.device());
  Tensor gy = with_layout(_to_dtype(grad_output, dt), cl), idx = with_layout(indices, cl);
  if (grad_output.device().is_cuda()) {
#ifdef TP_USE_CUDA
    check_pool_dtype(dt, "max_pool_backward");  // the CPU's dtype error
    // atomic adds: float32/float64 as on the CPU, the integer dtypes summed in int64
    const DType acc_dt = is_floating(dt) ? dt : DType::Int64;
    Tensor gx = empty_in_layout(self_size, acc_dt, cl, grad_output.device());
    cuda::max_pool_backward(cuda_layout(self_size, spatial_dims, cl), plane, with_layout(_to_dtype(gy, acc_dt), cl),
                            idx, gx);
    return _to_dtype(gx, grad_output.dtype());
#endif
  }
  Tensor gx = empty_in_layout(self_size, dt, cl, Device(DeviceType::CPU));
  check_pool_dtype(dt, "max_pool_backward");
  const int64_t per = planes ? gy.numel() / planes : 0;
  // (N, spatial, C) channels last: N samples of C channels; row-major: planes of one
  cpu::max_pool_backward_stub(dt, cl ? self_size[0] : planes, cl ? self_size[1] : 1, plane, per, gy.data_ptr(),
                              idx.data<int64_t>(), gx.data_ptr());
  return _to_dtype(gx, grad_output.dtype());
}

Tensor max_pool_double_backward(const Tensor& grad, const Tensor& indices, int64_t spatial_dims) {
  auto [planes, plane] = planes_of(grad.sizes(), spatial_dims);
  const int64_t g_shape[2] = {planes, plane}, i_shape[2] = {planes, planes ? indices.numel() / planes : 0};
  return reshape(gather(reshape(grad, g_shape), 1, reshape(indices, i_shape)), indices.sizes());
}

// ------------------------------------------------------------------ average pooling

Tensor avg_pool1d_impl(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                       bool ceil_mode, bool count_include_pad, OutArg) {
  const int64_t one = 1;
  check_avg_meta_dtype(self, "avg_pool2d");  // PyTorch's avg_pool1d is a 2-D one
  return avg_pool_run(self, sliding_shape(self, 1, kernel_size, stride, padding, IntArrayRef(&one, 1), ceil_mode,
                                          count_include_pad, false, "avg_pool1d"), std::nullopt,
                      pool_channels_last(self, 1, true), "avg_pool1d");
}

#define TP_AVG_POOL(N)                                                                                        \
  Tensor avg_pool##N##d_impl(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,                 \
                             IntArrayRef padding, bool ceil_mode, bool count_include_pad,                     \
                             const std::optional<int64_t>& divisor_override, OutArg) {                        \
    const int64_t one = 1;                                                                                    \
    check_avg_meta_dtype(self, "avg_pool" #N "d");                                                            \
    if (N == 3 && !is_meta(self))                                                                             \
      TP_CHECK_KIND(ErrorKind::NotImplemented, !is_float16_or_bfloat16(self.dtype()), "\"avg_pool3d_out_frame\" not implemented " \
                    "for '", dtype_scalar_name(self.dtype()), "'");                                           \
    return avg_pool_run(self, sliding_shape(self, N, kernel_size, stride, padding, IntArrayRef(&one, 1),      \
                                            ceil_mode, count_include_pad, false, "avg_pool" #N "d"),          \
                        divisor_override, pool_channels_last(self, N, N == 2), "avg_pool" #N "d");            \
  }
TP_AVG_POOL(2)
TP_AVG_POOL(3)
#undef TP_AVG_POOL

Tensor _avg_pool_backward_impl(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                               IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                               const std::optional<int64_t>& divisor_override, int64_t spatial_dims, OutArg) {
  const int64_t one = 1;
  PoolShape g = sliding_shape(self, spatial_dims, kernel_size, stride, padding, IntArrayRef(&one, 1), ceil_mode,
                              count_include_pad, false, "avg_pool_backward");
  fill_unit_windows(g);
  check_same_device(self, grad_output);
  const DType dt = is_float16_or_bfloat16(grad_output.dtype()) ? DType::Float32 : grad_output.dtype();
  const bool cl = pool_channels_last(self, spatial_dims, spatial_dims <= 2);
  TP_CHECK(grad_output.numel() == g.planes * g.out_numel(), "avg_pool_backward: grad_output has the wrong size");
  if (is_meta(self)) return empty_in_layout(self.sizes(), grad_output.dtype(), cl, self.device());
  Tensor gy = with_layout(_to_dtype(grad_output, dt), cl);
  return _to_dtype(avg_backward_run(g, self, gy, divisor_override, cl), grad_output.dtype());
}

Tensor avg_pool_nd(const Tensor& grad, int64_t spatial_dims, IntArrayRef kernel_size, IntArrayRef stride,
                   IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                   const std::optional<int64_t>& divisor_override) {
  if (spatial_dims == 1) return avg_pool1d(grad, kernel_size, stride, padding, ceil_mode, count_include_pad);
  if (spatial_dims == 2)
    return avg_pool2d(grad, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  return avg_pool3d(grad, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
}

// ------------------------------------------------------------------ adaptive average pooling

#define TP_ADAPTIVE_AVG(N)                                                                                   \
  Tensor adaptive_avg_pool##N##d_impl(const Tensor& self, IntArrayRef output_size, OutArg) {                 \
    /* PyTorch pools to size 1 with a mean (mean's dtype error), and its 2-d kernel returns      */        \
    /* before its dtype dispatch on an empty input */                                                        \
    bool to_one = std::all_of(output_size.begin(), output_size.end(), [](int64_t v) { return v == 1; }); \
    TP_CHECK(!to_one || is_floating(self.dtype()), "mean(): could not infer output dtype. Input dtype must "    \
             "be either a floating point or complex dtype. Got: ", dtype_scalar_name(self.dtype()));         \
    const bool none_out = std::any_of(output_size.begin(), output_size.end(), [](int64_t v) { return v == 0; }); \
    if (N == 3 || (self.numel() != 0 && !none_out)) floats_only(self, "adaptive_avg_pool" #N "d");           \
    PoolShape g = adaptive_shape(self, N, output_size, "adaptive_avg_pool" #N "d", N <= 2);                  \
    if (N <= 2 && (self.numel() == 0 || none_out) && !is_meta(self))                                         \
      return empty_tensor(out_sizes(self, g), self.dtype(), self.device());                                  \
    /* pooled to one element per plane, PyTorch takes a mean (on meta, its dtype check is mean's) */         \
    TP_CHECK(!is_meta(self) || g.out_numel() != 1 || is_floating(self.dtype()), "mean(): could not infer "  \
             "output dtype. Input dtype must be either a floating point or complex dtype. Got: ",            \
             dtype_scalar_name(self.dtype()));                                                               \
    const bool cl = pool_channels_last(self, N, N <= 2) && g.out_numel() != 1;                               \
    return avg_pool_run(self, std::move(g), std::nullopt, cl, "adaptive_avg_pool" #N "d");                   \
  }
TP_ADAPTIVE_AVG(1)
TP_ADAPTIVE_AVG(2)
TP_ADAPTIVE_AVG(3)
#undef TP_ADAPTIVE_AVG

Tensor _adaptive_avg_pool_backward_impl(const Tensor& grad_output, const Tensor& self, int64_t spatial_dims, OutArg) {
  DimVector out(grad_output.sizes().data() + grad_output.dim() - spatial_dims, size_t(spatial_dims));
  PoolShape g = adaptive_shape(self, spatial_dims, out, "adaptive_avg_pool_backward", spatial_dims <= 2);
  fill_unit_windows(g);
  check_same_device(self, grad_output);
  const DType dt = is_float16_or_bfloat16(grad_output.dtype()) ? DType::Float32 : grad_output.dtype();
  // pooled to one element per plane, PyTorch takes a mean, whose gradient is row-major
  const bool cl = pool_channels_last(self, spatial_dims, spatial_dims <= 2) && g.out_numel() != 1;
  if (is_meta(self)) return empty_in_layout(self.sizes(), grad_output.dtype(), cl, self.device());
  Tensor gy = with_layout(_to_dtype(grad_output, dt), cl);
  return _to_dtype(avg_backward_run(g, self, gy, std::nullopt, cl), grad_output.dtype());
}

Tensor adaptive_avg_pool_nd(const Tensor& grad, IntArrayRef out_sizes, int64_t spatial_dims) {
  DimVector out(out_sizes.data() + out_sizes.size() - spatial_dims, size_t(spatial_dims));
  if (spatial_dims == 1) return adaptive_avg_pool1d(grad, out);
  if (spatial_dims == 2) return adaptive_avg_pool2d(grad, out);
  return adaptive_avg_pool3d(grad, out);
}

}  // namespace tp
