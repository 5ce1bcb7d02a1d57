// Convolutions through cuDNN: descriptors, the per-(device, thread) handle, the algorithm
// choice and its cache, and the forward / backward-data / backward-filter calls.
#include "cuda/cudnn_conv.h"

#include <cudnn.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <utility>
#include <vector>

#include "core/deterministic.h"
#include "core/error.h"
#include "core/matmul_settings.h"
#include "cuda/caching_allocator.h"
#include "cuda/check.h"
#include "cuda/graphs/capture.h"
#include "cuda/cudnn_handle.h"
#include "cuda/handle_pool.h"
#include "cuda/runtime.h"
#include "ops/nn.h"
#include "tensorplay/ops_api.h"

// cuDNN 9 marks the legacy convolution API deprecated (in favour of its graph API) but ships
// and supports it; PyTorch's convolutions use it too.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

// Note [cuDNN convolutions]
// Three calls serve every convolution (plain convolution y = conv(x, w)): forward (y),
// backward-data (dx; a transposed convolution's forward) and backward-filter (dw). A 1-D
// convolution is described as a 2-D one of height 1 (the same memory); 2-D and 3-D ones
// as 4-D and 5-D tensors. Inputs are made dense in one layout, row-major or channels last
// (the caller's choice, PyTorch's rule: the input's or the weight's strides), and the
// filter descriptor says which (NCHW or NHWC). Half types compute in float32 on tensor
// cores; float32 uses TF32 only when tp.backends.cudnn.allow_tf32 (else FMA math).
// The algorithm: with tp.backends.cudnn.benchmark, cudnnFind*AlgorithmEx times them all on
// the call's own buffers once per shape key; otherwise cudnnGet*Algorithm_v7's heuristic
// order. Either list (successful entries only; deterministic ones only under
// tp.backends.cudnn.deterministic or tp.use_deterministic_algorithms) is cached per key
// (pass, dtype, layout, sizes, parameters, device, flags) with each tried entry's workspace
// bytes (asked of cuDNN once) and the entry that last ran. A call tries that winner first,
// then the others in the list's order, each whose workspace can be allocated and that runs:
// a repeated call makes no workspace query and runs the winner straight away, and a winner
// whose workspace no longer fits still falls back to the rest. None (cuDNN has fewer
// channels-last kernels, e.g. float64 or grouped 3-D ones): channels last is retried
// row-major and laid out after; then the caller's fallback (a list none of whose entries ran, for want of
// anything but memory, is cached empty). Workspaces are uint8 tensors from the caching
// allocator on the current stream. The descriptors are still made per call here; with the
// backend-API switch on, a call goes through a cached execution plan first (Note [cuDNN
// backend API]) and only what that refuses comes here.

namespace tp::cuda::cudnn {

namespace {

[[noreturn]] void fail_cudnn(cudnnStatus_t status, const char* expr) {
  TP_FAIL("cuDNN error: ", cudnnGetErrorString(status), " when calling `", expr, "`");
}

}  // namespace

}  // namespace tp::cuda::cudnn

