// copy_, fill_, zero_, clone, contiguous and dtype conversion.
#include <omp.h>

#include <atomic>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/warning.h"
#include "kernels/cpu_stubs.h"
#include "ops/meta.h"
#include "ops/pointwise.h"
#include "tensorplay/ops_api.h"
#ifdef TP_USE_CUDA
#include "cuda/copy.h"
#endif

namespace tp {

namespace {

constexpr int64_t kCopyGrain = 65536;

/// Same-shape, both-contiguous copies convert in parallel chunks without an iterator.
bool try_dense_copy(const Tensor& dst, const Tensor& src) {
  if (!dst.is_contiguous() || !src.is_contiguous() || dst.numel() != src.numel() ||
      !dst.device().is_cpu() || !src.device().is_cpu() ||
      !std::equal(dst.sizes().begin(), dst.sizes().end(), src.sizes().begin(), src.sizes().end()))
    return false;
  int64_t n = dst.numel();
  int64_t ss = int64_t(src.itemsize()), ds = int64_t(dst.itemsize());
  const char* s = src.data_ptr();
  char* d = dst.data_ptr();
  if (n < kCopyGrain || get_num_threads() == 1) {
    cast_strided(s, ss, src.dtype(), d, ds, dst.dtype(), n);
    return true;
  }
  int nth = int(std::min<int64_t>(get_num_threads(), n / kCopyGrain + 1));
#pragma omp parallel num_threads(nth)
  {
    int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
    int64_t per = ((n + T - 1) / T + 63) / 64 * 64;
    int64_t b = std::min(n, t * per), e = std::min(n, b + per);
    if (b < e) cast_strided(s + b * ss, ss, src.dtype(), d + b * ds, ds, dst.dtype(), e - b);
  }
  return true;
}

/// Same-dtype copies between dense layouts whose orders are a rotation of each other after a
/// common prefix (channels last <-> row-major, a transposed matrix made contiguous) run as
/// batches of tiled transposes (Note [Transposing copies]).
bool try_transpose_copy(const Tensor& dst, const Tensor& src) {
  const int64_t nd = dst.dim(), item = int64_t(dst.itemsize());
  if (src.dtype() != dst.dtype() || !dst.device().is_cpu() || !src.device().is_cpu() || src.dim() != nd ||
      dst.numel() < 4096 || (item != 1 && item != 2 && item != 4 && item != 8) ||
      !std::equal(dst.sizes().begin(), dst.sizes().end(), src.sizes().begin(), src.sizes().end()) ||
      !dst.impl()->is_non_overlapping_and_dense() || !src.impl()->is_non_overlapping_and_dense())
    return false;
  // each layout's dims of size > 1, outermost first
  DimVector od, os;
  for (int64_t i = 0; i < nd; ++i)
    if (dst.size(i) > 1) od.push_back(i);
  os = od;
  auto by = [](const Tensor& t) { return [&t](int64_t a, int64_t b) { return t.stride(a) > t.stride(b); }; };
  std::stable_sort(od.begin(), od.end(), by(dst));
  std::stable_sort(os.begin(), os.end(), by(src));
  size_t p = 0;
  while (p < od.size() && od[p] == os[p]) ++p;
  const size_t m = od.size() - p;
  if (m < 2) return false;
  // dst's remaining order X, src's: X[k:] + X[:k]
  for (size_t k = 1; k < m; ++k) {
    bool rot = true;
    for (size_t i = 0; i < m && rot; ++i) rot = os[p + i] == od[p + (i + k) % m];
    if (!rot) continue;
    int64_t batch = 1, A = 1, B = 1;
    for (size_t i = 0; i < p; ++i) batch *= dst.size(od[i]);
    for (size_t i = 0; i < k; ++i) A *= dst.size(od[p + i]);
    for (size_t i = k; i < m; ++i) B *= dst.size(od[p + i]);
    if (A < 8 || B < 8) return false;
    cpu::transpose_copy_stub(item, src.data_ptr(), dst.data_ptr(), batch, A, B);
    return true;
  }
  return false;
}

Tensor empty_preserving(const Tensor& self, DType dtype) {
  if (self.is_contiguous()) return empty_tensor(self.sizes(), dtype, self.device());
  return empty_strided_tensor(self.sizes(), preserving_strides(self.sizes(), self.strides()), dtype,
                              self.device());
}

// PyTorch refuses scalars a dtype cannot hold (negative ints wrap for unsigned types, as
// two's complement would; inf and nan are fine for floating types).
void check_scalar_fits(const Scalar& s, DType dt) {
  static constexpr const char* names[] = {"bool", "uint8_t", "int8_t", "int16_t", "int",
                                          "int64_t", "c10::Half", "c10::BFloat16", "float", "double",
                                          "c10::complex<float>", "c10::complex<double>"};
  bool fits = true;
  // a complex value with an imaginary part fits only a complex type
  if (s.is_complex() && s.imag() != 0 && !is_complex(dt)) fits = false;
  if (is_integral(dt, false)) {
    int bits = int(element_size(dt)) * 8;
    double lo = dt == DType::UInt8 ? -255.0 : -std::ldexp(1.0, bits - 1);
    double hi = dt == DType::UInt8 ? 255.0 : std::ldexp(1.0, bits - 1) - 1;
    if (s.is_floating()) {
      double v = s.to_double();
      fits = std::isfinite(v) && v >= lo && v <= hi;
    } else if (dt != DType::Int64) {
      int64_t v = s.to_int();
      fits = double(v) >= lo && double(v) <= hi;
    }
  } else if (dt == DType::Float32 || dt == DType::Complex64) {  // float16/bfloat16 fills round to inf, as in PyTorch
    auto ok = [](double v) { return !std::isfinite(v) || std::fabs(v) <= 3.4028234663852886e38; };
    fits = fits && ok(s.to_double()) && ok(s.imag());
  }
  TP_CHECK(fits, "value cannot be converted to type ", names[int(dt)], " without overflow");
}

}  // namespace

Tensor copy_impl(const Tensor& self, const Tensor& src, bool non_blocking, OutArg) {
  if (self.is_same(src)) return self;
  if (is_complex(src.dtype()) && !is_complex(self.dtype())) {  // once a process, as PyTorch
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) warn("Casting complex values to real discards the imaginary part");
  }
  if (self.device() != src.device() && (is_meta(self) || is_meta(src))) {
    // Into meta from any device: nothing to move (PyTorch's too); out of meta: no data.
    TP_CHECK_KIND(ErrorKind::NotImplemented, is_meta(self), "Cannot copy out of meta tensor; no data!");
    (void)expand(src, self.sizes());  // src must broadcast to self
    self.impl()->bump_version();
    return self;
  }
#ifdef TP_USE_CUDA
  if (self.device().is_cuda() || src.device().is_cuda()) {
    if (self.device() == src.device()) check_partial_overlap(self, src, "copy_");
    cuda::copy_(self, src, non_blocking);
    self.impl()->bump_version();
    return self;
  }
#endif
  (void)non_blocking;
  TP_CHECK(self.device() == src.device() || (self.device().is_cpu() && src.device().is_cpu()),
           "copy_: copies between ", src.device().str(), " and ", self.device().str(),
           " arrive with the CUDA backend");
  check_partial_overlap(self, src, "copy_");
  if (src.impl()->is_wrapped_number()) {  // a Python number: its own value, not rounded to
    // the default dtype first (as the iterator's promotion of a lone number would)
    const Scalar v = src.dtype() == DType::Bool         ? Scalar(*src.data<bool>())
                     : src.dtype() == DType::Float64    ? Scalar(*src.data<double>())
                     : src.dtype() == DType::Complex128 ? Scalar(*src.data<complex128_t>())
                                                        : Scalar(*src.data<int64_t>());
    return fill_impl(self, v, OutArg{&self, true});
  }
  if (!try_dense_copy(self, src) && !try_transpose_copy(self, src)) {
    IterConfig cfg{"copy_", Promote::Common};
    cfg.result_dtype = self.dtype();
    Tensor out = self;
    run_pointwise(PwKernel::Identity, cfg, OutArg{&out, true}, {&src}, {});
    return self;
  }
  self.impl()->bump_version();
  return self;
}

