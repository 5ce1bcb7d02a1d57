// The samplers tp.distributions builds on: _standard_gamma, _sample_dirichlet, binomial.
// Each draws from the CPU generator exactly as PyTorch's CPU kernel does, so a seed gives
// PyTorch's samples bit for bit (docs/random.md lists the draws). The arithmetic keeps
// PyTorch's types step by step (float32 parameters are combined in float where its kernels
// combine them in float), and this file is compiled without FMA contraction (CMakeLists.txt),
// as PyTorch's kernels are.
#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>

#include "core/error.h"
#include "ops/meta.h"
#include "ops/pointwise.h"
#include "random/cpu_generator.h"
#include "random/distributions.h"
#include "tensorplay/ops_api.h"

namespace tp {

namespace {

using random::CPUGenerator;

/// uniform_real_distribution<double>(0, 1): one 53-bit draw.
double uniform(CPUGenerator& g) { return random::uniform53(g.random64()); }
/// normal_distribution<double>(0, 1): the scalar Box-Muller draw with its cached value.
double standard_normal(CPUGenerator& g) { return random::normal_draw(g, 0.0, 1.0, false); }

/// One Gamma(alpha, 1) sample: Marsaglia and Tsang's acceptance-rejection, alpha < 1
/// boosted to alpha + 1 with a U^(1/alpha) factor. Draws: [one uniform if alpha < 1], then
/// per attempt normals until 1 + c x > 0, and one uniform.
template <class T>
double sample_gamma(T alpha, CPUGenerator& g) {
  double scale = 1.0;
  if (alpha < T(1)) {
    if (alpha == T(0)) return 0.0;
    const T inv = T(1) / alpha;  // in the parameter's type
    scale *= std::pow(1 - uniform(g), double(inv));
    alpha += T(1);
  }
  // d = alpha - 1/3 in the parameter's type, with 1/3 rounded to float
  const double d = double(T(alpha - T(1.0f / 3.0f)));
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, y;
    do {
      x = standard_normal(g);
      y = 1.0 + c * x;
    } while (y <= 0);
    const double v = y * y * y;
    const double u = 1 - uniform(g);
    const double xx = x * x;
    if (u < 1.0 - double(0.0331f) * xx * xx) return scale * d * v;
    if (std::log(u) < 0.5 * xx + d * (1.0 - v + std::log(v))) return scale * d * v;
  }
}

/// log(k!) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2], the remainder of Stirling's
/// formula BTRS uses: a table to 15 decimals for k <= 9, its series above.
double stirling_tail(double k) {
  static const double table[10] = {0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                                   0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                                   0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                                   0.00833056343336287};
  if (k <= 9) return table[size_t(k)];
  const double kp1sq = (k + 1) * (k + 1);
  return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1);
}

/// Binomial by inversion (count * prob < 10): geometric waiting times (one uniform each)
/// summed until they pass count.
template <class T>
T binomial_inversion(T count, T prob, CPUGenerator& g) {
  double geom_sum = 0;
  T successes = 0;
  const double logq = std::log1p(T(-prob));  // in the parameter's type
  for (;;) {
    const double u = uniform(g);
    geom_sum += std::ceil(std::log(u) / logq);
    if (geom_sum > count) return successes;
    successes = successes + 1;
  }
}

/// Hormann's BTRS transformed rejection (count * prob >= 10, prob <= 1/2): two uniforms per
/// attempt.
template <class T>
T binomial_btrs(T count, T prob, CPUGenerator& g) {
  const double spq = std::sqrt(T(count * prob * (1 - prob)));
  const double b = 1.15 + 2.53 * spq;
  const double a = -0.0873 + 0.0248 * b + 0.01 * prob;
  const double c = count * prob + 0.5;
  const double v_r = 0.92 - 4.2 / b;
  const double r = prob / (1 - prob);
  const double alpha = (2.83 + 5.1 / b) * spq;
  const double m = std::floor(T((count + 1) * prob));
  for (;;) {
    const double u = uniform(g) - 0.5;
    double v = uniform(g);
    const double us = 0.5 - std::fabs(u);
    const T k = T(std::floor((2 * a / us + b) * u + c));
    if (k < 0 || k > count) continue;
    if (us >= 0.07 && v <= v_r) return k;
    v = std::log(v * alpha / (a / (us * us) + b));
    const double bound = (m + 0.5) * std::log((m + 1) / (r * (count - m + 1))) +
                         (count + 1) * std::log((count - m + 1) / (count - k + 1)) +
                         (k + 0.5) * std::log(r * (count - k + 1) / (k + 1)) + stirling_tail(m) +
                         stirling_tail(count - m) - stirling_tail(k) - stirling_tail(count - k);
    if (v <= bound) return k;
  }
}

template <class T>
T sample_binomial(T count, T prob, CPUGenerator& g) {
  if (count <= 0.0 || prob <= 0.0) return 0;
  if (prob >= 1.0) return count;
  if (prob <= 0.5) {
    if (count * prob >= 10.0) return binomial_btrs(count, prob, g);
    return binomial_inversion(count, prob, g);
  }
  if (prob > 0.5) {
    const T q = T(1.0 - prob);
    if (count * q >= 10.0) return count - binomial_btrs(count, q, g);
    return count - binomial_inversion(count, q, g);
  }
  return std::numeric_limits<T>::quiet_NaN();  // prob is NaN
}

