#include "core/shared_memory.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "core/error.h"

namespace tp {

// Note [Shared memory storages]
// share_memory_ copies a CPU storage into a memfd (an anonymous shared-memory file, no
// name to clean up) mapped MAP_SHARED, and swaps it in as the storage's buffer. Sending
// a tensor through tensorplay.multiprocessing (the "file_descriptor" strategy, PyTorch's
// default on Linux) passes that file descriptor to the other process, which maps the same
// pages: writes on either side are seen by the other. A process keeps one storage per
// shared file (keyed by device and inode, as PyTorch's shared_cache keys by fd_id), so
// views sent one by one arrive as views of one storage. The cache holds plain pointers,
// erased by the mapping's deleter; a lookup takes a reference only if the storage is not
// already being destroyed (try_incref).

namespace {

struct ShmMapping {
  int fd;
  size_t mapped;  // bytes mapped (at least 1: mmap refuses 0)
  std::pair<dev_t, ino_t> key;
};

std::mutex g_cache_mu;
std::map<std::pair<dev_t, ino_t>, std::pair<StorageImpl*, ShmMapping*>> g_cache;

void shm_deleter(void* ctx, void* data) {
  auto* m = static_cast<ShmMapping*>(ctx);
  {
    std::lock_guard<std::mutex> g(g_cache_mu);
    auto it = g_cache.find(m->key);
    if (it != g_cache.end() && it->second.second == m) g_cache.erase(it);
  }
  munmap(data, m->mapped);
  close(m->fd);
  delete m;
}

std::pair<dev_t, ino_t> file_key(int fd) {
  struct stat st;
  TP_CHECK(fstat(fd, &st) == 0, "shared memory: fstat failed: ", std::strerror(errno));
  return {st.st_dev, st.st_ino};
}

/// Maps `fd` (which the new mapping owns) and describes the mapping.
void* map_fd(int fd, size_t nbytes, ShmMapping** out) {
  const size_t mapped = nbytes ? nbytes : 1;
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    close(fd);
    TP_FAIL("shared memory: mmap of ", mapped, " bytes failed: ", std::strerror(err));
  }
  *out = new ShmMapping{fd, mapped, file_key(fd)};
  return p;
}

void remember(StorageImpl* s, ShmMapping* m) {
  std::lock_guard<std::mutex> g(g_cache_mu);
  g_cache[m->key] = {s, m};
}

}  // namespace

bool is_shared(const StorageImpl& storage) { return storage.deleter() == &shm_deleter; }

int shared_fd(const StorageImpl& storage) {
  return is_shared(storage) ? static_cast<ShmMapping*>(storage.deleter_context())->fd : -1;
}

void share_memory(StorageImpl& storage) {
  if (is_shared(storage)) return;
  TP_CHECK(storage.device().type == DeviceType::CPU, "_share_fd_: only available on CPU");
  const size_t n = storage.nbytes();
  int fd = memfd_create("tensorplay_shared", MFD_CLOEXEC);
  TP_CHECK(fd >= 0, "share_memory_: memfd_create failed: ", std::strerror(errno));
  if (ftruncate(fd, off_t(n ? n : 1)) != 0) {
    int err = errno;
    close(fd);
    TP_FAIL("share_memory_: unable to resize shared memory to ", n, " bytes: ", std::strerror(err));
  }
  ShmMapping* m = nullptr;
  void* p = map_fd(fd, n, &m);
  if (n) std::memcpy(p, storage.data(), n);
  storage.replace_data(p, n, &shm_deleter, m);
  storage.set_resizable(false);
  remember(&storage, m);
}

intrusive_ptr<StorageImpl> storage_from_shared_fd(int fd, size_t nbytes) {
  auto key = file_key(fd);
  {
    std::lock_guard<std::mutex> g(g_cache_mu);
    auto it = g_cache.find(key);
    if (it != g_cache.end() && it->second.first->try_incref()) {
      intrusive_ptr<StorageImpl> s(it->second.first);
      s->decref();  // the reference try_incref took; `s` holds its own
      return s;
    }
  }
  int own = dup(fd);
  TP_CHECK(own >= 0, "shared memory: dup failed: ", std::strerror(errno));
  ShmMapping* m = nullptr;
  void* p = map_fd(own, nbytes, &m);
  auto s = make_intrusive<StorageImpl>(p, nbytes, Device(DeviceType::CPU), &shm_deleter, m);
  remember(s.get(), m);
  return s;
}

}  // namespace tp
