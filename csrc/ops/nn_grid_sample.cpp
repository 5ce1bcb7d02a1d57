// Grid sampling: grid_sampler_2d / grid_sampler_3d (bilinear, nearest, 2-D bicubic; zeros,
// border and reflection padding), their fused backward, and that backward written with
// differentiable ops for create_graph (Note [Fused backward and create_graph]). The sampling
// rules themselves live in grid_sample.h (Note [Grid sampler edges]), shared with CUDA; the
// CPU loops are csrc/kernels/cpu/grid_sample_kernel.cpp.
#include <algorithm>
#include <climits>
#include <cmath>
#include <vector>

#include "autograd/formula_helpers.h"
#include "autograd/grad_mode.h"
#include "core/error.h"
#include "kernels/cpu_stubs.h"
#include "ops/grid_sample.h"
#include "ops/meta.h"
#include "ops/nn.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"
#ifdef TP_USE_CUDA
#include "cuda/nn_spatial.h"
#endif

namespace tp {

namespace {

using namespace sampling;

/// Calls f(T{}) for the dtype a sampler computes in.
template <class F>
void visit_float(DType dt, F&& f) {
  if (dt == DType::Float64) return f(double{});
  return f(float{});
}

DType compute_dtype(DType dt) { return is_float16_or_bfloat16(dt) ? DType::Float32 : dt; }

/// PyTorch's checks of grid_sampler (shapes) and of its kernels (dtypes, modes).
Geometry check_sampler(const Tensor& input, const Tensor& grid, int64_t nsp, int64_t mode, int64_t padding,
                       const char* kernel) {
  (void)size_at(input, 0), (void)size_at(grid, 0);  // a 0-d tensor: PyTorch's IndexError
  TP_CHECK(input.dim() >= 1 && grid.dim() >= 1 && input.size(0) == grid.size(0),
           "grid_sampler(): expected grid and input to have same batch size, but got input with sizes ",
           shape_str(input.sizes()), " and grid with sizes ", shape_str(grid.sizes()));
  TP_CHECK(grid.size(-1) == input.dim() - 2, "grid_sampler(): expected grid to have size ", input.dim() - 2,
           " in last dimension, but got grid with sizes ", shape_str(grid.sizes()));
  TP_CHECK(input.dim() == nsp + 2 && grid.dim() == nsp + 2, "grid_sampler(): expected ", nsp + 2,
           "D input and grid with same number of dimensions, but got input with sizes ", shape_str(input.sizes()),
           " and grid with sizes ", shape_str(grid.sizes()));
  for (int64_t i = 2; i < input.dim(); ++i)
    TP_CHECK(input.size(i) > 0, "grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
             "sizes ", shape_str(input.sizes()), " with dimension ", i, " being empty");
  TP_CHECK(mode != kBicubic || nsp == 2, "grid_sampler(): bicubic interpolation only supports 4D input");
  TP_CHECK(input.device().is_cpu() || input.device().is_cuda() || is_meta(input), kernel, ": no ",
           input.device().str(), " kernel");
  check_same_device(input, grid);
  Geometry g;
  g.nsp = nsp;
  g.n = input.size(0);
  g.c = input.size(1);
  int64_t numel = g.n * g.c;
  for (int64_t i = 0; i < nsp; ++i) {
    g.in[3 - nsp + i] = input.size(2 + i);
    g.out[3 - nsp + i] = grid.size(1 + i);
    numel *= g.out[3 - nsp + i];
  }
  // PyTorch's kernels: the 2-D one returns an empty result before anything else (any dtype,
  // any mode), the 3-D one dispatches on the input's dtype first; then the grid's dtype, then
  // the modes (which PyTorch does not check: D14). Its meta function checks no dtype.
  if (numel == 0 && nsp == 2) return g;
  TP_CHECK_KIND(ErrorKind::NotImplemented, is_floating(input.dtype()) || is_meta(input), "\"",
                input.device().is_cpu() ? (nsp == 2 ? "grid_sampler_2d_cpu_kernel_impl" : "grid_sampler3d_cpu") : kernel,
                "\" not implemented for '", dtype_scalar_name(input.dtype()), "'");
  if (numel == 0) return g;
  TP_CHECK(grid.dtype() == input.dtype(), "expected scalar type ", dtype_scalar_name(input.dtype()), " but found ",
           dtype_scalar_name(grid.dtype()));
  TP_CHECK(mode == kBilinear || mode == kNearest || mode == kBicubic, "grid_sampler(): expected interpolation_mode "
           "to be 0 (bilinear), 1 (nearest) or 2 (bicubic), but got ", mode);
  TP_CHECK(padding == kZeros || padding == kBorder || padding == kReflection,
           "grid_sampler(): expected padding_mode to be 0 (zeros), 1 (border) or 2 (reflection), but got ", padding);
  return g;
}

Tensor sampler_forward(const Tensor& input, const Tensor& grid, int64_t nsp, int64_t mode, int64_t padding,
                       bool align, const char* kernel) {
  Geometry g = check_sampler(input, grid, nsp, mode, padding, kernel);
  DimVector sizes{g.n, g.c};
  for (int64_t i = 0; i < nsp; ++i) sizes.push_back(g.out[3 - nsp + i]);
  if (is_meta(input) || std::find(sizes.begin(), sizes.end(), 0) != sizes.end())
    return empty_tensor(sizes, input.dtype(), input.device());
  const DType dt = compute_dtype(input.dtype());
  Tensor x = contiguous(_to_dtype(input, dt)), gr = contiguous(_to_dtype(grid, dt));
  Tensor y = empty_tensor(sizes, dt, input.device());
  if (y.device().is_cuda()) {
#ifdef TP_USE_CUDA
    cuda::grid_sample_forward(g, mode, padding, align, x, gr, y);
#endif
  } else if (y.numel()) {
    cpu::grid_sample_stub(dt, g, mode, padding, align, x.data_ptr(), gr.data_ptr(), y.data_ptr());
  }
  return _to_dtype(y, input.dtype());
}

std::tuple<Tensor, Tensor> sampler_backward(const Tensor& grad_output, const Tensor& input, const Tensor& grid,
                                            int64_t nsp, int64_t mode, int64_t padding, bool align, bool input_grad,
                                            bool grid_grad, const char* kernel) {
  Geometry g = check_sampler(input, grid, nsp, mode, padding, kernel);
  DimVector expect{g.n, g.c};
  for (int64_t i = 0; i < nsp; ++i) expect.push_back(g.out[3 - nsp + i]);
  TP_CHECK(std::equal(expect.begin(), expect.end(), grad_output.sizes().begin(), grad_output.sizes().end()), kernel,
           ": expected grad_output of sizes ", shape_str(expect), ", but got ", shape_str(grad_output.sizes()));
  check_same_device(input, grad_output);
  if (is_meta(input))  // row-major, in the input's dtype
    return {input_grad ? empty_tensor(input.sizes(), input.dtype(), input.device()) : Tensor(),
            grid_grad ? empty_tensor(grid.sizes(), input.dtype(), input.device()) : Tensor()};
  const DType dt = compute_dtype(input.dtype());
  Tensor x = contiguous(_to_dtype(input, dt)), gr = contiguous(_to_dtype(grid, dt));
  Tensor gy = contiguous(_to_dtype(grad_output, dt));
  Tensor gx, gg;
  if (input_grad) gx = zeros(input.sizes(), dt, input.device());
  if (grid_grad) gg = empty_tensor(grid.sizes(), dt, input.device());
  if (input.device().is_cuda()) {
#ifdef TP_USE_CUDA
    if (gy.numel()) cuda::grid_sample_backward(g, mode, padding, align, gy, x, gr, gx, gg);
#endif
  } else if (gy.numel()) {
    cpu::grid_sample_backward_stub(dt, g, mode, padding, align, gy.data_ptr(), x.data_ptr(), gr.data_ptr(),
                                   input_grad ? gx.data_ptr() : nullptr, grid_grad ? gg.data_ptr() : nullptr);
  }
  if (grid_grad && g.c == 0) gg = zeros(grid.sizes(), dt, input.device());
  return {gx.defined() ? _to_dtype(gx, input.dtype()) : gx, gg.defined() ? _to_dtype(gg, input.dtype()) : gg};
}

}  // namespace

Tensor grid_sampler_2d_impl(const Tensor& input, const Tensor& grid, int64_t interpolation_mode, int64_t padding_mode,
                            bool align_corners, OutArg) {
  return sampler_forward(input, grid, 2, interpolation_mode, padding_mode, align_corners, "grid_sampler_2d");
}

Tensor grid_sampler_3d_impl(const Tensor& input, const Tensor& grid, int64_t interpolation_mode, int64_t padding_mode,
                            bool align_corners, OutArg) {
  return sampler_forward(input, grid, 3, interpolation_mode, padding_mode, align_corners, "grid_sampler_3d");
}

std::tuple<Tensor, Tensor> grid_sampler_2d_backward_impl(const Tensor& grad_output, const Tensor& input,
                                                         const Tensor& grid, int64_t interpolation_mode,
                                                         int64_t padding_mode, bool align_corners, bool input_grad,
                                                         bool grid_grad, OutArg) {
  return sampler_backward(grad_output, input, grid, 2, interpolation_mode, padding_mode, align_corners, input_grad,
                          grid_grad, "grid_sampler_2d_backward");
}

std::tuple<Tensor, Tensor> grid_sampler_3d_backward_impl(const Tensor& grad_output, const Tensor& input,
                                                         const Tensor& grid, int64_t interpolation_mode,
                                                         int64_t padding_mode, bool align_corners, bool input_grad,
                                                         bool grid_grad, OutArg) {
  return sampler_backward(grad_output, input, grid, 3, interpolation_mode, padding_mode, align_corners, input_grad,
                          grid_grad, "grid_sampler_3d_backward");
}

Tensor grid_sampler_impl(const Tensor& input, const Tensor& grid, int64_t interpolation_mode, int64_t padding_mode,
                         bool align_corners, OutArg) {
  const int64_t nsp = input.dim() == 5 ? 3 : 2;
  if (input.dim() != 4 && input.dim() != 5)  // the shape checks, with the message PyTorch gives
    check_sampler(input, grid, nsp, interpolation_mode, padding_mode, "grid_sampler");
  return nsp == 2 ? grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners)
                  : grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners);
}