[[noreturn]] void not_implemented(const char* kernel, DType dt) {
  TP_FAIL_NOT_IMPLEMENTED("\"", kernel, "\" not implemented for '", dtype_scalar_name(dt), "'");
}

/// float32 / float64 only (PyTorch's samplers have no half-type instance).
template <class F>
void visit_float_double(DType dt, const char* kernel, F&& f) {
  if (dt == DType::Float32) return f(float{});
  if (dt == DType::Float64) return f(double{});
  not_implemented(kernel, dt);
}

void check_cpu_or_meta(const Tensor& t, const char* op) {
  TP_CHECK(t.device().is_cpu() || is_meta(t), op, ": no ", t.device().str(), " kernel");
}

/// The sample tensor as an op's result or written into out= (resized to it).
Tensor finish(const Tensor& res, OutArg out) {
  if (!out.tensor) return res;
  resize_out(*out.tensor, res.sizes());
  copy_(*out.tensor, res);
  return *out.tensor;
}

}  // namespace

Tensor standard_gamma_impl(const Tensor& self, const std::optional<Generator>& gen, OutArg out) {
  check_cpu_or_meta(self, "_standard_gamma");
  Tensor res = empty_tensor(self.sizes(), self.dtype(), self.device());
  visit_float_double(self.dtype(), "gamma_cpu", [&](auto v) {
    using T = decltype(v);
    if (res.numel() == 0 || is_meta(res)) return;
    CPUGenerator& g = random::cpu_generator(gen);
    std::lock_guard<std::mutex> lock(g.mutex);
    Tensor a = contiguous(self);
    const T* alpha = a.data<T>();
    T* o = res.data<T>();
    for (int64_t i = 0; i < res.numel(); ++i)
      o[i] = std::max(std::numeric_limits<T>::min(), T(sample_gamma<T>(alpha[i], g)));
  });
  return finish(res, out);
}

Tensor sample_dirichlet_impl(const Tensor& self, const std::optional<Generator>& gen, OutArg out) {
  check_cpu_or_meta(self, "_sample_dirichlet");
  Tensor res = empty_tensor(self.sizes(), self.dtype(), self.device());
  visit_float_double(self.dtype(), "dirichlet", [&](auto v) {
    using T = decltype(v);
    if (res.numel() == 0 || is_meta(res)) return;
    Tensor gamma = empty_tensor(self.sizes(), DType::Float64);
    {
      CPUGenerator& g = random::cpu_generator(gen);
      std::lock_guard<std::mutex> lock(g.mutex);
      Tensor a = contiguous(self);
      const T* alpha = a.data<T>();
      double* o = gamma.data<double>();
      for (int64_t i = 0; i < gamma.numel(); ++i)
        o[i] = std::max(std::numeric_limits<double>::min(), sample_gamma<double>(double(alpha[i]), g));
    }
    // normalised over the last dim (the sum as PyTorch's reduction takes it), then clamped
    // to [smallest normal, largest value below 1] in the result's type
    Tensor total = contiguous(expand(sum(gamma, IntArrayRef({-1}), true), self.sizes()));
    const double* gv = gamma.data<double>();
    const double* sv = total.data<double>();
    T* o = res.data<T>();
    const T lo = std::numeric_limits<T>::min();
    const T hi = std::nextafter(T(1), T(0));
    for (int64_t i = 0; i < res.numel(); ++i)
      o[i] = std::min(hi, std::max(lo, T(gv[i] / sv[i])));
  });
  return finish(res, out);
}

Tensor binomial_impl(const Tensor& count, const Tensor& prob, const std::optional<Generator>& gen,
                     OutArg out) {
  check_cpu_or_meta(count, "binomial");
  TP_CHECK_VALUE(is_floating(count.dtype()), "binomial only supports floating-point dtypes for count, got: ",
                 dtype_scalar_name(count.dtype()));
  TP_CHECK_VALUE(is_floating(prob.dtype()), "binomial only supports floating-point dtypes for prob, got: ",
                 dtype_scalar_name(prob.dtype()));
  TP_CHECK(prob.dtype() == count.dtype(), "Found dtype ", dtype_scalar_name(prob.dtype()),
           " but expected ", dtype_scalar_name(count.dtype()));
  // the result has count's shape; prob broadcasts to it
  Tensor res = empty_tensor(count.sizes(), count.dtype(), count.device());
  Tensor p = expand(prob, count.sizes());
  visit_float_double(count.dtype(), "binomial_cpu", [&](auto v) {
    using T = decltype(v);
    if (res.numel() == 0 || is_meta(res)) return;
    CPUGenerator& g = random::cpu_generator(gen);
    std::lock_guard<std::mutex> lock(g.mutex);
    Tensor n = contiguous(count), q = contiguous(p);
    const T* nv = n.data<T>();
    const T* qv = q.data<T>();
    T* o = res.data<T>();
    for (int64_t i = 0; i < res.numel(); ++i) o[i] = sample_binomial<T>(nv[i], qv[i], g);
  });
  return finish(res, out);
}

}  // namespace tp
