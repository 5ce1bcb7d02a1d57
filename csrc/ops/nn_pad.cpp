// Padding and unpooling: constant_pad_nd, reflection_pad1d/2d/3d, replication_pad1d/2d/3d
// (one gather kernel over an index map per spatial dim; the backward adds back through the
// same map) and max_unpool1d/2d/3d (writes each value at its pooling index).
#include <algorithm>
#include <string>
#include <vector>

#include "core/bits128.h"
#include "core/error.h"
#include "core/parallel.h"
#include "kernels/tensor_iterator.h"
#include "ops/meta.h"
#include "ops/nn.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"
#ifdef TP_USE_CUDA
#include "cuda/nn_spatial.h"
#endif

namespace tp {

// ------------------------------------------------------------------ constant_pad_nd

Tensor constant_pad_nd_impl(const Tensor& self, IntArrayRef pad, const Scalar& value, OutArg) {
  TP_CHECK(pad.size() % 2 == 0, "Length of pad must be even but instead it equals ", pad.size());
  TP_CHECK(int64_t(pad.size()) / 2 <= self.dim(), "Length of pad should be no more than twice the number of ",
           "dimensions of the input. Pad length is ", pad.size(), " while the input has ", self.dim(), " dimensions.");
  DimVector out_sizes(self.sizes().data(), self.sizes().size());
  Tensor src = self;
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    const int64_t d = self.dim() - 1 - int64_t(i), l = pad[2 * i], r = pad[2 * i + 1], n = self.size(d);
    TP_CHECK(n + l + r >= 0, "The input size ", n, ", plus negative padding ", l, " and ", r,
             " resulted in a negative output size, which is invalid. Check dimension ", d, " of your input.");
    const int64_t len = n - std::max<int64_t>(0, -l) - std::max<int64_t>(0, -r);
    TP_CHECK(len >= 0, "narrow(): length must be non-negative.");
    out_sizes[size_t(d)] = n + l + r;
    src = narrow(src, d, std::max<int64_t>(0, -l), len);
  }
  Tensor out = full(out_sizes, value, self.dtype(), self.device());
  Tensor dst = out;
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    const int64_t d = self.dim() - 1 - int64_t(i);
    dst = narrow(dst, d, std::max<int64_t>(0, pad[2 * i]), src.size(d));
  }
  if (src.numel()) copy_(dst, src);
  return out;
}

Tensor constant_pad_backward(const Tensor& grad, IntArrayRef pad) {
  DimVector neg;
  for (int64_t v : pad) neg.push_back(-v);
  return constant_pad_nd(grad, neg);
}

// ------------------------------------------------------------------ reflection / replication

