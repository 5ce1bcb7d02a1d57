// Optimizer update kernels: _fused_sgd_, _fused_adam_ (and AdamW), _fused_adagrad_. One
// call updates every tensor of a parameter group (Note [Fused optimizer kernels]).
#include <array>
#include <cmath>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "autograd/grad_mode.h"
#include "core/error.h"
#include "core/half.h"
#include "core/parallel.h"
#include "tensorplay/ops_api.h"

namespace tp {

// Note [Fused optimizer kernels]
// tp.optim updates float32/float64 parameters with these kernels: one call per parameter
// group and step where PyTorch's default CPU path (the for-loop, "single tensor" one) runs
// about ten tensor ops per parameter. The element arithmetic is that path's, op by op and
// in its order, rounded to the tensor's dtype after each op as its kernels round: where
// PyTorch's CPU kernels fuse a multiply-add (add with alpha, lerp, addcmul) we call
// std::fma, and this file is compiled with -ffp-contract=off so the compiler fuses nothing
// else. Scalars are computed in double as the Python code computes them, then cast once to
// the compute type (PyTorch's rule for a Python number in a float32/float64 tensor op). One
// difference stays: PyTorch's vectorised sqrt is not correctly rounded (about one float32
// element in five, one float64 element in a hundred, is 1 ulp off); ours is, so results
// agree to a few ulps rather than bit for bit.
// float16/bfloat16 compute in float and round once per stored value, as PyTorch's own fused
// kernels do; their for-loop path rounds after every op (and alpha to the tensor's dtype),
// so tp.optim sends them here only with fused=True.
// Rows whose tensors do not share one dense layout run on contiguous copies that are
// copied back, so any strided tensor works.

namespace {

constexpr int64_t kChunk = int64_t(1) << 15;        // elements per parallel work item
constexpr int64_t kParallelMin = int64_t(1) << 16;  // fewer elements in all: one thread
constexpr int kMaxLists = 5;

/// The tensors of one row (params[i] and the same slot of the other lists) as flat arrays
/// in one memory order.
struct Row {
  std::array<char*, kMaxLists> data{};
  int64_t numel = 0;
  DType dtype = DType::Float32;
};

bool same_sizes(const Tensor& a, const Tensor& b) {
  if (a.dim() != b.dim()) return false;
  for (int64_t d = 0; d < a.dim(); ++d)
    if (a.size(d) != b.size(d)) return false;
  return true;
}

/// Same sizes and the same strides wherever they matter (dims longer than 1).
bool same_layout(const Tensor& a, const Tensor& b) {
  for (int64_t d = 0; d < a.dim(); ++d)
    if (a.size(d) > 1 && a.stride(d) != b.stride(d)) return false;
  return true;
}

/// Checks a group's tensor lists and lays each row out flat. lists[0] is the parameters;
/// `written[j]` says whether the kernel writes list j (those get their version bumped, or
/// are copied back when the row ran on contiguous copies: call finish()).
class Group {
 public:
  Group(const char* op, std::initializer_list<TensorList> lists, std::initializer_list<bool> written)
      : lists_(lists), written_(written) {
    const size_t n = lists_[0].size();
    for (size_t j = 1; j < lists_.size(); ++j)
      TP_CHECK_VALUE(lists_[j].size() == n, op, ": expected every tensor list to have ", n,
                     " tensors (as params), but list ", j, " has ", lists_[j].size());
    rows_.resize(n);
    for (size_t i = 0; i < n; ++i) add_row(op, i);
  }

  const std::vector<Row>& rows() const { return rows_; }

  /// Copies rows that ran on contiguous copies back and bumps the written tensors' versions.
  void finish() {
    for (auto& [dst, src] : write_back_) copy_(dst, src);  // copy_ bumps the version
    for (const Tensor* t : bump_) t->impl()->bump_version();
  }

