// Activation functors (nn.functional's gelu, silu, mish, softplus, elu family, leaky_relu,
// hardswish, hardsigmoid) and their gradients, each one pass over the data. Scalar bodies
// serve every dtype; float32 adds a vector body where a transcendental is involved (vec_math.h; erf, log1p
// and expm1 from libmvec).
#pragma once
#include <cmath>

#include "core/cpu_capability.h"

namespace tp::functors {
#ifdef TP_CPU_NS
inline namespace TP_CPU_NS {  // Note [CPU capability]: per-level copies are distinct symbols
#endif

inline constexpr double kSqrtHalf = 0.70710678118654752440;     // 1/sqrt(2)
inline constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1/sqrt(2*pi)
inline constexpr double kGeluKappa = 0.044715;

#ifdef TP_VEC_LANES
#define TP_VEC1(...) \
  vec_f vec(vec_f v) const { __VA_ARGS__ }
#define TP_VEC2(...) \
  vec_f vec(vec_f g, vec_f v) const { __VA_ARGS__ }
inline vec_f vec_sigmoid(vec_f v) { return vmath::sigmoid(v); }
#else
#define TP_VEC1(...)
#define TP_VEC2(...)
#endif

template <class T> TP_HD inline T sigmoid_of(T x) {
  if constexpr (kComplex<T>) return Sigmoid_complex(x);
  else return T(1) / (T(1) + std::exp(-x));
}

// gelu (erf form): x * Phi(x)
template <class T> struct Gelu : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x) const { return x * T(0.5) * (T(1) + std::erf(x * T(kSqrtHalf))); }
  TP_VEC1(return vec_mul(vec_mul(v, vec_set1(0.5f)),
                         vec_add(vec_set1(1.f), TP_MVEC(erff)(vec_mul(v, vec_set1(float(kSqrtHalf)))))););
};
template <class T> struct GeluBackward : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T g, T x) const {
    const T cdf = T(0.5) * (T(1) + std::erf(x * T(kSqrtHalf)));
    const T pdf = std::exp(T(-0.5) * x * x) * T(kInvSqrt2Pi);
    return g * (cdf + x * pdf);
  }
  TP_VEC2(const vec_f cdf = vec_mul(vec_set1(0.5f), vec_add(vec_set1(1.f),
                                     TP_MVEC(erff)(vec_mul(v, vec_set1(float(kSqrtHalf))))));
          const vec_f pdf = vec_mul(vmath::exp(vec_mul(vec_set1(-0.5f), vec_mul(v, v))),
                                    vec_set1(float(kInvSqrt2Pi)));
          return vec_mul(g, vec_add(cdf, vec_mul(v, pdf))););
};

// gelu (tanh approximation): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
template <class T> struct GeluTanh : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x) const {
    const T inner = T(kSqrt2OverPi) * (x + T(kGeluKappa) * x * x * x);
    return T(0.5) * x * (T(1) + std::tanh(inner));
  }
  TP_VEC1(const vec_f cube = vec_mul(vec_mul(v, v), v);
          const vec_f inner = vec_mul(vec_set1(float(kSqrt2OverPi)),
                                      vec_add(v, vec_mul(vec_set1(float(kGeluKappa)), cube)));
          return vec_mul(vec_mul(vec_set1(0.5f), v), vec_add(vec_set1(1.f), vmath::tanh(inner))););
};
template <class T> struct GeluTanhBackward : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T g, T x) const {
    const T x_sq = x * x;
    const T t = std::tanh(T(kSqrt2OverPi) * (x + T(kGeluKappa) * x_sq * x));
    const T left = T(0.5) * x, right = T(1) + t;
    const T d_inner = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluKappa) * x_sq);
    return g * (T(0.5) * right + left * (T(1) - t * t) * d_inner);
  }
  TP_VEC2(const vec_f x_sq = vec_mul(v, v);
          const vec_f t = vmath::tanh(vec_mul(vec_set1(float(kSqrt2OverPi)),
                                                 vec_add(v, vec_mul(vec_set1(float(kGeluKappa)),
                                                                    vec_mul(x_sq, v)))));
          const vec_f d_inner = vec_mul(vec_set1(float(kSqrt2OverPi)),
                                        vec_add(vec_set1(1.f), vec_mul(vec_set1(float(3 * kGeluKappa)), x_sq)));
          const vec_f left = vec_mul(vec_set1(0.5f), v);
          const vec_f one_minus_t2 = vec_sub(vec_set1(1.f), vec_mul(t, t));
          return vec_mul(g, vec_add(vec_mul(vec_set1(0.5f), vec_add(vec_set1(1.f), t)),
                                    vec_mul(vec_mul(left, one_minus_t2), d_inner))););
};

