// Fused LSTM layer: the time loop in C++ with one GEMM per step (hidden projection) and a
// vectorised cell update (csrc/kernels/cpu/lstm_kernel.cpp); the backward runs the loop in
// reverse and forms w_hh's gradient with one GEMM over every step.
#include <vector>

#include "core/error.h"
#include "kernels/cpu_stubs.h"
#include "linalg/blas.h"
#include "ops/meta.h"
#include "tensorplay/ops_api.h"

namespace tp {

namespace {

void check_layer(const Tensor& gi, const Tensor& h0, const Tensor& c0, const Tensor& w_hh) {
  const char* op = "_lstm_layer";
  TP_CHECK(gi.device().is_cpu() || is_meta(gi), op, ": no ", gi.device().str(), " kernel yet");
  TP_CHECK(gi.dim() == 3 && gi.size(2) % 4 == 0, op, ": expected gi of shape (T, B, 4H), got ",
           shape_str(gi.sizes()));
  const int64_t B = gi.size(1), H = gi.size(2) / 4;
  TP_CHECK(h0.dim() == 2 && h0.size(0) == B && h0.size(1) == H && c0.dim() == 2 &&
               c0.size(0) == B && c0.size(1) == H,
           op, ": expected h0 and c0 of shape (", B, ", ", H, ")");
  TP_CHECK(w_hh.dim() == 2 && w_hh.size(0) == 4 * H && w_hh.size(1) == H, op,
           ": expected w_hh of shape (", 4 * H, ", ", H, "), got ", shape_str(w_hh.sizes()));
  for (const Tensor* t : {&h0, &c0, &w_hh})
    TP_CHECK(t->dtype() == gi.dtype(), op, ": expected every tensor of dtype ",
             dtype_name(gi.dtype()), ", got ", dtype_name(t->dtype()));
  TP_CHECK(gi.dtype() == DType::Float32 || gi.dtype() == DType::Float64, op,
           ": float32 and float64 only, got ", dtype_name(gi.dtype()));
}

/// W^T as a GEMM operand, for a contiguous (rows, cols) W.
blas::MatrixRef transposed(const Tensor& w) { return {w.data_ptr(), 1, w.size(1)}; }
blas::MatrixRef plain(const void* p, int64_t cols) { return {p, cols, 1}; }

/// The element `offset` elements into t's data.
char* at(const Tensor& t, int64_t offset) {
  return static_cast<char*>(t.data_ptr()) + offset * int64_t(element_size(t.dtype()));
}

void lstm_forward(const Tensor& gates, const Tensor& cells, const Tensor& output, const Tensor& h0,
                  const Tensor& c0, const Tensor& w_hh, bool reverse) {
  const int64_t T_ = gates.size(0), B = gates.size(1), H = gates.size(2) / 4;
  for (int64_t s = 0; s < T_; ++s) {
    const int64_t t = reverse ? T_ - 1 - s : s, prev = reverse ? t + 1 : t - 1;
    const void* h = s == 0 ? h0.data_ptr() : at(output, prev * B * H);
    const void* c = s == 0 ? c0.data_ptr() : at(cells, prev * B * H);
    char* gt = at(gates, t * B * 4 * H);
    blas::gemm(gates.dtype(), B, 4 * H, H, 1.0, plain(h, H), transposed(w_hh), 1.0, gt, 4 * H);
    cpu::lstm_cell_stub(gates.dtype(), gt, c, at(cells, t * B * H), at(output, t * B * H), B, H);
  }
}

void lstm_backward(const Tensor& d_gates, const Tensor& dh, const Tensor& dc, const Tensor& grad_output,
                   const Tensor& gates, const Tensor& cells, const Tensor& c0, const Tensor& w_hh, bool reverse) {
  const int64_t T_ = gates.size(0), B = gates.size(1), H = gates.size(2) / 4;
  for (int64_t s = T_ - 1; s >= 0; --s) {
    const int64_t t = reverse ? T_ - 1 - s : s, prev = reverse ? t + 1 : t - 1;
    const void* c_old = s == 0 ? c0.data_ptr() : at(cells, prev * B * H);
    char* dg = at(d_gates, t * B * 4 * H);
    // dh: the running gradient of the hidden state entering step t
    cpu::lstm_cell_backward_stub(gates.dtype(), at(gates, t * B * 4 * H), at(cells, t * B * H), c_old,
                                 grad_output.defined() ? at(grad_output, t * B * H) : nullptr, dh.data_ptr(),
                                 dc.data_ptr(), dg, B, H);
    // the hidden state entering this step: dh = d_gates[t] @ w_hh
    blas::gemm(gates.dtype(), B, H, 4 * H, 1.0, plain(dg, 4 * H), plain(w_hh.data_ptr(), H), 0.0, dh.data_ptr(), H);
  }
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> lstm_layer_impl(const Tensor& gi, const Tensor& h0_, const Tensor& c0_,
                                                   const Tensor& w_hh_, const std::optional<Tensor>& b_hh,
                                                   bool reverse, OutArg) {
  check_layer(gi, h0_, c0_, w_hh_);
  const int64_t T_ = gi.size(0), B = gi.size(1), H = gi.size(2) / 4;
  Tensor gates = b_hh && b_hh->defined() ? add(gi, *b_hh) : clone(gi);
  gates = contiguous(gates);
  const int64_t state_shape[3] = {T_, B, H};
  Tensor cells = empty(state_shape, gi.dtype(), gi.device());
  Tensor output = empty(state_shape, gi.dtype(), gi.device());
  if (is_meta(gi)) return {output, gates, cells};
  Tensor h0 = contiguous(h0_), c0 = contiguous(c0_), w_hh = contiguous(w_hh_);
  if (T_ > 0 && B > 0) lstm_forward(gates, cells, output, h0, c0, w_hh, reverse);
  return {output, gates, cells};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> lstm_layer_backward_impl(
    const std::optional<Tensor>& grad_output, const std::optional<Tensor>& grad_hy,
    const std::optional<Tensor>& grad_cy, const Tensor& gates, const Tensor& cells,
    const Tensor& output, const Tensor& h0_, const Tensor& c0_, const Tensor& w_hh_, bool reverse,
    OutArg) {
  check_layer(gates, h0_, c0_, w_hh_);
  const int64_t T_ = gates.size(0), B = gates.size(1), H = gates.size(2) / 4;
  const DType dt = gates.dtype();
  auto given = [](const std::optional<Tensor>& t) { return t && t->defined(); };
  const int64_t state[2] = {B, H}, gates_shape[3] = {T_, B, 4 * H}, w_shape[2] = {4 * H, H};
  Tensor dh = given(grad_hy) ? clone(contiguous(*grad_hy)) : zeros(state, dt, gates.device());
  Tensor dc = given(grad_cy) ? clone(contiguous(*grad_cy)) : zeros(state, dt, gates.device());
  Tensor go = given(grad_output) ? contiguous(*grad_output) : Tensor();
  Tensor d_gates = empty(gates_shape, dt, gates.device());
  if (is_meta(gates)) return {d_gates, dh, dc, empty(w_shape, dt, gates.device())};
  Tensor c0 = contiguous(c0_), w_hh = contiguous(w_hh_);
  if (T_ == 0 || B == 0) return {d_gates, dh, dc, zeros(w_shape, dt, gates.device())};
  lstm_backward(d_gates, dh, dc, go, gates, cells, c0, w_hh, reverse);
  // every step's hidden input in step order, then one GEMM for w_hh's gradient
  Tensor first = unsqueeze(h0_, 0);
  Tensor rest = narrow(output, 0, reverse ? 1 : 0, T_ - 1);
  std::vector<Tensor> parts = reverse ? std::vector<Tensor>{rest, first} : std::vector<Tensor>{first, rest};
  Tensor h_in = cat(parts, 0);
  const int64_t rows_g[2] = {T_ * B, 4 * H}, rows_h[2] = {T_ * B, H};
  Tensor d_w = mm(t(reshape(d_gates, rows_g)), reshape(h_in, rows_h));
  return {d_gates, dh, dc, d_w};
}

}  // namespace tp