/// Runs a cuDNN call and raises RuntimeError naming it and cuDNN's message if it fails.
#define TP_CUDNN_CHECK(expr)                                                  \
  do {                                                                        \
    cudnnStatus_t tp_cudnn_st_ = (expr);                                      \
    if (__builtin_expect(tp_cudnn_st_ != CUDNN_STATUS_SUCCESS, 0))            \
      ::tp::cuda::cudnn::fail_cudnn(tp_cudnn_st_, #expr);                     \
  } while (0)

namespace tp::cuda::cudnn {

namespace {

// ------------------------------------------------------------------ handle and descriptors

struct CudnnHandle {
  cudnnHandle_t handle = nullptr;
  cudaStream_t bound = nullptr;  // the stream `handle` was last bound to
  bool is_bound = false;
};

CudnnHandle* make_handle() {
  auto* h = new CudnnHandle;
  TP_CUDNN_CHECK(cudnnCreate(&h->handle));
  return h;
}

}  // namespace

cudnnHandle_t current_handle(int device) {
  CudnnHandle& h = thread_handles(device, make_handle);
  cudaStream_t s = current_stream(device).handle;
  if (!h.is_bound || h.bound != s) {
    TP_CUDNN_CHECK(cudnnSetStream(h.handle, s));
    h.bound = s;
    h.is_bound = true;
  }
  return h.handle;
}

namespace {

/// An owned cuDNN descriptor, destroyed at scope end.
template <class D, cudnnStatus_t (*Create)(D*), cudnnStatus_t (*Destroy)(D)>
class Descriptor {
 public:
  Descriptor() { TP_CUDNN_CHECK(Create(&d_)); }
  ~Descriptor() { Destroy(d_); }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  D get() const { return d_; }

 private:
  D d_ = nullptr;
};
using TensorDesc = Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc = Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc =
    Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;

enum class Pass { forward, backward_data, backward_filter };

/// One convolution as cuDNN sees it: 4-D or 5-D sizes of x, w, y and the parameters.
struct Geometry {
  int nd = 0;  // tensor dims: 4 or 5
  int x[5] = {}, w[5] = {}, y[5] = {};
  int pad[3] = {}, stride[3] = {}, dil[3] = {};
  int groups = 1;
};

bool fits_int(int64_t v) { return v >= 0 && v <= int64_t(INT32_MAX); }

/// sizes as nd ints (a 1-D convolution's 3-D sizes get a height of 1); false on overflow.
bool lift_sizes(IntArrayRef sizes, int nd, int* out) {
  const int64_t numel = std::accumulate(sizes.begin(), sizes.end(), int64_t(1), std::multiplies<int64_t>());
  if (!fits_int(numel)) return false;  // cuDNN indexes tensors with 32-bit ints
  const bool lifted = int(sizes.size()) == nd - 1;
  for (int i = 0, j = 0; i < nd; ++i) out[i] = lifted && i == 2 ? 1 : int(sizes[j++]);
  return true;
}

bool make_geometry(IntArrayRef x, IntArrayRef w, IntArrayRef y, const ConvParams& p, Geometry& g) {
  const int nsp = int(p.stride.size());
  g.nd = nsp == 1 ? 4 : nsp + 2;
  if (!lift_sizes(x, g.nd, g.x) || !lift_sizes(w, g.nd, g.w) || !lift_sizes(y, g.nd, g.y)) return false;
  const int off = g.nd - 2 - nsp;  // 1 for a 1-D convolution
  for (int i = 0; i < nsp; ++i)
    if (!fits_int(p.padding[i]) || !fits_int(p.stride[i]) || !fits_int(p.dilation[i])) return false;
  for (int i = 0; i < g.nd - 2; ++i) {
    g.pad[i] = i < off ? 0 : int(p.padding[i - off]);
    g.stride[i] = i < off ? 1 : int(p.stride[i - off]);
    g.dil[i] = i < off ? 1 : int(p.dilation[i - off]);
  }
  g.groups = int(p.groups);
  for (int i = 2; i < g.nd; ++i) {  // cuDNN derives y's size from x's: an output_padding past it is not cuDNN's
    const int64_t span = int64_t(g.x[i]) + 2 * g.pad[i - 2] - int64_t(g.dil[i - 2]) * (g.w[i] - 1) - 1;
    if (span < 0 || span / g.stride[i - 2] + 1 != g.y[i]) return false;
  }
  return true;
}

cudnnDataType_t data_type(DType dt) {
  switch (dt) {
    case DType::Float64: return CUDNN_DATA_DOUBLE;
    case DType::Float16: return CUDNN_DATA_HALF;
    case DType::BFloat16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
  }
}

/// Dense strides of `sizes` in one layout: row-major, or channels last (C innermost, then the
/// spatial dims last to first, then N).
template <class S>
void layout_strides(int nd, const int* sizes, bool cl, S* strides) {
  if (!cl) {
    strides[nd - 1] = 1;
    for (int i = nd - 2; i >= 0; --i) strides[i] = strides[i + 1] * sizes[i + 1];
  } else {
    strides[1] = 1;
    S s = sizes[1];
    for (int i = nd - 1; i >= 2; --i) {
      strides[i] = s;
      s *= sizes[i];
    }
    strides[0] = s;
  }
}

void set_tensor(const TensorDesc& d, cudnnDataType_t type, int nd, const int* sizes, bool cl) {
  int strides[5];
  layout_strides(nd, sizes, cl, strides);
  TP_CUDNN_CHECK(cudnnSetTensorNdDescriptor(d.get(), type, nd, sizes, strides));
}

/// What one call needs: the handle, descriptors and data pointers.
struct Call {
  Pass pass;
  cudnnHandle_t handle;
  const TensorDesc& x;
  const FilterDesc& w;
  const ConvDesc& conv;
  const TensorDesc& y;
  void *xp, *wp, *yp;
  bool is_double;
};

/// One algorithm the call may run, with the math type it ran under.
struct Choice {
  int algo;
  cudnnMathType_t math;
};

/// Successful (and, when asked, deterministic) entries of cuDNN's perf results, in order.
/// `fma_only`: float32 without TF32, which must not take tensor-core math.
template <class Perf>
std::vector<Choice> usable(const Perf* r, int n, bool deterministic, bool fma_only) {
  std::vector<Choice> out;
  for (int i = 0; i < n; ++i) {
    if (r[i].status != CUDNN_STATUS_SUCCESS) continue;
    if (deterministic && r[i].determinism != CUDNN_DETERMINISTIC) continue;
    if (fma_only && (r[i].mathType == CUDNN_TENSOR_OP_MATH || r[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
      continue;
    out.push_back({int(r[i].algo), fma_only ? CUDNN_FMA_MATH : r[i].mathType});
  }
  return out;
}

int max_algorithms(const Call& c) {
  int n = 0;
  switch (c.pass) {
    case Pass::forward: TP_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(c.handle, &n)); break;
    case Pass::backward_data: TP_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(c.handle, &n)); break;
    case Pass::backward_filter:
      TP_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(c.handle, &n));
      break;
  }
  return std::max(n, 1);
}

/// cudnnGet*Algorithm_v7: cuDNN's heuristic order (nothing runs).
std::vector<Choice> heuristic_choices(const Call& c, bool deterministic, bool fma_only) {
  const int n = max_algorithms(c);
  int got = 0;
  switch (c.pass) {
    case Pass::forward: {
      std::vector<cudnnConvolutionFwdAlgoPerf_t> r(n);
      TP_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(c.handle, c.x.get(), c.w.get(), c.conv.get(), c.y.get(), n,
                                                            &got, r.data()));
      return usable(r.data(), got, deterministic, fma_only);
    }
    case Pass::backward_data: {
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> r(n);
      TP_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(c.handle, c.w.get(), c.y.get(), c.conv.get(),
                                                                 c.x.get(), n, &got, r.data()));
      return usable(r.data(), got, deterministic, fma_only);
    }
    case Pass::backward_filter: {
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> r(n);
      TP_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(c.handle, c.x.get(), c.y.get(), c.conv.get(),
                                                                   c.w.get(), n, &got, r.data()));
      return usable(r.data(), got, deterministic, fma_only);
    }
  }
  return {};
}