// silu: x * sigmoid(x)
template <class T> struct Silu : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x) const {
    if constexpr (kComplex<T>) return x / (T(1) + Exp_complex(-x));
    else return x / (T(1) + std::exp(-x));
  }
  TP_VEC1(return vec_div(v, vec_add(vec_set1(1.f), vmath::exp(vec_neg(v)))););
};
template <class T> struct SiluBackward : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T g, T x) const {
    const T s = sigmoid_of(x);
    return g * s * (T(1) + x * (T(1) - s));
  }
  TP_VEC2(const vec_f s = vec_sigmoid(v);
          return vec_mul(vec_mul(g, s), vec_add(vec_set1(1.f), vec_mul(v, vec_sub(vec_set1(1.f), s)))););
};

// softplus: log(1 + exp(beta x)) / beta, x itself where beta x > threshold
template <class T> struct Softplus : Base<T> {
  T beta, threshold;
  Softplus(const KernelParams& p)
      : Base<T>(p), beta(T(p.s0.to_double())), threshold(T(p.s1.to_double())) {}
  TP_HD T operator()(T x) const { return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta; }
  TP_VEC1(const vec_f bx = vec_mul(v, vec_set1(float(beta)));
          const vec_f soft = vec_div(TP_MVEC(log1pf)(vmath::exp(bx)), vec_set1(float(beta)));
          return vec_select_gt(bx, vec_set1(float(threshold)), v, soft););
};
template <class T> struct SoftplusBackward : Base<T> {
  T beta, threshold;
  SoftplusBackward(const KernelParams& p)
      : Base<T>(p), beta(T(p.s0.to_double())), threshold(T(p.s1.to_double())) {}
  TP_HD T operator()(T g, T x) const {
    const T z = std::exp(x * beta);
    return x * beta > threshold ? g : g * z / (z + T(1));
  }
  TP_VEC2(const vec_f bx = vec_mul(v, vec_set1(float(beta)));
          const vec_f z = vmath::exp(bx);
          return vec_select_gt(bx, vec_set1(float(threshold)), g,
                               vec_div(vec_mul(g, z), vec_add(z, vec_set1(1.f)))););
};

// mish: x * tanh(softplus(x))
template <class T> struct Mish : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x) const { return x * std::tanh(std::log1p(std::exp(x))); }
  TP_VEC1(return vec_mul(v, vmath::tanh(TP_MVEC(log1pf)(vmath::exp(v)))););
};
template <class T> struct MishBackward : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T g, T x) const {
    const T t = std::tanh(std::log1p(std::exp(x)));
    return g * (t + x * sigmoid_of(x) * (T(1) - t * t));
  }
  TP_VEC2(const vec_f t = vmath::tanh(TP_MVEC(log1pf)(vmath::exp(v)));
          const vec_f one_minus_t2 = vec_sub(vec_set1(1.f), vec_mul(t, t));
          return vec_mul(g, vec_add(t, vec_mul(vec_mul(v, vec_sigmoid(v)), one_minus_t2))););
};