// ------------------------------------------------------------------ create_graph backward

namespace {

/// One axis of the differentiable backward: per tap, the input position (0 where outside),
/// a 0/1 validity mask, the weight and its derivative in the grid coordinate, as (N, P) tensors.
struct AxisTaps {
  std::vector<Tensor> index, valid, weight, dweight;
};

/// The non-differentiable parts of one axis from the (detached) grid: per tap index and
/// validity, the fraction's value and its slope d(fraction)/d(grid).
template <class T>
void axis_parts(const Axis<T>& ax, int64_t mode, const T* g, int64_t nsp, int64_t a, int64_t count, int taps,
                std::vector<int64_t*>& index, std::vector<T*>& valid, T* frac, T* slope) {
  for (int64_t q = 0; q < count; ++q) {
    const T gv = g[q * nsp + a];
    T x0, d = 0;
    if (mode == kBicubic) {
      const T x = ax.unnormalize(gv);
      x0 = std::floor(x);
      frac[q] = x - x0;
      slope[q] = ax.scale;
      x0 -= 1;
    } else {
      const T x = ax.source(gv, &d);
      x0 = mode == kNearest ? std::nearbyint(x) : std::floor(x);
      frac[q] = x - x0;
      slope[q] = d;
    }
    for (int k = 0; k < taps; ++k) {
      const T pos = mode == kBicubic ? ax.bounded(x0 + T(k)) : x0 + T(k);
      const bool in = ax.inside(pos);
      index[k][q] = in ? int64_t(pos) : 0;
      valid[k][q] = in ? T(1) : T(0);
    }
  }
}

/// grid_sampler's gradients as differentiable ops of grad, input and grid.
std::tuple<Tensor, Tensor> differentiable_backward(const Tensor& grad, const Tensor& input, const Tensor& grid,
                                                   int64_t mode, int64_t padding, bool align) {
  if (is_float16_or_bfloat16(input.dtype())) {
    auto [gx, gg] = differentiable_backward(_to_dtype(grad, DType::Float32), _to_dtype(input, DType::Float32),
                                            _to_dtype(grid, DType::Float32), mode, padding, align);
    return {_to_dtype(gx, input.dtype()), _to_dtype(gg, input.dtype())};
  }
  const int64_t nsp = input.dim() - 2, N = input.size(0), C = input.size(1);
  Geometry geo;
  geo.nsp = nsp;
  for (int64_t i = 0; i < nsp; ++i) {
    geo.in[3 - nsp + i] = input.size(2 + i);
    geo.out[3 - nsp + i] = grid.size(1 + i);
  }
  const int64_t P = geo.points(), S = geo.plane();
  const int taps = mode == kBicubic ? 4 : mode == kNearest ? 1 : 2;
  const DType dt = grid.dtype();
  const Device dev = grid.device();
  // the taps are found on the host, then moved to dev; on meta they have no values to find
  const bool meta = is_meta(grid);
  Tensor gdet = meta ? Tensor() : host_copy(detach(grid));
  auto on_dev = [&](const Tensor& t) {
    if (dev.is_cpu() || meta) return t;
    Tensor d = empty_tensor(t.sizes(), t.dtype(), dev);
    return copy_(d, t);
  };
  const int64_t np[2] = {N, P};
  std::vector<AxisTaps> axes(static_cast<size_t>(nsp));
  for (int64_t a = 0; a < nsp; ++a) {
    AxisTaps& at = axes[size_t(a)];
    const Device host_or_meta = meta ? dev : Device(DeviceType::CPU);
    Tensor frac = empty_tensor(np, dt, host_or_meta), slope = empty_tensor(np, dt, host_or_meta);
    std::vector<Tensor> idx, val;
    for (int k = 0; k < taps; ++k) {
      idx.push_back(empty_tensor(np, DType::Int64, host_or_meta));
      val.push_back(empty_tensor(np, dt, host_or_meta));
    }
    if (!meta) visit_float(dt, [&](auto t) {
      using T = decltype(t);
      std::vector<int64_t*> ip;
      std::vector<T*> vp;
      for (int k = 0; k < taps; ++k) {
        ip.push_back(idx[size_t(k)].data<int64_t>());
        vp.push_back(val[size_t(k)].data<T>());
      }
      Axis<T> ax(geo.in[2 - a], padding, align, nsp == 2);
      axis_parts(ax, mode, gdet.data<T>(), nsp, a, N * P, taps, ip, vp, frac.data<T>(), slope.data<T>());
    });
    for (Tensor& v : idx) v = on_dev(v);
    for (Tensor& v : val) v = on_dev(v);
    frac = on_dev(frac);
    slope = on_dev(slope);
    const Tensor ga = reshape(select(grid, -1, a), np);
    const Tensor f = frac + slope * (ga - detach(ga));  // value frac, derivative slope
    at.index = idx;
    at.valid = val;
    if (mode == kNearest) {
      at.weight = {ones(np, dt, dev)};
      at.dweight = {zeros(np, dt, dev)};
    } else if (mode == kBilinear) {
      at.weight = {1 - f, f};
      at.dweight = {-slope, slope};
    } else {
      const double A = -0.75;
      auto near = [&](const Tensor& x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
      auto far = [&](const Tensor& x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
      auto dnear = [&](const Tensor& x) { return (3 * (A + 2) * x - 2 * (A + 3)) * x; };
      auto dfar = [&](const Tensor& x) { return (3 * A * x - 10 * A) * x + 8 * A; };
      at.weight = {far(f + 1), near(f), near(1 - f), far(2 - f)};
      at.dweight = {dfar(f + 1) * slope, dnear(f) * slope, -dnear(1 - f) * slope, -dfar(2 - f) * slope};
    }
  }
  const int64_t ncs[3] = {N, C, S}, ncp[3] = {N, C, P}, channel_dim[1] = {1};
  const Tensor x = reshape(input, ncs), gy = reshape(grad, ncp);
  std::vector<Tensor> all_idx, all_src, grid_terms(static_cast<size_t>(nsp));
  int64_t combos = 1;
  for (int64_t a = 0; a < nsp; ++a) combos *= taps;
  for (int64_t k = 0; k < combos; ++k) {
    // combo k takes tap (k / taps^a) % taps along axis a
    std::vector<size_t> tap(static_cast<size_t>(nsp));
    std::vector<Tensor> wa(static_cast<size_t>(nsp));
    Tensor flat, valid, w;
    int64_t stride = 1, rest = k;
    for (int64_t a = 0; a < nsp; ++a) {
      tap[size_t(a)] = size_t(rest % taps);
      rest /= taps;
      const AxisTaps& at = axes[size_t(a)];
      const Tensor part = at.index[tap[size_t(a)]] * stride;
      flat = flat.defined() ? flat + part : part;
      valid = valid.defined() ? valid * at.valid[tap[size_t(a)]] : at.valid[tap[size_t(a)]];
      wa[size_t(a)] = at.weight[tap[size_t(a)]];
      w = w.defined() ? w * wa[size_t(a)] : wa[size_t(a)];
      stride *= geo.in[2 - a];
    }
    const Tensor index = expand(unsqueeze(flat, 1), ncp);
    all_idx.push_back(index);
    all_src.push_back(gy * unsqueeze(w * valid, 1));
    const Tensor gv = sum(gy * gather(x, 2, index), IntArrayRef(channel_dim, 1)) * valid;  // (N, P)
    for (int64_t a = 0; a < nsp; ++a) {
      Tensor dw = axes[size_t(a)].dweight[tap[size_t(a)]];
      for (int64_t b = 0; b < nsp; ++b)
        if (b != a) dw = dw * wa[size_t(b)];
      const Tensor term = gv * dw;
      grid_terms[size_t(a)] = grid_terms[size_t(a)].defined() ? grid_terms[size_t(a)] + term : term;
    }
  }
  Tensor gx = scatter_add(zeros(ncs, dt, dev), 2, cat(all_idx, 2), cat(all_src, 2));
  DimVector gshape(grid.sizes().data(), grid.sizes().size() - 1);
  std::vector<Tensor> comps;
  for (int64_t a = 0; a < nsp; ++a) comps.push_back(reshape(grid_terms[size_t(a)], gshape));
  return {reshape(gx, input.sizes()), stack(comps, -1)};
}

}  // namespace

std::tuple<Tensor, Tensor> grid_sampler_backward(const Tensor& grad, const Tensor& input, const Tensor& grid,
                                                 int64_t interpolation_mode, int64_t padding_mode, bool align_corners,
                                                 std::array<bool, 2> mask) {
  if (!autograd::grad_enabled()) {
    return input.dim() == 4 ? grid_sampler_2d_backward(grad, input, grid, interpolation_mode, padding_mode,
                                                       align_corners, mask[0], mask[1])
                            : grid_sampler_3d_backward(grad, input, grid, interpolation_mode, padding_mode,
                                                       align_corners, mask[0], mask[1]);
  }
  return differentiable_backward(grad, input, grid, interpolation_mode, padding_mode, align_corners);
}

}  // namespace tp