namespace {

/// The input index each output index reads, per spatial dim padded in front to three.
struct PadMap {
  int64_t nsp = 0, planes = 1, in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  std::vector<int64_t> map[3];
  int64_t in_numel() const { return in[0] * in[1] * in[2]; }
  int64_t out_numel() const { return out[0] * out[1] * out[2]; }
};

DimVector padded_sizes_of(IntArrayRef self_sizes, const PadMap& m) {
  DimVector r(self_sizes.data(), self_sizes.size());
  for (int64_t i = 0; i < m.nsp; ++i) r[r.size() - size_t(m.nsp) + size_t(i)] = m.out[3 - m.nsp + i];
  return r;
}

PadMap pad_map(IntArrayRef self_sizes, IntArrayRef padding, int64_t nsp, bool reflect, const char* op) {
  const int64_t nd = int64_t(self_sizes.size());
  bool ok = nd == nsp + 1 || nd == nsp + 2;
  // an unbatched input's dim 0 holds channels, which must not be empty either
  for (int64_t i = nd == nsp + 2 ? 1 : 0; ok && i < nd; ++i) ok = self_sizes[size_t(i)] != 0;
  TP_CHECK(ok, op, ": Expected ", nsp + 1, "D or ", nsp + 2, "D (batch mode) tensor with possibly 0 batch size and "
           "other non-zero dimensions for input, but got: ", shape_str(self_sizes));
  TP_CHECK(int64_t(padding.size()) == 2 * nsp, op, ": padding size is expected to be ", 2 * nsp, ", but got: ",
           padding.size());
  PadMap m;
  m.nsp = nsp;
  for (int64_t i = 0; i < nd - nsp; ++i) m.planes *= self_sizes[size_t(i)];
  for (int64_t i = 0; i < nsp; ++i) {
    const int64_t d = nd - nsp + i, slot = 3 - nsp + i;
    const int64_t n = self_sizes[size_t(d)];
    // padding lists the last dim first: (left, right) of dim -1, then of dim -2, ...
    const int64_t l = padding[size_t(2 * (nsp - 1 - i))], r = padding[size_t(2 * (nsp - 1 - i) + 1)];
    if (reflect)
      TP_CHECK(l < n && r < n, op, ": Argument #4: Padding size should be less than the corresponding input dimension,",
               " but got: padding (", l, ", ", r, ") at dimension ", d, " of input ", shape_str(self_sizes));
    const int64_t o = n + l + r;
    m.in[slot] = n;
    m.out[slot] = o;
  }
  // PyTorch's 2-D and 3-D pads refuse only an output empty in every padded dim (an empty one
  // dim is fine), the 1-D ones an empty output; a negative size fails its allocation
  bool some = false;
  for (int64_t i = 0; i < nsp; ++i) some = some || m.out[3 - nsp + i] >= 1;
  TP_CHECK(some, op, ": input (size ", m.in[2], ") is too small. Calculated output size: ", m.out[2]);
  for (int64_t i = 0; i < nsp; ++i)
    TP_CHECK(m.out[3 - nsp + i] >= 0, op, ": Trying to create tensor with negative dimension ", m.out[3 - nsp + i],
             ": ", shape_str(padded_sizes_of(self_sizes, m)));
  for (int64_t i = 0; i < nsp; ++i) {
    const int64_t slot = 3 - nsp + i, n = m.in[slot], o = m.out[slot];
    const int64_t l = padding[size_t(2 * (nsp - 1 - i))];
    for (int64_t j = 0; j < o; ++j) {
      int64_t k = j - l;
      if (reflect) {
        if (k < 0) k = -k;
        if (k >= n) k = 2 * (n - 1) - k;
      } else {
        k = std::clamp<int64_t>(k, 0, n - 1);
      }
      m.map[slot].push_back(k);
    }
  }
  for (int64_t s = 0; s < 3 - nsp; ++s) m.map[s] = {0};
  return m;
}

DimVector padded_sizes(IntArrayRef self_sizes, const PadMap& m) { return padded_sizes_of(self_sizes, m); }

/// Calls f(out_flat, in_flat) for every element of one plane.
template <class F>
inline void for_each_mapped(const PadMap& m, F f) {
  int64_t o = 0;
  for (int64_t a = 0; a < m.out[0]; ++a)
    for (int64_t b = 0; b < m.out[1]; ++b) {
      const int64_t row = (m.map[0][size_t(a)] * m.in[1] + m.map[1][size_t(b)]) * m.in[2];
      for (int64_t c = 0; c < m.out[2]; ++c, ++o) f(o, row + m.map[2][size_t(c)]);
    }
}

template <class T>
void pad_gather(const PadMap& m, const T* x, T* y) {
  parallel_for(0, m.planes, 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const T* xp = x + p * m.in_numel();
      T* yp = y + p * m.out_numel();
      for_each_mapped(m, [&](int64_t o, int64_t i) { yp[o] = xp[i]; });
    }
  });
}

template <class T>
void pad_scatter_add(const PadMap& m, const T* gy, T* gx) {
  parallel_for(0, m.planes, 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      T* xp = gx + p * m.in_numel();
      const T* yp = gy + p * m.out_numel();
      std::fill(xp, xp + m.in_numel(), T(0));
      for_each_mapped(m, [&](int64_t o, int64_t i) { xp[i] += yp[o]; });
    }
  });
}

/// Calls f(U{}) with an unsigned integer type of the dtype's size (for pure data movement).
template <class F>
void visit_bits(DType dt, F&& f) {
  switch (element_size(dt)) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    default: return f(Bits128{});
  }
}

