// CUDA graphs: capture, instantiation, replay, private pools, Philox state, conditional nodes.
#include "cuda/graphs/graph.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "core/error.h"
#include "cuda/caching_allocator.h"
#include "cuda/check.h"
#include "cuda/copy.h"
#include "cuda/generator.h"
#include "cuda/graphs/graph_kernels.h"
#include "kernels/tensor_iterator.h"

// Note [CUDA graphs]
// A Graph records what the calling thread queues on its current stream between
// capture_begin and capture_end (cudaStreamBeginCapture / EndCapture), instantiates it once,
// and replay() launches the executable graph with one cudaGraphLaunch on the current stream.
// What makes a replay correct is what the capture cannot see:
// - memory: kernels replay on the addresses they had at capture, so the capture allocates
//   from a private pool of the caching allocator that eager code never takes from (Note
//   [Graph pools] in caching_allocator.cpp); graphs given the same pool id share one;
// - random numbers: Note [Philox in graphs];
// - host work: an op that needs the host to wait for the GPU (.item(), .cpu(), nonzero's
//   size, a cuBLAS workspace resize) cannot be recorded; check_not_capturing() raises,
//   naming the op, before CUDA invalidates the capture, and abort_capture() then leaves the
//   stream, the allocator and the registry as if no capture had begun.
// The registry (capture id -> Graph) lets code that only knows a stream (the allocator, the
// Philox launcher) find the graph that records it; its captures may run on several devices
// and threads at once (each Graph is one device's; the ids are unique process-wide).
//
// Note [Philox in graphs]
// An eager random launch takes (seed, counter) by value and moves its generator's offset.
// Captured that way, every replay would draw the same numbers. So a launch captured from
// a generator instead gets a pointer to 16 bytes of graph memory holding {seed, counter at
// replay start} plus its blocks past that start (philox::resolve in the kernel). Each
// replay first queues one tiny kernel per generator the graph drew from, writing the
// generator's current seed and counter there, then advances the generator's offset by all
// the blocks the graph draws. A replay therefore draws exactly what the same launches run
// eagerly from the same generator state would: a replayed dropout equals the eager one.
// Generators the capture draws from are found at the launch (any generator, not only the
// device's default one), so nothing needs registering by hand. The 16 bytes come from the
// global pool, not the graph's: written before the graph runs, they must not alias memory
// the graph reuses inside (a first version took them from the pool, and the dropout mask
// freed earlier in the capture overwrote the second generator's state at every replay).
//
// Note [Checks under capture]
// Some kernels check their arguments on the device and report through a flag the host reads
// back (index ranges, targets of nll_loss, probabilities of multinomial). The read-back is a
// synchronisation a capture cannot hold, so under capture the flag is not read: the checks
// then cannot raise (out-of-range indices give unspecified values, as a device assert would
// have stopped them in PyTorch). Run the step eagerly once (the warm-up) to check inputs.
//
// Note [Conditional nodes]
// begin_capture_to_if_node / begin_capture_to_while_node (CUDA >= 12.4) add a conditional
// node to the graph being captured: a handle created in that graph, a one-thread kernel
// captured before the node that sets the handle from the predicate tensor, then the node
// itself, which the capturing stream's next work depends on. The body is captured from a
// pooled stream with cudaStreamBeginCaptureToGraph into the node's body graph; that stream
// is current until end_capture_to_conditional_node(), which for a while node first queues
// the predicate kernel again (the loop runs while the body leaves the predicate nonzero).
// The body's captures join the registry and the pool like the outer one (bodies nest).

namespace tp::cuda::graphs {

std::atomic<int> g_captures_underway{0};

namespace {

std::mutex g_mu;
std::vector<std::pair<unsigned long long, Graph*>> g_active;  // capture id -> graph
std::atomic<uint64_t> g_next_pool{1};

Graph* find_active(unsigned long long id) {
  for (auto& [cid, g] : g_active)
    if (cid == id) return g;
  return nullptr;
}

void add_active(unsigned long long id, Graph* g) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_active.push_back({id, g});
}

void remove_active(unsigned long long id) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto it = g_active.begin(); it != g_active.end(); ++it)
    if (it->first == id) {
      g_active.erase(it);
      return;
    }
}

