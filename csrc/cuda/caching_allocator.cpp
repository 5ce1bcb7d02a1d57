// The CUDA caching allocator. See Note [CUDA caching allocator].
#include "cuda/caching_allocator.h"

#include <algorithm>
#include <atomic>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <set>
#include <string_view>
#include <vector>

#include "core/storage.h"
#include "cuda/check.h"
#include "cuda/graphs/graph.h"
#include "cuda/vmm.h"

// Note [CUDA caching allocator]
// Requests are rounded up to 512 bytes. Requests of up to 1 MiB come from the small
// pool, whose segments (cudaMalloc'd regions) are 2 MiB; larger ones from the large pool,
// whose segments are 20 MiB for requests under 10 MiB and the request rounded up to 2 MiB
// otherwise. A free block larger than needed is split (small pool: when at least 512
// bytes remain; large pool: when more than 1 MiB remains); a freed block merges with free
// neighbours of its segment. Free blocks are kept per stream: a block is reused only for
// an allocation on the stream it was allocated on, so work queued on that stream orders
// the reuse. A block also used on other streams (record_stream) is not reusable until an
// event recorded on each of those streams at free time has completed. When cudaMalloc
// fails, all cached free segments are released (after pending events) and the allocation
// is retried once; then OutOfMemoryError is raised, and the process can continue.
//
// Note [Small-block reuse]
// Launch-bound code allocates and frees tiny tensors over and over (u + u in a loop). A
// freed block of the smallest size (512 bytes: up to 128 float32 elements; used on no
// other stream) skips the merge-then-split round trip through the pool: it waits, still
// split, in a LIFO bin (at most kQuickDepth blocks), and the next 512-byte allocation on
// the same stream takes it back in O(1). For the statistics it is an inactive split block
// like any other free one; the neighbour merge skips it (`quick`), and the OOM retry,
// empty_cache and snapshot first return the bin's blocks to the pool. Larger blocks merge
// as before, so fragmentation is bounded by kQuickDepth small blocks.
//
// Note [Expandable segments]
// With `expandable_segments:True` in TENSORPLAY_CUDA_ALLOC_CONF (or, when that is unset,
// PYTORCH_CUDA_ALLOC_CONF; a comma-separated key:value list, unknown keys ignored, read
// once), the large pool of each (device, stream) draws from one expandable segment instead
// of cudaMalloc'd ones: a virtual address range of the device's total memory is reserved
// once (cuda/vmm.h) and physical chunks of the allocation granularity (2 MiB) are mapped at
// its end when no free block fits. Growth maps what the request lacks beyond a free tail
// block (at least 20 MiB for requests under 10 MiB) and extends that tail block, so large
// tensors freed and reallocated in other sizes reuse one address range instead of leaving
// differently-sized cached segments behind. Its blocks live in the large pool's free set and
// split and merge as usual (Block::seg names the segment). The OOM retry and empty_cache
// synchronise the device and unmap the chunks lying wholly inside its free tail.
// Stats: reserved_bytes counts mapped bytes, `segment` counts the segment once while it has
// mapped memory, num_device_alloc/free count grows and shrinks; snapshot shows the segment
// at its mapped size. Off (the default), nothing here runs: the small pool never expands.
//
// Note [Graph pools]
// A CUDA graph replays its kernels on the addresses they had at capture, so the memory its
// capture allocated must stay the graph's: reused only by the graph itself (as in the
// capture) or by other graphs the user declares to share it, never by eager code. While a
// capture runs, allocations made by it (any stream the capture spans: the stream's capture
// id decides) come from a private pool: a small and a large BlockPool of their own, with
// their own segments, split and merged as the global ones. Blocks freed during or after the
// capture return to that pool. A pool counts the graphs using it; once none does, each of
// its segments goes to the global pools as soon as it is wholly free (its last tensor
// died), and the pool is gone with its last segment. Handing segments over needs no driver
// call, so it is safe while some capture runs, ours or another library's in the same
// process (a cudaFree there would invalidate that capture); empty_cache frees them later.
// During any capture the allocator also keeps from calls a capture forbids: no event
// queries (the cross-stream frees wait in `deferred_`), no OOM retry (it frees memory),
// cudaMalloc under the relaxed capture mode (allowed there, as it does not touch a stream).
// The small-block bin (Note [Small-block reuse]) serves only the global small pool.

