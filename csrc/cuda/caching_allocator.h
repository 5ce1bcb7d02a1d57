// The CUDA caching allocator: keeps freed device memory for reuse so that tensors do not
// pay a cudaMalloc/cudaFree (which synchronises the device) each time. Design in
// docs/architecture.md "CUDA runtime and allocator"; names and stats follow PyTorch's.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "cuda/runtime.h"

namespace tp::cuda {

/// Raised when device memory runs out after the cache was released and the allocation
/// retried; Python's tp.cuda.OutOfMemoryError (a RuntimeError, as torch.OutOfMemoryError).
class OutOfMemoryError : public Error {
 public:
  explicit OutOfMemoryError(std::string msg) : Error(ErrorKind::Runtime, std::move(msg)) {}
};

namespace allocator {

/// Registers the allocator for DeviceType::CUDA (done once at import of a CUDA build).
void install();
/// Device memory of `nbytes` on the current device for use on `stream`. free_raw gives it back.
void* raw_alloc(size_t nbytes, const Stream& stream);
/// raw_alloc from the global pools even while `stream` is captured into a CUDA graph: for
/// memory that outlives every graph (a cuBLAS workspace; Note [Graph pools]).
void* raw_alloc_outside_graphs(size_t nbytes, const Stream& stream);
void raw_free(void* ptr);
/// Marks the block holding `ptr` as used on `stream`: its free then waits for the work
/// queued on `stream` so far (an event) before the block is reused.
void record_stream(void* ptr, const Stream& stream);
/// Releases all unused cached blocks to the driver (after their pending events complete).
void empty_cache();
/// PyTorch's memory_stats keys ("allocated_bytes.all.current", ...) for `device`.
std::map<std::string, int64_t> memory_stats(int device);
/// Resets the "peak" stats (reset_peak_memory_stats).
void reset_peak_stats(int device);
/// Resets the "allocated"/"freed" counters and the retry/OOM counts.
void reset_accumulated_stats(int device);
/// Caps this process's reserved memory on `device` at fraction * total memory.
void set_memory_fraction(double fraction, int device);
double get_memory_fraction(int device);
/// One line per segment: address, size, stream and its blocks (memory_snapshot).
struct SegmentInfo {
  uintptr_t address;
  size_t total_size;
  size_t allocated_size;
  uintptr_t stream;
  bool is_large;
  int device;
  std::string blocks;  // "size:allocated;size:free;..."
};
std::vector<SegmentInfo> snapshot();

// Private pools of CUDA graphs (Note [Graph pools] in caching_allocator.cpp). A pool id is
// cuda::MempoolId (cuda/graphs/graph.h): a pair, (0, 0) meaning none.
/// Routes the allocations of the capture `capture_id` on `device` to the pool `id`,
/// creating it on first use, and counts one more use of it (the capturing graph's).
void begin_allocate_to_pool(int device, std::pair<uint64_t, uint64_t> id, unsigned long long capture_id);
/// Stops routing the capture's allocations (the graph keeps its use of the pool).
void end_allocate_to_pool(int device, unsigned long long capture_id);
/// A graph stops using pool `id`: once no graph uses it and none of its blocks is
/// allocated, its segments go back to the driver and the pool is gone.
void release_pool(int device, std::pair<uint64_t, uint64_t> id);

}  // namespace allocator
}  // namespace tp::cuda