/// The workspace bytes algorithm `algo` needs under the descriptor's current math type.
cudnnStatus_t workspace_bytes(const Call& c, int algo, size_t* bytes) {
  switch (c.pass) {
    case Pass::forward:
      return cudnnGetConvolutionForwardWorkspaceSize(c.handle, c.x.get(), c.w.get(), c.conv.get(), c.y.get(),
                                                     cudnnConvolutionFwdAlgo_t(algo), bytes);
    case Pass::backward_data:
      return cudnnGetConvolutionBackwardDataWorkspaceSize(c.handle, c.w.get(), c.y.get(), c.conv.get(), c.x.get(),
                                                          cudnnConvolutionBwdDataAlgo_t(algo), bytes);
    case Pass::backward_filter:
      return cudnnGetConvolutionBackwardFilterWorkspaceSize(c.handle, c.x.get(), c.y.get(), c.conv.get(), c.w.get(),
                                                            cudnnConvolutionBwdFilterAlgo_t(algo), bytes);
  }
  return CUDNN_STATUS_BAD_PARAM;
}

/// A uint8 device tensor of `bytes` (undefined for 0) on the current stream.
Tensor workspace(size_t bytes, int device) {
  if (bytes == 0) return Tensor();
  const int64_t n = int64_t(bytes);
  return empty_tensor(IntArrayRef(&n, 1), DType::UInt8, Device(DeviceType::CUDA, device));
}

void* ptr_of(const Tensor& ws) { return ws.defined() ? ws.device_data<uint8_t>() : nullptr; }

/// cudnnFind*AlgorithmEx: times every algorithm on the call's buffers (the output is
/// overwritten), with a workspace as large as the largest algorithm's (up to 2 GiB).
std::vector<Choice> timed_choices(const Call& c, int device, bool deterministic, bool fma_only) {
  const int n = max_algorithms(c);
  size_t largest = 0;
  for (int a = 0; a < n; ++a) {
    size_t bytes = 0;
    if (workspace_bytes(c, a, &bytes) == CUDNN_STATUS_SUCCESS) largest = std::max(largest, bytes);
  }
  largest = std::min(largest, size_t(2) << 30);
  Tensor ws;
  try {
    ws = workspace(largest, device);
  } catch (const OutOfMemoryError&) {  // time the algorithms that need no workspace
    largest = 0;
  }
  int got = 0;
  switch (c.pass) {
    case Pass::forward: {
      std::vector<cudnnConvolutionFwdAlgoPerf_t> r(n);
      TP_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(c.handle, c.x.get(), c.xp, c.w.get(), c.wp, c.conv.get(),
                                                            c.y.get(), c.yp, n, &got, r.data(), ptr_of(ws), largest));
      return usable(r.data(), got, deterministic, fma_only);
    }
    case Pass::backward_data: {
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> r(n);
      TP_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(c.handle, c.w.get(), c.wp, c.y.get(), c.yp,
                                                                 c.conv.get(), c.x.get(), c.xp, n, &got, r.data(),
                                                                 ptr_of(ws), largest));
      return usable(r.data(), got, deterministic, fma_only);
    }
    case Pass::backward_filter: {
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> r(n);
      TP_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(c.handle, c.x.get(), c.xp, c.y.get(), c.yp,
                                                                   c.conv.get(), c.w.get(), c.wp, n, &got, r.data(),
                                                                   ptr_of(ws), largest));
      return usable(r.data(), got, deterministic, fma_only);
    }
  }
  return {};
}

