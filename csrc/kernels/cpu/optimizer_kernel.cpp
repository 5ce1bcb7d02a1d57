// The CPU loops of the fused optimizer steps (_fused_sgd_, _fused_adam_, _fused_adagrad_):
// a parameter group's rows, chunk by chunk over the threads (Note [Fused optimizer kernels]
// in csrc/ops/optim.cpp). Compiled once per CPU capability level, each with -ffp-contract=off,
// so every level rounds as the baseline does: the element arithmetic fuses only where it
// calls std::fma, and fma, sqrt and division are correctly rounded at every level.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "core/half.h"
#include "core/parallel.h"
#include "kernels/cpu_stubs.h"
#include "ops/optim_math.h"

namespace tp::cpu::TP_CPU_NS {

namespace {

constexpr int64_t kChunk = int64_t(1) << 15;        // elements per parallel work item
constexpr int64_t kParallelMin = int64_t(1) << 16;  // fewer elements in all: one thread

/// Runs f(row index, begin, end) over every row, in chunks spread over the threads when
/// the group is large. f must not throw.
template <class F>
void for_each_chunk(const OptimizerRow* rows, int64_t num_rows, const F& f) {
  int64_t total = 0;
  for (int64_t i = 0; i < num_rows; ++i) total += rows[i].numel;
  if (total < kParallelMin || get_num_threads() <= 1) {
    for (int64_t i = 0; i < num_rows; ++i) f(i, int64_t(0), rows[i].numel);
    return;
  }
  struct Piece { int64_t row, begin, end; };
  std::vector<Piece> pieces;
  pieces.reserve(size_t(total / kChunk + num_rows));
  for (int64_t i = 0; i < num_rows; ++i)
    for (int64_t b = 0; b < rows[i].numel; b += kChunk)
      pieces.push_back({i, b, std::min(rows[i].numel, b + kChunk)});
  parallel_for(0, int64_t(pieces.size()), 1, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) f(pieces[size_t(k)].row, pieces[size_t(k)].begin, pieces[size_t(k)].end);
  });
}

/// Calls f(S{}) with the storage type of a floating dtype.
template <class F>
void visit_floating(DType dt, const F& f) {
  switch (dt) {
    case DType::Float64: return f(double{});
    case DType::Float16: return f(Half{});
    case DType::BFloat16: return f(BFloat16{});
    default: return f(float{});
  }
}

/// The compute type of storage type S: double for double, float otherwise.
template <class S>
using Opmath = std::conditional_t<std::is_same_v<S, double>, double, float>;

using optim::AdagradScalars;
using optim::AdamScalars;
using optim::Lerp;
using optim::SgdScalars;

template <class S, bool kWeightDecay, bool kMomentum>
void sgd_loop(const SgdScalars<Opmath<S>>& k, S* __restrict p, const S* __restrict g,
              S* __restrict buf, int64_t n) {
  using C = Opmath<S>;
  for (int64_t j = 0; j < n; ++j) {
    C pj = C(p[j]), b = kMomentum ? C(buf[j]) : C(0);
    optim::sgd_element<C, kWeightDecay, kMomentum>(k, pj, C(g[j]), b);
    if constexpr (kMomentum) buf[j] = S(b);
    p[j] = S(pj);
  }
}

template <class S, bool kWeightDecay, bool kAmsgrad>
void adam_loop(const AdamScalars<Opmath<S>>& k, Opmath<S> bc2_sqrt, Opmath<S> neg_step_size,
               S* __restrict p, const S* __restrict g, S* __restrict m, S* __restrict v,
               S* __restrict vmax, int64_t n) {
  using C = Opmath<S>;
  for (int64_t j = 0; j < n; ++j) {
    C pj = C(p[j]), mj = C(m[j]), vj = C(v[j]), wj = kAmsgrad ? C(vmax[j]) : C(0);
    optim::adam_element<C, kWeightDecay, kAmsgrad>(k, bc2_sqrt, neg_step_size, pj, C(g[j]), mj, vj, wj);
    m[j] = S(mj);
    v[j] = S(vj);
    if constexpr (kAmsgrad) vmax[j] = S(wj);
    p[j] = S(pj);
  }
}

template <class S, bool kWeightDecay>
void adagrad_loop(const AdagradScalars<Opmath<S>>& k, Opmath<S> neg_clr, S* __restrict p,
                  const S* __restrict g, S* __restrict sum, int64_t n) {
  using C = Opmath<S>;
  for (int64_t j = 0; j < n; ++j) {
    C pj = C(p[j]), sj = C(sum[j]);
    optim::adagrad_element<C, kWeightDecay>(k, neg_clr, pj, C(g[j]), sj);
    sum[j] = S(sj);
    p[j] = S(pj);
  }
}