 private:
  void add_row(const char* op, size_t i) {
    const Tensor& p = lists_[0][i];
    TP_CHECK_KIND(ErrorKind::NotImplemented, p.device().type == DeviceType::CPU, op, ": no ",
                  device_type_name(p.device().type), " kernel");
    const DType dt = p.dtype();
    TP_CHECK_TYPE(is_floating(dt), op, ": expected floating-point parameters, but got ", dtype_name(dt));
    bool dense = p.impl()->is_non_overlapping_and_dense();
    for (size_t j = 0; j < lists_.size(); ++j) {
      const Tensor& t = lists_[j][i];
      TP_CHECK(t.dtype() == dt && t.device() == p.device(), op, ": tensor ", i, " of list ", j,
               " has dtype ", dtype_name(t.dtype()), ", but its parameter has ", dtype_name(dt));
      TP_CHECK(same_sizes(t, p), op, ": tensor ", i, " of list ", j, " does not have its parameter's shape");
      TP_CHECK(!(written_[j] && t.requires_grad() && autograd::grad_enabled()), op,
               ": a leaf Variable that requires grad is being used in an in-place operation.");
      dense = dense && same_layout(t, p);
    }
    Row& row = rows_[i];
    row.numel = p.numel();
    row.dtype = dt;
    for (size_t j = 0; j < lists_.size(); ++j) {
      const Tensor& t = lists_[j][i];
      if (dense) {
        row.data[j] = t.data_ptr();
        if (written_[j]) bump_.push_back(&t);
        continue;
      }
      Tensor c = contiguous(t);
      row.data[j] = c.data_ptr();
      if (c.is_same(t)) {
        if (written_[j]) bump_.push_back(&t);
      } else if (written_[j]) {
        write_back_.emplace_back(t, c);
      } else {
        keep_.push_back(c);
      }
    }
  }