cudnnStatus_t run(const Call& c, int algo, void* ws, size_t bytes) {
  const float one_f = 1.f, zero_f = 0.f;
  const double one_d = 1.0, zero_d = 0.0;
  const void* one = c.is_double ? static_cast<const void*>(&one_d) : &one_f;
  const void* zero = c.is_double ? static_cast<const void*>(&zero_d) : &zero_f;
  switch (c.pass) {
    case Pass::forward:
      return cudnnConvolutionForward(c.handle, one, c.x.get(), c.xp, c.w.get(), c.wp, c.conv.get(),
                                     cudnnConvolutionFwdAlgo_t(algo), ws, bytes, zero, c.y.get(), c.yp);
    case Pass::backward_data:
      return cudnnConvolutionBackwardData(c.handle, one, c.w.get(), c.wp, c.y.get(), c.yp, c.conv.get(),
                                          cudnnConvolutionBwdDataAlgo_t(algo), ws, bytes, zero, c.x.get(), c.xp);
    case Pass::backward_filter:
      return cudnnConvolutionBackwardFilter(c.handle, one, c.x.get(), c.xp, c.y.get(), c.yp, c.conv.get(),
                                            cudnnConvolutionBwdFilterAlgo_t(algo), ws, bytes, zero, c.w.get(), c.wp);
  }
  return CUDNN_STATUS_BAD_PARAM;
}

// ------------------------------------------------------------------ the algorithm cache

/// One key's algorithms in fallback order, each one's workspace bytes once asked (kUnasked;
/// kRefused when cuDNN answers the query with an error) and the index of the one that last
/// ran (-1: none yet), which later calls try first.
struct Entry {
  static constexpr int64_t kUnasked = -1, kRefused = -2;
  std::vector<Choice> choices;
  std::vector<int64_t> bytes;
  int winner = -1;
};

struct Cache {
  std::mutex mutex;
  std::map<std::vector<int64_t>, Entry> entries;
};

Cache& cache() {
  static Cache* c = new Cache;  // leaked on purpose: no teardown order at exit
  return *c;
}

// ------------------------------------------------------------------ the backend (graph) API

// Note [cuDNN backend API]:
// By default (tp._C._cudnn_set_backend_api(False) turns it off; on the H200 the ResNet stage
// block ran in 0.39 ms this way against 1.65 ms through the legacy calls) a
// convolution goes through cuDNN's backend API instead of the legacy calls, which cuDNN 9
// emulates over that API by building engine configurations and a plan on every call. Here
// everything but the data pointers is built once per key and cached: three tensor
// descriptors (unique ids 'x', 'w', 'y'; dims and dense strides of the layout, as
// set_tensor; the byte alignment of each pointer, part of the key, up to 16), a convolution
// descriptor (cross-correlation, float compute, double for float64; symmetric paddings),
// the forward / backward-data / backward-filter operation (alpha 1, beta 0) in an operation
// graph, engine configurations from heuristics mode A (mode FALLBACK when none of those
// finalizes) filtered by their engines' numerical notes (no NONDETERMINISTIC under the
// deterministic flags; no TENSOR_CORE or DOWN_CONVERT_INPUTS for float32 without TF32; never
// REDUCED_PRECISION_REDUCTION, as the legacy path's float32 compute type), and the first
// execution plan that finalizes with its workspace bytes. Under tp.backends.cudnn.benchmark
// every candidate is finalized and timed once on the call's buffers (a warm-up run, then
// three timed by CUDA events on the current stream; the output is overwritten) and the
// fastest kept. Groups are the filter's dims (K, C/G, ...) against x's C. A call then only
// builds a variant pack (ids, pointers, workspace from the caching allocator) and runs
// cudnnBackendExecute on the (device, thread) handle bound to the current stream. The key
// also holds that handle, so a plan only runs on the handle it was built with (plans are
// per thread). What fails (no acceptable engine, a finalize, an execute) marks the key
// refused (cached as a null plan) and the legacy path runs the call, then and later: the
// backend path can add a way to run, never lose one. A workspace that does not fit falls
// back for that call only.

std::atomic<bool> backend_api_on{true};

/// An owned backend descriptor, destroyed with it; empty when cuDNN could not create one.
class BackendDesc {
 public:
  BackendDesc() = default;
  explicit BackendDesc(cudnnBackendDescriptorType_t type) {
    if (cudnnBackendCreateDescriptor(type, &d_) != CUDNN_STATUS_SUCCESS) d_ = nullptr;
  }
  ~BackendDesc() { reset(); }
  BackendDesc(BackendDesc&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
  BackendDesc& operator=(BackendDesc&& o) noexcept {
    if (this != &o) {
      reset();
      d_ = std::exchange(o.d_, nullptr);
    }
    return *this;
  }
  BackendDesc(const BackendDesc&) = delete;
  BackendDesc& operator=(const BackendDesc&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }
  explicit operator bool() const { return d_ != nullptr; }

 private:
  void reset() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
    d_ = nullptr;
  }
  cudnnBackendDescriptor_t d_ = nullptr;
};

bool ok(cudnnStatus_t s) { return s == CUDNN_STATUS_SUCCESS; }

/// cudnnBackendSetAttribute on a descriptor that exists; false if either fails.
bool set_attr(const BackendDesc& d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t n,
              const void* values) {
  return d && ok(cudnnBackendSetAttribute(d.get(), name, type, n, values));
}

bool finalize(const BackendDesc& d) { return d && ok(cudnnBackendFinalize(d.get())); }

constexpr int64_t kUidX = 'x', kUidW = 'w', kUidY = 'y';

