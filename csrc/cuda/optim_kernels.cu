// CUDA fused optimizer steps (multi-tensor apply): each launch carries, by value, a table
// of up to kMaxTensors tensors and kMaxChunks chunks; block b updates chunk b. The
// element arithmetic is the CPU's (csrc/ops/optim_math.h), compiled without contraction
// (--fmad=false, set in CMakeLists.txt) so it rounds as the CPU loops do.
#include <algorithm>

#include "cuda/check.h"
#include "cuda/launch.cuh"
#include "cuda/optim.h"
#include "cuda/runtime.h"
#include "ops/optim_math.h"

namespace tp::cuda {
namespace {

constexpr int kMaxTensors = 64;
constexpr int kMaxChunks = 320;
constexpr int64_t kChunk = 65536;  // elements a block updates
constexpr int kThreads = 512;
constexpr int kIlp = 4;

struct Table {
  void* ptr[5][kMaxTensors];
  int64_t numel[kMaxTensors];
  double step[kMaxTensors];       // host steps
  const void* step_ptr[kMaxTensors];  // or device steps (float32 / float64)
  uint8_t tensor[kMaxChunks];
  int32_t chunk[kMaxChunks];
  bool step_double;
};

/// Everything but the tensors: group hyper-parameters in the compute type C.
template <class C>
struct Args {
  optim::SgdScalars<C> sgd;
  optim::AdamScalars<C> adam;
  optim::AdagradScalars<C> adagrad;
  double lr, beta1, beta2, lr_decay;
};

template <class S> __device__ __forceinline__ auto to_c(S v) {
  if constexpr (std::is_same_v<S, __half>) return __half2float(v);
  else if constexpr (std::is_same_v<S, __nv_bfloat16>) return __bfloat162float(v);
  else return v;
}
template <class S, class C> __device__ __forceinline__ S from_c(C v) {
  if constexpr (std::is_same_v<S, __half>) return __float2half_rn(v);
  else if constexpr (std::is_same_v<S, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else return v;
}

template <class S>
using opmath_t = std::conditional_t<std::is_same_v<S, double>, double, float>;

template <class S, OptimKind K, bool kWd, bool kFlag>
__global__ void __launch_bounds__(kThreads) optim_kernel(Table t, Args<opmath_t<S>> a) {
  using C = opmath_t<S>;
  const int tensor = t.tensor[blockIdx.x];
  const int64_t begin = int64_t(t.chunk[blockIdx.x]) * kChunk;
  const int64_t end = min(begin + kChunk, t.numel[tensor]);
  S* p = static_cast<S*>(t.ptr[0][tensor]);
  const S* g = static_cast<const S*>(t.ptr[1][tensor]);
  S* s2 = static_cast<S*>(t.ptr[2][tensor]);
  S* s3 = static_cast<S*>(t.ptr[3][tensor]);
  S* s4 = static_cast<S*>(t.ptr[4][tensor]);
  double step = t.step[tensor];
  if (t.step_ptr[tensor])
    step = t.step_double ? *static_cast<const double*>(t.step_ptr[tensor])
                         : double(*static_cast<const float*>(t.step_ptr[tensor]));
  C c0 = 0, c1 = 0;  // per-tensor scalars
  if constexpr (K == OptimKind::Adam) {
    double bc2, nss;
    optim::adam_step_scalars(step, a.lr, a.beta1, a.beta2, &bc2, &nss);
    c0 = C(bc2);
    c1 = C(nss);
  } else if constexpr (K == OptimKind::Adagrad) {
    c0 = C(optim::adagrad_neg_clr(step, a.lr, a.lr_decay));
  }
  for (int64_t base = begin + threadIdx.x; base < end; base += int64_t(kThreads) * kIlp) {
    C pv[kIlp], gv[kIlp], v2[kIlp], v3[kIlp], v4[kIlp];
#pragma unroll
    for (int u = 0; u < kIlp; ++u) {
      const int64_t i = base + int64_t(u) * kThreads;
      if (i >= end) continue;
      pv[u] = to_c(p[i]);
      gv[u] = to_c(g[i]);
      if (K == OptimKind::Sgd && !kFlag) continue;
      v2[u] = to_c(s2[i]);
      if constexpr (K == OptimKind::Adam) {
        v3[u] = to_c(s3[i]);
        if constexpr (kFlag) v4[u] = to_c(s4[i]);
      }
    }
#pragma unroll
    for (int u = 0; u < kIlp; ++u) {
      const int64_t i = base + int64_t(u) * kThreads;
      if (i >= end) continue;
      if constexpr (K == OptimKind::Sgd) {
        C b = kFlag ? v2[u] : C(0);
        optim::sgd_element<C, kWd, kFlag>(a.sgd, pv[u], gv[u], b);
        if constexpr (kFlag) s2[i] = from_c<S>(b);
      } else if constexpr (K == OptimKind::Adam) {
        C w = kFlag ? v4[u] : C(0);
        optim::adam_element<C, kWd, kFlag>(a.adam, c0, c1, pv[u], gv[u], v2[u], v3[u], w);
        s2[i] = from_c<S>(v2[u]);
        s3[i] = from_c<S>(v3[u]);
        if constexpr (kFlag) s4[i] = from_c<S>(w);
      } else {
        optim::adagrad_element<C, kWd>(a.adagrad, c0, pv[u], gv[u], v2[u]);
        s2[i] = from_c<S>(v2[u]);
      }
      p[i] = from_c<S>(pv[u]);
    }
  }
}

struct StepPtrs {
  void* ptr[kMaxTensors];
  int n;
  bool is_double;
};

__global__ void increment_steps_kernel(StepPtrs s) {
  const int i = threadIdx.x;
  if (i >= s.n) return;
  if (s.is_double) *static_cast<double*>(s.ptr[i]) += 1.0;
  else *static_cast<float*>(s.ptr[i]) += 1.0f;
}

template <class C>
Args<C> make_args(const OptimHyper& h) {
  Args<C> a{};
  const C sign = C(h.maximize ? -1 : 1);
  a.sgd = {sign, C(h.weight_decay), C(h.momentum), C(1 - h.dampening), C(-h.lr), h.nesterov, h.first_step};
  const double param_scale = h.weight_decay != 0 && h.decoupled ? 1 - h.lr * h.weight_decay : 1.0;
  a.adam = {sign, C(h.weight_decay), C(param_scale), C(h.beta2), C(1 - h.beta2), C(h.eps),
            optim::Lerp<C>(1 - h.beta1)};
  a.adagrad = {sign, C(h.weight_decay), C(h.eps)};
  a.lr = h.lr;
  a.beta1 = h.beta1;
  a.beta2 = h.beta2;
  a.lr_decay = h.lr_decay;
  return a;
}

template <class S>
void launch_table(OptimKind kind, const OptimHyper& h, const Table& t, int chunks, cudaStream_t stream) {
  using C = opmath_t<S>;
  const Args<C> a = make_args<C>(h);
  const bool wd = kind == OptimKind::Adam ? (h.weight_decay != 0 && !h.decoupled) : h.weight_decay != 0;
  const bool flag = kind == OptimKind::Sgd ? h.momentum != 0 : kind == OptimKind::Adam && h.amsgrad;
#define TP_OPTIM_LAUNCH(K, W, F) \
  optim_kernel<S, K, W, F><<<unsigned(chunks), kThreads, 0, stream>>>(t, a)
  if (kind == OptimKind::Sgd) {
    if (wd) flag ? TP_OPTIM_LAUNCH(OptimKind::Sgd, true, true) : TP_OPTIM_LAUNCH(OptimKind::Sgd, true, false);
    else flag ? TP_OPTIM_LAUNCH(OptimKind::Sgd, false, true) : TP_OPTIM_LAUNCH(OptimKind::Sgd, false, false);
  } else if (kind == OptimKind::Adam) {
    if (wd) flag ? TP_OPTIM_LAUNCH(OptimKind::Adam, true, true) : TP_OPTIM_LAUNCH(OptimKind::Adam, true, false);
    else flag ? TP_OPTIM_LAUNCH(OptimKind::Adam, false, true) : TP_OPTIM_LAUNCH(OptimKind::Adam, false, false);
  } else {
    wd ? TP_OPTIM_LAUNCH(OptimKind::Adagrad, true, false) : TP_OPTIM_LAUNCH(OptimKind::Adagrad, false, false);
  }
#undef TP_OPTIM_LAUNCH
  TP_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void fused_optimizer_step(OptimKind kind, const std::vector<OptimRow>& rows, const OptimSteps& steps,
                          const OptimHyper& h, int device) {
  DeviceGuard guard(device);
  const cudaStream_t stream = current_stream(device).handle;
  const bool dev_steps = !steps.device.empty();
  const bool step_double = steps.device_dtype == DType::Float64;
  if (dev_steps) {  // increment first: every chunk of a tensor then reads the same step
    for (size_t b = 0; b < steps.device.size(); b += kMaxTensors) {
      StepPtrs s{};
      s.n = int(std::min<size_t>(kMaxTensors, steps.device.size() - b));
      s.is_double = step_double;
      for (int i = 0; i < s.n; ++i) s.ptr[i] = steps.device[b + size_t(i)];
      increment_steps_kernel<<<1, kMaxTensors, 0, stream>>>(s);
      TP_CUDA_CHECK(cudaGetLastError());
    }
  }
  Table t{};
  int tensors = 0, chunks = 0;
  DType dtype = DType::Undefined;
  auto flush = [&] {
    if (chunks > 0)
      visit_device_dtype(dtype, [&](auto s) {
        using S = decltype(s);
        if constexpr (std::is_same_v<S, float> || std::is_same_v<S, double> ||
                      std::is_same_v<S, __half> || std::is_same_v<S, __nv_bfloat16>)
          launch_table<S>(kind, h, t, chunks, stream);
      });
    t = Table{};
    t.step_double = step_double;
    tensors = chunks = 0;
  };
  t.step_double = step_double;
  for (size_t r = 0; r < rows.size(); ++r) {
    const OptimRow& row = rows[r];
    if (row.numel == 0) continue;
    if (row.dtype != dtype) {
      flush();
      dtype = row.dtype;
    }
    const int64_t n_chunks = (row.numel + kChunk - 1) / kChunk;
    bool listed = false;  // the row has an entry in the current table
    for (int64_t c = 0; c < n_chunks; ++c) {
      if (chunks == kMaxChunks || (!listed && tensors == kMaxTensors)) {
        flush();
        listed = false;
      }
      if (!listed) {
        for (int j = 0; j < 5; ++j) t.ptr[j][tensors] = row.data[j];
        t.numel[tensors] = row.numel;
        t.step[tensors] = dev_steps || steps.host.empty() ? 0.0 : steps.host[r];
        t.step_ptr[tensors] = dev_steps ? steps.device[r] : nullptr;
        ++tensors;
        listed = true;
      }
      t.tensor[chunks] = uint8_t(tensors - 1);
      t.chunk[chunks] = int32_t(c);
      ++chunks;
    }
  }
  flush();
}

}  // namespace tp::cuda
