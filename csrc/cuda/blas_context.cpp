#include "cuda/blas_context.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "cuda/caching_allocator.h"
#include "cuda/handle_pool.h"
#include "cuda/runtime.h"

// Note [cuBLAS handles and workspaces]
// A cuBLAS handle is not safe to use from two threads at once, so each thread gets its own
// pair (cuBLAS + cuBLASLt) per device, made on first use. When a thread ends, its pairs go to
// a per-device free list that later threads take from; handles are never destroyed (no
// CUDA calls at exit, when the driver may already be gone). That cache (thread_handles in
// handle_pool.h) also holds the cuSOLVER handles of linalg.cpp, which need no workspace
// binding (their workspaces come per call from the caching allocator). Each call binds the
// handle to the thread's current stream; binding resets cuBLAS's workspace, so the handle's
// workspace for that stream is set again. Workspaces come from the caching allocator on
// the stream they serve (so stream order alone makes their reuse safe, and cuBLAS never
// cudaMallocs its own), one per (handle, stream) pair, kept for the process. cuBLASLt
// calls pass the same buffer explicitly (PyTorch's unified workspace). The size follows
// PyTorch: 32 MiB on Hopper and later, 8 MiB + 128 KiB before, or CUBLAS_WORKSPACE_CONFIG.

namespace tp::cuda::blas {

void fail_cublas(int status, const char* status_name, const char* expr) {
  TP_FAIL("CUDA error: ", status_name ? status_name : "unknown cuBLAS status", " (", status,
          ") when calling `", expr, "`");
}

namespace {

struct Workspace {
  cudaStream_t stream;
  void* ptr;
  size_t size;
};

struct HandlePair {
  cublasHandle_t handle = nullptr;
  cublasLtHandle_t lt = nullptr;
  cudaStream_t bound = nullptr;  // the stream `handle` was last bound to
  bool is_bound = false;
  std::vector<Workspace> workspaces;
};

HandlePair* make_pair() {
  auto* p = new HandlePair;
  TP_CUBLAS_CHECK(cublasCreate(&p->handle));
  TP_CUBLAS_CHECK(cublasLtCreate(&p->lt));
  return p;
}

/// KiB sizes times counts of ":SIZE:COUNT" pairs; false when `s` holds none.
bool parse_workspace_config(const char* s, size_t* bytes) {
  size_t total = 0;
  bool any = false;
  for (const char* p = s; *p;) {
    char* end = nullptr;
    if (*p != ':') { ++p; continue; }
    unsigned long long size = std::strtoull(p + 1, &end, 10);
    if (end == p + 1 || *end != ':') { ++p; continue; }
    const char* count_at = end + 1;
    unsigned long long count = std::strtoull(count_at, &end, 10);
    if (end == count_at) { ++p; continue; }
    total += size_t(size) * 1024 * size_t(count);
    any = true;
    p = end;
  }
  *bytes = total;
  return any;
}

}  // namespace

size_t workspace_size(int device) {
  static const char* config = std::getenv("CUBLAS_WORKSPACE_CONFIG");
  size_t bytes = 0;
  if (config && parse_workspace_config(config, &bytes)) return bytes;
  int major = device_properties(device).major;
  bool large = major >= 9 && major <= 12;  // Hopper, Blackwell
  return large ? size_t(4096) * 8 * 1024 : size_t(4096) * 1024 * 2 + size_t(16) * 1024 * 8;
}

Context current_context() {
  int device = current_device();
  HandlePair* pair = &thread_handles(device, make_pair);
  Stream stream = current_stream(device);
  Workspace* ws = nullptr;
  for (Workspace& w : pair->workspaces)
    if (w.stream == stream.handle) ws = &w;
  if (!ws) {
    size_t size = workspace_size(device);
    // kept for the thread's life: never from a graph's pool, even when first used in a capture
    void* ptr = size ? allocator::raw_alloc_outside_graphs(size, stream) : nullptr;
    pair->workspaces.push_back({stream.handle, ptr, size});
    ws = &pair->workspaces.back();
    pair->is_bound = false;
  }
  if (!pair->is_bound || pair->bound != stream.handle) {
    TP_CUBLAS_CHECK(cublasSetStream(pair->handle, stream.handle));
    TP_CUBLAS_CHECK(cublasSetWorkspace(pair->handle, ws->ptr, ws->size));
    pair->bound = stream.handle;
    pair->is_bound = true;
  }
  return {pair->handle, pair->lt, stream.handle, ws->ptr, ws->size};
}

}  // namespace tp::cuda::blas