Tensor fill_impl(const Tensor& self, const Scalar& value, OutArg out) {
  check_scalar_fits(value, self.dtype());
  bool bump = !out.tensor || out.bump_version;  // factories initialise without a bump
  auto positive_zero = [](double v) { return v == 0.0 && !std::signbit(v); };
  bool zero = value.is_floating() || value.is_complex()
                  ? positive_zero(value.to_double()) && positive_zero(value.imag())
                  : value.to_int() == 0;
  if (zero && self.is_contiguous() && self.device().is_cpu()) {
    std::memset(self.data_ptr(), 0, size_t(self.numel()) * self.itemsize());
    if (bump) self.impl()->bump_version();
    return self;
  }
#ifdef TP_USE_CUDA
  if (self.device().is_cuda()) {  // the element's bits, converted on the host
    if (is_complex(self.dtype())) {  // each part through the real fill of its strided view
      Tensor parts = view_as_real(self);
      Tensor re = select(parts, -1, 0), im = select(parts, -1, 1);
      fill_impl(re, Scalar(value.to_double()), OutArg{&re, true, false});
      fill_impl(im, Scalar(value.imag()), OutArg{&im, true, false});
      if (bump) self.impl()->bump_version();
      return self;
    }
    Tensor one = empty_tensor({}, self.dtype(), Device(DeviceType::CPU));
    fill_impl(one, value, OutArg{&one, true, false});
    uint64_t bits = 0;
    std::memcpy(&bits, one.data_ptr(), self.itemsize());
    cuda::fill_(self, bits);
    if (bump) self.impl()->bump_version();
    return self;
  }
#endif
  KernelParams p;
  p.s0 = value;
  IterConfig cfg{"fill_", Promote::Common};
  cfg.result_dtype = self.dtype();
  cfg.check_internal_overlap = false;
  Tensor dst = self;
  return run_pointwise(PwKernel::Fill, cfg, OutArg{&dst, true, bump}, {}, p);
}

Tensor zero_impl(const Tensor& self, OutArg) { return fill_impl(self, Scalar(int64_t(0)), {}); }

Tensor clone_impl(const Tensor& self, OutArg) {
  Tensor out = empty_preserving(self, self.dtype());
  copy_impl(out, self, false, {});
  return out;
}

Tensor contiguous_impl(const Tensor& self, OutArg) {
  if (self.is_contiguous()) return self;
  // a conjugate / negated view's copy holds its values (contiguous and reshape read the bits
  // themselves: Note [Conjugate and negative bits])
  if (self.impl()->math_bits()) [[unlikely]] return contiguous_impl(resolve_neg(resolve_conj(self)), {});
  Tensor out = empty_tensor(self.sizes(), self.dtype(), self.device());
  copy_impl(out, self, false, {});
  return out;
}

Tensor to_dtype_impl(const Tensor& self, DType dtype, bool copy, OutArg) {
  if (dtype == self.dtype() && !copy) return self;
  Tensor out = empty_preserving(self, dtype);
  copy_impl(out, self, false, {});
  return out;
}

}  // namespace tp
