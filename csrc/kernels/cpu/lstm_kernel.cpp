// The LSTM cell update of one time step and its backward, rows in parallel: the pointwise
// part of _lstm_layer (csrc/ops/nn_rnn.cpp runs the time loop and the GEMMs). Compiled once
// per CPU capability level; float32 activations use vec_math.h at the level's vector width.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "kernels/cpu_stubs.h"
#include "kernels/functors/pointwise.h"

namespace tp::cpu::TP_CPU_NS {

namespace {

/// p[i] = F(p[i]) over n contiguous values (vector bodies for float32 where built).
template <template <class> class F, class T>
void map_inplace(T* p, int64_t n) {
  int64_t i = 0;
#ifdef TP_VEC_LANES
  if constexpr (std::is_same_v<T, float>) {
    for (; i + TP_VEC_LANES <= n; i += TP_VEC_LANES)
      functors::vec_store(p + i, F<float>::vec(functors::vec_load(p + i)));
    if (i < n) {  // the partial vector too, zero-padded: the same bits at every level's width
      float t[TP_VEC_LANES] = {};
      for (int64_t j = i; j < n; ++j) t[j - i] = p[j];
      functors::vec_store(t, F<float>::vec(functors::vec_load(t)));
      for (int64_t j = i; j < n; ++j) p[j] = t[j - i];
      i = n;
    }
  }
#endif
  const KernelParams params;
  const F<T> f(params);
  for (; i < n; ++i) p[i] = f(p[i]);
}

/// Calls f(T{}) for float32 or float64, the dtypes _lstm_layer takes.
template <class F>
void visit_lstm_dtype(DType dt, const F& f) {
  if (dt == DType::Float64) f(double{});
  else f(float{});
}

void lstm_cell_kernel(DType dt, void* gates, const void* c_prev, void* c, void* h, int64_t B, int64_t H) {
  visit_lstm_dtype(dt, [&](auto v) {
    using T = decltype(v);
    T* g = static_cast<T*>(gates);
    T* cs = static_cast<T*>(c);
    T* hs = static_cast<T*>(h);
    const T* co = static_cast<const T*>(c_prev);
    parallel_for(0, B, std::max<int64_t>(1, 4096 / H), [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        T* row = g + b * 4 * H;  // i, f, g, o
        map_inplace<functors::Sigmoid>(row, 2 * H);
        map_inplace<functors::Tanh>(row + 2 * H, H);
        map_inplace<functors::Sigmoid>(row + 3 * H, H);
        T* c_new = cs + b * H;
        T* h_new = hs + b * H;
        const T* c_old = co + b * H;
        for (int64_t j = 0; j < H; ++j) c_new[j] = row[H + j] * c_old[j] + row[j] * row[2 * H + j];
        for (int64_t j = 0; j < H; ++j) h_new[j] = c_new[j];
        map_inplace<functors::Tanh>(h_new, H);
        for (int64_t j = 0; j < H; ++j) h_new[j] *= row[3 * H + j];
      }
    });
  });
}

void lstm_cell_backward_kernel(DType dt, const void* gates, const void* c, const void* c_prev,
                               const void* grad_output, void* dh, void* dc, void* d_gates, int64_t B, int64_t H) {
  visit_lstm_dtype(dt, [&](auto v) {
    using T = decltype(v);
    const T* g = static_cast<const T*>(gates);
    const T* cs = static_cast<const T*>(c);
    const T* c_old = static_cast<const T*>(c_prev);
    const T* go = static_cast<const T*>(grad_output);
    T* dg = static_cast<T*>(d_gates);
    T* dh_ = static_cast<T*>(dh);
    T* dc_ = static_cast<T*>(dc);
    parallel_for(0, B, std::max<int64_t>(1, 4096 / H), [&](int64_t b0, int64_t b1) {
      std::vector<T> tc(static_cast<size_t>(H));
      for (int64_t b = b0; b < b1; ++b) {
        const T* row = g + b * 4 * H;
        const T* c_new = cs + b * H;
        T* out = dg + b * 4 * H;
        T* dhb = dh_ + b * H;
        T* dcb = dc_ + b * H;
        if (go) {
          const T* gob = go + b * H;
          for (int64_t j = 0; j < H; ++j) dhb[j] += gob[j];
        }
        for (int64_t j = 0; j < H; ++j) tc[j] = c_new[j];
        map_inplace<functors::Tanh>(tc.data(), H);
        const T* cb = c_old + b * H;
        for (int64_t j = 0; j < H; ++j) {
          const T i = row[j], f = row[H + j], gg = row[2 * H + j], o = row[3 * H + j];
          const T d_o = dhb[j] * tc[j];
          const T d_c = dcb[j] + dhb[j] * o * (T(1) - tc[j] * tc[j]);
          out[j] = d_c * gg * i * (T(1) - i);
          out[H + j] = d_c * cb[j] * f * (T(1) - f);
          out[2 * H + j] = d_c * i * (T(1) - gg * gg);
          out[3 * H + j] = d_o * o * (T(1) - o);
          dcb[j] = d_c * f;
        }
      }
    });
  });
}

}  // namespace

TP_REGISTER_CPU_KERNEL(lstm_cell_stub, &lstm_cell_kernel);
TP_REGISTER_CPU_KERNEL(lstm_cell_backward_stub, &lstm_cell_backward_kernel);

}  // namespace tp::cpu::TP_CPU_NS
