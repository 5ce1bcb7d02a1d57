// Fused softmax / log_softmax, layer_norm, rms_norm and batch_norm (forward and backward
// kernels), plus group_norm composed from them and from reductions.
//
// Note [Fused backward and create_graph]: a fused backward kernel (_softmax_backward_data,
// native_layer_norm_backward, native_batch_norm_backward) is one pass over the data but has
// no derivative of its own. The formula helpers below call it when grad mode is off (a
// plain backward) and the same math written with differentiable ops when it is on
// (create_graph=True), so double backward works at the cost of a slower first backward.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "autograd/formula_helpers.h"
#include "autograd/grad_mode.h"
#include "core/error.h"
#include "core/parallel.h"
#include "kernels/functors/pointwise.h"
#include "kernels/tensor_iterator.h"
#include "ops/nn.h"
#include "ops/nn_rows.h"
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

template <class F>
void visit_floating(DType dt, const char* op, F&& f) {
  if (dt == DType::Float32) return f(float{});
  if (dt == DType::Float64) return f(double{});
  fail(ErrorKind::NotImplemented, "\"", op, "\" not implemented for '", dtype_scalar_name(dt), "'");
}

/// y[i] = exp(x[i] - shift), returning the sum of the y[i].
template <class T>
T exp_shifted(const T* x, T* y, int64_t n, T shift) {
  int64_t i = 0;
  T sum = 0;
#ifdef TP_VEC_LANES
  if constexpr (std::is_same_v<T, float>) {
    using namespace functors;
    alignas(64) float lanes[TP_VEC_LANES] = {};
    vec_f acc = vec_set1(0.f), sh = vec_set1(shift);
    for (; i + TP_VEC_LANES <= n; i += TP_VEC_LANES) {
      vec_f e = TP_MVEC(expf)(vec_add(vec_load(x + i), vec_neg(sh)));
      vec_store(y + i, e);
      acc = vec_add(acc, e);
    }
    vec_store(lanes, acc);
    for (float v : lanes) sum += v;
  }
#endif
  for (; i < n; ++i) sum += (y[i] = std::exp(x[i] - shift));
  return sum;
}

/// softmax / log_softmax of a contiguous (outer, n, inner) tensor along n.
template <class T>
void softmax_kernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  if (inner == 1) {
    parallel_for(0, outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* xr = x + r * n;
        T* yr = y + r * n;
        const T m = rows::max(xr, n);
        // A NaN in the row makes the sum NaN, hence every output NaN, as in PyTorch.
        T sum = exp_shifted(xr, yr, n, m);
        if (log) {
          const T shift = m + std::log(sum);
          for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] - shift;
        } else {
          const T inv = T(1) / sum;
          for (int64_t i = 0; i < n; ++i) yr[i] *= inv;
        }
      }
    });
    return;
  }
  parallel_for(0, outer, 1, [&](int64_t b, int64_t e) {
    std::vector<T> m(inner), s(inner);
    for (int64_t o = b; o < e; ++o) {
      const T* xo = x + o * n * inner;
      T* yo = y + o * n * inner;
      std::fill(m.begin(), m.end(), -std::numeric_limits<T>::infinity());
      std::fill(s.begin(), s.end(), T(0));
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          const T v = xo[j * inner + i];
          m[i] = (v > m[i] || v != v) ? v : m[i];
        }
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i) s[i] += (yo[j * inner + i] = std::exp(xo[j * inner + i] - m[i]));
      for (int64_t i = 0; i < inner; ++i) s[i] = log ? m[i] + std::log(s[i]) : T(1) / s[i];
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          T& v = yo[j * inner + i];
          v = log ? xo[j * inner + i] - s[i] : v * s[i];
        }
    }
  });
}

