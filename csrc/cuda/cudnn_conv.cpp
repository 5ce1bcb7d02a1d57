// Convolutions through cuDNN: descriptors, the per-(device, thread) handle, the algorithm
// choice and its cache, and the forward / backward-data / backward-filter calls.
#include "cuda/cudnn_conv.h"

#include <cudnn.h>

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <vector>

#include "core/deterministic.h"
#include "core/error.h"
#include "core/matmul_settings.h"
#include "cuda/caching_allocator.h"
#include "cuda/check.h"
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
// (pass, dtype, layout, sizes, parameters, device, flags), and each call runs its first
// entry whose workspace can be allocated and that runs. None (cuDNN has fewer channels-last
// kernels, e.g. float64 or grouped 3-D ones): channels last is retried row-major and laid
// out after; then the caller's fallback (a list none of whose entries ran, for want of
// anything but memory, is cached empty). Workspaces are uint8 tensors from the caching
// allocator on the current stream.

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

/// The calling thread's handle for `device` (current), bound to its current stream.
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

void set_tensor(const TensorDesc& d, cudnnDataType_t type, int nd, const int* sizes, bool cl) {
  int strides[5];
  if (!cl) {
    strides[nd - 1] = 1;
    for (int i = nd - 2; i >= 0; --i) strides[i] = strides[i + 1] * sizes[i + 1];
  } else {  // C innermost, then the spatial dims last to first, then N
    strides[1] = 1;
    int s = sizes[1];
    for (int i = nd - 1; i >= 2; --i) {
      strides[i] = s;
      s *= sizes[i];
    }
    strides[0] = s;
  }
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

struct Cache {
  std::mutex mutex;
  std::map<std::vector<int64_t>, std::vector<Choice>> lists;
};

Cache& cache() {
  static Cache* c = new Cache;  // leaked on purpose: no teardown order at exit
  return *c;
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
  const CudnnFlags flags = cudnn_flags();
  const bool deterministic = flags.deterministic || deterministic_algorithms();
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
  const Call call{pass, current_handle(device), xd, wd, cd, yd, x.data_ptr(), w.data_ptr(), y.data_ptr(),
                  dt == DType::Float64};

  std::vector<int64_t> key{int64_t(pass), int64_t(dt), cl, g.nd, g.groups, device, fma_only, deterministic,
                           flags.benchmark};
  for (int i = 0; i < g.nd; ++i) key.insert(key.end(), {g.x[i], g.w[i], g.y[i]});
  for (int i = 0; i < g.nd - 2; ++i) key.insert(key.end(), {g.pad[i], g.stride[i], g.dil[i]});
  std::vector<Choice> choices;
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(cache().mutex);
    auto it = cache().lists.find(key);
    if (it != cache().lists.end()) {
      choices = it->second;
      cached = true;
    }
  }
  if (!cached) {
    choices = flags.benchmark ? timed_choices(call, device, deterministic, fma_only)
                              : heuristic_choices(call, deterministic, fma_only);
    std::lock_guard<std::mutex> lock(cache().mutex);
    cache().lists.emplace(key, choices);
  }
  bool out_of_memory = false;
  for (const Choice& choice : choices) {
    TP_CUDNN_CHECK(cudnnSetConvolutionMathType(cd.get(), choice.math));
    size_t bytes = 0;
    if (workspace_bytes(call, choice.algo, &bytes) != CUDNN_STATUS_SUCCESS) continue;
    Tensor ws;
    try {
      ws = workspace(bytes, device);
    } catch (const OutOfMemoryError&) {
      out_of_memory = true;
      continue;  // the next algorithm may need less
    }
    if (run(call, choice.algo, ptr_of(ws), bytes) == CUDNN_STATUS_SUCCESS) return out;
    (void)cudaGetLastError();  // a refused launch leaves no error behind for later calls
  }
  if (!out_of_memory && !choices.empty()) {  // none runs: later calls go straight to the fallback
    std::lock_guard<std::mutex> lock(cache().mutex);
    cache().lists[key].clear();
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
