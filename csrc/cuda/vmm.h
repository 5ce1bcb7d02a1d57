// The CUDA driver's virtual memory API (reserve an address range, map physical chunks into
// it), reached through cudaGetDriverEntryPoint so that TensorPlay does not link libcuda.
// Used by the caching allocator's expandable segments (Note [Expandable segments]).
#pragma once
#include <cstddef>
#include <cstdint>

namespace tp::cuda::vmm {

/// True when the driver's virtual memory entry points could be loaded (looked up once).
bool available();
/// The allocation granularity (bytes) of device memory on `device`.
size_t granularity(int device);
/// Reserves `size` bytes of device virtual address space aligned to `align`; throws on failure.
char* reserve(size_t size, size_t align);
/// Creates a physical chunk of `size` bytes on `device`, maps it at `addr` and makes it
/// readable and writable by `device`. Returns false (nothing left behind) when the device
/// is out of memory; throws on other errors. `*handle` receives the chunk's handle.
bool map_chunk(int device, char* addr, size_t size, uint64_t* handle);
/// Unmaps the chunk mapped at `addr` by map_chunk and releases its physical memory.
void unmap_chunk(char* addr, size_t size, uint64_t handle);

}  // namespace tp::cuda::vmm