/// The largest power of two up to 16 that divides the address (what the plan may assume).
int64_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  int64_t al = 16;
  while (al > 1 && a % uintptr_t(al) != 0) al /= 2;
  return al;
}

/// A finalized backend tensor descriptor: dims `sizes`, the layout's dense strides.
BackendDesc backend_tensor(int64_t uid, cudnnDataType_t type, int nd, const int* sizes, bool cl, int64_t align) {
  int64_t dims[5], strides[5];
  for (int i = 0; i < nd; ++i) dims[i] = sizes[i];
  layout_strides(nd, sizes, cl, strides);
  BackendDesc t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const bool good = set_attr(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid) &&
                    set_attr(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, nd, dims) &&
                    set_attr(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, nd, strides) &&
                    set_attr(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type) &&
                    set_attr(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align) && finalize(t);
  return good ? std::move(t) : BackendDesc();
}

/// What a backend build needs to know about the call.
struct BackendCall {
  Pass pass;
  const Geometry& g;
  cudnnDataType_t type;
  bool is_double, cl, deterministic, fma_only, benchmark;
  cudnnHandle_t handle;
  int device;
  void* ptrs[3];  // x, w, y in the order of kUidX, kUidW, kUidY
};

/// The finalized operation graph of one convolution, with the descriptors it refers to.
struct OpGraph {
  std::vector<BackendDesc> parts;  // tensors, convolution, operation
  BackendDesc graph;
};

std::shared_ptr<OpGraph> build_graph(const BackendCall& c) {
  auto og = std::make_shared<OpGraph>();
  const Geometry& g = c.g;
  const int64_t uids[3] = {kUidX, kUidW, kUidY};
  const int* sizes[3] = {g.x, g.w, g.y};
  for (int i = 0; i < 3; ++i) {
    og->parts.push_back(backend_tensor(uids[i], c.type, g.nd, sizes[i], c.cl, alignment_of(c.ptrs[i])));
    if (!og->parts.back()) return nullptr;
  }
  const int64_t nsp = g.nd - 2;
  int64_t pad[3], stride[3], dil[3];
  for (int i = 0; i < nsp; ++i) pad[i] = g.pad[i], stride[i] = g.stride[i], dil[i] = g.dil[i];
  const cudnnDataType_t comp = c.is_double ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  BackendDesc conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  if (!(set_attr(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp) &&
        set_attr(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode) &&
        set_attr(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &nsp) &&
        set_attr(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, nsp, dil) &&
        set_attr(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, nsp, stride) &&
        set_attr(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, nsp, pad) &&
        set_attr(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, nsp, pad) && finalize(conv)))
    return nullptr;

  // attribute names per pass: alpha, beta, convolution, x, w, y (dx, dw, dy as the pass names them)
  struct OpNames {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t alpha, beta, conv, x, w, y;
  };
  static constexpr OpNames kOps[3] = {
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY},
  };
  const OpNames& n = kOps[int(c.pass)];
  const float one_f = 1.f, zero_f = 0.f;
  const double one_d = 1.0, zero_d = 0.0;
  const cudnnBackendAttributeType_t scalar = c.is_double ? CUDNN_TYPE_DOUBLE : CUDNN_TYPE_FLOAT;
  const void* one = c.is_double ? static_cast<const void*>(&one_d) : &one_f;
  const void* zero = c.is_double ? static_cast<const void*>(&zero_d) : &zero_f;
  cudnnBackendDescriptor_t conv_d = conv.get(), x_d = og->parts[0].get(), w_d = og->parts[1].get(),
                           y_d = og->parts[2].get();
  BackendDesc op(n.type);
  if (!(set_attr(op, n.alpha, scalar, 1, one) && set_attr(op, n.beta, scalar, 1, zero) &&
        set_attr(op, n.conv, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv_d) &&
        set_attr(op, n.x, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x_d) &&
        set_attr(op, n.w, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w_d) &&
        set_attr(op, n.y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y_d) && finalize(op)))
    return nullptr;
  cudnnBackendDescriptor_t op_d = op.get();
  og->parts.push_back(std::move(conv));
  og->parts.push_back(std::move(op));

  og->graph = BackendDesc(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  // The handle attribute is deprecated in recent cuDNN 9 releases and required in early ones:
  // set it, and let finalize say whether the graph is complete.
  if (og->graph)
    (void)cudnnBackendSetAttribute(og->graph.get(), CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &c.handle);
  if (!(set_attr(og->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op_d) &&
        finalize(og->graph)))
    return nullptr;
  return og;
}

/// Engine configurations for the graph from heuristics `mode`, in cuDNN's order.
std::vector<BackendDesc> engine_configs(const OpGraph& og, cudnnBackendHeurMode_t mode) {
  BackendDesc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  cudnnBackendDescriptor_t graph_d = og.graph.get();
  if (!(set_attr(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph_d) &&
        set_attr(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode) && finalize(heur)))
    return {};
  int64_t count = 0;
  if (!ok(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                   nullptr)) ||
      count <= 0)
    return {};
  std::vector<BackendDesc> cfgs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    cfgs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    if (!cfgs.back()) return {};
    raw.push_back(cfgs.back().get());
  }
  int64_t got = 0;
  if (!ok(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                                   &got, raw.data())))
    return {};
  cfgs.resize(size_t(std::clamp<int64_t>(got, 0, count)));
  return cfgs;
}

