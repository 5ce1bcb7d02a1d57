// Whether work is being captured into a CUDA graph, for code that only knows its stream:
// the allocator, the Philox launcher and the ops that would synchronise with the host
// (Note [CUDA graphs] and Note [Checks under capture] in cuda/graphs/graph.cpp).
#pragma once
#include <cuda_runtime_api.h>

#include <atomic>

namespace tp::cuda::graphs {

/// Captures underway in the process (any device, any thread): zero in eager code, so the
/// checks below cost one relaxed load there.
extern std::atomic<int> g_captures_underway;
inline bool capture_underway() { return g_captures_underway.load(std::memory_order_relaxed) > 0; }

/// Whether work queued on `s` now is being captured (no driver call while no capture is
/// underway).
bool is_capturing(cudaStream_t s);

/// Raises RuntimeError naming `what` and the capture when `s` is being captured: `what`
/// would make the host wait for the GPU (or read device data on it), which a capture cannot
/// record. The capture itself is left to end (or be aborted) by its owner.
void check_not_capturing(cudaStream_t s, const char* what);

/// Whether a device-side argument check should skip reading its flag back on the host: `s`
/// is being captured (Note [Checks under capture]).
inline bool skip_host_checks(cudaStream_t s) { return capture_underway() && is_capturing(s); }

/// Copies `bytes` of host memory at `src` (which may go once this returns) to `dst` on the
/// device, queued on `s`. Under capture the bytes go through pinned memory the capturing
/// graph keeps, which the recorded copy reads at each replay (a copy from pageable memory
/// cannot be captured).
void upload(void* dst, const void* src, size_t bytes, cudaStream_t s);

}  // namespace tp::cuda::graphs