// The capture status and id of `s`; a legacy-stream query while another stream captures
// counts as capturing (work there would break that capture).
cudaStreamCaptureStatus capture_info(cudaStream_t s, unsigned long long* id) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  *id = 0;
  cudaError_t err = cudaStreamGetCaptureInfo(s, &st, id);
  if (err == cudaErrorStreamCaptureImplicit) {
    (void)cudaGetLastError();
    return cudaStreamCaptureStatusActive;
  }
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return cudaStreamCaptureStatusNone;
  }
  return st;
}

unsigned long long capture_id_of(cudaStream_t s) {
  unsigned long long id = 0;
  TP_CHECK(capture_info(s, &id) == cudaStreamCaptureStatusActive,
           "CUDA graph capture: the stream is not capturing");
  return id;
}

}  // namespace

MempoolId graph_pool_handle() { return {0, g_next_pool.fetch_add(1)}; }

bool is_capturing(cudaStream_t s) {
  if (!capture_underway()) return false;
  unsigned long long id = 0;
  return capture_info(s, &id) == cudaStreamCaptureStatusActive;
}

void check_not_capturing(cudaStream_t s, const char* what) {
  if (!capture_underway()) return;
  unsigned long long id = 0;
  if (capture_info(s, &id) != cudaStreamCaptureStatusActive) return;
  int device = -1;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (Graph* g = find_active(id)) device = g->device();
  }
  TP_FAIL(what, " cannot run while a CUDA graph is being captured on this stream (capture ",
          id, device >= 0 ? " of a tp.cuda.CUDAGraph on cuda:" + std::to_string(device) : std::string(),
          "): it makes the CPU wait for the GPU, which a graph cannot record. Move it out of "
          "the captured region (results can be read after replay()).");
}

bool reserve_in_capture(CUDAGenerator& gen, int64_t blocks, cudaStream_t s,
                        philox::LaunchArgs* out) {
  unsigned long long id = 0;
  if (capture_info(s, &id) != cudaStreamCaptureStatusActive) return false;
  Graph* g;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g = find_active(id);
  }
  // A capture begun outside TensorPlay: the launch keeps its by-value state.
  if (!g) return false;
  *out = g->reserve_philox(gen, blocks);
  return true;
}

void upload(void* dst, const void* src, size_t bytes, cudaStream_t s) {
  if (bytes == 0) return;
  unsigned long long id = 0;
  if (!capture_underway() || capture_info(s, &id) != cudaStreamCaptureStatusActive) {
    TP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
    return;
  }
  Graph* g;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g = find_active(id);
  }
  TP_CHECK(g, "copying host data to the GPU inside a CUDA graph capture begun outside "
           "TensorPlay (its pinned staging memory would have no owner)");
  void* pinned = nullptr;
  {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    TP_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    const cudaError_t err = cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault);
    TP_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    TP_CUDA_CHECK(err);
  }
  std::memcpy(pinned, src, bytes);
  g->host_buffers_.push_back(pinned);
  TP_CUDA_CHECK(cudaMemcpyAsync(dst, pinned, bytes, cudaMemcpyHostToDevice, s));
}

Graph::Graph(bool keep_graph) : keep_graph_(keep_graph) {}

Graph::~Graph() {
  try {
    if (capturing_) abort_capture();
    reset();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "TensorPlay warning: destroying a CUDA graph failed: %s\n", e.what());
  }
}

void Graph::capture_begin(MempoolId pool, cudaStreamCaptureMode mode) {
  TP_CHECK(!capturing_, "CUDAGraph.capture_begin: this graph is capturing already");
  TP_CHECK(!exec_, "This CUDAGraph instance already owns a captured graph. To capture a new "
           "graph, create a new instance (or call reset() first).");
  device_ = current_device();
  stream_ = current_stream(device_);
  TP_CHECK(stream_.handle != nullptr, "CUDA graphs must be captured on a non-default stream. "
           "(However, after capture, it's ok to replay them on the default stream.)");
  pool_ = (pool.first || pool.second) ? pool : MempoolId{g_next_pool.fetch_add(1), 0};
  mode_ = mode;
  generators_.clear();
  g_captures_underway.fetch_add(1);
  cudaError_t err = cudaStreamBeginCapture(stream_.handle, mode);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    g_captures_underway.fetch_sub(1);
    TP_FAIL("CUDAGraph.capture_begin: cudaStreamBeginCapture failed: ", cudaGetErrorString(err));
  }
  capture_id_ = capture_id_of(stream_.handle);
  allocator::begin_allocate_to_pool(device_, pool_, capture_id_);
  pool_retained_ = true;
  add_active(capture_id_, this);
  capturing_ = true;
}

