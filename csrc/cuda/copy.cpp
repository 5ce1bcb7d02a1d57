// Copies involving CUDA tensors. See Note [CUDA copies].
#include "cuda/copy.h"

#include "cuda/check.h"
#include "cuda/graphs/capture.h"
#include "cuda/kernels.h"
#include "cuda/pointwise.h"
#include "cuda/runtime.h"
#include "tensorplay/ops_api.h"

// Note [CUDA copies]
// A host to device copy converts (and broadcasts) on the CPU first, a device to host copy
// converts after the transfer, and a device to device copy between dtypes converts on
// the source's device (launch_cast).
// Layout changes on the device use the strided-copy kernel (same dtype). Transfers run
// on the current stream of the GPU side and are waited for, except a non_blocking copy
// whose host side is pinned memory used as is (no conversion): that one stays
// asynchronous, as in PyTorch (synchronize before reading the result on the host).

namespace tp::cuda {

namespace {

bool same_sizes(const Tensor& a, const Tensor& b) {
  return std::equal(a.sizes().begin(), a.sizes().end(), b.sizes().begin(), b.sizes().end());
}

StridedLayout layout_of(const Tensor& dst, const Tensor& src) {
  TP_CHECK(dst.dim() <= kMaxKernelDims, "copy_: CUDA copies support up to ", kMaxKernelDims,
           " dimensions, got ", dst.dim());
  StridedLayout m;
  m.ndim = int(dst.dim());
  for (int d = 0; d < m.ndim; ++d) {
    m.sizes[d] = dst.size(d);
    m.dst_strides[d] = dst.stride(d);
    m.src_strides[d] = src.defined() ? src.stride(d) : 0;
  }
  return m;
}

size_t nbytes_of(const Tensor& t) { return size_t(t.numel()) * t.itemsize(); }

/// dst <- src on one device, same dtype; src already has dst's shape (maybe broadcast).
void device_copy_same_dtype(const Tensor& dst, const Tensor& src, cudaStream_t s) {
  if (dst.numel() == 0) return;
  if (dst.is_contiguous() && src.is_contiguous()) {
    TP_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), nbytes_of(dst),
                                  cudaMemcpyDeviceToDevice, s));
    return;
  }
  launch_strided_copy(dst.data_ptr(), src.data_ptr(), dst.numel(), int(dst.itemsize()),
                      layout_of(dst, src), s);
}

/// A contiguous device copy of `t` (t itself when already contiguous).
Tensor contiguous_on_device(const Tensor& t, cudaStream_t s) {
  if (t.is_contiguous()) return t;
  Tensor out = empty_tensor(t.sizes(), t.dtype(), t.device());
  device_copy_same_dtype(out, t, s);
  return out;
}

void host_to_device(const Tensor& dst, const Tensor& src, bool non_blocking) {
  int dev = dst.device().index;
  DeviceGuard g(dev);
  Stream s = current_stream(dev);
  bool direct = src.dtype() == dst.dtype() && same_sizes(dst, src) && src.is_contiguous();
  Tensor host = src;
  if (!direct) {  // convert and broadcast on the host
    host = empty_tensor(dst.sizes(), dst.dtype(), Device(DeviceType::CPU));
    copy_impl(host, src, false, {});
  }
  if (dst.numel() == 0) return;
  // under capture only a non-blocking copy from pinned memory can be recorded (a memcpy
  // node reading the pinned buffer at each replay)
  if (!(non_blocking && direct && is_pinned(host.data_ptr())))
    graphs::check_not_capturing(s.handle, "copying a CPU tensor to the GPU (other than a "
                                "non_blocking copy from pinned memory)");
  Tensor staging = dst.is_contiguous() ? dst : empty_tensor(dst.sizes(), dst.dtype(), dst.device());
  TP_CUDA_CHECK(cudaMemcpyAsync(staging.data_ptr(), host.data_ptr(), nbytes_of(dst),
                                cudaMemcpyHostToDevice, s.handle));
  if (!staging.is_same(dst)) device_copy_same_dtype(dst, staging, s.handle);
  if (!(non_blocking && direct && is_pinned(host.data_ptr()))) s.synchronize();
}

void device_to_host(const Tensor& dst, const Tensor& src, bool non_blocking) {
  int dev = src.device().index;
  DeviceGuard g(dev);
  Stream s = current_stream(dev);
  graphs::check_not_capturing(s.handle, "copying a CUDA tensor to the CPU (.item(), .cpu(), "
                              ".tolist(), .numpy(), printing, a Python bool or if on a tensor)");
  Tensor dsrc = contiguous_on_device(src, s.handle);
  bool direct = dst.is_contiguous() && dst.dtype() == src.dtype() && same_sizes(dst, src);
  Tensor host = direct ? dst : empty_tensor(src.sizes(), src.dtype(), Device(DeviceType::CPU));
  if (src.numel())
    TP_CUDA_CHECK(cudaMemcpyAsync(host.data_ptr(), dsrc.data_ptr(), nbytes_of(src),
                                  cudaMemcpyDeviceToHost, s.handle));
  if (!(non_blocking && direct && is_pinned(dst.data_ptr()))) s.synchronize();
  if (!direct) copy_impl(dst, host, false, {});  // convert, broadcast, lay out on the host
}

