// The FFT primitives on CUDA tensors through cuFFT: the CUDA kernels of _fft_c2c, _fft_r2c
// and _fft_c2r (registered under the CUDA key from their yaml entries' `cuda_impl`, Note
// [Backend kernels]; the CPU kernels are csrc/ops/fft/fft.cpp).
//
// Note [cuFFT plans]
// The input is made dense in the result's layout order (Note [FFT output layout]): batch
// dims outermost, the transformed dims innermost, so each call is one cufftPlanMany batch of
// dense signals (rank 1-3; more dims go in passes, the transform being separable). Plans are
// cached per (device, type, sizes, batch) in a small LRU (creating one costs 10-100 us and
// a kernel compile on first use of a size); they run on the thread's current stream with a
// work area from the caching allocator (auto-allocation off), so a plan never holds memory
// of its own and replays inside CUDA graphs draw their workspace from the graph's pool. c2r
// overwrites its input (cuFFT's rule), so it gets a private copy. cuFFT does not scale; the
// normalisation is a multiply of the result's real view. A two-sided r2c (fft of a real
// signal) is a c2c of the signal made complex.
#include <cufft.h>

#include <algorithm>
#include <cmath>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cuda/runtime.h"
#include "ops/fft/fft.h"
#include "ops/pointwise.h"
#include "tensorplay/ops_api.h"

namespace tp {
namespace {

const char* cufft_error_name(cufftResult r) {
  switch (r) {
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    default: return "unknown cuFFT error";
  }
}

void check(cufftResult r, const char* what) {
  TP_CHECK(r == CUFFT_SUCCESS, "cuFFT error in ", what, ": ", cufft_error_name(r), " (", int(r), ")");
}

struct PlanKey {
  int device;
  int type;  // cufftType
  int rank;
  long long n[3];
  long long batch;
  bool operator==(const PlanKey& o) const {
    return device == o.device && type == o.type && rank == o.rank && batch == o.batch && n[0] == o.n[0] &&
           n[1] == o.n[1] && n[2] == o.n[2];
  }
};
struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const {
    size_t h = size_t(k.device) * 1000003u ^ size_t(k.type) * 7919u ^ size_t(k.rank);
    for (long long v : k.n) h = h * 31u + size_t(v);
    return h * 131u + size_t(k.batch);
  }
};

struct Plan {
  cufftHandle handle = 0;
  size_t work_size = 0;
};

/// The LRU of plans (Note [cuFFT plans]). A plan is used under the cache's lock only while
/// its stream, work area and launch are set, so two threads never share one mid-call.
class PlanCache {
 public:
  static constexpr size_t kMaxPlans = 64;
  std::mutex mu;
  Plan& get(const PlanKey& key) {
    auto it = map_.find(key);
    if (it != map_.end()) {
      order_.splice(order_.begin(), order_, it->second.second);
      return it->second.first;
    }
    if (map_.size() >= kMaxPlans) {
      const PlanKey& old = order_.back();
      cufftDestroy(map_.at(old).first.handle);
      map_.erase(old);
      order_.pop_back();
    }
    Plan p;
    check(cufftCreate(&p.handle), "cufftCreate");
    check(cufftSetAutoAllocation(p.handle, 0), "cufftSetAutoAllocation");
    long long n[3] = {key.n[0], key.n[1], key.n[2]};
    cufftResult r = cufftMakePlanMany64(p.handle, key.rank, n, nullptr, 1, 0, nullptr, 1, 0,
                                        cufftType(key.type), key.batch, &p.work_size);
    if (r != CUFFT_SUCCESS) {
      cufftDestroy(p.handle);
      check(r, "cufftMakePlanMany64");
    }
    order_.push_front(key);
    auto& slot = map_[key];
    slot = {p, order_.begin()};
    return slot.first;
  }