/// Whether an engine configuration's numerical notes allow it under the call's flags.
bool acceptable(const BackendDesc& cfg, bool deterministic, bool fma_only) {
  BackendDesc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t engine_d = engine.get();
  int64_t n = 0;
  if (!engine || !ok(cudnnBackendGetAttribute(cfg.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                              &n, &engine_d)))
    return false;
  cudnnBackendNumericalNote_t notes[32];
  if (!ok(cudnnBackendGetAttribute(engine_d, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, 32, &n,
                                   notes)))
    return false;
  for (int64_t i = 0; i < std::min<int64_t>(n, 32); ++i) {
    switch (notes[i]) {
      case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC:
        if (deterministic) return false;
        break;
      case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
      case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
        if (fma_only) return false;
        break;
      case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION: return false;
      default: break;
    }
  }
  return true;
}

/// A finalized execution plan, what it was built from and its workspace bytes.
struct Plan {
  std::shared_ptr<OpGraph> graph;
  BackendDesc config, plan;
  int64_t workspace = 0;
};

std::unique_ptr<Plan> make_plan(const std::shared_ptr<OpGraph>& og, BackendDesc cfg, cudnnHandle_t handle) {
  auto p = std::make_unique<Plan>();
  p->graph = og;
  p->config = std::move(cfg);
  p->plan = BackendDesc(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  cudnnBackendDescriptor_t cfg_d = p->config.get();
  if (p->plan)  // deprecated in recent cuDNN 9 releases, required in early ones: as the graph's
    (void)cudnnBackendSetAttribute(p->plan.get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  int64_t n = 0;
  if (!(set_attr(p->plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg_d) &&
        finalize(p->plan) &&
        ok(cudnnBackendGetAttribute(p->plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                    &p->workspace)) &&
        p->workspace >= 0))
    return nullptr;
  return p;
}

/// Runs a plan: a variant pack of the call's pointers and `ws`, then cudnnBackendExecute.
cudnnStatus_t execute(cudnnHandle_t handle, const Plan& p, void* const* ptrs, void* ws) {
  BackendDesc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  if (!pack) return CUDNN_STATUS_ALLOC_FAILED;
  const int64_t uids[3] = {kUidX, kUidW, kUidY};
  cudnnStatus_t s = cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
  if (ok(s))
    s = cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs);
  if (ok(s)) s = cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
  if (ok(s)) s = cudnnBackendFinalize(pack.get());
  if (ok(s)) s = cudnnBackendExecute(handle, p.plan.get(), pack.get());
  return s;
}

/// Milliseconds for three runs of `p` on the call's buffers after a warm-up; infinity when it
/// does not run (or its workspace does not fit).
float time_plan(const BackendCall& c, const Plan& p) {
  constexpr float kNever = std::numeric_limits<float>::infinity();
  Tensor ws;
  try {
    ws = workspace(size_t(p.workspace), c.device);
  } catch (const OutOfMemoryError&) {
    return kNever;
  }
  if (!ok(execute(c.handle, p, c.ptrs, ptr_of(ws)))) {
    (void)cudaGetLastError();
    return kNever;
  }
  const cudaStream_t stream = current_stream(c.device).handle;
  cudaEvent_t start = nullptr, end = nullptr;
  bool timed = cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&end) == cudaSuccess &&
               cudaEventRecord(start, stream) == cudaSuccess;
  for (int i = 0; i < 3 && timed; ++i) timed = ok(execute(c.handle, p, c.ptrs, ptr_of(ws)));
  float ms = 0.f;
  timed = timed && cudaEventRecord(end, stream) == cudaSuccess && cudaEventSynchronize(end) == cudaSuccess &&
          cudaEventElapsedTime(&ms, start, end) == cudaSuccess;
  if (start) cudaEventDestroy(start);
  if (end) cudaEventDestroy(end);
  (void)cudaGetLastError();
  return timed ? ms : kNever;
}

/// The plan for a key: the first acceptable engine configuration (mode A, then FALLBACK)
/// whose plan finalizes, or under benchmark mode the fastest of them; null when none.
std::shared_ptr<const Plan> build_plan(const BackendCall& c) {
  const std::shared_ptr<OpGraph> og = build_graph(c);
  if (!og) return nullptr;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    std::unique_ptr<Plan> best;
    float best_ms = std::numeric_limits<float>::infinity();
    for (BackendDesc& cfg : engine_configs(*og, mode)) {
      if (!acceptable(cfg, c.deterministic, c.fma_only)) continue;
      std::unique_ptr<Plan> p = make_plan(og, std::move(cfg), c.handle);
      if (!p) continue;
      if (!c.benchmark) return std::shared_ptr<const Plan>(std::move(p));
      const float ms = time_plan(c, *p);
      if (!best || ms < best_ms) {
        best_ms = ms;
        best = std::move(p);
      }
    }
    if (best) return std::shared_ptr<const Plan>(std::move(best));
  }
  return nullptr;
}