/// softmax: gx = y * (g - sum(g * y)); log_softmax: gx = g - exp(y) * sum(g).
template <class T>
void softmax_backward_kernel(const T* g, const T* y, T* gx, int64_t outer, int64_t n, int64_t inner, bool log) {
  if (inner == 1) {
    parallel_for(0, outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* gr = g + r * n;
        const T* yr = y + r * n;
        T* o = gx + r * n;
        if (log) {
          const T s = rows::sum<T>(n, [&](auto at) { return at(gr); });
          exp_shifted(yr, o, n, T(0));
          for (int64_t i = 0; i < n; ++i) o[i] = gr[i] - o[i] * s;
        } else {
          const T s = rows::sum<T>(n, [&](auto at) { return at(gr) * at(yr); });
          for (int64_t i = 0; i < n; ++i) o[i] = yr[i] * (gr[i] - s);
        }
      }
    });
    return;
  }
  parallel_for(0, outer, 1, [&](int64_t b, int64_t e) {
    std::vector<T> s(inner);
    for (int64_t o = b; o < e; ++o) {
      const int64_t base = o * n * inner;
      std::fill(s.begin(), s.end(), T(0));
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t k = base + j * inner + i;
          s[i] += log ? g[k] : g[k] * y[k];
        }
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t k = base + j * inner + i;
          gx[k] = log ? g[k] - std::exp(y[k]) * s[i] : y[k] * (g[k] - s[i]);
        }
    }
  });
}

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
  if (y.numel())
    visit_floating(x.dtype(), op, [&](auto t) {
      using T = decltype(t);
      softmax_kernel(x.data<T>(), y.data<T>(), outer, n, inner, log);
    });
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
#ifdef TP_USE_CUDA
  if (output.device().is_cuda()) {
    TP_CHECK(grad_output.device() == output.device(), "Expected all tensors to be on the same device, but found at "
             "least two devices, ", output.device().str(), " and ", grad_output.device().str(), "!");
    visit_floating(compute_dtype(output.dtype()), "softmax_backward", [](auto) {});
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
  if (gx.numel())
    visit_floating(y.dtype(), "softmax_backward", [&](auto t) {
      using T = decltype(t);
      softmax_backward_kernel(g.data<T>(), y.data<T>(), gx.data<T>(), outer, n, inner, log);
    });
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

/// Normalises each row: y = (x - mean) * rstd * w + b (w, b may be null). Without `mean`
/// it is an RMS norm: nothing is centred (the mean taken as 0), rstd = 1 / sqrt(mean(x^2) + eps).
template <class T>
void layer_norm_kernel(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int64_t rows, int64_t len,
                       double eps) {
  parallel_for(0, rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(len, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const T* xr = x + r * len;
      T* yr = y + r * len;
      const T m = mean ? T(double(rows::sum<T>(len, [&](auto at) { return at(xr); })) / double(len)) : T(0);
      const double ss = double(rows::sum<T>(len, [&](auto at) { return (at(xr) - m) * (at(xr) - m); })) / double(len);
      const T rs = T(1.0 / std::sqrt(std::max(ss, 0.0) + eps));
      if (mean) mean[r] = m;
      rstd[r] = rs;
      if (w && b) for (int64_t i = 0; i < len; ++i) yr[i] = (xr[i] - m) * rs * w[i] + b[i];
      else if (w) for (int64_t i = 0; i < len; ++i) yr[i] = (xr[i] - m) * rs * w[i];
      else if (b) for (int64_t i = 0; i < len; ++i) yr[i] = (xr[i] - m) * rs + b[i];
      else for (int64_t i = 0; i < len; ++i) yr[i] = (xr[i] - m) * rs;
    }
  });
}

/// The gradients of a row-wise normalisation y = (x - mean) * rstd * w + b, in one pass:
/// dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)) with gw = g * w; the weight and bias
/// gradients sum g * xhat and g over the rows (each thread into its own partial row).
/// Without `mean`, the RMS norm's: xhat = x * rstd and no mean(gw) term.
template <class T>
void layer_norm_backward_kernel(const T* g, const T* x, const T* mean, const T* rstd, const T* w, T* gx, T* gw, T* gb,
                                int64_t rows, int64_t len) {
  const int threads = get_num_threads();
  const bool columns = gw || gb;
  std::vector<T> part(columns ? size_t(2 * len * threads) : 0, T(0));
  parallel_for(0, rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(len, 1)), [&](int64_t lo, int64_t hi) {
    T* pw = columns ? part.data() + 2 * len * std::min(omp_get_thread_num(), threads - 1) : nullptr;
    T* pb = columns ? pw + len : nullptr;
    for (int64_t r = lo; r < hi; ++r) {
      const T* gr = g + r * len;
      const T* xr = x + r * len;
      const T m = mean ? mean[r] : T(0), rs = rstd[r];
      if (gx) {
        T a = 0, c;
        if (w) {
          if (mean) a = rows::sum<T>(len, [&](auto at) { return at(gr) * at(w); });
          c = rows::sum<T>(len, [&](auto at) { return at(gr) * at(w) * (at(xr) - m); });
        } else {
          if (mean) a = rows::sum<T>(len, [&](auto at) { return at(gr); });
          c = rows::sum<T>(len, [&](auto at) { return at(gr) * (at(xr) - m); });
        }
        a /= T(len);
        c = c * rs * rs / T(len);
        T* out = gx + r * len;
        if (w) {
#pragma omp simd
          for (int64_t i = 0; i < len; ++i) out[i] = rs * (gr[i] * w[i] - a - (xr[i] - m) * c);
        } else {
#pragma omp simd
          for (int64_t i = 0; i < len; ++i) out[i] = rs * (gr[i] - a - (xr[i] - m) * c);
        }
      }
      if (columns) {
#pragma omp simd
        for (int64_t i = 0; i < len; ++i) {
          pw[i] += gr[i] * (xr[i] - m) * rs;
          pb[i] += gr[i];
        }
      }
    }
  });
  if (!columns) return;
  for (int64_t i = 0; i < len; ++i) {
    T aw = 0, ab = 0;
    for (int t = 0; t < threads; ++t) {
      aw += part[size_t(2 * len * t + i)];
      ab += part[size_t(2 * len * t + len + i)];
    }
    if (gw) gw[i] = aw;
    if (gb) gb[i] = ab;
  }
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
  const bool mixed = layer_norm_mixed(input, weight, bias);