philox::LaunchArgs Graph::reserve_philox(CUDAGenerator& gen, int64_t blocks) {
  auto it = std::find_if(generators_.begin(), generators_.end(),
                         [&](const GeneratorUse& u) { return u.gen == &gen; });
  if (it == generators_.end()) {
    register_generator(gen);
    it = generators_.end() - 1;
  }
  philox::LaunchArgs args{0, it->blocks, it->state};
  it->blocks += uint64_t(blocks);
  return args;
}

void Graph::register_generator(CUDAGenerator& gen) {
  TP_CHECK(capturing_, "CUDAGraph.register_generator_state: the graph is not capturing");
  for (const GeneratorUse& u : generators_)
    if (u.gen == &gen) return;
  // Not from the graph's pool: a replay writes these 16 bytes before the graph runs, so they
  // must not share memory with anything the graph uses (a block freed earlier in the
  // capture would be, and the graph's own kernels would then overwrite the state).
  GeneratorUse use{&gen, static_cast<uint64_t*>(allocator::raw_alloc_outside_graphs(16, stream_)), 0};
  gen.incref();
  generators_.push_back(use);
}

void Graph::launch_generator_updates(cudaStream_t s) {
  for (GeneratorUse& u : generators_) {
    const philox::LaunchArgs now = u.gen->advance(u.blocks);
    launch_write_philox_state(u.state, now.seed, now.counter, s);
  }
}

void Graph::capture_end() {
  TP_CHECK(capturing_, "CUDAGraph.capture_end: no capture is underway (call capture_begin first)");
  TP_CHECK(conditionals_.empty(), "CUDAGraph.capture_end: a conditional node's body is still "
           "being captured (call end_capture_to_conditional_node first)");
  cudaGraph_t graph = nullptr;
  cudaError_t err = cudaStreamEndCapture(stream_.handle, &graph);
  capturing_ = false;
  remove_active(capture_id_);
  allocator::end_allocate_to_pool(device_, capture_id_);
  g_captures_underway.fetch_sub(1);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    if (graph) cudaGraphDestroy(graph);
    release_pool();
    if (err == cudaErrorStreamCaptureInvalidated)
      TP_FAIL("CUDAGraph.capture_end: the capture was invalidated: an operation not allowed "
              "during capture ran while it was underway (a synchronisation, a copy to the "
              "host, or work on the legacy default stream)");
    if (err == cudaErrorStreamCaptureWrongThread)
      TP_FAIL("CUDAGraph.capture_end: must be called from the thread that began the capture "
              "(capture_error_mode='thread_local' or 'global')");
    TP_FAIL("CUDAGraph.capture_end: cudaStreamEndCapture failed: ", cudaGetErrorString(err));
  }
  size_t n = 0;
  TP_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &n));
  num_nodes_ = n;
  err = cudaGraphInstantiateWithFlags(&exec_, graph, 0);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    cudaGraphDestroy(graph);
    exec_ = nullptr;
    release_pool();
    TP_FAIL("CUDAGraph.capture_end: instantiating the captured graph failed: ",
            cudaGetErrorString(err));
  }
  if (keep_graph_) graph_ = graph;
  else TP_CUDA_CHECK(cudaGraphDestroy(graph));
}

void Graph::abort_capture() {
  if (!capturing_) return;
  // innermost first: the bodies of open conditional nodes, then the graph's own stream
  while (!conditionals_.empty()) {
    Conditional c = conditionals_.back();
    conditionals_.pop_back();
    cudaGraph_t body = nullptr;
    unsigned long long id = 0;
    capture_info(c.body.handle, &id);
    (void)cudaStreamEndCapture(c.body.handle, &body);
    (void)cudaGetLastError();
    if (id) {
      remove_active(id);
      allocator::end_allocate_to_pool(device_, id);
      allocator::release_pool(device_, pool_);
    }
    set_stream(c.outer);
  }
  cudaGraph_t graph = nullptr;
  (void)cudaStreamEndCapture(stream_.handle, &graph);
  (void)cudaGetLastError();
  if (graph) cudaGraphDestroy(graph);
  capturing_ = false;
  remove_active(capture_id_);
  allocator::end_allocate_to_pool(device_, capture_id_);
  g_captures_underway.fetch_sub(1);
  set_stream(stream_);
  release_pool();
}

