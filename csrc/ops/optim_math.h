// The element arithmetic of the fused optimizer kernels, shared by the CPU loops
// (csrc/kernels/cpu/optimizer_kernel.cpp) and the CUDA kernels (csrc/cuda/optim_kernels.cu):
// Note [Fused optimizer kernels]. C is the compute type (float, or double for float64 tensors).
#pragma once
#include <cmath>

#include "core/cpu_capability.h"
#include "core/macros.h"

namespace tp::optim {
// Each CPU capability level's copy has its own names (Note [CPU capability]).
#ifdef TP_CPU_CAPABILITY
inline namespace TP_CPU_NS {
#endif

/// PyTorch's CPU lerp with a scalar weight: from the nearer end, one fused multiply-add.
template <class C>
struct Lerp {
  C coef;  // weight, or -(1 - weight) when counting from the end
  bool from_end;
  Lerp() = default;
  TP_HD explicit Lerp(double weight) {
    const C w = C(weight);
    from_end = !(std::abs(w) < C(0.5));
    coef = from_end ? -(C(1) - w) : w;
  }
  TP_HD C operator()(C self, C end) const { return std::fma(coef, end - self, from_end ? end : self); }
};

template <class C>
struct SgdScalars {
  C sign, weight_decay, momentum, one_minus_dampening, neg_lr;
  bool nesterov, first;
};

/// One SGD element: updates p (and the momentum buffer value b when kMomentum).
template <class C, bool kWeightDecay, bool kMomentum>
TP_HD void sgd_element(const SgdScalars<C>& k, C& p, C g, C& b) {
  C d = g * k.sign;
  if constexpr (kWeightDecay) d = std::fma(p, k.weight_decay, d);  // grad.add(param, alpha=wd)
  if constexpr (kMomentum) {
    // buf.mul_(momentum).add_(grad, alpha=1 - dampening), or grad's clone on the first step
    b = k.first ? d : std::fma(d, k.one_minus_dampening, b * k.momentum);
    d = k.nesterov ? std::fma(b, k.momentum, d) : b;  // grad.add(buf, alpha=momentum)
  }
  p = std::fma(d, k.neg_lr, p);  // param.add_(grad, alpha=-lr)
}

/// Adam's per-group scalars; the per-tensor ones (bias corrections) are passed apart.
template <class C>
struct AdamScalars {
  C sign, weight_decay, param_scale, beta2, one_minus_beta2, eps;
  Lerp<C> lerp;
};

/// One Adam (AdamW) element: updates p, the moments m and v (and vmax when kAmsgrad).
template <class C, bool kWeightDecay, bool kAmsgrad>
TP_HD void adam_element(const AdamScalars<C>& k, C bias_correction2_sqrt, C neg_step_size, C& p, C g,
                        C& m, C& v, C& vmax) {
  p = p * k.param_scale;  // param.mul_(1 - lr * wd); 1 unless AdamW
  C d = g * k.sign;
  if constexpr (kWeightDecay) d = std::fma(p, k.weight_decay, d);
  m = k.lerp(m, d);  // exp_avg.lerp_(grad, 1 - beta1)
  v = std::fma(k.one_minus_beta2 * d, d, v * k.beta2);  // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2)
  C vj = v;
  if constexpr (kAmsgrad) {
    vj = (vmax > vj || vmax != vmax) ? vmax : vj;  // torch.maximum: NaN wins
    vmax = vj;
  }
  // denom = (sqrt(v) / bias_correction2_sqrt).add_(eps); param.addcdiv_(exp_avg, denom, value=-step_size)
  const C denom = std::sqrt(vj) / bias_correction2_sqrt + k.eps;
  p = p + neg_step_size * m / denom;
}

template <class C>
struct AdagradScalars {
  C sign, weight_decay, eps;
};

/// One Adagrad element: updates p and the state sum s.
template <class C, bool kWeightDecay>
TP_HD void adagrad_element(const AdagradScalars<C>& k, C neg_clr, C& p, C g, C& s) {
  C d = g * k.sign;
  if constexpr (kWeightDecay) d = std::fma(p, k.weight_decay, d);
  s = std::fma(d, d, s);                   // state_sum.addcmul_(grad, grad, value=1)
  const C std_dev = std::sqrt(s) + k.eps;  // state_sum.sqrt().add_(eps)
  p = p + neg_clr * d / std_dev;           // param.addcdiv_(grad, std, value=-clr)
}

/// Adam's per-tensor scalars at a step: sqrt(1 - beta2^step) and -(lr / (1 - beta1^step)).
TP_HD inline void adam_step_scalars(double step, double lr, double beta1, double beta2,
                                    double* bias_correction2_sqrt, double* neg_step_size) {
  *bias_correction2_sqrt = std::pow(1 - std::pow(beta2, step), 0.5);
  *neg_step_size = -(lr / (1 - std::pow(beta1, step)));
}

/// Adagrad's -clr at a step: -(lr / (1 + (step - 1) lr_decay)).
TP_HD inline double adagrad_neg_clr(double step, double lr, double lr_decay) {
  return -(lr / (1 + (step - 1) * lr_decay));
}

#ifdef TP_CPU_CAPABILITY
}  // namespace TP_CPU_NS
#endif
}  // namespace tp::optim