struct PlanCache {
  std::mutex mutex;
  std::map<std::vector<int64_t>, std::shared_ptr<const Plan>> plans;  // null: the backend path refuses the key
};

PlanCache& plan_cache() {
  static PlanCache* c = new PlanCache;  // leaked on purpose: no teardown order at exit
  return *c;
}

/// Runs the call through its key's cached plan (built on first use); false when the backend
/// path does not run it and the legacy path must.
bool run_backend(const BackendCall& c, std::vector<int64_t> key) {
  key.push_back(int64_t(reinterpret_cast<uintptr_t>(c.handle)));
  for (void* p : c.ptrs) key.push_back(alignment_of(p));
  std::shared_ptr<const Plan> plan;
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(plan_cache().mutex);
    auto it = plan_cache().plans.find(key);
    if (it != plan_cache().plans.end()) {
      plan = it->second;
      cached = true;
    }
  }
  if (!cached) {
    plan = build_plan(c);
    std::lock_guard<std::mutex> lock(plan_cache().mutex);
    plan = plan_cache().plans.emplace(key, plan).first->second;  // another thread's may be there first
  }
  if (!plan) return false;
  Tensor ws;
  try {
    ws = workspace(size_t(plan->workspace), c.device);
  } catch (const OutOfMemoryError&) {
    return false;  // the legacy path may find an algorithm that needs less
  }
  if (ok(execute(c.handle, *plan, c.ptrs, ptr_of(ws)))) return true;
  (void)cudaGetLastError();
  std::lock_guard<std::mutex> lock(plan_cache().mutex);
  plan_cache().plans[key] = nullptr;  // later calls go straight to the legacy path
  return false;
}

// ------------------------------------------------------------------ one pass

