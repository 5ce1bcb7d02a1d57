// CPU storages in shared memory: Tensor.share_memory_ and tensorplay.multiprocessing.
#pragma once
#include <cstddef>

#include "core/storage.h"

namespace tp {

/// Moves a CPU storage's bytes into shared memory (an anonymous memfd mapped MAP_SHARED);
/// the storage keeps its identity, version and views. No-op when it is there already.
/// The storage is no longer resizable (PyTorch: "Tensors in shared memory cannot be resized").
void share_memory(StorageImpl& storage);
/// Whether the storage's memory is a shared-memory mapping made here.
bool is_shared(const StorageImpl& storage);
/// The file descriptor of a shared storage's memory (owned by the storage), or -1.
int shared_fd(const StorageImpl& storage);
/// A storage mapping `nbytes` of the shared-memory file `fd` (another process's, received
/// over a socket). The storage keeps its own duplicate of fd; the caller still owns `fd`.
/// A file already mapped in this process (same device and inode) gives back the storage
/// that maps it, so tensors sent separately keep sharing one storage, as in PyTorch.
intrusive_ptr<StorageImpl> storage_from_shared_fd(int fd, size_t nbytes);

}  // namespace tp
