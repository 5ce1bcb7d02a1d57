// run_pointwise and the pointwise ops whose kernel choice depends on their arguments
// (div's rounding mode, pow's special exponents, clamp's optional bounds, ...).
#include "ops/pointwise.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/warning.h"
#include "kernels/cpu_stubs.h"
#include "tensorplay/ops_api.h"
#ifdef TP_USE_CUDA
#include "cuda/pointwise.h"
#endif

namespace tp {

PwLoopTable& pointwise_loops(DeviceType device) {
  static PwLoopTable tables[kNumDeviceTypes] = {};
  static bool cpu_ready = [] {  // the chosen capability level's loops
    for (const auto& shard : cpu::pointwise_shard_stubs) shard(tables[0]);
    return true;
  }();
  (void)cpu_ready;
  return tables[int(device)];
}

Tensor run_pointwise(PwKernel kernel, const IterConfig& cfg, OutArg out,
                     std::initializer_list<const Tensor*> inputs, const KernelParams& p) {
  TensorIterator it(cfg, out, inputs);
#ifdef TP_USE_CUDA
  if (it.device().is_cuda()) {
    DeviceLaunch launch = cuda::pointwise_launches()[int(kernel)][int(it.compute_dtype())];
    if (!launch)
      TP_FAIL_NOT_IMPLEMENTED("\"", cfg.op, "_cuda\" not implemented for '",
                              dtype_scalar_name(it.common_dtype()), "'");
    it.for_each_device(launch, p);
    if (out.tensor && out.bump_version) out.tensor->impl()->bump_version();
    return it.output();
  }
#endif
  if (it.device().type != DeviceType::Meta) {
    // The dtype check runs on empty inputs too: PyTorch dispatches on the dtype before it
    // looks at the size (tp.floor of an empty bool tensor raises like a full one).
    Loop1d loop = pointwise_loops(it.device().type)[int(kernel)][int(it.compute_dtype())];
    if (!loop) {
      if (it.device().is_cpu())
        TP_FAIL_NOT_IMPLEMENTED("\"", cfg.op, "_cpu\" not implemented for '",
                                dtype_scalar_name(it.common_dtype()), "'");
      TP_FAIL_NOT_IMPLEMENTED(cfg.op, ": no ", device_type_name(it.device().type),
                              " kernel for dtype ", dtype_name(it.common_dtype()));
    }
    if (it.numel() > 0) it.for_each(loop, p);
    if (p.error.load(std::memory_order_relaxed) == kZeroDivision) TP_FAIL("ZeroDivisionError");
  }
  if (out.tensor && out.bump_version) out.tensor->impl()->bump_version();
  return it.output();
}

Tensor wrapped_scalar(const Scalar& s) {
  Tensor t = empty_tensor({}, s.dtype());
  switch (s.tag()) {
    case Scalar::Tag::Bool: *t.data<bool>() = s.to_bool(); break;
    case Scalar::Tag::Int: *t.data<int64_t>() = s.to_int(); break;
    case Scalar::Tag::Double: *t.data<double>() = s.to_double(); break;
    case Scalar::Tag::Complex: *t.data<complex128_t>() = s.to_complex(); break;
  }
  t.impl()->set_wrapped_number(true);
  return t;
}

// ---------------------------------------------------------------- argument checks

void check_alpha(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  DType dt = result_type({&self, &other});
  TP_CHECK(!alpha.is_bool() || dt == DType::Bool,
           "Boolean alpha only supported for Boolean results.");
  TP_CHECK(is_floating(dt) || !alpha.is_floating(),
           "For integral input tensors, argument alpha must not be a floating point number.");
}

void check_sub(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  TP_CHECK(!(self.dtype() == DType::Bool && other.dtype() == DType::Bool),
           "sub: Subtraction, the `-` operator, with two bool tensors is not supported. "
           "Use the `^` or `logical_xor()` operator instead.");
  TP_CHECK(!(self.dtype() == DType::Bool || other.dtype() == DType::Bool),
           "sub: Subtraction, the `-` operator, with a bool tensor is not supported. "
           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  check_alpha(self, other, alpha);
}

void check_neg(const Tensor& self) {
  TP_CHECK(self.dtype() != DType::Bool,
           "neg: Negation, the `-` operator, on a bool tensor is not supported. "
           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
}

void check_addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar&) {
  TP_CHECK(!(is_integral(t1.dtype(), true) && is_integral(t2.dtype(), true)),
           "Integer division with addcdiv is no longer supported, and in a future release "
           "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
           "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to"
           "(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
           "float inputs. The future addcdiv behavior is just the latter implementation: "
           "(input + value * tensor1 / tensor2), for all dtypes.");
  (void)self;
}

// ---------------------------------------------------------------- hand-written kernels

Tensor div_impl(const Tensor& self, const Tensor& other,
                const std::optional<std::string>& rounding_mode, OutArg out) {
  KernelParams p;
  if (!rounding_mode)
    return run_pointwise(PwKernel::Div, {"div", Promote::IntToFloat}, out, {&self, &other}, p);
  PwKernel k;
  if (*rounding_mode == "trunc") k = PwKernel::DivTrunc;
  else if (*rounding_mode == "floor") k = PwKernel::DivFloor;
  else
    TP_FAIL("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '",
            *rounding_mode, "'");
  return run_pointwise(k, {"div", Promote::Common}, out, {&self, &other}, p);
}

Tensor pow_impl(const Tensor& self, const Tensor& exponent, OutArg out) {
  if (exponent.impl()->is_wrapped_number() && is_integral(self.dtype(), true) &&
      !is_floating(exponent.dtype())) {
    int64_t e;
    cast_strided(exponent.data_ptr(), 0, exponent.dtype(), reinterpret_cast<char*>(&e), 0,
                 DType::Int64, 1);
    TP_CHECK(e >= 0, "pow: Integers to negative integer powers are not allowed.");
  }
  // bool ** bool only exists with a Python-number exponent (the Tensor-Scalar overload).
  if (self.dtype() == DType::Bool && exponent.dtype() == DType::Bool &&
      !exponent.impl()->is_wrapped_number())
    TP_FAIL_NOT_IMPLEMENTED("\"pow\" not implemented for 'Bool'");
  // Note [pow by a number]: PyTorch computes a floating tensor to the power 2, 0.5, -0.5 or -1
  // as x * x, sqrt, 1 / sqrt and 1 / x (float16: only 2 and -1), so its special values follow:
  // (-0) ** 0.5 is -0, (-inf) ** 0.5 NaN; so does this, also ~80x faster than powf for x ** 2.
  if (exponent.impl()->is_wrapped_number() && is_floating(self.dtype()) &&
      exponent.dtype() != DType::Bool && !is_complex(exponent.dtype())) {
    double e;
    cast_strided(exponent.data_ptr(), 0, exponent.dtype(), reinterpret_cast<char*>(&e), 0,
                 DType::Float64, 1);
    const bool roots = self.dtype() != DType::Float16;  // PyTorch's float16 pow keeps powf there
    PwKernel k = e == 2 ? PwKernel::Square : e == -1 ? PwKernel::Reciprocal
               : roots && e == 0.5 ? PwKernel::Sqrt : roots && e == -0.5 ? PwKernel::Rsqrt : PwKernel::Pow;
    if (k != PwKernel::Pow) return run_pointwise(k, {"pow", Promote::Common}, out, {&self}, {});
  }
  // A complex base to a real Python number (or a complex one with no imaginary part) follows
  // PyTorch's specialisations too: 0 gives ones, 1 a copy, 2 z * z, 0.5 / -0.5 / -1 sqrt,
  // rsqrt and reciprocal; cpow's exp(e log z) would differ at 0 and at the special values.
  if (exponent.impl()->is_wrapped_number() && is_complex(self.dtype()) && exponent.dtype() != DType::Bool) {
    complex128_t e;
    cast_strided(exponent.data_ptr(), 0, exponent.dtype(), reinterpret_cast<char*>(&e), 0,
                 DType::Complex128, 1);
    if (e.im == 0) {
      if (e.re == 0 || e.re == 1) {  // the result's shape, dtype and out= from z * 1
        Tensor one = wrapped_scalar(Scalar(int64_t(1)));
        Tensor r = run_pointwise(PwKernel::Mul, {"pow", Promote::Common}, out, {&self, &one}, {});
        if (e.re == 0) fill_impl(r, Scalar(int64_t(1)), OutArg{&r, true, false});
        return r;
      }
      PwKernel k = e.re == 2 ? PwKernel::Square : e.re == -1 ? PwKernel::Reciprocal
                 : e.re == 0.5 ? PwKernel::Sqrt : e.re == -0.5 ? PwKernel::Rsqrt : PwKernel::Pow;
      if (k != PwKernel::Pow) return run_pointwise(k, {"pow", Promote::Common}, out, {&self}, {});
    }
  }
  return run_pointwise(PwKernel::Pow, {"pow", Promote::Common}, out, {&self, &exponent}, {});
}

Tensor pow_scalar_impl(const Scalar& self, const Tensor& exponent, OutArg out) {
  Tensor base = wrapped_scalar(self);
  return run_pointwise(PwKernel::Pow, {"pow", Promote::Common}, out, {&base, &exponent}, {});
}

Tensor square_impl(const Tensor& self, OutArg out) {
  if (self.dtype() == DType::Bool) {
    Tensor two = wrapped_scalar(Scalar(int64_t(2)));
    return pow_impl(self, two, out);
  }
  return run_pointwise(PwKernel::Square, {"square", Promote::Common}, out, {&self}, {});
}

Tensor lerp_impl(const Tensor& self, const Tensor& end, const Tensor& weight, OutArg out) {
  TP_CHECK(self.dtype() == end.dtype(), "lerp: expected dtype ", dtype_name(self.dtype()),
           " for `end` but got dtype ", dtype_name(end.dtype()));
  KernelParams p;
  if (weight.impl()->is_wrapped_number()) {
    p.s0 = Scalar(*weight.data<double>());
    if (weight.dtype() == DType::Complex128) {
      p.s0 = Scalar(*weight.data<complex128_t>());
    } else if (weight.dtype() != DType::Float64) {
      double w;
      cast_strided(weight.data_ptr(), 0, weight.dtype(), reinterpret_cast<char*>(&w), 0,
                   DType::Float64, 1);
      p.s0 = Scalar(w);
    }
    return run_pointwise(PwKernel::LerpScalar, {"lerp", Promote::Common}, out, {&self, &end}, p);
  }
  TP_CHECK(self.dtype() == weight.dtype(), "lerp: expected dtype ", dtype_name(self.dtype()),
           " for `weight` but got dtype ", dtype_name(weight.dtype()));
  return run_pointwise(PwKernel::Lerp, {"lerp", Promote::Common}, out, {&self, &end, &weight}, p);
}

Tensor logit_impl(const Tensor& self, const std::optional<double>& eps, OutArg out) {
  if (self.dtype() == DType::Float16 || self.dtype() == DType::BFloat16) {
    // PyTorch's CPU logit rounds each step to the half type: log(z / (1 - z)).
    Tensor z = eps ? clamp(self, wrapped_scalar(Scalar(*eps)), wrapped_scalar(Scalar(1.0 - *eps)))
                   : self;
    Tensor r = log(div(z, sub(wrapped_scalar(Scalar(int64_t(1))), z)));
    if (!out.tensor) return r;
    // out= as PyTorch's TensorIterator takes it: castable to, resized (in r's layout) unless
    // it is self
    const Tensor& o = *out.tensor;
    TP_CHECK(can_cast(r.dtype(), o.dtype()), "result type ", dtype_scalar_name(r.dtype()),
             " can't be cast to the desired output type ", dtype_scalar_name(o.dtype()));
    if (!std::equal(o.sizes().begin(), o.sizes().end(), r.sizes().begin(), r.sizes().end())) {
      TP_CHECK(o.impl() != self.impl(), "output with shape ", shape_str(o.sizes()),
               " doesn't match the broadcast shape ", shape_str(r.sizes()));
      resize_out(o, r.sizes());
      o.impl()->set_sizes_and_strides(DimVector(r.sizes().data(), r.sizes().size()),
                                      DimVector(r.strides().data(), r.strides().size()), o.impl()->storage_offset());
    }
    return copy_impl(o, r, false, OutArg::none());
  }
  KernelParams p;
  p.s0 = Scalar(eps ? *eps : -1.0);
  return run_pointwise(PwKernel::Logit, {"logit", Promote::IntToFloat}, out, {&self}, p);
}

Tensor round_impl(const Tensor& self, int64_t decimals, OutArg out) {
  if (decimals == 0)
    return run_pointwise(PwKernel::Round, {"round", Promote::Same}, out, {&self}, {});
  if (is_integral(self.dtype(), true))
    TP_FAIL_NOT_IMPLEMENTED("\"round_cpu\" not implemented for '", dtype_scalar_name(self.dtype()), "'");
  KernelParams p;
  p.i0 = decimals;
  return run_pointwise(PwKernel::RoundDecimals, {"round", Promote::Same}, out, {&self}, p);
}

Tensor nan_to_num_impl(const Tensor& self, const std::optional<double>& nan,
                       const std::optional<double>& posinf, const std::optional<double>& neginf,
                       OutArg out) {
  if (out.tensor && !out.inplace)
    TP_CHECK(out.tensor->dtype() == self.dtype(), "nan_to_num: dtype of out: ",
             dtype_scalar_name(out.tensor->dtype()), " should be same as input: ",
             dtype_scalar_name(self.dtype()));
  // Note [nan_to_num of integers]: PyTorch copies an integer or bool input as it is: in place
  // that is no write at all (an expanded self passes), and an out= is resized as resize_output
  // does (contiguous) before the copy.
  if (is_integral(self.dtype(), true)) {
    if (out.tensor && out.inplace) return self;
    if (out.tensor) {
      resize_out(*out.tensor, self.sizes());
      copy_(*out.tensor, self);
      return *out.tensor;
    }
    return clone(self);
  }
  KernelParams p;
  DType dt = self.dtype();
  double hi = dt == DType::Float16 ? 65504.0
              : dt == DType::BFloat16 ? double(bits_to_float(0x7f7f0000u))
              : dt == DType::Float32 || dt == DType::Complex64 ? double(std::numeric_limits<float>::max())
                                     : std::numeric_limits<double>::max();
  p.s0 = Scalar(nan.value_or(0.0));
  p.s1 = Scalar(posinf.value_or(hi));
  p.s2 = Scalar(neginf.value_or(-hi));
  return run_pointwise(PwKernel::NanToNum, {"nan_to_num", Promote::Common}, out, {&self}, p);
}

Tensor clamp_impl(const Tensor& self, const std::optional<Tensor>& min,
                  const std::optional<Tensor>& max, OutArg out) {
  TP_CHECK(min || max, "torch.clamp: At least one of 'min' or 'max' must not be None");
  bool scalar_lo = !min || min->impl()->is_wrapped_number();
  bool scalar_hi = !max || max->impl()->is_wrapped_number();
  if (scalar_lo && scalar_hi) {
    KernelParams p;
    auto read = [](const Tensor& t) {
      return t.dtype() == DType::Float64 ? Scalar(*t.data<double>())
             : t.dtype() == DType::Bool  ? Scalar(*t.data<bool>())
                                         : Scalar(*t.data<int64_t>());
    };
    if (min) p.s0 = read(*min);
    if (max) p.s1 = read(*max);
    p.i0 = (min ? 1 : 0) | (max ? 2 : 0);
    const Tensor* lo = min ? &*min : nullptr;
    const Tensor* hi = max ? &*max : nullptr;
    // Promotion still sees the bounds (an int tensor clamped by a float becomes float).
    DType dt = lo && hi ? result_type({&self, lo, hi}) : lo ? result_type({&self, lo})
                                                            : result_type({&self, hi});
    // In place, the promoted dtype must be self's; an out= must have it (PyTorch's unary_op)
    TP_CHECK(!out.inplace || dt == self.dtype(), "result type ", dtype_scalar_name(dt),
             " can't be cast to the desired output type ", dtype_scalar_name(self.dtype()));
    IterConfig cfg{"clamp", Promote::Same};
    // The kernel runs in the promoted dtype (an int tensor clamped by 1.5 computes in float).
    Tensor input = dt == self.dtype() ? self : to_dtype_impl(self, dt, false, OutArg::none());
    return run_pointwise(PwKernel::ClampScalar, cfg, out, {&input}, p);
  }
  if (min && max)
    return run_pointwise(PwKernel::ClampTensor, {"clamp", Promote::Common}, out,
                         {&self, &*min, &*max}, {});
  if (min) return run_pointwise(PwKernel::Maximum, {"clamp", Promote::Common}, out, {&self, &*min}, {});
  return run_pointwise(PwKernel::Minimum, {"clamp", Promote::Common}, out, {&self, &*max}, {});
}

Tensor where_impl(const Tensor& cond, const Tensor& self, const Tensor& other, OutArg out) {
  // PyTorch still takes a uint8 condition (nonzero is true), warning once a process
  Tensor condition = cond;
  if (cond.dtype() == DType::UInt8) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      warn("where received a uint8 condition tensor. This behavior is deprecated and will be removed in a "
           "future version of PyTorch. Use a boolean condition instead.");
    condition = ne(cond, wrapped_scalar(Scalar(int64_t(0))));
  }
  TP_CHECK(condition.dtype() == DType::Bool,
           "where expected condition to be a boolean tensor, but got a tensor with dtype ",
           dtype_scalar_name(condition.dtype()));
  if (out.tensor && !out.inplace) {  // PyTorch: out= has exactly the result type
    DType rt = result_type({&self, &other});
    TP_CHECK(out.tensor->dtype() == rt, "Expected out type to be ", dtype_scalar_name(rt), " but got ",
             dtype_scalar_name(out.tensor->dtype()));
  }
  IterConfig cfg{"where", Promote::Common};
  cfg.first_input_fixed = true;
  return run_pointwise(PwKernel::Where, cfg, out, {&condition, &self, &other}, {});
}

}  // namespace tp
