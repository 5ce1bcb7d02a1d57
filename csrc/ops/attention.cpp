// Fused scaled dot-product attention: argument checks, the CPU reference (one query row at a
// time, accumulation in float32 / float64) and the calls into the CUDA kernels.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "ops/meta.h"
#include "tensorplay/ops_api.h"

#ifdef TP_USE_CUDA
#include "cuda/attention_kernels.h"
#ifdef TP_USE_CUDNN
#include "cuda/cudnn_attention.h"
#endif
#endif

namespace tp {

namespace {

/// The (B, H, L, S, D) of an attention call after checking its query, key and value.
struct AttentionShape {
  int64_t b, h, l, s, d;
};

std::string shape_str(const Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

AttentionShape check_attention(const Tensor& q, const Tensor& k, const Tensor& v, const char* op) {
  TP_CHECK(q.device().is_cpu() || q.device().is_cuda() || is_meta(q), op, ": no ", q.device().str(), " kernel");
  for (const Tensor* t : {&k, &v})
    TP_CHECK(t->device() == q.device(), "Expected all tensors to be on the same device, but found at least "
             "two devices, ", q.device().str(), " and ", t->device().str(), "!");
  TP_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, op,
           ": expected 4-D (batch, heads, sequence, head_dim) query, key and value, got ", q.dim(), "-D, ",
           k.dim(), "-D and ", v.dim(), "-D");
  TP_CHECK(is_floating(q.dtype()), op, ": expected a floating query, got ", dtype_scalar_name(q.dtype()));
  TP_CHECK(k.dtype() == q.dtype() && v.dtype() == q.dtype(), op,
           ": expected query, key and value of one dtype, got ", dtype_scalar_name(q.dtype()), ", ",
           dtype_scalar_name(k.dtype()), " and ", dtype_scalar_name(v.dtype()));
  const AttentionShape a{q.size(0), q.size(1), q.size(2), k.size(2), q.size(3)};
  TP_CHECK(k.size(0) == a.b && v.size(0) == a.b && k.size(1) == a.h && v.size(1) == a.h && v.size(2) == a.s &&
               k.size(3) == a.d && v.size(3) == a.d,
           op, ": query ", shape_str(q), ", key ", shape_str(k), " and value ", shape_str(v),
           " do not match (expected (B, H, L, D), (B, H, S, D), (B, H, S, D))");
#ifdef TP_USE_CUDA
  if (q.device().is_cuda())
    TP_CHECK_KIND(ErrorKind::NotImplemented, cuda::flash_attention_supported(q.dtype(), a.d), op,
                  ": the CUDA kernel takes float16 / bfloat16 with head_dim 64 or 128, got ",
                  dtype_scalar_name(q.dtype()), " with head_dim ", a.d);
#endif
  return a;
}

/// The dtype the CPU reference computes in, and the log-sum-exp's dtype.
DType compute_dtype(DType dt) { return dt == DType::Float64 ? DType::Float64 : DType::Float32; }

/// How many keys query row i sees: all S, or keys j <= i under the causal mask.
inline int64_t visible_keys(int64_t i, int64_t s, bool causal) { return causal ? std::min(i + 1, s) : s; }

/// Forward of one (batch, head): rows of q (l x d), k and v (s x d) into o (l x d) and
/// lse (l). A row with no visible key gives zeros and lse -inf.
template <class A>
void attention_rows_cpu(const A* q, const A* k, const A* v, A* o, A* lse, const AttentionShape& a, bool causal,
                        A scale, std::vector<A>& p) {
  for (int64_t i = 0; i < a.l; ++i) {
    const int64_t n = visible_keys(i, a.s, causal);
    A m = -std::numeric_limits<A>::infinity();
    for (int64_t j = 0; j < n; ++j) {
      A dot = 0;
      for (int64_t c = 0; c < a.d; ++c) dot += q[i * a.d + c] * k[j * a.d + c];
      p[j] = dot * scale;
      m = std::max(m, p[j]);
    }
    A sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += p[j] = std::exp(p[j] - m);
    A* oi = o + i * a.d;
    std::fill(oi, oi + a.d, A(0));
    for (int64_t j = 0; j < n; ++j)
      for (int64_t c = 0; c < a.d; ++c) oi[c] += p[j] / sum * v[j * a.d + c];
    lse[i] = n ? m + std::log(sum) : -std::numeric_limits<A>::infinity();
  }
}

/// Backward of one (batch, head) (the recomputation of Note [Flash attention], in the
/// compute dtype): dq, dk, dv (zeroed by the caller) from dO, O and lse.
template <class A>
void attention_rows_backward_cpu(const A* g, const A* q, const A* k, const A* v, const A* o, const A* lse, A* dq,
                                 A* dk, A* dv, const AttentionShape& a, bool causal, A scale) {
  for (int64_t i = 0; i < a.l; ++i) {
    const A* gi = g + i * a.d;
    A di = 0;
    for (int64_t c = 0; c < a.d; ++c) di += gi[c] * o[i * a.d + c];
    for (int64_t j = 0, n = visible_keys(i, a.s, causal); j < n; ++j) {
      A dot = 0, dp = 0;
      for (int64_t c = 0; c < a.d; ++c) {
        dot += q[i * a.d + c] * k[j * a.d + c];
        dp += gi[c] * v[j * a.d + c];
      }
      const A pij = std::exp(dot * scale - lse[i]);
      const A ds = pij * (dp - di) * scale;
      for (int64_t c = 0; c < a.d; ++c) {
        dv[j * a.d + c] += pij * gi[c];
        dq[i * a.d + c] += ds * k[j * a.d + c];
        dk[j * a.d + c] += ds * q[i * a.d + c];
      }
    }
  }
}

/// t as a contiguous tensor of dtype dt.
Tensor dense(const Tensor& t, DType dt) { return contiguous(_to_dtype(t, dt, false)); }

#ifdef TP_USE_CUDA
/// t as a contiguous tensor of dtype dt whose data is 16-byte aligned (the CUDA kernels
/// read rows 16 bytes at a time; a view may start anywhere in its storage).
Tensor dense_aligned(const Tensor& t, DType dt) {
  Tensor c = dense(t, dt);
  return reinterpret_cast<uintptr_t>(c.data_ptr()) % 16 == 0 ? c : clone(c);
}
#endif

}  // namespace

std::tuple<Tensor, Tensor> flash_attention_forward_impl(const Tensor& query, const Tensor& key, const Tensor& value,
                                                        bool is_causal, double scale, OutArg) {
  const AttentionShape a = check_attention(query, key, value, "_flash_attention_forward");
  const int64_t lse_shape[3] = {a.b, a.h, a.l};
#ifdef TP_USE_CUDA
  if (query.device().is_cuda()) {
    const DType dt = query.dtype();
    Tensor q = dense_aligned(query, dt), k = dense_aligned(key, dt), v = dense_aligned(value, dt);
    Tensor out = empty_tensor(q.sizes(), q.dtype(), q.device());
    Tensor lse = empty_tensor(IntArrayRef(lse_shape, 3), DType::Float32, q.device());
#ifdef TP_USE_CUDNN
    // Note [cuDNN attention]: cuDNN's SDPA graphs first when switched on, ours when it declines
    if (cuda::cudnn::sdpa_forward(q, k, v, out, lse, is_causal, float(scale))) return {out, lse};
#endif
    cuda::flash_attention_forward(q, k, v, out, lse, is_causal, float(scale));
    return {out, lse};
  }
#endif
  const DType cdt = compute_dtype(query.dtype());
  if (is_meta(query))  // the CPU reference's results: out row-major in the query's dtype, lse in cdt
    return {empty_tensor(query.sizes(), query.dtype(), query.device()),
            empty_tensor(IntArrayRef(lse_shape, 3), cdt, query.device())};
  Tensor q = dense(query, cdt), k = dense(key, cdt), v = dense(value, cdt);
  Tensor out = empty_tensor(q.sizes(), cdt, q.device());
  Tensor lse = empty_tensor(IntArrayRef(lse_shape, 3), cdt, q.device());
  auto run = [&](auto zero) {
    using A = decltype(zero);
    const A *qp = q.data<A>(), *kp = k.data<A>(), *vp = v.data<A>();
    A *op = out.data<A>(), *lp = lse.data<A>();
    parallel_for(0, a.b * a.h, 1, [&](int64_t b0, int64_t b1) {
      std::vector<A> p(size_t(a.s));
      for (int64_t bh = b0; bh < b1; ++bh)
        attention_rows_cpu<A>(qp + bh * a.l * a.d, kp + bh * a.s * a.d, vp + bh * a.s * a.d, op + bh * a.l * a.d,
                              lp + bh * a.l, a, is_causal, A(scale), p);
    });
  };
  if (cdt == DType::Float64) run(double{});
  else run(float{});
  return {_to_dtype(out, query.dtype(), false), lse};
}

std::tuple<Tensor, Tensor, Tensor> flash_attention_backward_impl(const Tensor& grad_out, const Tensor& query,
                                                                 const Tensor& key, const Tensor& value,
                                                                 const Tensor& output, const Tensor& logsumexp,
                                                                 bool is_causal, double scale, OutArg) {
  const char* op = "_flash_attention_backward";
  const AttentionShape a = check_attention(query, key, value, op);
  TP_CHECK(std::ranges::equal(grad_out.sizes(), query.sizes()) && std::ranges::equal(output.sizes(), query.sizes()),
           op, ": grad_out ", shape_str(grad_out), " and output ", shape_str(output), " must have the query's shape ",
           shape_str(query));
  TP_CHECK(logsumexp.dim() == 3 && logsumexp.size(0) == a.b && logsumexp.size(1) == a.h && logsumexp.size(2) == a.l,
           op, ": expected a logsumexp of shape [", a.b, ", ", a.h, ", ", a.l, "], got ", shape_str(logsumexp));
  for (const Tensor* t : {&grad_out, &output, &logsumexp})
    TP_CHECK(t->device() == query.device(), "Expected all tensors to be on the same device, but found at least "
             "two devices, ", query.device().str(), " and ", t->device().str(), "!");
#ifdef TP_USE_CUDA
  if (query.device().is_cuda()) {
    const DType dt = query.dtype();
    Tensor q = dense_aligned(query, dt), k = dense_aligned(key, dt), v = dense_aligned(value, dt);
    Tensor g = dense_aligned(grad_out, dt), o = dense_aligned(output, dt), lse = dense(logsumexp, DType::Float32);
    Tensor dk = empty_tensor(k.sizes(), dt, q.device()), dv = empty_tensor(v.sizes(), dt, q.device());
#ifdef TP_USE_CUDNN
    if (cuda::cudnn::sdpa()) {  // Note [cuDNN attention]: dq in the input dtype, written whole
      Tensor dq = empty_tensor(q.sizes(), dt, q.device());
      if (cuda::cudnn::sdpa_backward(g, q, k, v, o, lse, dq, dk, dv, is_causal, float(scale))) return {dq, dk, dv};
    }
#endif
    Tensor dq = zeros(q.sizes(), DType::Float32, q.device());  // atomics add into it
    cuda::flash_attention_backward(g, q, k, v, o, lse, dq, dk, dv, is_causal, float(scale));
    return {_to_dtype(dq, dt, false), dk, dv};
  }
#endif
  if (is_meta(query))  // row-major, in the query's dtype
    return {empty_tensor(query.sizes(), query.dtype(), query.device()),
            empty_tensor(key.sizes(), query.dtype(), query.device()),
            empty_tensor(value.sizes(), query.dtype(), query.device())};
  const DType cdt = compute_dtype(query.dtype());
  Tensor q = dense(query, cdt), k = dense(key, cdt), v = dense(value, cdt), g = dense(grad_out, cdt),
         o = dense(output, cdt), lse = dense(logsumexp, cdt);
  Tensor dq = zeros(q.sizes(), cdt), dk = zeros(k.sizes(), cdt), dv = zeros(v.sizes(), cdt);
  auto run = [&](auto zero) {
    using A = decltype(zero);
    parallel_for(0, a.b * a.h, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t bh = b0; bh < b1; ++bh) {
        const int64_t qo = bh * a.l * a.d, ko = bh * a.s * a.d;
        attention_rows_backward_cpu<A>(g.data<A>() + qo, q.data<A>() + qo, k.data<A>() + ko, v.data<A>() + ko,
                                       o.data<A>() + qo, lse.data<A>() + bh * a.l, dq.data<A>() + qo,
                                       dk.data<A>() + ko, dv.data<A>() + ko, a, is_causal, A(scale));
      }
    });
  };
  if (cdt == DType::Float64) run(double{});
  else run(float{});
  const DType dt = query.dtype();
  return {_to_dtype(dq, dt, false), _to_dtype(dk, dt, false), _to_dtype(dv, dt, false)};
}

}  // namespace tp
