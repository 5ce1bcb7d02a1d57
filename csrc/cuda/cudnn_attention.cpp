// Fused attention through cuDNN's SDPA graphs (Note [cuDNN attention]); compiled with cuDNN
// (TP_USE_CUDNN), the graphs only where CMake also found the cuDNN frontend headers
// (TP_USE_CUDNN_FRONTEND).
#include "cuda/cudnn_attention.h"

#include <atomic>

#ifdef TP_USE_CUDNN_FRONTEND
#include <cudnn_frontend.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cuda/cudnn_handle.h"
#include "cuda/runtime.h"
#include "tensorplay/ops_api.h"
#endif

// Note [cuDNN attention]
// By default (tp._C._cudnn_set_sdpa; on since its H200 run: 4.04 ms forward + backward for
// b8 h16 s4096 d128 causal bf16 against torch's 4.06, our mma.sync kernels 10.1) the fused
// attention ops (_flash_attention_forward / _backward, ops/attention.cpp) offer their call to
// cuDNN's scaled-dot-product-attention graphs, the kernels PyTorch's cuDNN SDPA backend runs
// (wgmma flash kernels on sm_90), built through the cuDNN frontend's graph API (a header-only
// library; CMake looks for `include/cudnn_frontend.h` on the Python path, where the
// nvidia-cudnn-frontend wheel puts it). The forward graph is sdpa(Q, K, V) with the softmax
// statistics as an output (our float32 log-sum-exp, natural log, (B, H, L, 1)), the attention
// scale and, for is_causal, the top-left causal mask (key j > query i masked, as ours); the
// backward graph is sdpa_backward(Q, K, V, O, dO, Stats) giving dQ, dK, dV in the input
// dtype. Inputs are dense (B, H, L, D) / (B, H, S, D) float16 / bfloat16 tensors, 16-byte
// aligned (the ops make them so). Each graph is validated, lowered, given heuristics-A plans,
// checked and built once per key (pass, dtype, sizes, causal, scale, device, handle: plans
// are per handle, handles per thread) and cached; a call then makes a variant pack of the
// data pointers and a workspace from the caching allocator and executes. What cuDNN refuses
// (a failed build: a shape or head dim it lacks) is cached as a null graph and the call
// returns false, so the op runs our kernels (Notes [Flash attention] and [Flash attention
// on mma.sync]); a failed execution returns false the same way. On the H200 (2026-12-01) the
// graphs built and ran forward and backward (scripts/probe_cudnn_sdpa.py) once the module kept
// the symbols of its static archives to itself (CMakeLists.txt, --exclude-libs): that
// machine's compiler links libstdc++ statically, and with its symbols exported the first
// validation crashed inside an ostream insertion.

namespace tp::cuda::cudnn {

namespace {
std::atomic<bool> g_sdpa_on{true};
}  // namespace

void set_sdpa(bool on) { g_sdpa_on.store(on); }
bool sdpa() { return g_sdpa_on.load(); }

#ifndef TP_USE_CUDNN_FRONTEND

bool sdpa_available() { return false; }
int64_t sdpa_graph_count() { return 0; }
bool sdpa_forward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool, float) {
  return false;
}
bool sdpa_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                   const Tensor&, const Tensor&, const Tensor&, bool, float) {
  return false;
}

#else

namespace fe = cudnn_frontend;

namespace {

// tensor uids of the variant packs
enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV };

struct Key {
  bool backward;
  bool causal;
  DType dtype;
  int64_t b, h, l, s, d;
  uint32_t scale_bits;
  int device;
  cudnnHandle_t handle;
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t v = std::hash<int64_t>()(k.b);
    for (int64_t x : {k.h, k.l, k.s, k.d, int64_t(k.scale_bits), int64_t(k.device), int64_t(k.dtype),
                      int64_t(k.backward) * 2 + int64_t(k.causal)})
      v = v * 1000003u ^ std::hash<int64_t>()(x);
    return v ^ std::hash<const void*>()(k.handle);
  }
};

struct Built {
  std::shared_ptr<fe::graph::Graph> graph;  // null: cuDNN refused the key
  int64_t workspace = 0;
};

std::mutex g_mu;
std::unordered_map<Key, Built, KeyHash>& cache() {
  static auto* c = new std::unordered_map<Key, Built, KeyHash>;  // leaked: no cuDNN calls at exit
  return *c;
}

std::vector<int64_t> dense_strides(const std::vector<int64_t>& dim) {
  std::vector<int64_t> st(dim.size(), 1);
  for (int i = int(dim.size()) - 2; i >= 0; --i) st[size_t(i)] = st[size_t(i) + 1] * dim[size_t(i) + 1];
  return st;
}

std::shared_ptr<fe::graph::Tensor_attributes> input(fe::graph::Graph& g, const char* name, Uid uid,
                                                    std::vector<int64_t> dim) {
  std::vector<int64_t> st = dense_strides(dim);
  return g.tensor(fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(std::move(dim)).set_stride(
      std::move(st)));
}

void mark_output(const std::shared_ptr<fe::graph::Tensor_attributes>& t, Uid uid, std::vector<int64_t> dim) {
  std::vector<int64_t> st = dense_strides(dim);
  t->set_output(true).set_uid(uid).set_dim(std::move(dim)).set_stride(std::move(st));
}

