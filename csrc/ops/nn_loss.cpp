// Fused cross entropy over rows of logits: one pass for the loss (max, sum of exp, pick),
// one for the gradient (softmax minus the target's one-hot), rows split across threads.
#include <cmath>
#include <string>

#include "autograd/grad_mode.h"
#include "core/error.h"
#include "kernels/cpu_stubs.h"
#include "ops/meta.h"
#include "ops/nn.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"

#ifdef TP_USE_CUDA
#include "cuda/nn_kernels.h"
#endif

namespace tp {

namespace {

void check_rows(const Tensor& self, const Tensor& target, const char* op) {
  TP_CHECK(self.device().is_cpu() || self.device().is_cuda() || is_meta(self), op, ": no ", self.device().str(),
           " kernel yet");
  TP_CHECK(self.dim() == 2, op, ": expected 2-D logits, got ", self.dim(), "-D");
  TP_CHECK(target.dim() == 1 && target.size(0) == self.size(0), op,
           ": expected a target of shape [", self.size(0), "]");
  TP_CHECK(is_integral(target.dtype(), false), op, ": expected integer class indices");
  TP_CHECK(target.device() == self.device(), "Expected all tensors to be on the same device, but found at least "
           "two devices, ", self.device().str(), " and ", target.device().str(), "!");
}

/// IndexError for the first of the n targets that is neither ignore_index nor a class of c.
void check_targets(const int64_t* t, int64_t n, int64_t c, int64_t ignore_index) {
  for (int64_t i = 0; i < n; ++i)
    TP_CHECK_INDEX(t[i] == ignore_index || (t[i] >= 0 && t[i] < c), "Target ", t[i], " is out of bounds.");
}

#ifdef TP_USE_CUDA
/// check_targets on the host copy of CUDA targets a kernel found out of range.
[[noreturn]] void fail_target(const Tensor& tgt, int64_t ignore_index, int64_t c) {
  Tensor h = host_copy(tgt);
  check_targets(h.data<int64_t>(), h.numel(), c, ignore_index);
  TP_FAIL("cross_entropy: a target out of bounds was reported but not found");
}
#endif

/// The dtype cross entropy computes in: float64 or float32 (for the half types too).
DType compute_dtype(DType dt) {
  TP_CHECK_KIND(ErrorKind::NotImplemented, is_floating(dt), "\"cross_entropy\" not implemented for '",
                dtype_scalar_name(dt), "'");
  return dt == DType::Float64 ? DType::Float64 : DType::Float32;
}

/// Targets with ignore_index replaced by 0 (a valid index for the gather).
Tensor clamp_targets(const Tensor& tgt, int64_t ignore_index) {
  return where(ne(tgt, full({}, Scalar(ignore_index), DType::Int64)), tgt, zeros({}, DType::Int64));
}

}  // namespace

std::tuple<Tensor, Tensor> cross_entropy_rows_impl(const Tensor& self, const Tensor& target,
                                                   int64_t ignore_index, OutArg) {
  check_rows(self, target, "cross_entropy");
  const int64_t n = self.size(0), c = self.size(1);
  if (is_meta(self))  // the loss in self's dtype, lse in the accumulation dtype (no targets to check)
    return {empty_tensor(IntArrayRef(&n, 1), self.dtype(), self.device()),
            empty_tensor(IntArrayRef(&n, 1), self.dtype() == DType::Float64 ? DType::Float64 : DType::Float32,
                         self.device())};
  Tensor tgt = contiguous(_to_dtype(target, DType::Int64, false));
#ifdef TP_USE_CUDA
  if (self.device().is_cuda()) {
    Tensor x = contiguous(is_floating(self.dtype()) ? self : _to_dtype(self, DType::Float32, false));
    Tensor loss = empty_tensor(IntArrayRef(&n, 1), x.dtype(), self.device());
    Tensor lse = empty_tensor(IntArrayRef(&n, 1), x.dtype() == DType::Float64 ? DType::Float64 : DType::Float32,
                              self.device());
    if (!cuda::cross_entropy_forward(x, tgt, ignore_index, loss, lse)) fail_target(tgt, ignore_index, c);
    return {_to_dtype(loss, self.dtype(), false), lse};
  }
#endif
  check_targets(tgt.data<int64_t>(), n, c, ignore_index);
  // logsumexp and the picked logit with the vectorised reductions; ignored rows give 0
  const DType cdt = self.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  Tensor x = _to_dtype(self, cdt, false);
  const int64_t dim1[1] = {1};
  Tensor picked = gather(x, 1, unsqueeze(clamp_targets(tgt, ignore_index), 1));
  Tensor lse = logsumexp(x, dim1, false);
  Tensor rows = sub(lse, _squeeze_dims(picked, dim1));
  Tensor valid = ne(tgt, full({}, Scalar(ignore_index), DType::Int64));
  rows = where(valid, rows, zeros({}, cdt));
  return {_to_dtype(rows, self.dtype(), false), lse};
}

Tensor cross_entropy_rows_backward_impl(const Tensor& grad_rows, const Tensor& self,
                                        const Tensor& target, int64_t ignore_index,
                                        const Tensor& lse, OutArg) {
  check_rows(self, target, "cross_entropy_backward");
  const int64_t n = self.size(0), c = self.size(1);
  if (is_meta(self)) {
    compute_dtype(self.dtype());  // its dtype check
    return empty_tensor(self.sizes(), self.dtype(), self.device());
  }
  Tensor tgt = contiguous(_to_dtype(target, DType::Int64, false));
#ifdef TP_USE_CUDA
  if (self.device().is_cuda()) {
    const DType cdt = compute_dtype(self.dtype());
    TP_CHECK(grad_rows.device() == self.device(), "Expected all tensors to be on the same device, but found at "
             "least two devices, ", self.device().str(), " and ", grad_rows.device().str(), "!");
    Tensor g = contiguous(_to_dtype(expand(grad_rows, {&n, 1}), cdt, false)), x = contiguous(self);
    TP_CHECK(lse.dim() == 1 && lse.size(0) == n && lse.dtype() == cdt && lse.device() == self.device(),
             "cross_entropy_backward: lse must be the forward's (", n, ",) ", dtype_scalar_name(cdt),
             " row log-sum-exp on ", self.device().str());
    Tensor gx = empty_tensor(self.sizes(), self.dtype(), self.device());
    if (!cuda::cross_entropy_backward(g, x, tgt, ignore_index, contiguous(lse), gx))
      fail_target(tgt, ignore_index, c);
    return gx;
  }
#endif
  const int64_t* t = tgt.data<int64_t>();
  check_targets(t, n, c, ignore_index);  // an index past the row would write out of bounds
  // softmax (the fused, vectorised kernel; the CPU recomputes it rather than reading lse),
  // then per row: scale by grad, subtract at target
  const DType cdt = compute_dtype(self.dtype());
  Tensor dx = contiguous(softmax(_to_dtype(self, cdt, false), 1, std::nullopt));
  Tensor g = contiguous(_to_dtype(expand(grad_rows, {&n, 1}), cdt, false));
  cpu::cross_entropy_backward_stub(cdt, dx.data<char>(), g.data<char>(), t, n, c, ignore_index);
  return _to_dtype(dx, self.dtype(), false);
}

Tensor cross_entropy_rows_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                                   int64_t ignore_index, const Tensor& lse) {
  if (!autograd::grad_enabled())
    return _cross_entropy_rows_backward(grad, self, target, ignore_index, lse);
  // create_graph: the same gradient written with differentiable ops
  Tensor t64 = _to_dtype(target, DType::Int64, false);
  Tensor valid = ne(t64, full({}, Scalar(ignore_index), DType::Int64));
  Tensor safe = where(valid, t64, zeros({}, DType::Int64));
  Tensor onehot = scatter(zeros(self.sizes(), self.dtype()), 1, unsqueeze(safe, 1), Scalar(1.0));
  Tensor w = mul(grad, _to_dtype(valid, self.dtype(), false));
  return mul(sub(softmax(self, 1, std::nullopt), onehot), unsqueeze(w, 1));
}

}  // namespace tp