#ifdef TP_USE_CUDA
  if (input.device().is_cuda()) {
    check_devices(input, {&weight, &bias});
    const DType dt = input.dtype(), adt = compute_dtype(dt);
    visit_floating(adt, "LayerNormKernelImpl", [](auto) {});
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
  visit_floating(x.dtype(), "LayerNormKernelImpl", [&](auto t) {
    using T = decltype(t);
    if (rows && len)
      layer_norm_kernel(x.data<T>(), w.defined() ? w.data<T>() : nullptr, b.defined() ? b.data<T>() : nullptr,
                        y.data<T>(), mean.data<T>(), rstd.data<T>(), rows, len, eps);
    else if (rows)
      for (int64_t r = 0; r < rows; ++r) mean.data<T>()[r] = T(NAN), rstd.data<T>()[r] = T(NAN);
  });
  const DType dt = input.dtype(), sdt = mixed ? DType::Float32 : dt;  // the statistics' dtype
  return {_to_dtype(y, dt), _to_dtype(mean, sdt), _to_dtype(rstd, sdt)};
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward_impl(
    const Tensor& grad_out, const Tensor& input, IntArrayRef normalized_shape, const Tensor& mean, const Tensor& rstd,
    const std::optional<Tensor>& weight, bool input_grad, bool weight_grad, bool bias_grad, OutArg) {
  auto [rows, len] = layer_norm_rows(input, normalized_shape, weight, std::nullopt);
#ifdef TP_USE_CUDA
  if (input.device().is_cuda()) {
    const std::optional<Tensor> others[3] = {grad_out, mean, rstd};
    check_devices(input, {&weight, &others[0], &others[1], &others[2]});
    const DType dt = input.dtype(), adt = compute_dtype(dt);
    visit_floating(adt, "layer_norm_backward", [](auto) {});
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
  visit_floating(x.dtype(), "layer_norm_backward", [&](auto t) {
    using T = decltype(t);
    if (rows && len)
      layer_norm_backward_kernel(g.data<T>(), x.data<T>(), m.data<T>(), rs.data<T>(), w.defined() ? w.data<T>() : nullptr,
                                 gx.defined() ? gx.data<T>() : nullptr, gw.defined() ? gw.data<T>() : nullptr,
                                 gb.defined() ? gb.data<T>() : nullptr, rows, len);
  });
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

/// A channel's training statistics from its mean m and the sum ss of its squared deviations
/// over `count` values: returns 1/std and updates the running statistics when given (unbiased
/// running variance, as PyTorch).
template <class T>
T train_stats(T m, T ss, int64_t count, double momentum, double eps, T* rm, T* rv) {
  if (rm) *rm = T((1 - momentum) * *rm + momentum * m);
  if (rv) *rv = T((1 - momentum) * *rv + momentum * (count > 1 ? ss / T(count - 1) : T(NAN)));
  return T(1) / std::sqrt((count ? ss / T(count) : T(NAN)) + T(eps));
}

/// gx = a * (g - mg - (x - mean) * k) for a channel: the coefficients from its sums of g (sg)
/// and of g * (x - mean) (sgx), 1/std s and weight wv.
template <class T>
struct InputGradCoef {
  T a, mg, k;
  InputGradCoef(T sg, T sgx, T s, T wv, bool training, int64_t count)
      : a(wv * s), mg(training && count ? sg / T(count) : T(0)), k(training && count ? sgx * s * s / T(count) : T(0)) {}
};

/// Rows of (rows x C) channels-last data, in pieces on the thread budget: f(r).
template <class F>
void for_each_row_nhwc(int64_t rows, int64_t C, F f) {
  parallel_for(0, rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(C, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) f(r);
  });
}

/// batch_norm's forward on channels-last data x (rows = N * spatial, C channels innermost).
template <class T>
void batch_norm_nhwc(const T* x, T* y, int64_t rows, int64_t C, bool training, double momentum, double eps,
                     const T* w, const T* b, T* rm, T* rv, T* mean, T* invstd) {
  if (training) {
    std::vector<T> ss(static_cast<size_t>(C));
    rows::column_sums(rows, C, 1, mean, [&](int64_t r, T* acc) {
      const T* xr = x + r * C;
      for (int64_t ch = 0; ch < C; ++ch) acc[ch] += xr[ch];
    });
    for (int64_t ch = 0; ch < C; ++ch) mean[ch] = rows ? mean[ch] / T(rows) : T(NAN);
    rows::column_sums(rows, C, 1, ss.data(), [&](int64_t r, T* acc) {
      const T* xr = x + r * C;
      for (int64_t ch = 0; ch < C; ++ch) acc[ch] += (xr[ch] - mean[ch]) * (xr[ch] - mean[ch]);
    });
    for (int64_t ch = 0; ch < C; ++ch)
      invstd[ch] = train_stats(mean[ch], ss[size_t(ch)], rows, momentum, eps, rm ? rm + ch : nullptr,
                               rv ? rv + ch : nullptr);
  } else {
    for (int64_t ch = 0; ch < C; ++ch) {
      mean[ch] = rm[ch];
      invstd[ch] = T(1) / std::sqrt(rv[ch] + T(eps));
    }
  }
  std::vector<T> scale(static_cast<size_t>(C)), shift(static_cast<size_t>(C));
  for (int64_t ch = 0; ch < C; ++ch) {
    scale[size_t(ch)] = w ? invstd[ch] * w[ch] : invstd[ch];
    shift[size_t(ch)] = (b ? b[ch] : T(0)) - mean[ch] * scale[size_t(ch)];
  }
  for_each_row_nhwc(rows, C, [&](int64_t r) {
    for (int64_t ch = 0; ch < C; ++ch) y[r * C + ch] = x[r * C + ch] * scale[size_t(ch)] + shift[size_t(ch)];
  });
}

/// batch_norm's backward on channels-last data (see batch_norm_nhwc); gx, gw, gb may be null.
template <class T>
void batch_norm_backward_nhwc(const T* g, const T* x, int64_t rows, int64_t C, const T* mean, const T* invstd,
                              const T* w, bool training, T* gx, T* gw, T* gb) {
  std::vector<T> sums(static_cast<size_t>(2 * C));  // sum g, sum g * (x - mean)
  rows::column_sums(rows, C, 2, sums.data(), [&](int64_t r, T* acc) {
    const T *gr = g + r * C, *xr = x + r * C;
    for (int64_t ch = 0; ch < C; ++ch) {
      acc[ch] += gr[ch];
      acc[C + ch] += gr[ch] * (xr[ch] - mean[ch]);
    }
  });
  std::vector<T> a(static_cast<size_t>(C)), mg(static_cast<size_t>(C)), k(static_cast<size_t>(C));
  for (int64_t ch = 0; ch < C; ++ch) {
    const T sg = sums[size_t(ch)], sgx = sums[size_t(C + ch)];
    if (gw) gw[ch] = sgx * invstd[ch];
    if (gb) gb[ch] = sg;
    const InputGradCoef<T> coef(sg, sgx, invstd[ch], w ? w[ch] : T(1), training, rows);
    a[size_t(ch)] = coef.a;
    mg[size_t(ch)] = coef.mg;
    k[size_t(ch)] = coef.k;
  }
  if (!gx) return;
  for_each_row_nhwc(rows, C, [&](int64_t r) {
    const T *gr = g + r * C, *xr = x + r * C;
    for (int64_t ch = 0; ch < C; ++ch)
      gx[r * C + ch] = a[size_t(ch)] * (gr[ch] - mg[size_t(ch)] - (xr[ch] - mean[ch]) * k[size_t(ch)]);
  });
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
#ifdef TP_USE_CUDA
  if (input.device().is_cuda()) {
    check_devices(input, {&weight, &bias, &running_mean, &running_var});
    const bool cl = channels_last(input);  // Note [Channels-last results]
    const DType adt = compute_dtype(input.dtype());
    visit_floating(adt, "batch_norm", [](auto) {});
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
  visit_floating(dt, "batch_norm", [&](auto t) {
    using T = decltype(t);
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    auto ptr = [](const Tensor& v) { return v.defined() ? v.data<T>() : nullptr; };
    if (cl)
      return batch_norm_nhwc(xp, yp, n * l, c, training, momentum, eps, ptr(w), ptr(b), ptr(rm), ptr(rv),
                             mean.data<T>(), invstd.data<T>());
    const int64_t count = n * l;
    parallel_for(0, c, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t ch = lo; ch < hi; ++ch) {
        T m, is;
        if (training) {
          T s = 0;
          for (int64_t i = 0; i < n; ++i) {
            const T* row = xp + (i * c + ch) * l;
            s += rows::sum<T>(l, [&](auto at) { return at(row); });
          }
          m = count ? s / T(count) : T(NAN);
          T v = 0;
          for (int64_t i = 0; i < n; ++i) {
            const T* row = xp + (i * c + ch) * l;
            v += rows::sum<T>(l, [&](auto at) { return (at(row) - m) * (at(row) - m); });
          }
          is = train_stats(m, v, count, momentum, eps, rm.defined() ? rm.data<T>() + ch : nullptr,
                           rv.defined() ? rv.data<T>() + ch : nullptr);
        } else {
          m = rm.data<T>()[ch];
          is = T(1) / std::sqrt(rv.data<T>()[ch] + T(eps));
        }
        mean.data<T>()[ch] = m;
        invstd.data<T>()[ch] = is;
        const T scale = w.defined() ? is * w.data<T>()[ch] : is;
        const T shift = (b.defined() ? b.data<T>()[ch] : T(0)) - m * scale;
        for (int64_t i = 0; i < n; ++i) {
          const T* row = xp + (i * c + ch) * l;
          T* out = yp + (i * c + ch) * l;
          for (int64_t j = 0; j < l; ++j) out[j] = row[j] * scale + shift;
        }
      }
    });
  });
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
#ifdef TP_USE_CUDA
  if (input.device().is_cuda()) {
    const std::optional<Tensor> others[3] = {grad_out, save_mean, save_invstd};
    check_devices(input, {&weight, &others[0], &others[1], &others[2]});
    visit_floating(dt, "batch_norm_backward", [](auto) {});
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
  visit_floating(dt, "batch_norm_backward", [&](auto t) {
    using T = decltype(t);
    const T *gp = g.data<T>(), *xp = x.data<T>();
    auto ptr = [](const Tensor& v) { return v.defined() ? v.data<T>() : nullptr; };
    if (cl)
      return batch_norm_backward_nhwc(gp, xp, n * l, c, m.data<T>(), is.data<T>(), ptr(w), training, ptr(gx),
                                      ptr(gw), ptr(gb));
    const int64_t count = n * l;
    parallel_for(0, c, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t ch = lo; ch < hi; ++ch) {
        const T mu = m.data<T>()[ch], s = is.data<T>()[ch];
        T sg = 0, sgx = 0;
        for (int64_t i = 0; i < n; ++i) {
          const T* gr = gp + (i * c + ch) * l;
          const T* xr = xp + (i * c + ch) * l;
          sg += rows::sum<T>(l, [&](auto at) { return at(gr); });
          sgx += rows::sum<T>(l, [&](auto at) { return at(gr) * (at(xr) - mu); });
        }
        if (gw.defined()) gw.data<T>()[ch] = sgx * s;
        if (gb.defined()) gb.data<T>()[ch] = sg;
        if (!gx.defined()) continue;
        const InputGradCoef<T> coef(sg, sgx, s, w.defined() ? w.data<T>()[ch] : T(1), training, count);
        for (int64_t i = 0; i < n; ++i) {
          const T* gr = gp + (i * c + ch) * l;
          const T* xr = xp + (i * c + ch) * l;
          T* out = gx.data<T>() + (i * c + ch) * l;
          for (int64_t j = 0; j < l; ++j) out[j] = coef.a * (gr[j] - coef.mg - (xr[j] - mu) * coef.k);
        }
      }
    });
  });
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
  return std::get<0>(native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps));
}