namespace tp::cuda::allocator {

namespace {

constexpr size_t kMinBlockSize = 512;
constexpr size_t kSmallSize = size_t(1) << 20;
constexpr size_t kSmallBuffer = size_t(2) << 20;
constexpr size_t kLargeBuffer = size_t(20) << 20;
constexpr size_t kMinLargeAlloc = size_t(10) << 20;
constexpr size_t kRoundLarge = size_t(2) << 20;
constexpr size_t kQuickDepth = 32;

struct Stat {
  int64_t current = 0, peak = 0, allocated = 0, freed = 0;
  void add(int64_t n) {
    current += n;
    if (n > 0) allocated += n;
    else freed -= n;
    peak = std::max(peak, current);
  }
};
// PyTorch's stat types: "all", "small_pool", "large_pool".
using StatArray = std::array<Stat, 3>;

struct Stats {
  StatArray allocation, segment, active, inactive_split;
  StatArray allocated_bytes, reserved_bytes, active_bytes, inactive_split_bytes, requested_bytes;
  int64_t num_alloc_retries = 0, num_ooms = 0, num_device_alloc = 0, num_device_free = 0;
  int64_t num_sync_all_streams = 0;
};

void update(StatArray& s, bool small, int64_t n) {
  s[0].add(n);
  s[small ? 1 : 2].add(n);
}

struct BlockPool;
struct Block;
struct PrivatePool;

// An expandable segment (Note [Expandable segments]): `reserved` bytes of address space at
// `base`, of which the first `mapped` are backed by chunks[i] (each `chunk` bytes).
struct ExpandableSegment {
  cudaStream_t stream = nullptr;
  char* base = nullptr;
  size_t reserved = 0, mapped = 0, chunk = 0;
  std::vector<uint64_t> chunks;
  Block* head = nullptr;  // first block; nullptr while nothing is mapped
};

// True when the allocator configuration asks for expandable segments (read once).
bool expandable_requested() {
  static const bool on = [] {
    const char* conf = std::getenv("TENSORPLAY_CUDA_ALLOC_CONF");
    if (!conf) conf = std::getenv("PYTORCH_CUDA_ALLOC_CONF");
    if (!conf) return false;
    auto trim = [](std::string_view v) {
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
      return v;
    };
    bool result = false;
    std::string_view rest(conf);
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      size_t colon = item.find(':');
      if (colon == std::string_view::npos) continue;
      if (trim(item.substr(0, colon)) == "expandable_segments")
        result = trim(item.substr(colon + 1)) == "True";
    }
    if (result && !vmm::available()) {
      std::fprintf(stderr,
                   "TensorPlay warning: expandable_segments:True needs the CUDA driver's virtual "
                   "memory API, which is unavailable; using ordinary segments\n");
      result = false;
    }
    return result;
  }();
  return on;
}

struct Block {
  int device = 0;
  cudaStream_t stream = nullptr;
  size_t size = 0;       // bytes of the block (rounded)
  size_t requested = 0;  // bytes asked for
  char* ptr = nullptr;
  BlockPool* pool = nullptr;
  bool allocated = false;
  bool quick = false;     // free, waiting in a small-block bin (Note [Small-block reuse])
  Block* prev = nullptr;  // neighbours in the same segment
  Block* next = nullptr;
  std::vector<cudaStream_t> stream_uses;  // other streams that used it (record_stream)
  int event_count = 0;                    // events to complete before it is free
  ExpandableSegment* seg = nullptr;       // Note [Expandable segments]
  bool is_split() const { return prev || next; }
};

struct BlockOrder {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return uintptr_t(a->stream) < uintptr_t(b->stream);
    if (a->size != b->size) return a->size < b->size;
    return uintptr_t(a->ptr) < uintptr_t(b->ptr);
  }
};

struct BlockPool {
  std::set<Block*, BlockOrder> blocks;
  bool small = false;
  PrivatePool* owner = nullptr;  // Note [Graph pools]; nullptr for the global pools
};

// A graph's (or several graphs') private pool (Note [Graph pools]).
struct PrivatePool {
  std::pair<uint64_t, uint64_t> id;
  BlockPool small, large;
  int use_count = 0;     // graphs using it
  int64_t segments = 0;  // segments it holds
  int64_t reserved = 0;  // their bytes
  PrivatePool() {
    small.small = true;
    small.owner = large.owner = this;
  }
};

// The calling thread's capture mode set to relaxed for a scope, when a capture is underway
// (cudaMalloc and friends are "unsafe" calls in the global mode).
struct RelaxedCaptureMode {
  bool active = graphs::capture_underway();
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  RelaxedCaptureMode() {
    if (active) TP_CUDA_WARN(cudaThreadExchangeStreamCaptureMode(&mode));
  }
  ~RelaxedCaptureMode() {
    if (active) TP_CUDA_WARN(cudaThreadExchangeStreamCaptureMode(&mode));
  }
};

