// Per-(device, thread) objects holding CUDA library handles (cuBLAS, cuSOLVER), shared by
// blas_context.cpp and linalg.cpp; see Note [cuBLAS handles and workspaces].
#pragma once
#include <mutex>
#include <vector>

#include "cuda/runtime.h"

namespace tp::cuda {

/// The calling thread's `Handles` for `device`, made by `make()` (with `device` current) on
/// first use. Library handles are not safe to share between threads, so each thread has
/// its own; when a thread ends they go to a per-device free list that later threads take
/// from. They are never destroyed (no library calls at exit, when the driver may be gone).
template <class Handles>
Handles& thread_handles(int device, Handles* (*make)()) {
  struct FreeList {
    std::mutex mutex;
    std::vector<Handles*> by_device[kMaxDevices];
  };
  static FreeList* free_list = new FreeList;  // leaked on purpose: outlives thread exits
  struct Owned {
    Handles* by_device[kMaxDevices] = {};
    ~Owned() {
      std::lock_guard<std::mutex> lock(free_list->mutex);
      for (int d = 0; d < kMaxDevices; ++d)
        if (by_device[d]) free_list->by_device[d].push_back(by_device[d]);
    }
  };
  thread_local Owned owned;
  Handles*& mine = owned.by_device[device];
  if (!mine) {
    {
      std::lock_guard<std::mutex> lock(free_list->mutex);
      std::vector<Handles*>& list = free_list->by_device[device];
      if (!list.empty()) {
        mine = list.back();
        list.pop_back();
      }
    }
    if (!mine) mine = make();
  }
  return *mine;
}

}  // namespace tp::cuda