 private:
  std::list<PlanKey> order_;
  std::unordered_map<PlanKey, std::pair<Plan, std::list<PlanKey>::iterator>, PlanKeyHash> map_;
};

PlanCache& plan_cache() {
  static PlanCache* cache = new PlanCache();  // never destroyed: plans may outlive atexit
  return *cache;
}

/// One cuFFT execution over dense [batch, n...] signals of `in` into `out` (both already in
/// that layout). `n` are the logical (complex or real) signal sizes, at most three.
void exec(cufftType type, const std::vector<int64_t>& n, int64_t batch, const Tensor& in, const Tensor& out,
          bool forward) {
  const int device = in.device().index < 0 ? 0 : in.device().index;
  cuda::DeviceGuard guard(device);
  PlanKey key{device, int(type), int(n.size()), {0, 0, 0}, batch};
  for (size_t i = 0; i < n.size(); ++i) key.n[i] = n[i];
  cuda::Stream stream = cuda::current_stream(device);
  auto& cache = plan_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  Plan& plan = cache.get(key);
  Tensor work;
  if (plan.work_size) {
    const int64_t bytes[1] = {int64_t(plan.work_size)};
    work = empty_tensor(IntArrayRef(bytes, 1), DType::UInt8, in.device());
    check(cufftSetWorkArea(plan.handle, work.data_ptr()), "cufftSetWorkArea");
  }
  check(cufftSetStream(plan.handle, stream.handle), "cufftSetStream");
  const int dir = forward ? CUFFT_FORWARD : CUFFT_INVERSE;
  switch (type) {
    case CUFFT_C2C:
      check(cufftExecC2C(plan.handle, reinterpret_cast<cufftComplex*>(in.data_ptr()),
                         reinterpret_cast<cufftComplex*>(out.data_ptr()), dir), "cufftExecC2C");
      break;
    case CUFFT_Z2Z:
      check(cufftExecZ2Z(plan.handle, reinterpret_cast<cufftDoubleComplex*>(in.data_ptr()),
                         reinterpret_cast<cufftDoubleComplex*>(out.data_ptr()), dir), "cufftExecZ2Z");
      break;
    case CUFFT_R2C:
      check(cufftExecR2C(plan.handle, reinterpret_cast<cufftReal*>(in.data_ptr()),
                         reinterpret_cast<cufftComplex*>(out.data_ptr())), "cufftExecR2C");
      break;
    case CUFFT_D2Z:
      check(cufftExecD2Z(plan.handle, reinterpret_cast<cufftDoubleReal*>(in.data_ptr()),
                         reinterpret_cast<cufftDoubleComplex*>(out.data_ptr())), "cufftExecD2Z");
      break;
    case CUFFT_C2R:
      check(cufftExecC2R(plan.handle, reinterpret_cast<cufftComplex*>(in.data_ptr()),
                         reinterpret_cast<cufftReal*>(out.data_ptr())), "cufftExecC2R");
      break;
    case CUFFT_Z2D:
      check(cufftExecZ2D(plan.handle, reinterpret_cast<cufftDoubleComplex*>(in.data_ptr()),
                         reinterpret_cast<cufftDoubleReal*>(out.data_ptr())), "cufftExecZ2D");
      break;
    default: TP_CHECK(false, "cuFFT: unknown transform type");
  }
  // the work area goes back to the caching allocator stream-ordered (freed after the launch
  // on this stream); holding `work` to here keeps it alive past the enqueue
}

/// `t` permuted into the layout order and dense: a fresh copy when `fresh` (for cuFFT calls
/// that overwrite their input) or when `t` is not dense in that order. Complex tensors copy
/// through their real view (the copy kernels' float path).
Tensor dense_in_order(const Tensor& t, const fft::Layout& L, bool fresh) {
  Tensor p = permute(t, IntArrayRef(L.perm.data(), L.perm.size()));
  if (!fresh && p.is_contiguous()) return p;
  if (!is_complex(p.dtype())) return clone(contiguous(p));
  Tensor r = view_as_real(p);
  return view_as_complex(fresh && p.is_contiguous() ? clone(r) : contiguous(r));
}

Tensor permuted(const Tensor& t, const fft::Layout& L) { return permute(t, IntArrayRef(L.perm.data(), L.perm.size())); }

void scale(const Tensor& out, int64_t normalization, int64_t n) {
  const double f = fft::norm_factor(normalization, n);
  if (f == 1.0) return;
  Tensor r = is_complex(out.dtype()) ? view_as_real(out) : out;
  mul_(r, wrapped_scalar(Scalar(f)));  // in place on the result's memory
}

int64_t signal_numel(IntArrayRef sizes, const DimVector& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= sizes[size_t(d)];
  return n;
}

/// The signal sizes (layout order) and the batch of the dense [batch, n...] view.
std::vector<int64_t> signal_sizes(IntArrayRef sizes, const DimVector& dims, int64_t* batch, int64_t numel) {
  std::vector<int64_t> n;
  int64_t sig = 1;
  for (int64_t d : dims) {
    n.push_back(sizes[size_t(d)]);
    sig *= sizes[size_t(d)];
  }
  *batch = sig ? numel / sig : 0;
  return n;
}

}  // namespace