std::string format_size(size_t n) {
  char buf[64];
  if (n < 1024) std::snprintf(buf, sizeof buf, "%zu bytes", n);
  else if (n < (size_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.2f KiB", double(n) / 1024.0);
  else if (n < (size_t(1) << 30)) std::snprintf(buf, sizeof buf, "%.2f MiB", double(n) / 1048576.0);
  else if (n < (size_t(1) << 40)) std::snprintf(buf, sizeof buf, "%.2f GiB", double(n) / 1073741824.0);
  else std::snprintf(buf, sizeof buf, "%.2f TiB", double(n) / 1099511627776.0);
  return buf;
}

size_t round_size(size_t n) {
  if (n < kMinBlockSize) return kMinBlockSize;
  return (n + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

size_t segment_size(size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

class DeviceAllocator {
 public:
  explicit DeviceAllocator(int device) : device_(device) {
    small_.small = true;
    large_.small = false;
  }

  Block* malloc(size_t requested, cudaStream_t stream, bool graph_pools = true) {
    std::lock_guard<std::mutex> g(mu_);
    const bool capturing = graphs::capture_underway();
    if (!capturing) {
      process_events();
      if (!deferred_.empty()) flush_deferred();
    }
    size_t size = round_size(requested);
    PrivatePool* to = captures_.empty() || !graph_pools ? nullptr : routed_pool(stream);
    if (to) {
      BlockPool& pool = size <= kSmallSize ? to->small : to->large;
      Block* block = take_free(pool, size, stream);
      if (!block) {
        block = new_segment(pool, segment_size(size), stream);
        if (!block) raise_oom(requested, segment_size(size));
      }
      split(block, size, pool);
      return activate(block, requested);
    }
    if (size == kMinBlockSize && !quick_.empty() && quick_.back()->stream == stream) {
      Block* b = quick_.back();
      quick_.pop_back();
      b->quick = false;
      count_inactive_split(b, -1);
      return activate(b, requested);
    }
    BlockPool& pool = size <= kSmallSize ? small_ : large_;
    Block* block = take_free(pool, size, stream);
    if (!block && !pool.small && expandable_requested()) {
      block = grow(size, stream);
      if (!block && !capturing) {
        stats_.num_alloc_retries++;
        release_cached();
        block = grow(size, stream);
      }
      if (!block) raise_oom(requested, size);
    } else if (!block) {
      size_t seg = segment_size(size);
      block = new_segment(pool, seg, stream);
      if (!block && !capturing) {
        // Give the cache back to the driver and try once more (not during a capture).
        stats_.num_alloc_retries++;
        release_cached();
        block = new_segment(pool, seg, stream);
      }
      if (!block) raise_oom(requested, seg);
    }
    split(block, size, pool);
    return activate(block, requested);
  }

  // Splits the unused rest of `block` off as a free block when it is large enough.
  void split(Block* block, size_t size, BlockPool& pool) {
    size_t rest = block->size - size;
    if (pool.small ? rest >= kMinBlockSize : rest > kSmallSize) {
      Block* r = new Block;
      r->device = device_;
      r->stream = block->stream;
      r->size = rest;
      r->ptr = block->ptr + size;
      r->pool = &pool;
      r->seg = block->seg;
      r->prev = block;
      r->next = block->next;
      if (r->next) r->next->prev = r;
      block->next = r;
      block->size = size;
      insert_free(r);
    }
  }

  // Note [Graph pools]: the pool of the capture that `stream`'s work belongs to, if any.
  PrivatePool* routed_pool(cudaStream_t stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    if (cudaStreamGetCaptureInfo(stream, &status, &id) != cudaSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    if (status != cudaStreamCaptureStatusActive) return nullptr;
    for (auto& [cid, pool] : captures_)
      if (cid == id) return pool;
    return nullptr;
  }

  void begin_allocate_to_pool(std::pair<uint64_t, uint64_t> id, unsigned long long capture_id) {
    std::lock_guard<std::mutex> g(mu_);
    PrivatePool*& pool = pools_[id];
    if (!pool) {
      pool = new PrivatePool;
      pool->id = id;
    }
    pool->use_count++;
    captures_.push_back({capture_id, pool});
  }

  void end_allocate_to_pool(unsigned long long capture_id) {
    std::lock_guard<std::mutex> g(mu_);
    for (auto it = captures_.begin(); it != captures_.end(); ++it)
      if (it->first == capture_id) {
        captures_.erase(it);
        break;
      }
  }

  void release_pool(std::pair<uint64_t, uint64_t> id) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = pools_.find(id);
    if (it == pools_.end()) return;
    if (--it->second->use_count <= 0) free_pool(it->second);
  }

  void free(Block* block) {
    std::lock_guard<std::mutex> g(mu_);
    block->allocated = false;
    bool small = block->pool->small;
    update(stats_.allocation, small, -1);
    update(stats_.allocated_bytes, small, -int64_t(block->size));
    update(stats_.requested_bytes, small, -int64_t(block->requested));
    if (!block->stream_uses.empty()) {
      if (graphs::capture_underway()) {
        // Recording events could land in a capture: wait until no capture is underway.
        deferred_.push_back(block);
        return;
      }
      // Used on other streams: free once the work queued there so far has finished.
      DeviceGuard dg(device_);
      for (cudaStream_t s : block->stream_uses) {
        cudaEvent_t ev = get_event();
        TP_CUDA_WARN(cudaEventRecord(ev, s));
        pending_.push_back({ev, block});
        block->event_count++;
      }
      block->stream_uses.clear();
      return;
    }
    if (block->size == kMinBlockSize && block->pool == &small_ && quick_.size() < kQuickDepth) {
      update(stats_.active, true, -1);
      update(stats_.active_bytes, true, -int64_t(block->size));
      block->quick = true;
      count_inactive_split(block, 1);
      quick_.push_back(block);
      return;
    }
    free_block(block);
  }

  // The allocated block at ptr, or nullptr. A walk over every segment's blocks: only
  // record_stream and raw_free ask, so malloc and free keep no map of live blocks.
  Block* find_active(void* ptr) {
    std::lock_guard<std::mutex> g(mu_);
    auto in = [ptr](Block* head) -> Block* {
      for (Block* b = head; b; b = b->next)
        if (b->ptr == ptr && b->allocated) return b;
      return nullptr;
    };
    for (Block* head : segments_)
      if (Block* b = in(head)) return b;
    for (ExpandableSegment* e : expandable_)
      if (Block* b = in(e->head)) return b;
    return nullptr;
  }
  void record_stream(Block* block, cudaStream_t stream) {
    std::lock_guard<std::mutex> g(mu_);
    if (stream == block->stream) return;
    if (std::find(block->stream_uses.begin(), block->stream_uses.end(), stream) ==
        block->stream_uses.end())
      block->stream_uses.push_back(stream);
  }

  void empty_cache() {
    std::lock_guard<std::mutex> g(mu_);
    if (graphs::capture_underway()) return;  // cudaFree would invalidate the capture
    release_cached();
  }

  std::map<std::string, int64_t> stats() {
    std::lock_guard<std::mutex> g(mu_);
    std::map<std::string, int64_t> out;
    auto put = [&](const char* name, const StatArray& s) {
      static const char* types[] = {"all", "small_pool", "large_pool"};
      for (int i = 0; i < 3; ++i) {
        std::string base = std::string(name) + "." + types[i] + ".";
        out[base + "current"] = s[i].current;
        out[base + "peak"] = s[i].peak;
        out[base + "allocated"] = s[i].allocated;
        out[base + "freed"] = s[i].freed;
      }
    };
    put("allocation", stats_.allocation);
    put("segment", stats_.segment);
    put("active", stats_.active);
    put("inactive_split", stats_.inactive_split);
    put("allocated_bytes", stats_.allocated_bytes);
    put("reserved_bytes", stats_.reserved_bytes);
    put("active_bytes", stats_.active_bytes);
    put("inactive_split_bytes", stats_.inactive_split_bytes);
    put("requested_bytes", stats_.requested_bytes);
    out["num_alloc_retries"] = stats_.num_alloc_retries;
    out["num_ooms"] = stats_.num_ooms;
    out["num_sync_all_streams"] = stats_.num_sync_all_streams;
    out["num_device_alloc"] = stats_.num_device_alloc;
    out["num_device_free"] = stats_.num_device_free;
    // Note [Graph pools]: the private pools, their segments and bytes, the captures now
    int64_t pool_segments = 0, pool_reserved = 0, pool_allocated = 0;
    for (auto& [id, pool] : pools_) {
      pool_segments += pool->segments;
      pool_reserved += pool->reserved;
    }
    for (Block* head : segments_)
      if (head->pool->owner)
        for (Block* b = head; b; b = b->next)
          if (b->allocated) pool_allocated += int64_t(b->size);
    out["graph_pools.current"] = int64_t(pools_.size());
    out["graph_pool_segments.current"] = pool_segments;
    out["graph_pool_reserved_bytes.current"] = pool_reserved;
    out["graph_pool_allocated_bytes.current"] = pool_allocated;
    out["graph_captures.current"] = int64_t(captures_.size());
    out["max_split_size"] = -1;
    out["oversize_allocations.current"] = 0;
    out["oversize_allocations.peak"] = 0;
    out["oversize_allocations.allocated"] = 0;
    out["oversize_allocations.freed"] = 0;
    out["oversize_segments.current"] = 0;
    out["oversize_segments.peak"] = 0;
    out["oversize_segments.allocated"] = 0;
    out["oversize_segments.freed"] = 0;
    return out;
  }

  void reset_peak() {
    std::lock_guard<std::mutex> g(mu_);
    for (StatArray* s : all_stats())
      for (Stat& x : *s) x.peak = x.current;
  }

  void reset_accumulated() {
    std::lock_guard<std::mutex> g(mu_);
    for (StatArray* s : all_stats())
      for (Stat& x : *s) x.allocated = x.freed = 0;
    stats_.num_alloc_retries = stats_.num_ooms = 0;
    stats_.num_device_alloc = stats_.num_device_free = stats_.num_sync_all_streams = 0;
  }

  void set_fraction(double f) {
    std::lock_guard<std::mutex> g(mu_);
    fraction_ = f;
    limit_ = size_t(f * double(device_properties(device_).total_memory));
  }
  double fraction() {
    std::lock_guard<std::mutex> g(mu_);
    return fraction_;
  }

  void snapshot(std::vector<SegmentInfo>& out) {
    std::lock_guard<std::mutex> g(mu_);
    flush_quick();
    for (Block* head : segments_) {
      SegmentInfo s{uintptr_t(head->ptr), 0, 0, uintptr_t(head->stream), !head->pool->small,
                    device_, ""};
      for (Block* b = head; b; b = b->next) {
        s.total_size += b->size;
        if (b->allocated) s.allocated_size += b->size;
        s.blocks += std::to_string(b->size) + (b->allocated ? ":active_allocated;" : ":inactive;");
      }
      out.push_back(std::move(s));
    }
    for (ExpandableSegment* e : expandable_) {
      if (!e->head) continue;
      SegmentInfo s{uintptr_t(e->base), e->mapped, 0, uintptr_t(e->stream), true, device_, ""};
      for (Block* b = e->head; b; b = b->next) {
        if (b->allocated) s.allocated_size += b->size;
        s.blocks += std::to_string(b->size) + (b->allocated ? ":active_allocated;" : ":inactive;");
      }
      out.push_back(std::move(s));
    }
  }

 private:
  // Marks a block taken from a pool or a bin as allocated and counts it.
  Block* activate(Block* block, size_t requested) {
    block->allocated = true;
    block->requested = requested;
    bool small = block->pool->small;
    update(stats_.allocation, small, 1);
    update(stats_.allocated_bytes, small, int64_t(block->size));
    update(stats_.active, small, 1);
    update(stats_.active_bytes, small, int64_t(block->size));
    update(stats_.requested_bytes, small, int64_t(requested));
    return block;
  }

  void count_inactive_split(Block* b, int n) {
    if (!b->is_split()) return;
    update(stats_.inactive_split, b->pool->small, n);
    update(stats_.inactive_split_bytes, b->pool->small, n * int64_t(b->size));
  }

  // Returns the blocks waiting in the small-block bin to the pool.
  void flush_quick() {
    for (Block* b : quick_) {
      b->quick = false;
      count_inactive_split(b, -1);
      release_to_pool(b);
    }
    quick_.clear();
  }

  std::array<StatArray*, 9> all_stats() {
    return {&stats_.allocation,      &stats_.segment,          &stats_.active,
            &stats_.inactive_split,  &stats_.allocated_bytes,  &stats_.reserved_bytes,
            &stats_.active_bytes,    &stats_.inactive_split_bytes, &stats_.requested_bytes};
  }

  void insert_free(Block* b) {
    b->pool->blocks.insert(b);
    count_inactive_split(b, 1);
  }

  void erase_free(Block* b) {
    b->pool->blocks.erase(b);
    count_inactive_split(b, -1);
  }

  // The smallest free block of `pool` on `stream` that holds `size` bytes, taken out.
  Block* take_free(BlockPool& pool, size_t size, cudaStream_t stream) {
    Block key;
    key.stream = stream;
    key.size = size;
    key.ptr = nullptr;
    auto it = pool.blocks.lower_bound(&key);
    if (it == pool.blocks.end() || (*it)->stream != stream) return nullptr;
    Block* b = *it;
    erase_free(b);
    return b;
  }

  Block* new_segment(BlockPool& pool, size_t size, cudaStream_t stream) {
    if (limit_ != std::numeric_limits<size_t>::max() &&
        size_t(stats_.reserved_bytes[0].current) + size > limit_)
      return nullptr;
    void* p = nullptr;
    cudaError_t err;
    {
      DeviceGuard dg(device_);
      RelaxedCaptureMode relaxed;
      err = cudaMalloc(&p, size);
    }
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return nullptr;
    }
    TP_CUDA_CHECK(err);
    Block* b = new Block;
    b->device = device_;
    b->stream = stream;
    b->size = size;
    b->ptr = static_cast<char*>(p);
    b->pool = &pool;
    segments_.insert(b);
    stats_.num_device_alloc++;
    update(stats_.segment, pool.small, 1);
    update(stats_.reserved_bytes, pool.small, int64_t(size));
    if (pool.owner) {
      pool.owner->segments++;
      pool.owner->reserved += int64_t(size);
    }
    return b;
  }

  // The expandable segment of `stream`, created (address range reserved) on first use.
  ExpandableSegment* expandable_for(cudaStream_t stream) {
    for (ExpandableSegment* e : expandable_)
      if (e->stream == stream) return e;
    DeviceGuard dg(device_);
    // The driver calls below need the device's primary context current on this thread.
    TP_CUDA_CHECK(cudaSetDevice(device_));
    auto* e = new ExpandableSegment;
    e->stream = stream;
    e->chunk = std::max(vmm::granularity(device_), kRoundLarge);
    size_t total = device_properties(device_).total_memory;
    e->reserved = (total + e->chunk - 1) / e->chunk * e->chunk;
    e->base = vmm::reserve(e->reserved, e->chunk);
    expandable_.push_back(e);
    return e;
  }

  // Maps more memory at the end of `stream`'s expandable segment so that its last block
  // holds `size` bytes, and returns that block (taken out of the pool). nullptr when the
  // device (or the memory fraction, or the address range) has no room.
  Block* grow(size_t size, cudaStream_t stream) {
    ExpandableSegment* e = expandable_for(stream);
    Block* tail = e->head;
    while (tail && tail->next) tail = tail->next;
    bool tail_free = tail && !tail->allocated && tail->event_count == 0;
    size_t need = size - (tail_free ? tail->size : 0);
    auto round = [&](size_t n) { return (n + e->chunk - 1) / e->chunk * e->chunk; };
    size_t bytes = round(size < kMinLargeAlloc ? std::max(need, kLargeBuffer) : need);
    if (e->mapped + bytes > e->reserved) bytes = round(need);
    if (e->mapped + bytes > e->reserved) return nullptr;
    if (limit_ != std::numeric_limits<size_t>::max() &&
        size_t(stats_.reserved_bytes[0].current) + bytes > limit_)
      return nullptr;
    {
      DeviceGuard dg(device_);
      TP_CUDA_CHECK(cudaSetDevice(device_));
      size_t done = 0;
      for (; done < bytes; done += e->chunk) {
        uint64_t h = 0;
        if (!vmm::map_chunk(device_, e->base + e->mapped + done, e->chunk, &h)) break;
        e->chunks.push_back(h);
      }
      if (done < bytes) {
        // Out of memory part way: give back what this call mapped.
        while (done > 0) {
          done -= e->chunk;
          vmm::unmap_chunk(e->base + e->mapped + done, e->chunk, e->chunks.back());
          e->chunks.pop_back();
        }
        return nullptr;
      }
    }
    char* end = e->base + e->mapped;
    if (e->mapped == 0) update(stats_.segment, false, 1);
    e->mapped += bytes;
    stats_.num_device_alloc++;
    update(stats_.reserved_bytes, false, int64_t(bytes));
    if (tail_free) {
      erase_free(tail);
      tail->size += bytes;
      return tail;
    }
    Block* b = new Block;
    b->device = device_;
    b->stream = stream;
    b->size = bytes;
    b->ptr = end;
    b->pool = &large_;
    b->seg = e;
    b->prev = tail;
    if (tail) tail->next = b;
    else e->head = b;
    return b;
  }

  // Unmaps the chunks lying wholly inside the free tail block of an expandable segment.
  void shrink(ExpandableSegment* e) {
    Block* tail = e->head;
    while (tail && tail->next) tail = tail->next;
    if (!tail || tail->allocated || tail->event_count != 0) return;
    size_t from = size_t(tail->ptr - e->base);
    size_t keep = (from + e->chunk - 1) / e->chunk * e->chunk;  // first chunk to unmap
    if (keep >= e->mapped) return;
    DeviceGuard dg(device_);
    TP_CUDA_CHECK(cudaSetDevice(device_));
    // Queued work may still touch the freed memory (cudaFree synchronises the same way; the
    // segment's stream may already be destroyed, so the whole device is waited for).
    TP_CUDA_CHECK(cudaDeviceSynchronize());
    for (size_t off = e->mapped; off > keep;) {
      off -= e->chunk;
      vmm::unmap_chunk(e->base + off, e->chunk, e->chunks.back());
      e->chunks.pop_back();
    }
    size_t bytes = e->mapped - keep;
    erase_free(tail);
    if (keep > from) {
      tail->size = keep - from;
      insert_free(tail);
    } else {
      // Its previous block is in use or waits for events (a free one would have merged).
      if (tail->prev) tail->prev->next = nullptr;
      else e->head = nullptr;
      delete tail;
    }
    e->mapped = keep;
    stats_.num_device_free++;
    update(stats_.reserved_bytes, false, -int64_t(bytes));
    if (e->mapped == 0) update(stats_.segment, false, -1);
  }

  // A block whose events are done (or that had none) goes back to its pool, merged with
  // free neighbours.
  void free_block(Block* b) {
    bool small = b->pool->small;
    update(stats_.active, small, -1);
    update(stats_.active_bytes, small, -int64_t(b->size));
    release_to_pool(b);
  }

  // Puts a free block back into its pool, merged with free neighbours.
  void release_to_pool(Block* b) {
    if (Block* p = b->prev; p && !p->allocated && !p->quick && p->event_count == 0) {
      erase_free(p);
      p->size += b->size;
      p->next = b->next;
      if (p->next) p->next->prev = p;
      delete b;
      b = p;
    }
    if (Block* n = b->next; n && !n->allocated && !n->quick && n->event_count == 0) {
      erase_free(n);
      b->size += n->size;
      b->next = n->next;
      if (b->next) b->next->prev = b;
      delete n;
    }
    insert_free(b);
    if (PrivatePool* owner = b->pool->owner; owner && owner->use_count <= 0 && !b->prev && !b->next)
      free_pool(owner);
  }

  // Hands the whole free segments of a pool no graph uses to the global pools (no driver
  // call); the pool goes with its last segment (Note [Graph pools]).
  void free_pool(PrivatePool* pool) {
    for (BlockPool* bp : {&pool->small, &pool->large}) {
      std::vector<Block*> whole;
      for (Block* b : bp->blocks)
        if (!b->prev && !b->next) whole.push_back(b);
      for (Block* b : whole) {
        erase_free(b);
        pool->segments--;
        pool->reserved -= int64_t(b->size);
        b->pool = bp->small ? &small_ : &large_;
        insert_free(b);
      }
    }
    if (pool->segments == 0) {
      pools_.erase(pool->id);
      delete pool;
    }
  }

  // Gives a whole free segment (one free block) back to the driver.
  void free_segment(Block* b) {
    BlockPool* bp = b->pool;
    erase_free(b);
    segments_.erase(b);
    TP_CUDA_WARN(cudaFree(b->ptr));
    stats_.num_device_free++;
    update(stats_.segment, bp->small, -1);
    update(stats_.reserved_bytes, bp->small, -int64_t(b->size));
    delete b;
  }

  // Frees the blocks whose cross-stream frees waited for the captures to end.
  void flush_deferred() {
    std::vector<Block*> blocks;
    blocks.swap(deferred_);
    DeviceGuard dg(device_);
    for (Block* block : blocks) {
      for (cudaStream_t s : block->stream_uses) {
        cudaEvent_t ev = get_event();
        TP_CUDA_WARN(cudaEventRecord(ev, s));
        pending_.push_back({ev, block});
        block->event_count++;
      }
      block->stream_uses.clear();
      if (block->event_count == 0) free_block(block);
    }
  }

  // Completed events free their blocks.
  void process_events() {
    if (pending_.empty()) return;
    DeviceGuard dg(device_);
    std::vector<std::pair<cudaEvent_t, Block*>> still;
    for (auto& [ev, block] : pending_) {
      cudaError_t err = cudaEventQuery(ev);
      if (err == cudaErrorNotReady) {
        (void)cudaGetLastError();
        still.push_back({ev, block});
        continue;
      }
      TP_CUDA_WARN(err);
      events_.push_back(ev);
      if (--block->event_count == 0) free_block(block);
    }
    pending_.swap(still);
  }

  // Waits for pending events, then returns every whole free segment to the driver.
  void release_cached() {
    flush_quick();
    if (!pending_.empty()) {
      DeviceGuard dg(device_);
      for (auto& [ev, block] : pending_) {
        TP_CUDA_WARN(cudaEventSynchronize(ev));
        events_.push_back(ev);
        if (--block->event_count == 0) free_block(block);
      }
      pending_.clear();
      stats_.num_sync_all_streams++;
    }
    // pools no graph uses any more hand their free segments over first
    std::vector<PrivatePool*> unused;
    for (auto& [id, pool] : pools_)
      if (pool->use_count <= 0) unused.push_back(pool);
    for (PrivatePool* pool : unused) free_pool(pool);
    DeviceGuard dg(device_);
    for (BlockPool* pool : {&small_, &large_}) {
      std::vector<Block*> whole;
      for (Block* b : pool->blocks)
        if (!b->prev && !b->next && !b->seg) whole.push_back(b);
      for (Block* b : whole) free_segment(b);
    }
    for (ExpandableSegment* e : expandable_) shrink(e);
    for (cudaEvent_t ev : events_) TP_CUDA_WARN(cudaEventDestroy(ev));
    events_.clear();
  }

  cudaEvent_t get_event() {
    if (!events_.empty()) {
      cudaEvent_t ev = events_.back();
      events_.pop_back();
      return ev;
    }
    cudaEvent_t ev = nullptr;
    TP_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    return ev;
  }

  [[noreturn]] void raise_oom(size_t requested, size_t segment) {
    stats_.num_ooms++;
    size_t free = 0, total = 0;
    {
      DeviceGuard dg(device_);
      if (cudaMemGetInfo(&free, &total) != cudaSuccess) (void)cudaGetLastError();
    }
    size_t reserved = size_t(stats_.reserved_bytes[0].current);
    size_t allocated = size_t(stats_.allocated_bytes[0].current);
    std::string msg = "CUDA out of memory. Tried to allocate " + format_size(requested) + ". GPU " +
                      std::to_string(device_) + " has a total capacity of " + format_size(total) +
                      " of which " + format_size(free) + " is free. Of the allocated memory " +
                      format_size(allocated) + " is allocated by TensorPlay, and " +
                      format_size(reserved - allocated) +
                      " is reserved by TensorPlay but unallocated (reserved in total: " +
                      format_size(reserved) + ").";
    if (limit_ != std::numeric_limits<size_t>::max())
      msg += " This process may reserve at most " + format_size(limit_) +
             " (set_per_process_memory_fraction).";
    (void)segment;
    throw OutOfMemoryError(std::move(msg));
  }

  int device_;
  std::mutex mu_;
  BlockPool small_, large_;
  std::set<Block*> segments_;  // first block of each segment
  std::vector<ExpandableSegment*> expandable_;  // Note [Expandable segments]
  std::vector<Block*> quick_;  // Note [Small-block reuse]
  std::map<std::pair<uint64_t, uint64_t>, PrivatePool*> pools_;  // Note [Graph pools]
  std::vector<std::pair<unsigned long long, PrivatePool*>> captures_;  // capture id -> pool
  std::vector<Block*> deferred_;  // cross-stream frees made during a capture
  std::vector<std::pair<cudaEvent_t, Block*>> pending_;
  std::vector<cudaEvent_t> events_;  // spare events
  Stats stats_;
  double fraction_ = 1.0;
  size_t limit_ = std::numeric_limits<size_t>::max();
};

// One allocator per device, created on first use and kept for the process's life (no
// teardown at exit, when the CUDA context may already be gone).
// Read without a lock on every allocation and free; written once per device.
std::atomic<DeviceAllocator*> g_devices[kMaxDevices] = {};
std::mutex g_devices_mu;

DeviceAllocator& for_device(int device) {
  device = check_device(device);
  if (DeviceAllocator* a = g_devices[device].load(std::memory_order_acquire)) return *a;
  std::lock_guard<std::mutex> g(g_devices_mu);
  if (!g_devices[device].load(std::memory_order_relaxed))
    g_devices[device].store(new DeviceAllocator(device), std::memory_order_release);
  return *g_devices[device].load(std::memory_order_relaxed);
}

void free_ctx(void* ctx, void*) {
  Block* b = static_cast<Block*>(ctx);
  try {
    for_device(b->device).free(b);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "TensorPlay warning: CUDA free failed: %s\n", e.what());
  }
}

class CudaCachingAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, Deleter* deleter, void** ctx) override {
    if (nbytes == 0) {
      *deleter = nullptr;
      *ctx = nullptr;
      return nullptr;
    }
    int device = current_device();
    Block* b = for_device(device).malloc(nbytes, current_stream(device).handle);
    *deleter = &free_ctx;
    *ctx = b;
    return b->ptr;
  }
};

CudaCachingAllocator g_allocator;

Block* find_block(void* ptr) {
  for (int d = 0; d < device_count(); ++d) {
    DeviceAllocator* a = g_devices[d].load(std::memory_order_acquire);
    if (a)
      if (Block* b = a->find_active(ptr)) return b;
  }
  return nullptr;
}

}  // namespace

