// Driver virtual memory entry points for expandable segments (see vmm.h).
#include "cuda/vmm.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <mutex>
#include <string>

#include "core/error.h"

namespace tp::cuda::vmm {

namespace {

struct Driver {
  decltype(&::cuMemAddressReserve) address_reserve = nullptr;
  decltype(&::cuMemCreate) create = nullptr;
  decltype(&::cuMemMap) map = nullptr;
  decltype(&::cuMemSetAccess) set_access = nullptr;
  decltype(&::cuMemUnmap) unmap = nullptr;
  decltype(&::cuMemRelease) release = nullptr;
  decltype(&::cuMemGetAllocationGranularity) granularity = nullptr;
  bool ok = false;
};

template <class F>
bool load(const char* name, F* fn) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult status{};
#if CUDART_VERSION >= 12050
  cudaError_t err = cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &status);
#else
  cudaError_t err = cudaGetDriverEntryPoint(name, &p, cudaEnableDefault, &status);
#endif
  if (err != cudaSuccess || status != cudaDriverEntryPointSuccess || !p) {
    (void)cudaGetLastError();
    return false;
  }
  *fn = reinterpret_cast<F>(p);
  return true;
}

const Driver& driver() {
  static const Driver d = [] {
    Driver r;
    r.ok = load("cuMemAddressReserve", &r.address_reserve) && load("cuMemCreate", &r.create) &&
           load("cuMemMap", &r.map) && load("cuMemSetAccess", &r.set_access) &&
           load("cuMemUnmap", &r.unmap) && load("cuMemRelease", &r.release) &&
           load("cuMemGetAllocationGranularity", &r.granularity);
    return r;
  }();
  return d;
}

void check(CUresult r, const char* call) {
  TP_CHECK(r == CUDA_SUCCESS, "CUDA driver error ", int(r), " in ", call);
}

CUmemAllocationProp device_prop(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

}  // namespace

bool available() { return driver().ok; }

size_t granularity(int device) {
  CUmemAllocationProp prop = device_prop(device);
  size_t g = 0;
  check(driver().granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
  return g;
}

char* reserve(size_t size, size_t align) {
  CUdeviceptr p = 0;
  check(driver().address_reserve(&p, size, align, 0, 0), "cuMemAddressReserve");
  return reinterpret_cast<char*>(uintptr_t(p));
}

bool map_chunk(int device, char* addr, size_t size, uint64_t* handle) {
  const Driver& d = driver();
  CUmemAllocationProp prop = device_prop(device);
  CUmemGenericAllocationHandle h = 0;
  CUresult r = d.create(&h, size, &prop, 0);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) return false;
  check(r, "cuMemCreate");
  CUdeviceptr p = CUdeviceptr(uintptr_t(addr));
  r = d.map(p, size, 0, h, 0);
  if (r != CUDA_SUCCESS) {
    (void)d.release(h);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return false;
    check(r, "cuMemMap");
  }
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  r = d.set_access(p, size, &access, 1);
  if (r != CUDA_SUCCESS) {
    (void)d.unmap(p, size);
    (void)d.release(h);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return false;
    check(r, "cuMemSetAccess");
  }
  *handle = uint64_t(h);
  return true;
}

void unmap_chunk(char* addr, size_t size, uint64_t handle) {
  const Driver& d = driver();
  check(d.unmap(CUdeviceptr(uintptr_t(addr)), size), "cuMemUnmap");
  check(d.release(CUmemGenericAllocationHandle(handle)), "cuMemRelease");
}

}  // namespace tp::cuda::vmm