void Graph::replay() {
  TP_CHECK(exec_, "CUDAGraph.replay: the graph holds no capture (capture it first with "
           "capture_begin/capture_end or tp.cuda.graph)");
  const Stream s = current_stream(device_);
  if (!generators_.empty()) launch_generator_updates(s.handle);
  TP_CUDA_CHECK(cudaGraphLaunch(exec_, s.handle));
}

void Graph::stage_and_launch(const std::vector<Tensor>& static_inputs,
                             const std::vector<Tensor>& new_inputs) {
  TP_CHECK(exec_, "CUDAGraph.stage_and_launch: the graph holds no capture");
  TP_CHECK_VALUE(static_inputs.size() == new_inputs.size(), "CUDAGraph.stage_and_launch: ",
                 static_inputs.size(), " static inputs but ", new_inputs.size(), " new inputs");
  const Stream s = current_stream(device_);
  // small contiguous copies go in one launch (Note [Batched staging copies])
  CopyBatch batch{};
  int batched = 0;
  int64_t most = 0;
  auto flush = [&] {
    if (batched) launch_copy_batch(device_, batch, batched, most, s.handle);
    batched = 0;
    most = 0;
  };
  for (size_t i = 0; i < static_inputs.size(); ++i) {
    const Tensor& dst = static_inputs[i];
    const Tensor& src = new_inputs[i];
    TP_CHECK_VALUE(std::ranges::equal(dst.sizes(), src.sizes()),
                   "CUDAGraph.stage_and_launch: new input ", i, " has shape ",
                   shape_str(src.sizes()), " but its static input has shape ",
                   shape_str(dst.sizes()));
    TP_CHECK_VALUE(dst.device().is_cuda() && dst.device().index == device_,
                   "CUDAGraph.stage_and_launch: static input ", i, " is not on cuda:", device_);
    if (dst.data_ptr() == src.data_ptr()) continue;
    const int64_t bytes = dst.numel() * dst.itemsize();
    const bool plain = src.device() == dst.device() && src.dtype() == dst.dtype() && src.is_contiguous() &&
                       dst.is_contiguous();
    if (plain && bytes <= kBatchedCopyMaxBytes) {
      if (bytes == 0) continue;
      batch.src[batched] = src.data_ptr();
      batch.dst[batched] = dst.data_ptr();
      batch.bytes[batched] = bytes;
      most = std::max(most, bytes);
      if (++batched == kMaxBatchedCopies) flush();
      continue;
    }
    flush();
    if (plain)
      TP_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), size_t(bytes), cudaMemcpyDeviceToDevice, s.handle));
    else
      cuda::copy_(dst, src, /*non_blocking=*/true);
  }
  flush();
  if (!generators_.empty()) launch_generator_updates(s.handle);
  TP_CUDA_CHECK(cudaGraphLaunch(exec_, s.handle));
}

void Graph::release_pool() {
  if (!host_buffers_.empty()) {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    TP_CUDA_WARN(cudaThreadExchangeStreamCaptureMode(&mode));
    for (void* p : host_buffers_) TP_CUDA_WARN(cudaFreeHost(p));
    TP_CUDA_WARN(cudaThreadExchangeStreamCaptureMode(&mode));
    host_buffers_.clear();
  }
  for (GeneratorUse& u : generators_) {
    allocator::raw_free(u.state);
    u.gen->decref();
  }
  generators_.clear();
  if (pool_retained_) {
    pool_retained_ = false;
    allocator::release_pool(device_, pool_);
  }
}

void Graph::reset() {
  TP_CHECK(!capturing_, "CUDAGraph.reset: the graph is capturing (end the capture first)");
  if (exec_) {
    TP_CUDA_WARN(cudaGraphExecDestroy(exec_));
    exec_ = nullptr;
  }
  if (graph_) {
    TP_CUDA_WARN(cudaGraphDestroy(graph_));
    graph_ = nullptr;
  }
  num_nodes_ = 0;
  release_pool();
}