template <class S>
S* at(const OptimizerRow& r, int j, int64_t begin) {
  return reinterpret_cast<S*>(r.data[size_t(j)]) + begin;
}

void fused_sgd_kernel(const OptimizerRow* rows, int64_t num_rows, double weight_decay, double momentum,
                      double lr, double dampening, bool nesterov, bool maximize, bool is_first_step) {
  const bool use_momentum = momentum != 0;
  for_each_chunk(rows, num_rows, [&](int64_t i, int64_t b, int64_t e) {
    visit_floating(rows[i].dtype, [&](auto s) {
      using S = decltype(s);
      using C = Opmath<S>;
      const SgdScalars<C> k{C(maximize ? -1 : 1), C(weight_decay), C(momentum), C(1 - dampening), C(-lr),
                            nesterov, is_first_step};
      S* p = at<S>(rows[i], 0, b);
      const S* g = at<S>(rows[i], 1, b);
      S* buf = use_momentum ? at<S>(rows[i], 2, b) : nullptr;
      const int64_t n = e - b;
      if (weight_decay != 0) {
        use_momentum ? sgd_loop<S, true, true>(k, p, g, buf, n) : sgd_loop<S, true, false>(k, p, g, buf, n);
      } else {
        use_momentum ? sgd_loop<S, false, true>(k, p, g, buf, n) : sgd_loop<S, false, false>(k, p, g, buf, n);
      }
    });
  });
}

void fused_adam_kernel(const OptimizerRow* rows, int64_t num_rows, const double* steps, double lr, double beta1,
                       double beta2, double weight_decay, double eps, bool amsgrad, bool maximize,
                       bool decoupled_weight_decay) {
  const bool coupled = weight_decay != 0 && !decoupled_weight_decay;
  const double param_scale = weight_decay != 0 && decoupled_weight_decay ? 1 - lr * weight_decay : 1.0;
  for_each_chunk(rows, num_rows, [&](int64_t i, int64_t b, int64_t e) {
    visit_floating(rows[i].dtype, [&](auto s) {
      using S = decltype(s);
      using C = Opmath<S>;
      double bc2_sqrt, neg_step_size;
      optim::adam_step_scalars(steps[i], lr, beta1, beta2, &bc2_sqrt, &neg_step_size);
      const AdamScalars<C> k{C(maximize ? -1 : 1), C(weight_decay), C(param_scale), C(beta2), C(1 - beta2),
                             C(eps), Lerp<C>(1 - beta1)};
      S* p = at<S>(rows[i], 0, b);
      const S* g = at<S>(rows[i], 1, b);
      S* m = at<S>(rows[i], 2, b);
      S* v = at<S>(rows[i], 3, b);
      S* vmax = amsgrad ? at<S>(rows[i], 4, b) : nullptr;
      const int64_t n = e - b;
      const C bc = C(bc2_sqrt), ns = C(neg_step_size);
      if (coupled) {
        amsgrad ? adam_loop<S, true, true>(k, bc, ns, p, g, m, v, vmax, n)
                : adam_loop<S, true, false>(k, bc, ns, p, g, m, v, vmax, n);
      } else {
        amsgrad ? adam_loop<S, false, true>(k, bc, ns, p, g, m, v, vmax, n)
                : adam_loop<S, false, false>(k, bc, ns, p, g, m, v, vmax, n);
      }
    });
  });
}

void fused_adagrad_kernel(const OptimizerRow* rows, int64_t num_rows, const double* steps, double lr,
                          double lr_decay, double weight_decay, double eps, bool maximize) {
  for_each_chunk(rows, num_rows, [&](int64_t i, int64_t b, int64_t e) {
    visit_floating(rows[i].dtype, [&](auto s) {
      using S = decltype(s);
      using C = Opmath<S>;
      const AdagradScalars<C> k{C(maximize ? -1 : 1), C(weight_decay), C(eps)};
      const C neg_clr = C(optim::adagrad_neg_clr(steps[i], lr, lr_decay));
      S* p = at<S>(rows[i], 0, b);
      const S* g = at<S>(rows[i], 1, b);
      S* sum = at<S>(rows[i], 2, b);
      weight_decay != 0 ? adagrad_loop<S, true>(k, neg_clr, p, g, sum, e - b)
                        : adagrad_loop<S, false>(k, neg_clr, p, g, sum, e - b);
    });
  });
}

}  // namespace

TP_REGISTER_CPU_KERNEL(fused_sgd_stub, &fused_sgd_kernel);
TP_REGISTER_CPU_KERNEL(fused_adam_stub, &fused_adam_kernel);
TP_REGISTER_CPU_KERNEL(fused_adagrad_stub, &fused_adagrad_kernel);

}  // namespace tp::cpu::TP_CPU_NS