void install() { set_allocator(DeviceType::CUDA, &g_allocator); }

void* raw_alloc(size_t nbytes, const Stream& stream) {
  if (nbytes == 0) return nullptr;
  DeviceGuard g(stream.device);
  return for_device(stream.device).malloc(nbytes, stream.handle)->ptr;
}

void* raw_alloc_outside_graphs(size_t nbytes, const Stream& stream) {
  if (nbytes == 0) return nullptr;
  DeviceGuard g(stream.device);
  return for_device(stream.device).malloc(nbytes, stream.handle, false)->ptr;
}

void raw_free(void* ptr) {
  if (!ptr) return;
  Block* b = find_block(ptr);
  TP_CHECK(b, "raw_free: pointer ", uint64_t(uintptr_t(ptr)), " was not allocated by the caching allocator");
  for_device(b->device).free(b);
}

void record_stream(void* ptr, const Stream& stream) {
  if (!ptr) return;
  Block* b = find_block(ptr);
  TP_CHECK(b, "record_stream: the tensor's memory was not allocated by the CUDA caching allocator");
  for_device(b->device).record_stream(b, stream.handle);
}

void empty_cache() {
  for (int d = 0; d < device_count(); ++d) {
    DeviceAllocator* a = g_devices[d].load(std::memory_order_acquire);
    if (a) a->empty_cache();
  }
}