/// The cached graph for `key` (built on first use; a null graph when cuDNN refuses it).
Built lookup(const Key& key) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = cache().find(key);
    if (it != cache().end()) return it->second;
  }
  auto g = std::make_shared<fe::graph::Graph>();
  const DeviceProperties& props = device_properties(key.device);
  g->set_sm_version(props.major * 10 + props.minor);  // the key's device, not whichever is current
  g->set_io_data_type(key.dtype == DType::BFloat16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  float scale;
  std::memcpy(&scale, &key.scale_bits, sizeof scale);
  const std::vector<int64_t> qd{key.b, key.h, key.l, key.d}, kd{key.b, key.h, key.s, key.d},
      sd{key.b, key.h, key.l, 1};
  auto q = input(*g, "Q", kQ, qd), k = input(*g, "K", kK, kd), v = input(*g, "V", kV, kd);
  if (!key.backward) {
    auto opts = fe::graph::SDPA_attributes().set_name("sdpa").set_generate_stats(true).set_attn_scale(scale);
    if (key.causal) opts.set_causal_mask(true);
    auto [o, stats] = g->sdpa(q, k, v, opts);
    mark_output(o, kO, qd);
    mark_output(stats, kStats, sd);
    stats->set_data_type(fe::DataType_t::FLOAT);
  } else {
    auto o = input(*g, "O", kO, qd), d_o = input(*g, "dO", kDO, qd);
    auto stats = input(*g, "Stats", kStats, sd);
    stats->set_data_type(fe::DataType_t::FLOAT);
    auto opts = fe::graph::SDPA_backward_attributes().set_name("sdpa_backward").set_attn_scale(scale);
    if (key.causal) opts.set_causal_mask(true);
    auto [dq, dk, dv] = g->sdpa_backward(q, k, v, o, d_o, stats, opts);
    mark_output(dq, kDQ, qd);
    mark_output(dk, kDK, kd);
    mark_output(dv, kDV, kd);
  }
  Built built;
  if (g->validate().is_good() && g->build_operation_graph(key.handle).is_good() &&
      g->create_execution_plans({fe::HeurMode_t::A}).is_good() && g->check_support(key.handle).is_good() &&
      g->build_plans(fe::BuildPlanPolicy_t::HEURISTICS_CHOICE).is_good() &&
      g->get_workspace_size(built.workspace).is_good())
    built.graph = std::move(g);
  std::lock_guard<std::mutex> lock(g_mu);
  return cache().emplace(key, built).first->second;
}

Key key_of(bool backward, const Tensor& q, const Tensor& k, bool causal, float scale) {
  Key key{backward, causal, q.dtype(), q.size(0), q.size(1), q.size(2), k.size(2), q.size(3), 0,
          q.device().index, current_handle(q.device().index)};
  std::memcpy(&key.scale_bits, &scale, sizeof scale);
  return key;
}

/// Runs `built` with the pointers of `pack` (and a workspace); false when cuDNN fails it.
bool run(const Built& built, std::unordered_map<int64_t, void*>& pack, const Tensor& like, cudnnHandle_t handle) {
  Tensor workspace;
  if (built.workspace > 0) {
    const int64_t n[1] = {built.workspace};
    workspace = empty_tensor(IntArrayRef(n, 1), DType::UInt8, like.device());
  }
  return built.graph->execute(handle, pack, workspace.defined() ? workspace.data_ptr() : nullptr).is_good();
}

}  // namespace

bool sdpa_available() { return true; }

int64_t sdpa_graph_count() {
  std::lock_guard<std::mutex> lock(g_mu);
  int64_t n = 0;
  for (const auto& [key, built] : cache()) n += built.graph ? 1 : 0;
  return n;
}

bool sdpa_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                  bool causal, float scale) {
  if (!sdpa() || q.numel() == 0 || k.size(2) == 0) return false;
  DeviceGuard guard(q.device().index);
  const Key key = key_of(false, q, k, causal, scale);
  const Built built = lookup(key);
  if (!built.graph) return false;
  std::unordered_map<int64_t, void*> pack{
      {kQ, q.data_ptr()}, {kK, k.data_ptr()}, {kV, v.data_ptr()}, {kO, out.data_ptr()}, {kStats, lse.data_ptr()}};
  return run(built, pack, q, key.handle);
}

bool sdpa_backward(const Tensor& g, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                   const Tensor& lse, const Tensor& dq, const Tensor& dk, const Tensor& dv, bool causal, float scale) {
  if (!sdpa() || q.numel() == 0 || k.size(2) == 0) return false;
  DeviceGuard guard(q.device().index);
  const Key key = key_of(true, q, k, causal, scale);
  const Built built = lookup(key);
  if (!built.graph) return false;
  std::unordered_map<int64_t, void*> pack{{kQ, q.data_ptr()},    {kK, k.data_ptr()},   {kV, v.data_ptr()},
                                          {kO, out.data_ptr()},  {kDO, g.data_ptr()},  {kStats, lse.data_ptr()},
                                          {kDQ, dq.data_ptr()},  {kDK, dk.data_ptr()}, {kDV, dv.data_ptr()}};
  return run(built, pack, q, key.handle);
}

#endif  // TP_USE_CUDNN_FRONTEND

}  // namespace tp::cuda::cudnn
