// The FFT primitives on the CPU: _fft_c2c, _fft_r2c and _fft_c2r over pocketfft (the
// header-only FFT NumPy uses; CMakeLists.txt finds or fetches it). The public functions
// (tp.fft.*, stft, istft) compose these in python/tensorplay/fft.py as PyTorch's do, so
// their values, dtypes and strides follow PyTorch's (Note [FFT output layout]).
//
// Note [pocketfft]
// pocketfft plans a transform per length (radix 2/3/4/5/7/11 passes, Bluestein for large
// prime factors), caches the last plans (POCKETFFT_CACHE_SIZE), takes any strides in bytes
// and vectorises across lines (one line per SIMD lane). It runs in fft_kernel.cpp, compiled
// per CPU capability level, threaded by our pool and with the four-step split of long 1-D
// transforms (Note [FFT on the CPU] there); this file only plans the result's layout and
// hands the strides over.
#include "ops/fft/fft.h"
#include "ops/fft/fft_cpu.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <numeric>

#include "autograd/formula_helpers.h"
#include "autograd/formulas_fft.h"
#include "core/parallel.h"
#include "ops/meta.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"


namespace tp {
namespace fft {

constinit cpu::KernelStub<CpuFftFn> fft_cpu_stub;

Layout plan(const char* op, Kind kind, const Tensor& self, IntArrayRef dim, int64_t last_dim_size) {
  const int64_t nd = self.dim();
  DType dt = self.dtype();
  if (kind == Kind::R2C) {
    TP_CHECK(dt == DType::Float32 || dt == DType::Float64,
             is_complex(dt) ? "Expected a real input tensor, but got " : "Unsupported dtype ",
             dtype_scalar_name(dt));
  } else {
    TP_CHECK(is_complex(dt), is_floating(dt) || dt == DType::Float16 || dt == DType::BFloat16
                                 ? "Only supports complex dtypes, but found: "
                                 : "Unsupported dtype ",
             dtype_scalar_name(dt));
  }
  TP_CHECK(!dim.empty(), op, ": no dims to transform");
  Layout L;
  std::vector<bool> seen(size_t(std::max<int64_t>(nd, 1)), false);
  for (int64_t d : dim) {
    int64_t w = wrap_dim(d, nd);
    TP_CHECK(nd > 0, op, ": cannot transform a 0-dim tensor");
    TP_CHECK(!seen[size_t(w)], "FFT dims must be unique");
    seen[size_t(w)] = true;
    L.dims.push_back(w);
  }
  L.out_sizes = DimVector(self.sizes().data(), self.sizes().size());
  const int64_t last = L.dims[L.dims.size() - 1];
  if (kind == Kind::R2C) {
    // the caller's onesided flag halves the last dim; plan() leaves that to fft_r2c_impl
  } else if (kind == Kind::C2R) {
    TP_CHECK(last_dim_size >= 1, "Invalid number of data points (", last_dim_size, ") specified");
    TP_CHECK(self.size(last) == last_dim_size / 2 + 1, op, ": expected ", last_dim_size / 2 + 1,
             " frequencies in dim ", last, " for ", last_dim_size, " output points, but got ", self.size(last));
    L.out_sizes[size_t(last)] = last_dim_size;
  }
  for (int64_t d : L.dims) TP_CHECK(kind == Kind::C2R || self.size(d) >= 1, "Invalid number of data points (0) specified");
  auto strides = self.strides();
  auto by_stride = [&](int64_t a, int64_t b) { return strides[size_t(a)] > strides[size_t(b)]; };
  for (int64_t d = 0; d < nd; ++d)
    if (!seen[size_t(d)]) L.perm.push_back(d);
  std::stable_sort(L.perm.begin(), L.perm.end(), by_stride);
  DimVector tdims = L.dims;
  if (kind == Kind::C2C) std::stable_sort(tdims.begin(), tdims.end(), by_stride);
  for (int64_t d : tdims) L.perm.push_back(d);
  if (kind == Kind::C2C) L.dims = tdims;
  return L;
}

/// The dense strides of `sizes` laid out in `perm` order (perm[0] outermost).
static DimVector dense_strides(const DimVector& sizes, const DimVector& perm) {
  DimVector st(sizes.size(), 0);
  int64_t s = 1;
  for (size_t k = perm.size(); k-- > 0;) {
    st[size_t(perm[k])] = s;
    s *= std::max<int64_t>(sizes[size_t(perm[k])], 1);
  }
  return st;
}

double norm_factor(int64_t mode, int64_t n) {
  TP_CHECK(mode >= 0 && mode <= 2, "Invalid normalization mode: ", mode);
  if (mode == 0 || n == 0) return 1.0;
  return mode == 1 ? 1.0 / std::sqrt(double(n)) : 1.0 / double(n);
}

namespace {

/// A CPU transform of `kind` from self into result over `dims`; `shape` is the signal's.
CpuTransform transform(Kind kind, const Tensor& self, const Tensor& result, const DimVector& dims, IntArrayRef shape,
                       bool forward, double fct) {
  CpuTransform t;
  t.kind = kind;
  t.is_double = self.dtype() == DType::Float64 || self.dtype() == DType::Complex128;
  t.forward = forward;
  t.shape.assign(shape.begin(), shape.end());
  for (int64_t d = 0; d < self.dim(); ++d) {
    t.stride_in.push_back(self.stride(d) * int64_t(self.itemsize()));
    t.stride_out.push_back(result.stride(d) * int64_t(result.itemsize()));
  }
  t.axes.assign(dims.begin(), dims.end());
  t.in = self.data_ptr();
  t.out = result.data_ptr();
  t.fct = fct;
  return t;
}

int64_t signal_numel(IntArrayRef sizes, const DimVector& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= sizes[size_t(d)];
  return n;
}

}  // namespace

Tensor make_output(const Tensor& self, const Layout& L, DType dt) {
  DimVector st = dense_strides(L.out_sizes, L.perm);
  return empty_strided_tensor(L.out_sizes, st, dt, self.device());
}

/// out= handling: the kernel computes into a fresh tensor of its own layout, then the
/// result moves into `out` (resized to the result's shape; PyTorch's out= rules).
Tensor finish(const Tensor& result, OutArg out) {
  if (!out.tensor) return result;
  TP_CHECK(out.tensor->dtype() == result.dtype(), "Expected out tensor to have dtype ",
           dtype_scalar_name(result.dtype()), ", but got ", dtype_scalar_name(out.tensor->dtype()), " instead");
  resize_out(*out.tensor, result.sizes());
  copy_(*out.tensor, result);
  return *out.tensor;
}

void fill_conjugate_symmetry(const Tensor& out, const Layout& L) {
  // In layout order the result is dense [batch..., dims...] with the halved dim last.
  const size_t m = L.dims.size();
  std::vector<int64_t> n(m);
  for (size_t i = 0; i < m; ++i) n[i] = L.out_sizes[size_t(L.dims[i])];
  const int64_t nl = n[m - 1], half = nl / 2 + 1;
  if (half >= nl) return;
  int64_t inner = 1;
  for (size_t i = 0; i < m; ++i) inner *= n[i];
  const int64_t rows = inner / nl;  // lines along the last dim within one batch entry
  const int64_t batch = inner ? out.numel() / inner : 0;
  auto run = [&](auto* base) {
    parallel_for(0, batch * rows, 1024 / std::max<int64_t>(nl, 1) + 1, [&](int64_t lo, int64_t hi) {
      std::vector<int64_t> idx(m);
      for (int64_t r = lo; r < hi; ++r) {
        const int64_t b = r / rows;
        int64_t rem = r % rows, mirror = 0;
        // the row's index over the leading transformed dims, and its mirror -idx mod n
        for (size_t i = m - 1; i-- > 0;) {
          idx[i] = rem % n[i];
          rem /= n[i];
        }
        int64_t stride = nl;
        for (size_t i = m - 1; i-- > 0;) {
          mirror += ((n[i] - idx[i]) % n[i]) * stride;
          stride *= n[i];
        }
        auto* row = base + b * inner + (r % rows) * nl;
        const auto* src = base + b * inner + mirror;
        for (int64_t k = half; k < nl; ++k) row[k] = std::conj(src[nl - k]);
      }
    });
  };
  if (out.dtype() == DType::Complex64)
    run(reinterpret_cast<std::complex<float>*>(out.data_ptr()));
  else
    run(reinterpret_cast<std::complex<double>*>(out.data_ptr()));
}

}  // namespace fft

using fft::Kind;
using fft::Layout;

Tensor fft_c2c_impl(const Tensor& self, IntArrayRef dim, int64_t normalization, bool forward, OutArg out) {
  Layout L = fft::plan("_fft_c2c", Kind::C2C, self, dim, 0);
  Tensor result = fft::make_output(self, L, self.dtype());
  if (is_meta(self) || result.numel() == 0) return fft::finish(result, out);
  const double fct = fft::norm_factor(normalization, fft::signal_numel(self.sizes(), L.dims));
  fft::fft_cpu_stub(fft::transform(Kind::C2C, self, result, L.dims, self.sizes(), forward, fct));
  return fft::finish(result, out);
}

Tensor fft_r2c_impl(const Tensor& self, IntArrayRef dim, int64_t normalization, bool onesided, OutArg out) {
  Layout L = fft::plan("_fft_r2c", Kind::R2C, self, dim, 0);
  const int64_t last = L.dims[L.dims.size() - 1], n_last = self.size(last);
  if (onesided) L.out_sizes[size_t(last)] = n_last / 2 + 1;
  Tensor result = fft::make_output(self, L, to_complex_dtype(self.dtype()));
  if (is_meta(self) || result.numel() == 0) return fft::finish(result, out);
  const double fct = fft::norm_factor(normalization, fft::signal_numel(self.sizes(), L.dims));
  // two-sided: the kernel writes the first n/2+1 frequencies into the full result, whose
  // other half follows from the symmetry of a real signal's spectrum
  fft::fft_cpu_stub(fft::transform(Kind::R2C, self, result, L.dims, self.sizes(), true, fct));
  if (!onesided) fft::fill_conjugate_symmetry(result, L);
  return fft::finish(result, out);
}

Tensor fft_c2r_impl(const Tensor& self, IntArrayRef dim, int64_t normalization, int64_t last_dim_size, OutArg out) {
  Layout L = fft::plan("_fft_c2r", Kind::C2R, self, dim, last_dim_size);
  Tensor result = fft::make_output(self, L, to_real_dtype(self.dtype()));
  if (is_meta(self) || result.numel() == 0) return fft::finish(result, out);
  const double fct = fft::norm_factor(normalization, fft::signal_numel(L.out_sizes, L.dims));
  // the leading dims are transformed into a scratch copy first, so the input is never
  // written (PyTorch's MKL path clones it for the same reason)
  fft::fft_cpu_stub(fft::transform(Kind::C2R, self, result, L.dims, L.out_sizes, false, fct));
  return fft::finish(result, out);
}

namespace autograd {

// Note [FFT gradients]
// The three primitives are linear maps over the reals, so each gradient is the adjoint map
// applied to the gradient (PyTorch's convention for complex values, Note [Complex gradients
// of holomorphic formulas]). The adjoint of an unnormalised forward DFT is the unnormalised
// inverse one (c2c: the same transform with the direction flipped, same normalisation mode).
// r2c's adjoint: the real part of the inverse c2c of the gradient, padded with zeros to the
// full length when one-sided. c2r reads each interior frequency of the one-sided input twice
// (as X[k] and conj(X[k]) at n-k), so its adjoint is r2c of the gradient with those
// frequencies doubled.
Tensor fft_r2c_backward(const Tensor& grad, IntArrayRef dim, int64_t normalization, bool onesided,
                        IntArrayRef self_sizes) {
  Tensor g = grad;
  const int64_t last = wrap_dim(dim[dim.size() - 1], int64_t(self_sizes.size()));
  if (onesided && g.size(last) < self_sizes[size_t(last)]) {
    // zeros for the frequencies the one-sided result left out, padded on the real view (so
    // that it needs no complex kernel on any device): the pad list runs from the last dim
    Tensor r = view_as_real(g);
    DimVector pad(size_t(2 * (r.dim() - last)), 0);
    pad[pad.size() - 1] = self_sizes[size_t(last)] - g.size(last);
    g = view_as_complex(constant_pad_nd(r, pad, Scalar(0.0)));
  }
  return real(_fft_c2c(g, dim, normalization, false));
}

Tensor fft_c2r_backward(const Tensor& grad, IntArrayRef dim, int64_t normalization) {
  Tensor g = _fft_r2c(grad, dim, normalization, true);
  const int64_t last = wrap_dim(dim[dim.size() - 1], grad.dim());
  const int64_t m = g.size(last), doubled = grad.size(last) - m;
  if (doubled <= 0) return g;
  // weights 1, 2, ..., 2, (1 or 2) along the last dim, applied to the real view
  const int64_t wsize[1] = {m};
  Tensor w = full(IntArrayRef(wsize, 1), Scalar(2.0), to_real_dtype(g.dtype()), g.device());
  Tensor ends = narrow(w, 0, 0, 1);
  fill_(ends, Scalar(1.0));
  if (1 + doubled < m) fill_(narrow(w, 0, 1 + doubled, m - 1 - doubled), Scalar(1.0));
  DimVector shape(size_t(g.dim() + 1), 1);
  shape[size_t(last)] = m;
  Tensor r = mul(view_as_real(g), reshape(w, shape));
  return view_as_complex(r);
}

}  // namespace autograd
}  // namespace tp