void Graph::debug_dump(const std::string& path) {
  TP_CHECK(graph_, "CUDAGraph.debug_dump: the graph was not kept; call enable_debug_mode() "
           "before capture_begin");
  TP_CUDA_CHECK(cudaGraphDebugDotPrint(graph_, path.c_str(), cudaGraphDebugDotFlagsVerbose));
}

void Graph::begin_capture_to_if_node(const Tensor& predicate) { begin_conditional(predicate, false); }
void Graph::begin_capture_to_while_node(const Tensor& predicate) { begin_conditional(predicate, true); }

void Graph::begin_conditional(const Tensor& predicate, bool is_while) {
  const char* what = is_while ? "begin_capture_to_while_node" : "begin_capture_to_if_node";
  TP_CHECK(capturing_, "CUDAGraph.", what, ": the graph is not capturing");
  TP_CHECK_VALUE(predicate.device().is_cuda() && predicate.device().index == device_ &&
                     predicate.numel() == 1,
                 "CUDAGraph.", what, ": the predicate must be a one-element tensor on cuda:",
                 device_, ", got ", predicate.numel(), " elements on ",
                 predicate.device().str());
  const Stream outer = current_stream(device_);
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  cudaGraph_t g = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  size_t ndeps = 0;
  TP_CUDA_CHECK(cudaStreamGetCaptureInfo(outer.handle, &st, nullptr, &g, &deps, nullptr, &ndeps));
  TP_CHECK(st == cudaStreamCaptureStatusActive, "CUDAGraph.", what,
           ": the current stream is not the capturing one");
  cudaGraphConditionalHandle handle;
  TP_CUDA_CHECK(cudaGraphConditionalHandleCreate(&handle, g, 0, 0));
  const bool floating = is_floating(predicate.dtype());
  launch_set_conditional(handle, predicate.data_ptr(), int(predicate.itemsize()), floating,
                         outer.handle);
  TP_CUDA_CHECK(cudaStreamGetCaptureInfo(outer.handle, &st, nullptr, &g, &deps, nullptr, &ndeps));
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = is_while ? cudaGraphCondTypeWhile : cudaGraphCondTypeIf;
  params.conditional.size = 1;
  cudaGraphNode_t node = nullptr;
  TP_CUDA_CHECK(cudaGraphAddNode(&node, g, deps, nullptr, ndeps, &params));
  cudaGraph_t body = params.conditional.phGraph_out[0];
  TP_CUDA_CHECK(cudaStreamUpdateCaptureDependencies(outer.handle, &node, nullptr, 1,
                                                    cudaStreamSetCaptureDependencies));
  const Stream inner = get_stream_from_pool(0, device_);
  TP_CUDA_CHECK(cudaStreamBeginCaptureToGraph(inner.handle, body, nullptr, nullptr, 0, mode_));
  const unsigned long long id = capture_id_of(inner.handle);
  g_captures_underway.fetch_add(1);
  add_active(id, this);
  allocator::begin_allocate_to_pool(device_, pool_, id);
  conditionals_.push_back({outer, inner, predicate, handle, is_while});
  set_stream(inner);
}

void Graph::end_capture_to_conditional_node() {
  TP_CHECK(!conditionals_.empty(), "CUDAGraph.end_capture_to_conditional_node: no conditional "
           "node's body is being captured");
  Conditional c = conditionals_.back();
  conditionals_.pop_back();
  if (c.is_while) {
    const bool floating = is_floating(c.predicate.dtype());
    launch_set_conditional(c.handle, c.predicate.data_ptr(), int(c.predicate.itemsize()),
                           floating, c.body.handle);
  }
  const unsigned long long id = capture_id_of(c.body.handle);
  cudaGraph_t body = nullptr;
  cudaError_t err = cudaStreamEndCapture(c.body.handle, &body);
  remove_active(id);
  allocator::end_allocate_to_pool(device_, id);
  allocator::release_pool(device_, pool_);
  g_captures_underway.fetch_sub(1);
  set_stream(c.outer);
  TP_CUDA_CHECK(err);  // the body graph belongs to the conditional node
}

}  // namespace tp::cuda::graphs