  std::vector<TensorList> lists_;
  std::vector<bool> written_;
  std::vector<Row> rows_;
  std::vector<std::pair<Tensor, Tensor>> write_back_;  // (destination, contiguous copy)
  std::vector<Tensor> keep_;                           // read-only copies the rows point into
  std::vector<const Tensor*> bump_;
};

/// Increments each step tensor (a one-element float tensor, as PyTorch keeps it) and
/// returns the new values.
std::vector<double> increment_steps(const char* op, TensorList steps, size_t n) {
  TP_CHECK_VALUE(steps.size() == n, op, ": expected ", n, " state_steps, but got ", steps.size());
  for (const Tensor& s : steps)  // all checked before any is written
    TP_CHECK(s.numel() == 1 && s.device().type == DeviceType::CPU &&
                 (s.dtype() == DType::Float32 || s.dtype() == DType::Float64),
             op, ": each state_steps tensor must be a one-element float32 or float64 CPU tensor");
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    const Tensor& s = steps[i];
    if (s.dtype() == DType::Float32) {
      float* v = s.data<float>();
      *v = *v + 1.0f;
      out[i] = *v;
    } else {
      double* v = s.data<double>();
      *v = *v + 1.0;
      out[i] = *v;
    }
    s.impl()->bump_version();
  }
  return out;
}

/// Runs f(row index, begin, end) over every row, in chunks spread over the threads when
/// the group is large. f must not throw.
template <class F>
void for_each_chunk(const std::vector<Row>& rows, const F& f) {
  int64_t total = 0;
  for (const Row& r : rows) total += r.numel;
  if (total < kParallelMin || get_num_threads() <= 1) {
    for (size_t i = 0; i < rows.size(); ++i) f(i, int64_t(0), rows[i].numel);
    return;
  }
  struct Piece { size_t row; int64_t begin, end; };
  std::vector<Piece> pieces;
  pieces.reserve(size_t(total / kChunk) + rows.size());
  for (size_t i = 0; i < rows.size(); ++i)
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

/// PyTorch's CPU lerp with a scalar weight: from the nearer end, one fused multiply-add.
template <class C>
struct Lerp {
  C coef;     // weight, or -(1 - weight) when counting from the end
  bool from_end;
  explicit Lerp(double weight) {
    const C w = C(weight);
    from_end = !(std::abs(w) < C(0.5));
    coef = from_end ? -(C(1) - w) : w;
  }
  C operator()(C self, C end) const { return std::fma(coef, end - self, from_end ? end : self); }
};

// ------------------------------------------------------------------ SGD

template <class C>
struct SgdScalars {
  C sign, weight_decay, momentum, one_minus_dampening, neg_lr;
  bool nesterov, first;
};

template <class S, bool kWeightDecay, bool kMomentum>
void sgd_loop(const SgdScalars<Opmath<S>>& k, S* __restrict p, const S* __restrict g,
              S* __restrict buf, int64_t n) {
  using C = Opmath<S>;
  for (int64_t j = 0; j < n; ++j) {
    const C pj = C(p[j]);
    C d = C(g[j]) * k.sign;
    if constexpr (kWeightDecay) d = std::fma(pj, k.weight_decay, d);  // grad.add(param, alpha=wd)
    if constexpr (kMomentum) {
      // buf.mul_(momentum).add_(grad, alpha=1 - dampening), or grad's clone on the first step
      const C b = k.first ? d : std::fma(d, k.one_minus_dampening, C(buf[j]) * k.momentum);
      buf[j] = S(b);
      d = k.nesterov ? std::fma(b, k.momentum, d) : b;  // grad.add(buf, alpha=momentum)
    }
    p[j] = S(std::fma(d, k.neg_lr, pj));  // param.add_(grad, alpha=-lr)
  }
}

// ------------------------------------------------------------------ Adam / AdamW

template <class C>
struct AdamScalars {
  C sign, weight_decay, param_scale, beta2, one_minus_beta2, bias_correction2_sqrt, eps, neg_step_size;
  Lerp<C> lerp;
};

template <class S, bool kWeightDecay, bool kAmsgrad>
void adam_loop(const AdamScalars<Opmath<S>>& k, S* __restrict p, const S* __restrict g,
               S* __restrict m, S* __restrict v, S* __restrict vmax, int64_t n) {
  using C = Opmath<S>;
  for (int64_t j = 0; j < n; ++j) {
    const C pj = C(p[j]) * k.param_scale;  // param.mul_(1 - lr * wd); 1 unless AdamW
    C d = C(g[j]) * k.sign;
    if constexpr (kWeightDecay) d = std::fma(pj, k.weight_decay, d);
    const C mj = k.lerp(C(m[j]), d);  // exp_avg.lerp_(grad, 1 - beta1)
    m[j] = S(mj);
    // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    C vj = std::fma(k.one_minus_beta2 * d, d, C(v[j]) * k.beta2);
    v[j] = S(vj);
    if constexpr (kAmsgrad) {
      const C old = C(vmax[j]);
      vj = (old > vj || std::isnan(old)) ? old : vj;  // torch.maximum: NaN wins
      vmax[j] = S(vj);
    }
    // denom = (sqrt(v) / bias_correction2_sqrt).add_(eps); param.addcdiv_(exp_avg, denom, value=-step_size)
    const C denom = std::sqrt(vj) / k.bias_correction2_sqrt + k.eps;
    p[j] = S(pj + k.neg_step_size * mj / denom);
  }
}

// ------------------------------------------------------------------ Adagrad

template <class C>
struct AdagradScalars {
  C sign, weight_decay, eps, neg_clr;
};

template <class S, bool kWeightDecay>
void adagrad_loop(const AdagradScalars<Opmath<S>>& k, S* __restrict p, const S* __restrict g,
                  S* __restrict sum, int64_t n) {
  using C = Opmath<S>;
  for (int64_t j = 0; j < n; ++j) {
    const C pj = C(p[j]);
    C d = C(g[j]) * k.sign;
    if constexpr (kWeightDecay) d = std::fma(pj, k.weight_decay, d);
    const C s = std::fma(d, d, C(sum[j]));  // state_sum.addcmul_(grad, grad, value=1)
    sum[j] = S(s);
    const C std_dev = std::sqrt(s) + k.eps;  // state_sum.sqrt().add_(eps)
    p[j] = S(pj + k.neg_clr * d / std_dev);  // param.addcdiv_(grad, std, value=-clr)
  }
}

template <class S>
S* at(const Row& r, int j, int64_t begin) {
  return reinterpret_cast<S*>(r.data[size_t(j)]) + begin;
}

}  // namespace

void fused_sgd_impl(TensorList params, TensorList grads, TensorList momentum_buffers, double weight_decay,
                    double momentum, double lr, double dampening, bool nesterov, bool maximize,
                    bool is_first_step, OutArg) {
  const bool use_momentum = momentum != 0;
  Group group = use_momentum
                    ? Group("_fused_sgd_", {params, grads, momentum_buffers}, {true, false, true})
                    : Group("_fused_sgd_", {params, grads}, {true, false});
  const auto& rows = group.rows();
  for_each_chunk(rows, [&](size_t i, int64_t b, int64_t e) {
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
  group.finish();
}

void fused_adam_impl(TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                     TensorList max_exp_avg_sqs, TensorList state_steps, double lr, double beta1, double beta2,
                     double weight_decay, double eps, bool amsgrad, bool maximize, bool decoupled_weight_decay,
                     OutArg) {
  Group group = amsgrad ? Group("_fused_adam_", {params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs},
                                {true, false, true, true, true})
                        : Group("_fused_adam_", {params, grads, exp_avgs, exp_avg_sqs},
                                {true, false, true, true});
  const std::vector<double> steps = increment_steps("_fused_adam_", state_steps, params.size());
  const bool coupled = weight_decay != 0 && !decoupled_weight_decay;
  const double param_scale = weight_decay != 0 && decoupled_weight_decay ? 1 - lr * weight_decay : 1.0;
  const auto& rows = group.rows();
  for_each_chunk(rows, [&](size_t i, int64_t b, int64_t e) {
    visit_floating(rows[i].dtype, [&](auto s) {
      using S = decltype(s);
      using C = Opmath<S>;
      const double bias_correction1 = 1 - std::pow(beta1, steps[i]);
      const double bias_correction2 = 1 - std::pow(beta2, steps[i]);
      const AdamScalars<C> k{C(maximize ? -1 : 1), C(weight_decay), C(param_scale), C(beta2), C(1 - beta2),
                             C(std::pow(bias_correction2, 0.5)), C(eps), C(-(lr / bias_correction1)),
                             Lerp<C>(1 - beta1)};
      S* p = at<S>(rows[i], 0, b);
      const S* g = at<S>(rows[i], 1, b);
      S* m = at<S>(rows[i], 2, b);
      S* v = at<S>(rows[i], 3, b);
      S* vmax = amsgrad ? at<S>(rows[i], 4, b) : nullptr;
      const int64_t n = e - b;
      if (coupled) {
        amsgrad ? adam_loop<S, true, true>(k, p, g, m, v, vmax, n) : adam_loop<S, true, false>(k, p, g, m, v, vmax, n);
      } else {
        amsgrad ? adam_loop<S, false, true>(k, p, g, m, v, vmax, n) : adam_loop<S, false, false>(k, p, g, m, v, vmax, n);
      }
    });
  });
  group.finish();
}

void fused_adagrad_impl(TensorList params, TensorList grads, TensorList state_sums, TensorList state_steps,
                        double lr, double lr_decay, double weight_decay, double eps, bool maximize, OutArg) {
  Group group("_fused_adagrad_", {params, grads, state_sums}, {true, false, true});
  const std::vector<double> steps = increment_steps("_fused_adagrad_", state_steps, params.size());
  const auto& rows = group.rows();
  for_each_chunk(rows, [&](size_t i, int64_t b, int64_t e) {
    visit_floating(rows[i].dtype, [&](auto s) {
      using S = decltype(s);
      using C = Opmath<S>;
      const AdagradScalars<C> k{C(maximize ? -1 : 1), C(weight_decay), C(eps),
                                C(-(lr / (1 + (steps[i] - 1) * lr_decay)))};
      S* p = at<S>(rows[i], 0, b);
      const S* g = at<S>(rows[i], 1, b);
      S* sum = at<S>(rows[i], 2, b);
      weight_decay != 0 ? adagrad_loop<S, true>(k, p, g, sum, e - b) : adagrad_loop<S, false>(k, p, g, sum, e - b);
    });
  });
  group.finish();
}

}  // namespace tp
