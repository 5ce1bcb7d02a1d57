// Optimizer update kernels: _fused_sgd_, _fused_adam_ (and AdamW), _fused_adagrad_. One
// call updates every tensor of a parameter group (Note [Fused optimizer kernels]); the CPU
// loops are csrc/kernels/cpu/optimizer_kernel.cpp.
#include <initializer_list>
#include <vector>

#include "autograd/grad_mode.h"
#include "core/error.h"
#include "kernels/cpu_stubs.h"
#include "tensorplay/ops_api.h"
#ifdef TP_USE_CUDA
#include "cuda/optim.h"
#endif

namespace tp {

// Note [Fused optimizer kernels]
// tp.optim updates float32/float64 parameters with these kernels: one call per parameter
// group and step where PyTorch's default CPU path (the for-loop, "single tensor" one) runs
// about ten tensor ops per parameter. The element arithmetic is that path's, op by op and
// in its order, rounded to the tensor's dtype after each op as its kernels round: where
// PyTorch's CPU kernels fuse a multiply-add (add with alpha, lerp, addcmul) we call
// std::fma, and the CPU loops (csrc/kernels/cpu/optimizer_kernel.cpp) are compiled with
// -ffp-contract=off at every capability level so the compiler fuses nothing else: every
// level rounds alike. Scalars are computed in double as the Python code computes them, then
// cast once to the compute type (PyTorch's rule for a Python number in a float32/float64
// tensor op). One difference stays: PyTorch's vectorised sqrt is not correctly rounded
// (about one float32 element in five, one float64 element in a hundred, is 1 ulp off);
// ours is, so results agree to a few ulps rather than bit for bit.
// float16/bfloat16 compute in float and round once per stored value, as PyTorch's own fused
// kernels do; their for-loop path rounds after every op (and alpha to the tensor's dtype),
// so tp.optim sends them here only with fused=True.
// Rows whose tensors do not share one dense layout run on contiguous copies that are
// copied back, so any strided tensor works.
// CUDA parameters take the same element arithmetic (csrc/ops/optim_math.h) in
// csrc/cuda/optim_kernels.cu: a launch per table of up to 64 tensors / 320 chunks of 64K
// elements. Their step tensors may live on the CPU (incremented here) or, for fused and
// capturable state, on the GPU, where a first launch increments them and each block
// derives its tensor's bias corrections from the stored step (nothing is read back).

namespace {

/// The tensors of one row (params[i] and the same slot of the other lists) as flat arrays
/// in one memory order.
using Row = cpu::OptimizerRow;

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
  bool on_cuda() const { return !rows_.empty() && lists_[0][0].device().is_cuda(); }
  int device_index() const { return lists_[0][0].device().index; }

#ifdef TP_USE_CUDA
  /// The rows as the CUDA kernels take them.
  std::vector<cuda::OptimRow> cuda_rows() const {
    std::vector<cuda::OptimRow> out(rows_.size());
    for (size_t i = 0; i < rows_.size(); ++i) {
      for (size_t j = 0; j < rows_[i].data.size(); ++j) out[i].data[j] = rows_[i].data[j];
      out[i].numel = rows_[i].numel;
      out[i].dtype = rows_[i].dtype;
    }
    return out;
  }
#endif

  /// Copies rows that ran on contiguous copies back and bumps the written tensors' versions.
  void finish() {
    for (auto& [dst, src] : write_back_) copy_(dst, src);  // copy_ bumps the version
    for (const Tensor* t : bump_) t->impl()->bump_version();
  }