Tensor fft_c2c_cuda(const Tensor& self, IntArrayRef dim, int64_t normalization, bool forward, OutArg out) {
  fft::Layout L = fft::plan("_fft_c2c", fft::Kind::C2C, self, dim, 0);
  if (L.dims.size() > 3) {  // in passes: the last three dims, then the others
    DimVector head(L.dims.data(), L.dims.size() - 3), tail(L.dims.data() + L.dims.size() - 3, 3);
    Tensor t = _fft_c2c(self, IntArrayRef(tail.data(), 3), 0, forward);
    Tensor r = _fft_c2c(t, IntArrayRef(head.data(), head.size()), 0, forward);
    scale(r, normalization, signal_numel(self.sizes(), L.dims));
    return fft::finish(r, out);
  }
  Tensor result = fft::make_output(self, L, self.dtype());
  if (result.numel() == 0) return fft::finish(result, out);
  Tensor in = dense_in_order(self, L, false);
  int64_t batch = 0;
  auto n = signal_sizes(self.sizes(), L.dims, &batch, self.numel());
  Tensor o = permuted(result, L);
  exec(self.dtype() == DType::Complex64 ? CUFFT_C2C : CUFFT_Z2Z, n, batch, in, o, forward);
  scale(result, normalization, signal_numel(self.sizes(), L.dims));
  return fft::finish(result, out);
}

Tensor fft_r2c_cuda(const Tensor& self, IntArrayRef dim, int64_t normalization, bool onesided, OutArg out) {
  fft::Layout L = fft::plan("_fft_r2c", fft::Kind::R2C, self, dim, 0);
  if (!onesided) {
    Tensor z = complex(self, zeros(self.sizes(), self.dtype(), self.device()));
    return fft::finish(_fft_c2c(z, dim, normalization, true), out);
  }
  const int64_t last = L.dims[L.dims.size() - 1];
  if (L.dims.size() > 3) {  // r2c over the last three, then c2c over the others
    DimVector head(L.dims.data(), L.dims.size() - 3), tail(L.dims.data() + L.dims.size() - 3, 3);
    Tensor t = _fft_r2c(self, IntArrayRef(tail.data(), 3), 0, true);
    Tensor r = _fft_c2c(t, IntArrayRef(head.data(), head.size()), 0, true);
    scale(r, normalization, signal_numel(self.sizes(), L.dims));
    return fft::finish(r, out);
  }
  L.out_sizes[size_t(last)] = self.size(last) / 2 + 1;
  Tensor result = fft::make_output(self, L, to_complex_dtype(self.dtype()));
  if (result.numel() == 0) return fft::finish(result, out);
  Tensor in = dense_in_order(self, L, false);
  int64_t batch = 0;
  auto n = signal_sizes(self.sizes(), L.dims, &batch, self.numel());
  exec(self.dtype() == DType::Float32 ? CUFFT_R2C : CUFFT_D2Z, n, batch, in, permuted(result, L), true);
  scale(result, normalization, signal_numel(self.sizes(), L.dims));
  return fft::finish(result, out);
}

Tensor fft_c2r_cuda(const Tensor& self, IntArrayRef dim, int64_t normalization, int64_t last_dim_size, OutArg out) {
  fft::Layout L = fft::plan("_fft_c2r", fft::Kind::C2R, self, dim, last_dim_size);
  if (L.dims.size() > 3) {  // c2c (inverse) over the leading dims, then c2r over the last three
    DimVector head(L.dims.data(), L.dims.size() - 3), tail(L.dims.data() + L.dims.size() - 3, 3);
    Tensor t = _fft_c2c(self, IntArrayRef(head.data(), head.size()), 0, false);
    Tensor r = _fft_c2r(t, IntArrayRef(tail.data(), 3), 0, last_dim_size);
    scale(r, normalization, signal_numel(L.out_sizes, L.dims));
    return fft::finish(r, out);
  }
  Tensor result = fft::make_output(self, L, to_real_dtype(self.dtype()));
  if (result.numel() == 0) return fft::finish(result, out);
  Tensor in = dense_in_order(self, L, true);
  int64_t batch = 0;
  auto n = signal_sizes(L.out_sizes, L.dims, &batch, result.numel());
  exec(self.dtype() == DType::Complex64 ? CUFFT_C2R : CUFFT_Z2D, n, batch, in, permuted(result, L), false);
  scale(result, normalization, signal_numel(L.out_sizes, L.dims));
  return fft::finish(result, out);
}

}  // namespace tp