Tensor pad_run(const Tensor& self, IntArrayRef padding, int64_t nsp, bool reflect, const char* op) {
  PadMap m = pad_map(self.sizes(), padding, nsp, reflect, op);
  TP_CHECK(self.device().is_cpu() || self.device().is_cuda() || is_meta(self), op, ": no ", self.device().str(),
           " kernel");
  Tensor y = empty_tensor(padded_sizes(self.sizes(), m), self.dtype(), self.device());
  if (is_meta(self)) {  // PyTorch's meta functions check the dtype of replication pads only
    TP_CHECK(reflect || self.dtype() != DType::Bool, "\"", op, "\" not implemented for 'torch.bool'");
    return y;
  }
  TP_CHECK_KIND(ErrorKind::NotImplemented, self.dtype() != DType::Bool, "\"", op, "\" not implemented for 'Bool'");
  Tensor x = contiguous(self);
  if (self.device().is_cuda()) {
#ifdef TP_USE_CUDA
    cuda::pad_forward(x, y, m.in, m.map);
#endif
  } else if (y.numel())
    visit_bits(self.dtype(), [&](auto t) {
      using U = decltype(t);
      pad_gather(m, x.data<U>(), y.data<U>());
    });
  return y;
}

}  // namespace

#define TP_PADS(N)                                                                                     \
  Tensor reflection_pad##N##d_impl(const Tensor& self, IntArrayRef padding, OutArg) {                  \
    return pad_run(self, padding, N, true, "reflection_pad" #N "d");                                  \
  }                                                                                                    \
  Tensor replication_pad##N##d_impl(const Tensor& self, IntArrayRef padding, OutArg) {                 \
    return pad_run(self, padding, N, false, "replication_pad" #N "d");                                \
  }
TP_PADS(1)
TP_PADS(2)
TP_PADS(3)
#undef TP_PADS

Tensor _pad_backward_impl(const Tensor& grad_output, IntArrayRef self_size, IntArrayRef padding, bool reflect, OutArg) {
  const int64_t nsp = int64_t(padding.size()) / 2;
  PadMap m = pad_map(self_size, padding, nsp, reflect, "pad_backward");
  DimVector expected = padded_sizes(self_size, m);
  TP_CHECK(std::equal(expected.begin(), expected.end(), grad_output.sizes().begin(), grad_output.sizes().end()),
           "pad_backward: grad_output of size ", shape_str(grad_output.sizes()), ", expected ", shape_str(expected));
  if (is_meta(grad_output)) return empty_tensor(self_size, grad_output.dtype(), grad_output.device());
  const DType dt = is_float16_or_bfloat16(grad_output.dtype()) ? DType::Float32 : grad_output.dtype();
  Tensor gy = contiguous(_to_dtype(grad_output, dt));
  Tensor gx = empty_tensor(self_size, dt, grad_output.device());
  if (gx.numel()) {
    TP_CHECK(dt == DType::Float32 || dt == DType::Float64 || (is_complex(dt) && gx.device().is_cpu()),
             "pad_backward: unsupported dtype ", dtype_name(dt));
    if (gx.device().is_cuda()) {
#ifdef TP_USE_CUDA
      cuda::pad_backward(gy, gx, m.in, m.map);
#endif
    } else if (dt == DType::Float32) pad_scatter_add(m, gy.data<float>(), gx.data<float>());
    else if (dt == DType::Float64) pad_scatter_add(m, gy.data<double>(), gx.data<double>());
    else if (dt == DType::Complex64) pad_scatter_add(m, gy.data<complex64_t>(), gx.data<complex64_t>());
    else pad_scatter_add(m, gy.data<complex128_t>(), gx.data<complex128_t>());
  }
  return _to_dtype(gx, grad_output.dtype());
}

Tensor pad_nd(const Tensor& grad, IntArrayRef padding, bool reflect) {
  switch (padding.size() / 2) {
    case 1: return reflect ? reflection_pad1d(grad, padding) : replication_pad1d(grad, padding);
    case 2: return reflect ? reflection_pad2d(grad, padding) : replication_pad2d(grad, padding);
    default: return reflect ? reflection_pad3d(grad, padding) : replication_pad3d(grad, padding);
  }
}

// ------------------------------------------------------------------ max_unpool