 private:
  void add_row(const char* op, size_t i) {
    const Tensor& p = lists_[0][i];
    TP_CHECK_KIND(ErrorKind::NotImplemented, p.device().is_cpu() || p.device().is_cuda(), op,
                  ": no ", device_type_name(p.device().type), " kernel");
    TP_CHECK(i == 0 || p.device() == lists_[0][0].device(), op, ": expected all tensors on ",
             lists_[0][0].device().str(), ", but parameter ", i, " is on ", p.device().str());
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

/// The state_steps of a group: one-element float32/float64 tensors (as PyTorch keeps them),
/// on the CPU (incremented here; `host` holds the new values) or, for CUDA parameters, on
/// their GPU (fused / capturable state: `device` lists them and the kernel increments them).
struct Steps {
  std::vector<double> host;
  std::vector<void*> device;
  DType device_dtype = DType::Float32;
};

Steps increment_steps(const char* op, TensorList steps, size_t n, Device params_device) {
  TP_CHECK_VALUE(steps.size() == n, op, ": expected ", n, " state_steps, but got ", steps.size());
  bool on_device = n > 0 && !steps[0].device().is_cpu();
  for (const Tensor& s : steps)  // all checked before any is written
    TP_CHECK(s.numel() == 1 && (s.dtype() == DType::Float32 || s.dtype() == DType::Float64) &&
                 (on_device ? s.device() == params_device && s.dtype() == steps[0].dtype()
                            : s.device().is_cpu()),
             op, ": each state_steps tensor must be a one-element float32 or float64 tensor, all "
             "on the CPU or all on the parameters' device");
  Steps out;
  if (on_device) {
    out.device_dtype = steps[0].dtype();
    for (const Tensor& s : steps) {
      out.device.push_back(s.data_ptr());
      s.impl()->bump_version();
    }
    return out;
  }
  out.host.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const Tensor& s = steps[i];
    if (s.dtype() == DType::Float32) {
      float* v = s.data<float>();
      *v = *v + 1.0f;
      out.host[i] = *v;
    } else {
      double* v = s.data<double>();
      *v = *v + 1.0;
      out.host[i] = *v;
    }
    s.impl()->bump_version();
  }
  return out;
}

#ifdef TP_USE_CUDA
/// Runs a group's step on its GPU.
void cuda_step(cuda::OptimKind kind, Group& group, const Steps& steps, const cuda::OptimHyper& h) {
  cuda::OptimSteps st{steps.host, steps.device, steps.device_dtype};
  cuda::fused_optimizer_step(kind, group.cuda_rows(), st, h, group.device_index());
  group.finish();
}
#endif

/// CUDA groups are not supported in a build without CUDA (no CUDA tensor can exist there).
bool run_on_cuda(const Group& group) {
#ifdef TP_USE_CUDA
  return group.on_cuda();
#else
  (void)group;
  return false;
#endif
}

}  // namespace

void fused_sgd_impl(TensorList params, TensorList grads, TensorList momentum_buffers, double weight_decay,
                    double momentum, double lr, double dampening, bool nesterov, bool maximize,
                    bool is_first_step, OutArg) {
  const bool use_momentum = momentum != 0;
  Group group = use_momentum
                    ? Group("_fused_sgd_", {params, grads, momentum_buffers}, {true, false, true})
                    : Group("_fused_sgd_", {params, grads}, {true, false});
  if (run_on_cuda(group)) {
#ifdef TP_USE_CUDA
    cuda::OptimHyper h;
    h.lr = lr, h.weight_decay = weight_decay, h.momentum = momentum, h.dampening = dampening;
    h.maximize = maximize, h.nesterov = nesterov, h.first_step = is_first_step;
    cuda_step(cuda::OptimKind::Sgd, group, Steps{}, h);
#endif
    return;
  }
  const auto& rows = group.rows();
  cpu::fused_sgd_stub(rows.data(), int64_t(rows.size()), weight_decay, momentum, lr, dampening, nesterov, maximize,
                      is_first_step);
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
  const Steps steps = increment_steps("_fused_adam_", state_steps, params.size(),
                                      params.empty() ? Device() : params[0].device());
  if (run_on_cuda(group)) {
#ifdef TP_USE_CUDA
    cuda::OptimHyper h;
    h.lr = lr, h.beta1 = beta1, h.beta2 = beta2, h.weight_decay = weight_decay, h.eps = eps;
    h.amsgrad = amsgrad, h.maximize = maximize, h.decoupled = decoupled_weight_decay;
    cuda_step(cuda::OptimKind::Adam, group, steps, h);
#endif
    return;
  }
  const auto& rows = group.rows();
  cpu::fused_adam_stub(rows.data(), int64_t(rows.size()), steps.host.data(), lr, beta1, beta2, weight_decay, eps,
                       amsgrad, maximize, decoupled_weight_decay);
  group.finish();
}

void fused_adagrad_impl(TensorList params, TensorList grads, TensorList state_sums, TensorList state_steps,
                        double lr, double lr_decay, double weight_decay, double eps, bool maximize, OutArg) {
  Group group("_fused_adagrad_", {params, grads, state_sums}, {true, false, true});
  const Steps steps = increment_steps("_fused_adagrad_", state_steps, params.size(),
                                      params.empty() ? Device() : params[0].device());
  if (run_on_cuda(group)) {
#ifdef TP_USE_CUDA
    cuda::OptimHyper h;
    h.lr = lr, h.lr_decay = lr_decay, h.weight_decay = weight_decay, h.eps = eps, h.maximize = maximize;
    cuda_step(cuda::OptimKind::Adagrad, group, steps, h);
#endif
    return;
  }
  const auto& rows = group.rows();
  cpu::fused_adagrad_stub(rows.data(), int64_t(rows.size()), steps.host.data(), lr, lr_decay, weight_decay, eps,
                          maximize);
  group.finish();
}

}  // namespace tp