/// The real (0) or imaginary (1) part of a complex tensor, a strided real view.
Tensor part_of(const Tensor& z, int64_t which) {
  return select_impl(view_as_real_impl(z, {}), -1, which, {});
}

void device_to_device(const Tensor& dst, const Tensor& src, bool non_blocking);

/// Note [Complex casts on CUDA]: a cast from or to a complex type is a real cast of parts
/// (view_as_real's strided views) rather than cast kernels for every pair with a complex
/// type: real -> complex writes the real part and zeros the imaginary one, complex -> real
/// keeps the real part (Python warns), complex64 <-> complex128 casts both parts at once.
void complex_cast(const Tensor& dst, const Tensor& src, bool non_blocking) {
  Tensor from = same_sizes(dst, src) ? src : expand_impl(src, dst.sizes(), {});
  const bool dc = is_complex(dst.dtype()), sc = is_complex(src.dtype());
  if (dc && sc) return device_to_device(view_as_real_impl(dst, {}), view_as_real_impl(from, {}), non_blocking);
  if (sc) return device_to_device(dst, part_of(from, 0), non_blocking);
  device_to_device(part_of(dst, 0), from, non_blocking);
  Tensor im = part_of(dst, 1);
  fill_impl(im, Scalar(0.0), OutArg{&im, true, false});  // copy_ bumps dst's version once
}

void device_to_device(const Tensor& dst, const Tensor& src, bool non_blocking) {
  int dd = dst.device().index, sd = src.device().index;
  if (src.dtype() != dst.dtype() && (is_complex(src.dtype()) || is_complex(dst.dtype())))
    return complex_cast(dst, src, non_blocking);
  if (src.dtype() != dst.dtype()) {  // convert on the source's device
    DeviceGuard g(sd);
    Stream s = current_stream(sd);
    Tensor from = same_sizes(dst, src) ? src : expand_impl(src, dst.sizes(), {});
    Tensor conv = dd == sd ? dst : empty_tensor(dst.sizes(), dst.dtype(), src.device());
    launch_cast(conv.data_ptr(), conv.dtype(), from.data_ptr(), from.dtype(), conv.numel(),
                layout_of(conv, from), s.handle);
    if (dd == sd) return;
    return device_to_device(dst, conv, non_blocking);
  }
  if (dd == sd) {
    DeviceGuard g(dd);
    Stream s = current_stream(dd);
    Tensor from = same_sizes(dst, src) ? src : expand_impl(src, dst.sizes(), {});
    device_copy_same_dtype(dst, from, s.handle);
    return;
  }
  // Between GPUs: a contiguous copy of src on its device, a peer copy into a contiguous
  // buffer on dst's device, then the layout there. Each side's current stream waits for
  // the other's, so neither buffer is reused early.
  Stream ss = current_stream(sd), ds = current_stream(dd);
  Tensor csrc;
  {
    DeviceGuard g(sd);
    csrc = contiguous_on_device(src, ss.handle);
  }
  Event src_ready;
  src_ready.record(ss);
  src_ready.wait(ds);
  DeviceGuard g(dd);
  Tensor landing = (dst.is_contiguous() && same_sizes(dst, src))
                       ? dst : empty_tensor(src.sizes(), src.dtype(), dst.device());
  if (src.numel())
    TP_CUDA_CHECK(cudaMemcpyPeerAsync(landing.data_ptr(), dd, csrc.data_ptr(), sd, nbytes_of(src),
                                      ds.handle));
  if (!landing.is_same(dst)) {
    Tensor from = same_sizes(dst, landing) ? landing : expand_impl(landing, dst.sizes(), {});
    device_copy_same_dtype(dst, from, ds.handle);
  }
  Event dst_done;
  dst_done.record(ds);
  dst_done.wait(ss);
  if (!non_blocking) ds.synchronize();
}

}  // namespace

void copy_(const Tensor& dst, const Tensor& src, bool non_blocking) {
  bool dc = dst.device().is_cuda(), sc = src.device().is_cuda();
  TP_CHECK(dst.device().type != DeviceType::Meta && src.device().type != DeviceType::Meta,
           "copy_: cannot copy between ", src.device().str(), " and ", dst.device().str());
  if (dc && sc) device_to_device(dst, src, non_blocking);
  else if (dc) host_to_device(dst, src, non_blocking);
  else device_to_host(dst, src, non_blocking);
}

void fill_(const Tensor& dst, uint64_t bits) {
  if (dst.numel() == 0) return;
  int dev = dst.device().index;
  DeviceGuard g(dev);
  Stream s = current_stream(dev);
  if (bits == 0 && dst.is_contiguous()) {
    TP_CUDA_CHECK(cudaMemsetAsync(dst.data_ptr(), 0, nbytes_of(dst), s.handle));
    return;
  }
  launch_fill(dst.data_ptr(), bits, dst.numel(), int(dst.itemsize()), layout_of(dst, Tensor()),
              s.handle);
}

}  // namespace tp::cuda
