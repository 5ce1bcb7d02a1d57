// Complex tensors: the views between complex and real (view_as_real / view_as_complex,
// real, imag), building complex tensors (complex, polar), and the ops whose complex form
// differs from the real one (abs, angle, sgn). The element-wise math itself runs through
// the pointwise functors (Note [Complex functors]); the parts are strided real views, so
// most complex ops here are real ops on those views.
#include <cmath>

#include "autograd/formula_helpers.h"
#include "autograd/formulas_complex.h"
#include "kernels/tensor_iterator.h"
#include "ops/complex/complex.h"
#include "ops/pointwise.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"

namespace tp {

using autograd::zeros_like_scalar;

namespace {

DimVector sizes_of(const Tensor& t) { return DimVector(t.sizes().data(), t.sizes().size()); }
DimVector strides_of(const Tensor& t) { return DimVector(t.strides().data(), t.strides().size()); }

/// The real (part 0) or imaginary (part 1) part of z as a real view of its storage.
Tensor part_view(const Tensor& z, int64_t part) {
  DimVector strides = strides_of(z);
  for (auto& s : strides) s *= 2;
  return make_view(z, sizes_of(z), std::move(strides), z.storage_offset() * 2 + part, to_real_dtype(z.dtype()));
}

// The parts of z with its bits (Note [Conjugate and negative bits]): conjugation negates
// the imaginary part only.
Tensor real_part(const Tensor& z) {
  Tensor r = part_view(z, 0);
  r.impl()->set_math_bits(z.impl()->math_bits() & TensorImpl::kNegBit);
  return r;
}
Tensor imag_part(const Tensor& z) {
  Tensor r = part_view(z, 1);
  r.impl()->set_math_bits(z.impl()->is_neg() != z.impl()->is_conj() ? TensorImpl::kNegBit : 0);
  return r;
}

/// Writes `value` (any dtype) into the out= tensor `out`, resized to value's shape.
Tensor write_out(const Tensor& value, OutArg out) {
  if (!out.tensor) return value;
  resize_out(*out.tensor, value.sizes());
  copy_(*out.tensor, value);
  return *out.tensor;
}

}  // namespace

Tensor view_as_real_impl(const Tensor& self, OutArg) {
  TP_CHECK(is_complex(self.dtype()), "view_as_real is only supported for complex tensors");
  TP_CHECK(!self.impl()->is_conj(), "view_as_real doesn't work on unresolved conjugated tensors.  To resolve "
           "the conjugate tensor so you can view it as real, use self.resolve_conj(); however, be warned "
           "that the resulting tensor will NOT alias the original.");
  DimVector sizes = sizes_of(self), strides = strides_of(self);
  for (auto& s : strides) s *= 2;
  sizes.push_back(2);
  strides.push_back(1);
  Tensor r = make_view(self, std::move(sizes), std::move(strides), self.storage_offset() * 2,
                       to_real_dtype(self.dtype()));
  r.impl()->set_math_bits(self.impl()->math_bits());  // a negated view stays negated
  return r;
}

Tensor view_as_complex_impl(const Tensor& self, OutArg) {
  DType dt = self.dtype();
  TP_CHECK(dt == DType::Float32 || dt == DType::Float64,
           dt == DType::Float16 ? "view_as_complex: complex32 (a complex of half) is not supported"
                                : "view_as_complex is only supported for half, float and double tensors, "
                                  "but got a tensor of scalar type: ",
           dt == DType::Float16 ? "" : dtype_scalar_name(dt));
  const int64_t n = self.dim();
  TP_CHECK(n > 0 && self.size(n - 1) == 2, "Tensor must have a last dimension of size 2");
  TP_CHECK(self.stride(n - 1) == 1, "Tensor must have a last dimension with stride 1");
  for (int64_t i = 0; i < n - 1; ++i)
    TP_CHECK(self.stride(i) % 2 == 0, "Tensor must have a stride divisible by 2 for all but last dimension");
  TP_CHECK(self.storage_offset() % 2 == 0, "Tensor must have a storage_offset divisible by 2");
  DimVector sizes = sizes_of(self), strides = strides_of(self);
  sizes.resize(size_t(n - 1));
  strides.resize(size_t(n - 1));
  for (auto& s : strides) s /= 2;
  Tensor r = make_view(self, std::move(sizes), std::move(strides), self.storage_offset() / 2,
                       to_complex_dtype(dt));
  r.impl()->set_math_bits(self.impl()->math_bits());
  return r;
}

Tensor real_impl(const Tensor& self, OutArg) {
  if (!is_complex(self.dtype())) return make_view(self, sizes_of(self), strides_of(self), self.storage_offset());
  return real_part(self);
}

Tensor imag_impl(const Tensor& self, OutArg) {
  TP_CHECK(is_complex(self.dtype()), "imag is not implemented for tensors with non-complex dtypes.");
  return imag_part(self);
}

Tensor complex_impl(const Tensor& re, const Tensor& im, OutArg out) {
  auto ok = [](DType d) { return d == DType::Float32 || d == DType::Float64 || d == DType::Float16; };
  TP_CHECK(ok(re.dtype()) && ok(im.dtype()), "Expected both inputs to be Half, Float or Double tensors but got ",
           dtype_scalar_name(re.dtype()), " and ", dtype_scalar_name(im.dtype()));
  TP_CHECK(re.dtype() == im.dtype(), "Expected object of scalar type ", dtype_scalar_name(re.dtype()),
           " but got scalar type ", dtype_scalar_name(im.dtype()), " for second argument");
  TP_CHECK_KIND(ErrorKind::NotImplemented, re.dtype() != DType::Float16,
                "complex: complex32 (a complex of half) is not supported");
  DimVector shape = broadcast_shapes_of(re, im, "complex");
  Tensor z = empty_tensor(shape, to_complex_dtype(re.dtype()), re.device());
  copy_(real_part(z), re);
  copy_(imag_part(z), im);
  return write_out(z, out);
}

Tensor polar_impl(const Tensor& abs, const Tensor& angle, OutArg out) {
  TP_CHECK(abs.dtype() == angle.dtype(), "Expected object of scalar type ", dtype_scalar_name(abs.dtype()),
           " but got scalar type ", dtype_scalar_name(angle.dtype()), " for second argument");
  TP_CHECK(abs.dtype() == DType::Float32 || abs.dtype() == DType::Float64,
           "Expected both inputs to be Float or Double tensors but got ", dtype_scalar_name(abs.dtype()),
           " and ", dtype_scalar_name(angle.dtype()));
  return write_out(complex(mul(abs, cos(angle)), mul(abs, sin(angle))), out);
}

Tensor abs_impl(const Tensor& self, OutArg out) {
  if (!is_complex(self.dtype())) {
    KernelParams p;
    return run_pointwise(PwKernel::Abs, IterConfig{"abs", Promote::Same}, out, {&self}, p);
  }
  TP_CHECK(!out.inplace, "In-place abs is not supported for complex tensors.");
  Tensor re = real_part(self), im = imag_part(self);
  KernelParams p;
  return run_pointwise(PwKernel::Hypot, IterConfig{"abs", Promote::Common}, out, {&re, &im}, p);
}

Tensor angle_impl(const Tensor& self, OutArg out) {
  if (is_complex(self.dtype())) {
    Tensor re = real_part(self), im = imag_part(self);
    KernelParams p;
    return run_pointwise(PwKernel::Atan2, IterConfig{"angle", Promote::Common}, out, {&im, &re}, p);
  }
  // A real x: pi where x < 0, NaN where x is NaN, else 0 (integers give the default dtype).
  DType dt = is_floating(self.dtype()) ? self.dtype() : default_dtype();
  Tensor x = self.dtype() == dt ? self : _to_dtype(self, dt, false);
  Tensor pi = full(IntArrayRef(), Scalar(M_PI), dt, x.device());
  Tensor zero = zeros(IntArrayRef(), dt, x.device());
  Tensor r = where(isnan(x), x, where(lt(x, wrapped_scalar(Scalar(0.0))), pi, zero));
  return write_out(r, out);
}

Tensor sgn_impl(const Tensor& self, OutArg out) {
  if (!is_complex(self.dtype())) {
    KernelParams p;
    return run_pointwise(PwKernel::Sign, IterConfig{"sgn", Promote::Same}, out, {&self}, p);
  }
  // z / |z|, and 0 for z = 0
  Tensor a = abs(self);
  Tensor zero = zeros_like_scalar(self);
  Tensor r = where(eq(a, wrapped_scalar(Scalar(0.0))), zero, div(self, a));
  if (out.inplace) {
    copy_(*out.tensor, r);
    return *out.tensor;
  }
  return write_out(r, out);
}

Tensor complex_sum(const Tensor& self, OptionalIntArrayRef dim, bool keepdim, bool mean, OutArg out) {
  const int64_t n = self.dim();
  Tensor r;
  if (n == 0) {
    r = clone(self);
  } else {
    DimVector dims;
    if (dim && !dim->empty()) {
      for (int64_t d : *dim) dims.push_back(wrap_dim(d, n));
    } else {
      for (int64_t d = 0; d < n; ++d) dims.push_back(d);
    }
    Tensor parts = view_as_real(self);
    IntArrayRef ds(dims.data(), dims.size());
    const int64_t numel = self.numel();
    if (int64_t(dims.size()) == n && self.is_contiguous() && numel >= 1024 && (2 * numel) % 64 == 0) {
      // Note [Complex sums by lanes]: a whole contiguous tensor reduced as (R, 2) sums a
      // 2-wide inner dim, which the reduction kernel runs element by element (6 ms for 1M
      // complex64 against 0.5 ms for 2M floats); as (R/32, 64) it runs 64-wide, and the 32
      // (real, imaginary) partial sums then add up. Same pairwise accuracy.
      int64_t lanes[2] = {-1, 64}, pairs[2] = {32, 2}, zero[1] = {0};
      Tensor part = sum(reshape(parts, IntArrayRef(lanes, 2)), IntArrayRef(zero, 1), false);
      Tensor total = sum(reshape(part, IntArrayRef(pairs, 2)), IntArrayRef(zero, 1), false);
      if (mean) total = div(total, wrapped_scalar(Scalar(double(numel))));
      r = view_as_complex(total);
      if (keepdim) {
        DimVector ones(size_t(n), 1);
        r = reshape(r, IntArrayRef(ones.data(), ones.size()));
      }
    } else {
      Tensor red = mean ? tp::mean(parts, ds, keepdim) : sum(parts, ds, keepdim);
      r = view_as_complex(contiguous(red));
    }
  }
  return write_out(r, out);
}

// ---------------------------------------------------------------- backward formulas

namespace autograd {

bool conjugate_complex(std::vector<Tensor>& v) {
  bool any = false;
  for (Tensor& t : v)
    if (t.defined() && is_complex(t.dtype())) {
      t = conj_physical(t);
      any = true;
    }
  return any;
}

Tensor view_as_real_backward(const Tensor& grad) { return view_as_complex(contiguous(grad)); }

Tensor real_backward(const Tensor& grad, DType self_dtype) {
  return is_complex(self_dtype) ? _to_dtype(grad, self_dtype, false) : grad;
}

Tensor imag_backward(const Tensor& grad, DType self_dtype) {
  // d/d Im: the gradient lands on the imaginary part
  return complex(zeros_like_scalar(grad), grad.dtype() == to_real_dtype(self_dtype) ? grad : _to_dtype(grad, to_real_dtype(self_dtype), false));
}

Tensor real_part_of(const Tensor& grad) { return real(grad); }

Tensor imag_or_zero(const Tensor& grad) {
  return is_complex(grad.dtype()) ? imag(grad) : zeros_like_scalar(grad);
}

Tensor angle_backward(const Tensor& grad, const Tensor& self) {
  if (!is_complex(self.dtype())) return zeros_like_grad(grad);  // piecewise constant on the reals
  // d angle = (-y dx + x dy) / |z|^2, so the gradient is grad * i z / |z|^2 (0 at z = 0)
  Tensor a2 = mul(self, conj_physical(self));  // |z|^2 as a complex
  Tensor g = div(mul(mul(_to_dtype(grad, self.dtype(), false), self), wrapped_scalar(Scalar(complex128_t(0, 1)))), a2);
  return where(eq(self, wrapped_scalar(Scalar(0.0))), zeros_like_scalar(self), g);
}

Tensor sgn_backward(const Tensor& grad, const Tensor& self, const Tensor& result) {
  if (!is_complex(self.dtype())) return zeros_like_grad(grad);
  // s = z / |z|: ds/dz = 1 / (2|z|), ds/dconj(z) = -s^2 / (2|z|), so the gradient is
  // (g - conj(g) s^2) / (2|z|), 0 at z = 0
  Tensor a = abs(self);
  Tensor g = div(sub(grad, mul(conj_physical(grad), mul(result, result)), Scalar(1)), mul(a, wrapped_scalar(Scalar(2.0))));
  return where(eq(a, wrapped_scalar(Scalar(0.0))), zeros_like_scalar(self), g);
}

Tensor polar_abs_backward(const Tensor& grad, const Tensor& result) {
  // z = r e^{i t}: dL/dr = Re(conj(g) e^{i t}), with e^{i t} read as sgn(z), as PyTorch
  // does: a negative r flips it, and r = 0 gives 0
  return real(mul(conj_physical(grad), sgn(result)));
}

Tensor polar_angle_backward(const Tensor& grad, const Tensor& result) {
  // dz/dt = i z: dL/dt = Re(conj(g) i z) = Im(g) Re(z) - Re(g) Im(z)
  return sub(mul(imag(grad), real(result)), mul(real(grad), imag(result)), Scalar(1));
}

}  // namespace autograd
}  // namespace tp