// ------------------------------------------------------------------ group_norm, rms_norm

namespace {

/// One sample of a group-norm input: C channels of L positions, row-major (channel c's
/// positions adjacent) or channels last (position l's channels adjacent).
template <class T>
struct SamplePlanes {
  bool cl;
  int64_t L, C;
  int64_t at(int64_t c, int64_t l) const { return cl ? l * C + c : c * L + l; }
  /// out[c] = sum over the positions of term(a, b) (`at`-style loaders, as rows::sum's) for a
  /// and b of this sample: row-major, one vector reduction per channel; channels last,
  /// vector code over the channels.
  template <class F>
  void channel_sums(const T* a, const T* b, T* out, F term) const {
    if (!cl) {
      for (int64_t c = 0; c < C; ++c) {
        const T *ar = a + c * L, *br = b + c * L;
        out[c] = rows::sum<T>(L, [&](auto ld) { return term(ld(ar), ld(br), c); });
      }
      return;
    }
    std::fill_n(out, C, T(0));
    for (int64_t l = 0; l < L; ++l)
      for (int64_t c = 0; c < C; ++c) out[c] += term(a[l * C + c], b[l * C + c], c);
  }
  /// out = p[c] * a + q[c] * b + r[c] elementwise.
  void combine(T* out, const T* p, const T* a, const T* q, const T* b, const T* r) const {
    if (!cl) {
      for (int64_t c = 0; c < C; ++c)
        for (int64_t l = 0; l < L; ++l) out[c * L + l] = p[c] * a[c * L + l] + q[c] * b[c * L + l] + r[c];
      return;
    }
    for (int64_t l = 0; l < L; ++l)
      for (int64_t c = 0; c < C; ++c) out[l * C + c] = p[c] * a[l * C + c] + q[c] * b[l * C + c] + r[c];
  }
};

/// group_norm: N samples of C channels of L positions (layout as SamplePlanes), G groups of
/// C/G channels; mean and rstd are (N, G); the affine (w, b may be null) included.
template <class T>
void group_norm_kernel(bool cl, const T* x, T* y, int64_t N, int64_t L, int64_t C, int64_t G, double eps,
                       const T* w, const T* b, T* mean, T* rstd) {
  const int64_t cpg = C / G;
  const T count = T(L * cpg);
  const SamplePlanes<T> sp{cl, L, C};
  parallel_for(0, N, 1, [&](int64_t nb, int64_t ne) {
    std::vector<T> acc(static_cast<size_t>(C)), mc(acc), scale(acc), shift(acc), zero(acc);
    auto group_total = [&](int64_t g) { return std::accumulate(&acc[size_t(g * cpg)], &acc[size_t(g * cpg)] + cpg, T(0)); };
    for (int64_t n = nb; n < ne; ++n) {
      const T* xn = x + n * L * C;
      sp.channel_sums(xn, xn, acc.data(), [](auto v, auto, int64_t) { return v; });
      for (int64_t g = 0; g < G; ++g) {
        mean[n * G + g] = L ? group_total(g) / count : T(NAN);
        std::fill_n(&mc[size_t(g * cpg)], cpg, mean[n * G + g]);
      }
      sp.channel_sums(xn, xn, acc.data(), [&](auto v, auto, int64_t c) { return (v - mc[size_t(c)]) * (v - mc[size_t(c)]); });
      for (int64_t g = 0; g < G; ++g) rstd[n * G + g] = T(1) / std::sqrt((L ? group_total(g) / count : T(NAN)) + T(eps));
      for (int64_t c = 0; c < C; ++c) {
        scale[size_t(c)] = rstd[n * G + c / cpg] * (w ? w[c] : T(1));
        shift[size_t(c)] = (b ? b[c] : T(0)) - mc[size_t(c)] * scale[size_t(c)];
      }
      sp.combine(y + n * L * C, scale.data(), xn, zero.data(), xn, shift.data());
    }
  });
}

/// group_norm's backward (see group_norm_kernel); gx, gw, gb may be null. Per sample the sums
/// of gy * x and of gy per channel give gx = p[c] gy + q[c] x + r[c].
template <class T>
void group_norm_backward_kernel(bool cl, const T* gy, const T* x, int64_t N, int64_t L, int64_t C, int64_t G,
                                const T* mean, const T* rstd, const T* w, T* gx, T* gw, T* gb) {
  const int64_t cpg = C / G;
  const T count = T(L * cpg);
  const SamplePlanes<T> sp{cl, L, C};
  std::vector<T> ds(static_cast<size_t>(N * C)), db(ds);  // per (sample, channel): sum gy * x, sum gy
  parallel_for(0, N, 1, [&](int64_t nb, int64_t ne) {
    std::vector<T> p(static_cast<size_t>(C)), q(p), r(p);
    for (int64_t n = nb; n < ne; ++n) {
      const T *gn = gy + n * L * C, *xn = x + n * L * C;
      T *dsn = &ds[size_t(n * C)], *dbn = &db[size_t(n * C)];
      sp.channel_sums(gn, xn, dsn, [](auto g, auto v, int64_t) { return g * v; });
      sp.channel_sums(gn, xn, dbn, [](auto g, auto, int64_t) { return g; });
      if (!gx) continue;
      for (int64_t g = 0; g < G; ++g) {
        const T m = mean[n * G + g], rs = rstd[n * G + g];
        T a = 0, bsum = 0;  // sums over the group of w db and of w (ds - m db)
        for (int64_t c = g * cpg; c < (g + 1) * cpg; ++c) {
          const T wc = w ? w[c] : T(1);
          a += wc * dbn[c];
          bsum += wc * (dsn[c] - m * dbn[c]);
          p[size_t(c)] = rs * wc;
        }
        const T qg = -rs * rs * rs * bsum / count, rg = -rs * a / count - m * qg;
        std::fill_n(&q[size_t(g * cpg)], cpg, qg);
        std::fill_n(&r[size_t(g * cpg)], cpg, rg);
      }
      sp.combine(gx + n * L * C, p.data(), gn, q.data(), xn, r.data());
    }
  });
  for (int64_t c = 0; c < C; ++c) {
    T sw = 0, sb = 0;
    for (int64_t n = 0; n < N; ++n) {
      sw += (ds[size_t(n * C + c)] - mean[n * G + c / cpg] * db[size_t(n * C + c)]) * rstd[n * G + c / cpg];
      sb += db[size_t(n * C + c)];
    }
    if (gw) gw[c] = sw;
    if (gb) gb[c] = sb;
  }
}

/// Whether `t` (small: per-(sample, group) statistics) has a nonzero element.
bool any_nonzero(const Tensor& t) {
  if (!t.defined()) return false;
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
  TP_CHECK(input.dim() >= 2 && input.numel() == N * C * HxW && input.size(0) == N && input.size(1) == C,
           "Expected X.numel() == N * C * HxW to be true, but got false.");
  TP_CHECK(group > 0 && C % group == 0, "Expected number of channels in input to be divisible by num_groups, but got "
           "input of shape ", shape_str(input.sizes()), " and num_groups=", group);
  for (const auto* v : {&weight, &bias})
    TP_CHECK(!*v || ((*v)->dim() == 1 && (*v)->numel() == C), "Expected ", v == &weight ? "weight" : "bias",
             " to be a vector of size equal to the number of channels in input, but got ",
             v == &weight ? "weight" : "bias", " of shape ", shape_str((*v)->sizes()), " and input of shape ",
             shape_str(input.sizes()));
  const GroupBlocks blk(input, group);
  TP_CHECK(blk.cl ? is_channels_last_dense(input) : input.is_contiguous(),
           "Expected X.is_contiguous(memory_format) to be true, but got false.");
  const int64_t stats[2] = {N, group};
  const DType dt = input.dtype(), cdt = compute_dtype(dt);
#ifdef TP_USE_CUDA
  if (input.device().is_cuda()) {  // the kernel reads row-major (N, C, HxW) data
    check_devices(input, {&weight, &bias});
    visit_floating(cdt, "group_norm", [](auto) {});
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
  visit_floating(cdt, "group_norm", [&](auto t) {
    using T = decltype(t);
    auto ptr = [](const Tensor& v) { return v.defined() ? v.data<T>() : nullptr; };
    group_norm_kernel(blk.cl, x.data<T>(), y.data<T>(), N, HxW, C, group, eps, ptr(w), ptr(b), mean.data<T>(),
                      rstd.data<T>());
  });
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
  if (!autograd::grad_enabled() && !stats_used && input.device().is_cpu()) {
    Tensor gy = with_layout(_to_dtype(grad, dt), blk.cl), xc = with_layout(_to_dtype(input, dt), blk.cl);
    Tensor m = contiguous(_to_dtype(mean, dt)), rs = contiguous(_to_dtype(rstd, dt));
    Tensor w = weight ? compute_input(*weight) : Tensor();
    const int64_t n = input.size(0), c = input.size(1);
    Tensor gx = !mask[0] ? Tensor()
                : blk.cl ? empty_strided_tensor(input.sizes(), channels_last_strides(input.sizes()), dt, input.device())
                         : empty_tensor(input.sizes(), dt);
    Tensor gw = mask[1] ? empty_tensor(IntArrayRef(&c, 1), dt) : Tensor();
    Tensor gb = mask[2] ? empty_tensor(IntArrayRef(&c, 1), dt) : Tensor();
    visit_floating(dt, "group_norm_backward", [&](auto t) {
      using T = decltype(t);
      auto ptr = [](const Tensor& v) { return v.defined() ? v.data<T>() : nullptr; };
      group_norm_backward_kernel(blk.cl, gy.data<T>(), xc.data<T>(), n, n * c != 0 ? input.numel() / (n * c) : 0, c,
                                 group, m.data<T>(), rs.data<T>(), ptr(w), ptr(gx), ptr(gw), ptr(gb));
    });
    auto back = [](const Tensor& t, DType to) { return t.defined() ? _to_dtype(t, to) : t; };
    return {back(gx, input.dtype()), back(gw, weight ? weight->dtype() : dt), back(gb, grad.dtype())};
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
  TP_CHECK(input.dim() >= 2, "Expected at least 2 dimensions for input tensor but received ", input.dim());
  const int64_t n = input.size(0), c = input.size(1);
  TP_CHECK(num_groups > 0 && c % num_groups == 0, "Expected number of channels in input to be divisible by ",
           "num_groups, but got input of shape ", shape_str(input.sizes()), " and num_groups=", num_groups);
  check_channel_vector(weight, c, "weight");
  check_channel_vector(bias, c, "bias");
  // dense in its own layout, as native_group_norm takes it (PyTorch's group_norm does the same)
  const bool cl = channels_last(input);
  Tensor x = !cl ? contiguous(input) : is_channels_last_dense(input) ? input : with_layout(input, true);
  return std::get<0>(
      native_group_norm(x, weight, bias, n, c, n * c != 0 ? input.numel() / (n * c) : 0, num_groups, eps));
}

// ------------------------------------------------------------------ rms_norm
//
// Note [RMS norm as an uncentred layer norm]: y = x * rstd * w with rstd = 1 / sqrt(mean(x^2)
// + eps) is a layer norm whose mean is taken as 0, and its input gradient
// rstd * (g*w - x * rstd^2 * mean(g*w*x)) is layer norm's without the mean(g*w) term. So the
// layer-norm kernels (CPU here, CUDA in norm_kernels.cu) serve both: given no mean buffer
// they neither centre nor store a mean, and the weight gradient keeps their fixed-order sums.

namespace {

/// rms_norm's eps: the given one, else the machine epsilon of the accumulation dtype (PyTorch's).
double rms_eps(const std::optional<double>& eps, DType acc) {
  return eps ? *eps : acc == DType::Float64 ? 2.220446049250313e-16 : 1.1920928955078125e-07;
}

void check_rms_dtype(const Tensor& input) {
  TP_CHECK_KIND(ErrorKind::NotImplemented, is_floating(input.dtype()), "\"rms_norm\" not implemented for '",
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
  TP_CHECK(input.device().is_cpu(), "no ", input.device().str(), " kernel");
  Tensor x = compute_input(input);
  Tensor w = weight ? contiguous(_to_dtype(*weight, adt)) : Tensor();  // scaled in the input's opmath type
  Tensor y = empty_tensor(input.sizes(), adt), rstd = empty_tensor(ss, adt);
  visit_floating(adt, "rms_norm", [&](auto t) {
    using T = decltype(t);
    if (rows && len)
      layer_norm_kernel<T>(x.data<T>(), w.defined() ? w.data<T>() : nullptr, nullptr, y.data<T>(), nullptr,
                           rstd.data<T>(), rows, len, e);
    else
      for (int64_t r = 0; r < rows; ++r) rstd.data<T>()[r] = T(NAN);
  });
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
  TP_CHECK(input.device().is_cpu(), "no ", input.device().str(), " kernel");
  Tensor g = compute_input(grad_out), x = compute_input(input), rs = contiguous(_to_dtype(rstd, adt));
  Tensor w = weight ? contiguous(_to_dtype(*weight, adt)) : Tensor();
  Tensor gx = input_grad ? empty_tensor(input.sizes(), adt) : Tensor();
  Tensor gw = weight_grad ? zeros(normalized_shape, adt) : Tensor();
  visit_floating(adt, "rms_norm", [&](auto t) {
    using T = decltype(t);
    if (rows && len)
      layer_norm_backward_kernel<T>(g.data<T>(), x.data<T>(), nullptr, rs.data<T>(),
                                    w.defined() ? w.data<T>() : nullptr, gx.defined() ? gx.data<T>() : nullptr,
                                    gw.defined() ? gw.data<T>() : nullptr, nullptr, rows, len);
  });
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
  if (!autograd::grad_enabled()) {
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
