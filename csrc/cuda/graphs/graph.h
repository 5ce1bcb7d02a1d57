// CUDA graphs (tp.cuda.CUDAGraph): capture of the work queued on a stream into a graph,
// replayed with one launch. See Note [CUDA graphs] in graph.cpp.
#pragma once
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor_impl.h"
#include "cuda/graphs/capture.h"
#include "cuda/philox.h"
#include "cuda/runtime.h"

namespace tp::cuda {

class CUDAGenerator;

/// A memory pool of the caching allocator (PyTorch's MempoolId_t): (0, 0) is "none",
/// (n, 0) a graph's own pool, (0, n) one made by graph_pool_handle() to share.
using MempoolId = std::pair<uint64_t, uint64_t>;

namespace graphs {

/// A fresh id for a pool several graphs share (tp.cuda.graph_pool_handle()).
MempoolId graph_pool_handle();

/// The Philox arguments of a launch of `blocks` blocks from `gen` queued on `s` when `s` is
/// being captured (Note [Philox in graphs]); false when it is not.
bool reserve_in_capture(CUDAGenerator& gen, int64_t blocks, cudaStream_t s, philox::LaunchArgs* out);

/// One capture and its executable graph.
class Graph {
 public:
  explicit Graph(bool keep_graph = false);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// Starts capturing the calling thread's current stream on the current device (not the
  /// default stream). Allocations of the capture come from `pool` ((0, 0): a new private
  /// pool). `mode` is cudaStreamCaptureModeGlobal / ThreadLocal / Relaxed.
  void capture_begin(MempoolId pool, cudaStreamCaptureMode mode);
  /// Ends the capture and instantiates the executable graph.
  void capture_end();
  /// Ends a capture that failed part way (an error raised inside it): the stream leaves
  /// capture mode, nothing is instantiated, the pool is released; a new capture works.
  void abort_capture();
  /// Launches the executable graph on the current stream.
  void replay();
  /// Copies each `new_inputs[i]` into `static_inputs[i]` on the current stream, then
  /// launches the graph: one call for a step's staging and replay.
  void stage_and_launch(const std::vector<Tensor>& static_inputs,
                        const std::vector<Tensor>& new_inputs);
  /// Drops the graph, its executable and its use of the memory pool.
  void reset();
  MempoolId pool() const { return pool_; }
  void enable_debug_mode() { keep_graph_ = true; }
  /// Writes the captured graph as Graphviz DOT (needs debug mode or keep_graph).
  void debug_dump(const std::string& path);
  /// Makes launches drawing from `gen` during the capture read its state from device
  /// memory written at each replay.
  void register_generator(CUDAGenerator& gen);
  bool capturing() const { return capturing_; }
  int device() const { return device_; }
  /// Nodes of the captured graph (0 before capture_end; a conditional node counts once).
  size_t num_nodes() const { return num_nodes_; }

  /// Conditional nodes (CUDA >= 12.4; Note [Conditional nodes] in graph.cpp): the work
  /// queued until end_capture_to_conditional_node() is captured into the body of a node
  /// that runs it if (while) `predicate` (a one-element CUDA tensor, read as bool on the
  /// device when the node is reached; for while, again after each pass) is nonzero.
  void begin_capture_to_if_node(const Tensor& predicate);
  void begin_capture_to_while_node(const Tensor& predicate);
  void end_capture_to_conditional_node();

  // Note [Philox in graphs]: a generator's Philox state at replay.
  struct GeneratorUse {
    CUDAGenerator* gen;
    uint64_t* state = nullptr;  // device: {seed, counter}
    uint64_t blocks = 0;        // Philox blocks the captured launches draw, all told
  };
  philox::LaunchArgs reserve_philox(CUDAGenerator& gen, int64_t blocks);

 private:
  struct Conditional {
    Stream outer;               // the stream captured before the body
    Stream body;                // the stream capturing the body
    Tensor predicate;
    unsigned long long handle;  // cudaGraphConditionalHandle
    bool is_while;
  };
  void launch_generator_updates(cudaStream_t s);
  void begin_conditional(const Tensor& predicate, bool is_while);
  void release_pool();

  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  bool keep_graph_ = false;
  bool capturing_ = false;
  int device_ = -1;
  Stream stream_;                   // the capturing stream
  unsigned long long capture_id_ = 0;
  MempoolId pool_{0, 0};
  bool pool_retained_ = false;
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeGlobal;
  std::vector<GeneratorUse> generators_;
  std::vector<Conditional> conditionals_;
  size_t num_nodes_ = 0;
  std::vector<void*> host_buffers_;  // pinned copies of captured uploads (upload())

  friend void upload(void*, const void*, size_t, cudaStream_t);
};

}  // namespace graphs
}  // namespace tp::cuda