// elu family: scale * (x > 0 ? x : alpha * (exp(x * input_scale) - 1)); celu and selu set
// alpha / scale / input_scale
template <class T> struct Elu : Base<T> {
  T alpha, scale, input_scale;
  Elu(const KernelParams& p)
      : Base<T>(p), alpha(T(p.s0.to_double())), scale(T(p.s1.to_double())),
        input_scale(T(p.s2.to_double())) {}
  TP_HD T operator()(T x) const {
    return x > T(0) ? x * scale : std::expm1(x * input_scale) * alpha * scale;
  }
  TP_VEC1(const vec_f neg = vec_mul(TP_MVEC(expm1f)(vec_mul(v, vec_set1(float(input_scale)))),
                                    vec_set1(float(alpha * scale)));
          return vec_select_gt(v, vec_set1(0.f), vec_mul(v, vec_set1(float(scale))), neg););
};
template <class T> struct EluBackward : Base<T> {
  T alpha, scale, input_scale;
  EluBackward(const KernelParams& p)
      : Base<T>(p), alpha(T(p.s0.to_double())), scale(T(p.s1.to_double())),
        input_scale(T(p.s2.to_double())) {}
  TP_HD T operator()(T g, T x) const {
    return x > T(0) ? g * scale : g * input_scale * alpha * scale * std::exp(x * input_scale);
  }
  TP_VEC2(const vec_f neg = vec_mul(vec_mul(g, vec_set1(float(input_scale * alpha * scale))),
                                    vmath::exp(vec_mul(v, vec_set1(float(input_scale)))));
          return vec_select_gt(v, vec_set1(0.f), vec_mul(g, vec_set1(float(scale))), neg););
};

template <class T> struct LeakyRelu : Base<T> {
  T slope;
  LeakyRelu(const KernelParams& p) : Base<T>(p), slope(T(p.s0.to_double())) {}
  TP_HD T operator()(T x) const { return x > T(0) ? x : x * slope; }
  TP_VEC1(return vec_select_gt(v, vec_set1(0.f), v, vec_mul(v, vec_set1(float(slope)))););
};
template <class T> struct LeakyReluBackward : Base<T> {
  T slope;
  LeakyReluBackward(const KernelParams& p) : Base<T>(p), slope(T(p.s0.to_double())) {}
  TP_HD T operator()(T g, T x) const { return x > T(0) ? g : g * slope; }
  TP_VEC2(return vec_select_gt(v, vec_set1(0.f), g, vec_mul(g, vec_set1(float(slope)))););
};

template <class T> struct Hardswish : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x) const {
    return x * std::min(std::max(x + T(3), T(0)), T(6)) / T(6);
  }
};
template <class T> struct HardswishBackward : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T g, T x) const {  // 0 up to -3 inclusive, g from 3 on (NaN propagates)
    return x <= T(-3) ? T(0) : x >= T(3) ? g : g * (x / T(3) + T(0.5));
  }
  TP_VEC2(const vec_f mid = vec_mul(g, vec_add(vec_div(v, vec_set1(3.f)), vec_set1(0.5f)));
          return vec_select_le(v, vec_set1(-3.f), vec_set1(0.f),
                               vec_select_le(vec_set1(3.f), v, g, mid)););
};
template <class T> struct Hardsigmoid : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T x) const { return std::min(std::max(x + T(3), T(0)), T(6)) / T(6); }
};
template <class T> struct HardsigmoidBackward : Base<T> {
  using Base<T>::Base;
  TP_HD T operator()(T g, T x) const { return x > T(-3) && x < T(3) ? g * T(1.0f / 6.0f) : T(0); }
  TP_VEC2(const vec_f inside = vec_select_gt(v, vec_set1(-3.f), vec_mul(g, vec_set1(1.0f / 6.0f)),
                                             vec_set1(0.f));
          return vec_select_gt(vec_set1(3.f), v, inside, vec_set1(0.f)););
};

#undef TP_VEC1
#undef TP_VEC2

#ifdef TP_CPU_NS
}  // namespace TP_CPU_NS
#endif
}  // namespace tp::functors