namespace {

Tensor unpool_run(const Tensor& self, const Tensor& indices, IntArrayRef output_size, int64_t nsp, const char* op) {
  TP_CHECK(indices.dtype() == DType::Int64, op, ": elements in indices should be type int64 but got: ",
           dtype_scalar_name(indices.dtype()));
  TP_CHECK(self.dim() == nsp + 1 || self.dim() == nsp + 2, op, ": Expected ", nsp + 1, "D or ", nsp + 2,
           "D tensor, but got input of size ", shape_str(self.sizes()));
  TP_CHECK(int64_t(output_size.size()) == nsp, op, ": There should be exactly ", nsp,
           " elements in output_size, but got ", output_size.size(), " elements.");
  TP_CHECK(std::equal(self.sizes().begin(), self.sizes().end(), indices.sizes().begin(), indices.sizes().end()), op,
           ": Expected shape of indices to be same as that of the input tensor (", shape_str(self.sizes()),
           ") but got indices tensor with shape: ", shape_str(indices.sizes()));
  for (int64_t i = 1; i < self.dim(); ++i)
    TP_CHECK(self.size(i) > 0, op, ": Expected input to have non-zero size for non-batch dimensions, but got ",
             shape_str(self.sizes()), " with dimension ", i, " being empty.");
  DimVector out_sizes(self.sizes().data(), size_t(self.dim() - nsp));
  int64_t plane_out = 1;
  for (int64_t v : output_size) {
    TP_CHECK(v >= 0, op, ": output_size must contain non-negative spatial dimensions, but got output_size=",
             shape_str(output_size));
    out_sizes.push_back(v);
    plane_out *= v;
  }
  // PyTorch returns an empty result before its dtype dispatch
  if (plane_out == 0 && !is_meta(self)) {
    check_same_device(self, indices);
    return empty_tensor(out_sizes, self.dtype(), self.device());
  }
  TP_CHECK_KIND(ErrorKind::NotImplemented, is_floating(self.dtype()) || is_meta(self), "\"", op,
                "\" not implemented for '", dtype_scalar_name(self.dtype()), "'");
  const int64_t planes = [&] {
    int64_t p = 1;
    for (int64_t i = 0; i < self.dim() - nsp; ++i) p *= self.size(i);
    return p;
  }();
  const int64_t plane_in = planes ? self.numel() / planes : 0;
  check_same_device(self, indices);
  // on meta: no values to place, nor indices to check (PyTorch's meta function checks none)
  if (is_meta(self)) return empty_tensor(out_sizes, self.dtype(), self.device());
  Tensor x = contiguous(self), idx = contiguous(indices);
  const Tensor host_idx = host_copy(idx);
  const int64_t* ix = host_idx.data<int64_t>();
  for (int64_t i = 0; i < idx.numel(); ++i)
    TP_CHECK(ix[i] >= 0 && ix[i] < plane_out, op, ": Found an invalid max index: ", ix[i],
             " (output volumes are of size ", shape_str(output_size), ")");
  Tensor y = zeros(out_sizes, self.dtype(), self.device());
  if (y.device().is_cuda()) {
#ifdef TP_USE_CUDA
    cuda::max_unpool(x, idx, y, plane_in, plane_out);
#endif
  } else if (x.numel())
    visit_bits(self.dtype(), [&](auto t) {
      using U = decltype(t);
      const U* xp = x.data<U>();
      U* yp = y.data<U>();
      parallel_for(0, planes, 1, [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p)
          for (int64_t j = 0; j < plane_in; ++j) yp[p * plane_out + ix[p * plane_in + j]] = xp[p * plane_in + j];
      });
    });
  return y;
}

}  // namespace

Tensor max_unpool2d_impl(const Tensor& self, const Tensor& indices, IntArrayRef output_size, OutArg) {
  return unpool_run(self, indices, output_size, 2, "max_unpool2d");
}

Tensor max_unpool3d_impl(const Tensor& self, const Tensor& indices, IntArrayRef output_size, IntArrayRef stride,
                         IntArrayRef padding, OutArg) {
  TP_CHECK(stride.size() == 3 && padding.size() == 3, "max_unpool3d: stride and padding must have 3 elements");
  for (size_t i = 0; i < 3; ++i)
    TP_CHECK(stride[i] > 0, "max_unpool3d: strides should be greater than zero, but got stride: ", shape_str(stride));
  return unpool_run(self, indices, output_size, 3, "max_unpool3d");
}

Tensor max_unpool1d_impl(const Tensor& self, const Tensor& indices, IntArrayRef output_size, OutArg) {
  TP_CHECK(output_size.size() == 1, "max_unpool1d: There should be exactly 1 element in output_size, but got ",
           output_size.size(), " elements.");
  const int64_t size2[2] = {output_size[0], 1};
  const int64_t last = -1;
  return _squeeze_dims(max_unpool2d(unsqueeze(self, -1), unsqueeze(indices, -1), IntArrayRef(size2, 2)),
                       IntArrayRef(&last, 1));
}

}  // namespace tp