/// Runs `pass` with a and b its inputs (forward: x, w; backward-data: dy, w; backward-filter:
/// dy, x) and a new output of `out_sizes`, all in one layout; undefined when cuDNN refuses it.
Tensor convolve_in(Pass pass, const Tensor& a, const Tensor& b, IntArrayRef out_sizes, const ConvParams& p, bool cl) {
  const DType dt = a.dtype();
  if (b.dtype() != dt || (dt != DType::Float32 && dt != DType::Float64 && dt != DType::Float16 && dt != DType::BFloat16))
    return Tensor();
  const int device = a.device().index;
  DeviceGuard guard(device);
  const Device dev(DeviceType::CUDA, device);
  const DimVector out_strides = cl ? channels_last_strides(out_sizes) : DimVector();
  Tensor out = cl ? empty_strided_tensor(out_sizes, out_strides, dt, dev) : empty_tensor(out_sizes, dt, dev);
  Tensor da = with_layout(a, cl), db = with_layout(b, cl);
  const Tensor& x = pass == Pass::forward ? da : pass == Pass::backward_data ? out : db;
  const Tensor& w = pass == Pass::backward_filter ? out : db;
  const Tensor& y = pass == Pass::forward ? out : da;
  if (x.numel() == 0 || w.numel() == 0 || y.numel() == 0) return zero_(out);  // empty sums are zero
  Geometry g;
  if (!make_geometry(x.sizes(), w.sizes(), y.sizes(), p, g)) return Tensor();

  const cudnnDataType_t type = data_type(dt);
  const bool half_type = dt == DType::Float16 || dt == DType::BFloat16;
  const bool fma_only = dt == DType::Float32 && !cudnn_allow_tf32();
  CudnnFlags flags = cudnn_flags();
  // timing algorithms synchronises: inside a CUDA graph capture the heuristics choose
  if (flags.benchmark && graphs::is_capturing(current_stream(device).handle)) flags.benchmark = false;
  const bool deterministic = flags.deterministic || deterministic_algorithms();
  const cudnnHandle_t handle = current_handle(device);
  std::vector<int64_t> key{int64_t(pass), int64_t(dt), cl, g.nd, g.groups, device, fma_only, deterministic,
                           flags.benchmark};
  for (int i = 0; i < g.nd; ++i) key.insert(key.end(), {g.x[i], g.w[i], g.y[i]});
  for (int i = 0; i < g.nd - 2; ++i) key.insert(key.end(), {g.pad[i], g.stride[i], g.dil[i]});

  if (backend_api_on.load(std::memory_order_relaxed)) {  // Note [cuDNN backend API]
    const BackendCall bc{pass,   g,      type,   dt == DType::Float64, cl, deterministic, fma_only, flags.benchmark,
                         handle, device, {x.data_ptr(), w.data_ptr(), y.data_ptr()}};
    if (run_backend(bc, key)) return out;
  }

  TensorDesc xd, yd;
  FilterDesc wd;
  ConvDesc cd;
  set_tensor(xd, type, g.nd, g.x, cl);
  set_tensor(yd, type, g.nd, g.y, cl);
  TP_CUDNN_CHECK(cudnnSetFilterNdDescriptor(wd.get(), type, cl ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, g.nd, g.w));
  TP_CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(cd.get(), g.nd - 2, g.pad, g.stride, g.dil, CUDNN_CROSS_CORRELATION,
                                                 dt == DType::Float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT));
  TP_CUDNN_CHECK(cudnnSetConvolutionGroupCount(cd.get(), g.groups));
  const cudnnMathType_t math = half_type ? CUDNN_TENSOR_OP_MATH : fma_only ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
  TP_CUDNN_CHECK(cudnnSetConvolutionMathType(cd.get(), math));
  const Call call{pass, handle, xd, wd, cd, yd, x.data_ptr(), w.data_ptr(), y.data_ptr(), dt == DType::Float64};

  Entry entry;
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(cache().mutex);
    auto it = cache().entries.find(key);
    if (it != cache().entries.end()) {
      entry = it->second;
      cached = true;
    }
  }
  if (!cached) {
    entry.choices = flags.benchmark ? timed_choices(call, device, deterministic, fma_only)
                                    : heuristic_choices(call, deterministic, fma_only);
    entry.bytes.assign(entry.choices.size(), Entry::kUnasked);
    std::lock_guard<std::mutex> lock(cache().mutex);
    cache().entries.emplace(key, entry);
  }
  // the last winner first, then the rest in the list's order
  const int n = int(entry.choices.size());
  std::vector<int> order;
  order.reserve(size_t(n));
  if (entry.winner >= 0 && entry.winner < n) order.push_back(entry.winner);
  for (int i = 0; i < n; ++i)
    if (i != entry.winner) order.push_back(i);
  bool out_of_memory = false, learned = false;
  for (const int i : order) {
    const Choice& choice = entry.choices[size_t(i)];
    TP_CUDNN_CHECK(cudnnSetConvolutionMathType(cd.get(), choice.math));
    int64_t& bytes = entry.bytes[size_t(i)];
    if (bytes == Entry::kUnasked) {
      size_t asked = 0;
      bytes = workspace_bytes(call, choice.algo, &asked) == CUDNN_STATUS_SUCCESS ? int64_t(asked) : Entry::kRefused;
      learned = true;
    }
    if (bytes < 0) continue;
    Tensor ws;
    try {
      ws = workspace(size_t(bytes), device);
    } catch (const OutOfMemoryError&) {
      out_of_memory = true;
      continue;  // the next algorithm may need less
    }
    if (run(call, choice.algo, ptr_of(ws), size_t(bytes)) == CUDNN_STATUS_SUCCESS) {
      if (learned || entry.winner != i) {
        std::lock_guard<std::mutex> lock(cache().mutex);
        Entry& stored = cache().entries[key];
        stored.bytes = entry.bytes;
        stored.winner = i;
      }
      return out;
    }
    (void)cudaGetLastError();  // a refused launch leaves no error behind for later calls
  }
  if (!out_of_memory && n > 0) {  // none runs: later calls go straight to the fallback
    std::lock_guard<std::mutex> lock(cache().mutex);
    cache().entries[key] = Entry();
  } else if (learned) {
    std::lock_guard<std::mutex> lock(cache().mutex);
    cache().entries[key].bytes = entry.bytes;
  }
  return Tensor();
}

/// convolve_in in the layout asked for, else (cuDNN has fewer channels-last kernels, e.g. for
/// float64 or grouped 3-D ones) row-major with the result laid out channels last after.
Tensor convolve(Pass pass, const Tensor& a, const Tensor& b, IntArrayRef out_sizes, const ConvParams& p, bool cl) {
  Tensor out = convolve_in(pass, a, b, out_sizes, p, cl);
  if (out.defined() || !cl) return out;
  out = convolve_in(pass, a, b, out_sizes, p, false);
  return out.defined() ? with_layout(out, true) : out;
}

}  // namespace

int64_t version() { return int64_t(cudnnGetVersion()); }

void set_backend_api(bool on) { backend_api_on.store(on); }

bool backend_api() { return backend_api_on.load(); }

int64_t plan_cache_size() {
  std::lock_guard<std::mutex> lock(plan_cache().mutex);
  const auto& plans = plan_cache().plans;
  return int64_t(std::count_if(plans.begin(), plans.end(), [](const auto& kv) { return kv.second != nullptr; }));
}

Tensor convolution_forward(const Tensor& x, const Tensor& w, IntArrayRef y_sizes, const ConvParams& p,
                           bool channels_last) {
  return convolve(Pass::forward, x, w, y_sizes, p, channels_last);
}

Tensor convolution_backward_data(const Tensor& dy, const Tensor& w, IntArrayRef x_sizes, const ConvParams& p,
                                 bool channels_last) {
  return convolve(Pass::backward_data, dy, w, x_sizes, p, channels_last);
}

Tensor convolution_backward_filter(const Tensor& dy, const Tensor& x, IntArrayRef w_sizes, const ConvParams& p,
                                   bool channels_last) {
  return convolve(Pass::backward_filter, dy, x, w_sizes, p, channels_last);
}

}  // namespace tp::cuda::cudnn