std::map<std::string, int64_t> memory_stats(int device) { return for_device(device).stats(); }
void reset_peak_stats(int device) { for_device(device).reset_peak(); }
void reset_accumulated_stats(int device) { for_device(device).reset_accumulated(); }

void set_memory_fraction(double fraction, int device) {
  TP_CHECK_VALUE(fraction >= 0.0 && fraction <= 1.0, "Invalid fraction value: ", fraction,
                 ". Allowed range: 0~1");
  for_device(device).set_fraction(fraction);
}
double get_memory_fraction(int device) { return for_device(device).fraction(); }

void begin_allocate_to_pool(int device, std::pair<uint64_t, uint64_t> id,
                            unsigned long long capture_id) {
  for_device(device).begin_allocate_to_pool(id, capture_id);
}
void end_allocate_to_pool(int device, unsigned long long capture_id) {
  for_device(device).end_allocate_to_pool(capture_id);
}
void release_pool(int device, std::pair<uint64_t, uint64_t> id) {
  for_device(device).release_pool(id);
}

std::vector<SegmentInfo> snapshot() {
  std::vector<SegmentInfo> out;
  for (int d = 0; d < device_count(); ++d) {
    DeviceAllocator* a = g_devices[d].load(std::memory_order_acquire);
    if (a) a->snapshot(out);
  }
  return out;
}

}  // namespace tp::cuda::allocator
