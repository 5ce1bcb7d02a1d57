// Embedding bags: _embedding_bag (sum / mean / max of the weight rows each bag of indices
// picks), its weight and per_sample_weights gradients, and embedding_renorm_ (max_norm).
//
// Note [Embedding bags]: bag b holds indices [offsets[b], offsets[b + 1]); the last bag runs
// to the end of the indices, also with include_last_offset (whose last offset then only
// bounds the check), as PyTorch's double kernel, its max mode and its backward do. Indices
// equal to padding_idx are skipped: they add nothing and do not count in a bag's size (the
// mean's divisor); a bag with nothing left gives zeros. Mode max keeps per column the first
// strictly greater value (a NaN wins only in first place). Rows are summed in bag order
// in float32 for float16/bfloat16 weights, in the weight's dtype otherwise. The weight's
// gradient is spread over column blocks (no two threads write the same element), so it
// needs no sort; scale_grad_by_freq divides by each index's count over the whole input.
// The CPU loops are csrc/kernels/cpu/embedding_bag_kernel.cpp.
#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/formula_helpers.h"
#include "autograd/forward_ad.h"
#include "core/error.h"
#include "core/half.h"
#include "kernels/cpu_stubs.h"
#include "ops/meta.h"
#include "ops/nn.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"
#ifdef TP_USE_CUDA
#include "cuda/nn_spatial.h"
#endif

namespace tp {

namespace {

constexpr int64_t kSum = 0, kMean = 1, kMax = 2;

const char* index_name(DType dt) { return dt == DType::Int32 ? "Int" : dt == DType::Int64 ? "Long" : nullptr; }

void check_index_dtype(const Tensor& t, const char* arg, int pos) {
  TP_CHECK(index_name(t.dtype()), "Expected tensor for argument #", pos, " '", arg, "' to have one of the following "
           "scalar types: Long, Int; but got ", dtype_scalar_name(t.dtype()), " instead (while checking arguments "
           "for embedding_bag)");
}

/// The bags of one call, checked as PyTorch checks them: indices as int64 and each bag's [begin, end).
struct Bags {
  Tensor index;                // int64, contiguous, on the host
  std::vector<int64_t> begin;  // num_bags + 1 boundaries
  int64_t count() const { return int64_t(begin.size()) - 1; }
};

/// The checks of indices and offsets that read no values: dtypes, devices, dims.
void check_bag_args(const Tensor& indices, const Tensor& offsets, Device dev) {
  check_index_dtype(indices, "indices", 1);
  check_index_dtype(offsets, "offsets", 1);
  for (const Tensor* t : {&indices, &offsets})
    TP_CHECK(t->device() == dev, "Expected all tensors to be on the same device, but found at least two devices, ",
             dev.str(), " and ", t->device().str(), "!");
  TP_CHECK(indices.dim() == 1, "input has to be a 1D or 2D Tensor, but got Tensor of dimension ", indices.dim());
  TP_CHECK(offsets.dim() == 1, "offsets has to be a 1D Tensor, but got Tensor of dimension ", offsets.dim());
}

/// `num_bags` bags over `indices` (the forward: offsets minus the last one with
/// include_last_offset; the backward: as many as the gradient has rows).
Bags make_bags(const Tensor& indices, const Tensor& offsets, int64_t num_bags, bool include_last_offset,
               int64_t num_weights, bool check_range, Device dev, bool offset2bag = false) {
  check_bag_args(indices, offsets, dev);
  Bags b;
  b.index = host_copy(_to_dtype(indices, DType::Int64));  // the checks and the bags read them on the host
  Tensor off = host_copy(_to_dtype(offsets, DType::Int64));
  const int64_t n = b.index.numel(), m = off.numel();
  const int64_t* o = off.data<int64_t>();
  if (include_last_offset) TP_CHECK(m >= 1, "include_last_offset: number of offset should be at least 1");
  if (m > 0) {
    TP_CHECK(o[0] == 0, "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
             "position 0. However, got ", o[0]);
    TP_CHECK(o[m - 1] <= n, "offsets[-1] can not be greater than input's length ", n, " but got offsets[-1] of ",
             o[m - 1]);
  }
  // PyTorch's mean and max modes count the bags with offset2bag.index_add_(0, offsets, 1):
  // an offset outside [0, n] fails there (IndexError) before anything looks at their order
  if (offset2bag)
    for (int64_t i = 0; i < m; ++i) TP_CHECK_INDEX(o[i] >= 0 && o[i] <= n, "index out of range in self");
  for (int64_t i = 1; i < m; ++i)
    TP_CHECK(o[i] >= o[i - 1], "offsets have to be a non-decreasing sequence, but got offsets[", i, "] = ", o[i],
             " after offsets[", i - 1, "] = ", o[i - 1]);
  if (num_bags < 0) num_bags = include_last_offset ? m - 1 : m;
  TP_CHECK(num_bags <= m, "expected at most ", m, " bags (the offsets), but got a gradient for ", num_bags);
  b.begin.assign(o, o + num_bags);
  b.begin.push_back(n);
  if (check_range) {
    const int64_t* ix = b.index.data<int64_t>();
    for (int64_t i = 0; i < n; ++i)
      TP_CHECK(ix[i] >= 0 && ix[i] < num_weights, "Index ", i, " of input takes value ", ix[i],
               " which is not in the valid range [0, ", num_weights, ")");
  }
  return b;
}

/// `t` (a host tensor) on `dev`.
Tensor on_device(const Tensor& t, Device dev) {
  if (dev.is_cpu()) return t;
  Tensor d = empty_tensor(t.sizes(), t.dtype(), dev);
  return copy_(d, t);
}

/// The host vector v as a 1-D tensor of dtype dt (element size sizeof(V)) on `dev`.
template <class V>
Tensor vector_on(const std::vector<V>& v, DType dt, Device dev) {
  const int64_t n = int64_t(v.size());
  Tensor h = empty_tensor(IntArrayRef(&n, 1), dt);
  std::copy(v.begin(), v.end(), h.data<V>());
  return on_device(h, dev);
}

/// int32 when indices and offsets both are, else int64 (PyTorch promotes the pair).
DType index_result_dtype(const Tensor& indices, const Tensor& offsets) {
  return indices.dtype() == DType::Int32 && offsets.dtype() == DType::Int32 ? DType::Int32 : DType::Int64;
}

/// Raises PyTorch's error for a weight dtype the kernels do not take (not floating).
void check_weight_dtype(DType dt) {
  TP_CHECK_KIND(ErrorKind::NotImplemented, is_floating(dt), "\"embedding_bag\" not implemented for '",
                dtype_scalar_name(dt), "'");
}

/// Calls f(T{}, A{}) with the weight's element type T and its accumulation type A.
template <class F>
void visit_weight(DType dt, F&& f) {
  check_weight_dtype(dt);
  switch (dt) {
    case DType::Float64: return f(double{}, double{});
    case DType::Float16: return f(Half{}, float{});
    case DType::BFloat16: return f(BFloat16{}, float{});
    default: return f(float{}, float{});
  }
}

/// _embedding_bag and _embedding_bag_forward_only, which differ (as in PyTorch) only in the
/// length of mode sum's zero bag_size and max_indices: one per offset without gradients.
std::tuple<Tensor, Tensor, Tensor, Tensor> bag_kernel(const Tensor& weight, const Tensor& indices_in,
                                                      const Tensor& offsets_in, int64_t mode,
                                                      const std::optional<Tensor>& per_sample_weights,
                                                      bool include_last_offset, int64_t padding_idx, bool forward_only) {
  // PyTorch promotes indices and offsets to their common dtype before it wants Long or Int
  // (bool or int8 indices with int64 offsets are read as int64)
  const DType common = promote_types(offsets_in.dtype(), indices_in.dtype());
  const Tensor indices = indices_in.dtype() == common ? indices_in : _to_dtype(indices_in, common);
  const Tensor offsets = offsets_in.dtype() == common ? offsets_in : _to_dtype(offsets_in, common);
  TP_CHECK(weight.dim() == 2, "weight has to be a 2D Tensor, but got Tensor of dimension ", weight.dim());
  TP_CHECK(is_floating(weight.dtype()), "Expected tensor for argument #1 'weight' to have one of the following scalar "
           "types: Half, BFloat16, Float, Double; but got ", dtype_scalar_name(weight.dtype()), " instead (while "
           "checking arguments for embedding_bag)");
  TP_CHECK(mode == kSum || mode == kMean || mode == kMax, "`mode` must be sum, mean, or max.");
  const Device dev = weight.device();
  // on meta no values: the checks that read none, then PyTorch's meta results below
  const bool meta = is_meta(weight);
  // PyTorch counts the bags with offset2bag unless mode sum takes its fast path (float, half or
  // bfloat16 rows of unit stride, unit-stride per-sample weights, no padding_idx)
  const DType wt = weight.dtype();
  const Tensor* sw = per_sample_weights ? &*per_sample_weights : nullptr;
  const bool fast_sum = (wt == DType::Float32 || wt == DType::Float16 || wt == DType::BFloat16) &&
                        weight.stride(1) == 1 && (!sw || sw->dim() != 1 || sw->stride(0) == 1) && padding_idx < 0;
  Bags bags = meta ? Bags{} : make_bags(indices, offsets, -1, include_last_offset, weight.size(0), true, dev,
                                        /*offset2bag=*/mode != kSum || !fast_sum);
  if (meta) {
    check_bag_args(indices, offsets, dev);
    if (include_last_offset)
      TP_CHECK(offsets.numel() >= 1, "include_last_offset: number of offset should be at least 1");
  }
  if (per_sample_weights) {
    const Tensor& p = *per_sample_weights;
    TP_CHECK(p.dtype() == weight.dtype(), "Expected tensor for argument #1 'weight' to have the same type as tensor "
             "for argument #1 'per_sample_weights'; but type ", dtype_scalar_name(weight.dtype()), " does not equal ",
             dtype_scalar_name(p.dtype()), " (while checking arguments for embedding_bag)");
    TP_CHECK(mode == kSum, "embedding_bag: per_sample_weights only supported with mode='sum'");
    check_same_device(weight, p);
    TP_CHECK(p.dim() == 1 && p.numel() == indices.numel(), "embedding_bag: per_sample_weights has to be 1-D with as "
             "many elements as indices (", indices.numel(), "), but got shape ", shape_str(p.sizes()));
  }
  if (meta) {  // PyTorch's meta function (as its CUDA kernel): the index results in the indices' dtype, one
    // offset2bag entry per index, one bag size per offset, max_indices empty but for mode max
    const int64_t m = offsets.numel(), nb = include_last_offset ? m - 1 : m, n = indices.numel(), none = 0;
    const int64_t nb_d[2] = {nb, weight.size(1)};
    const DType idt = indices.dtype();
    return {empty_tensor(nb_d, weight.dtype(), dev), empty_tensor(IntArrayRef(&n, 1), idt, dev),
            empty_tensor(IntArrayRef(&m, 1), idt, dev),
            mode == kMax ? empty_tensor(nb_d, idt, dev) : empty_tensor(IntArrayRef(&none, 1), idt, dev)};
  }
  const int64_t nb = bags.count(), D = weight.size(1), n = bags.index.numel();
  const DType idt = index_result_dtype(indices, offsets);
  Tensor w = contiguous(weight);
  Tensor psw = per_sample_weights ? contiguous(*per_sample_weights) : Tensor();
  const int64_t nb_d[2] = {nb, D};
  Tensor out = empty_tensor(nb_d, weight.dtype(), dev);
  const int64_t m = mode == kSum && forward_only ? offsets.numel() : nb;
  Tensor bag_size = zeros(IntArrayRef(&m, 1), DType::Int64, dev);
  Tensor max_idx = mode == kMax ? empty_tensor(nb_d, DType::Int64, dev) : zeros(IntArrayRef(&m, 1), DType::Int64, dev);
  if (dev.is_cuda()) {
#ifdef TP_USE_CUDA
    cuda::embedding_bag_forward(w, on_device(bags.index, dev), vector_on(bags.begin, DType::Int64, dev), psw, mode,
                                padding_idx, out, bag_size, max_idx);
#endif
  } else {
    cpu::embedding_bag_stub(weight.dtype(), bags.index.data<int64_t>(), bags.begin.data(), nb, w.data_ptr(), D,
                            psw.defined() ? psw.data_ptr() : nullptr, mode, padding_idx, out.data_ptr(),
                            bag_size.data<int64_t>(), mode == kMax ? max_idx.data<int64_t>() : nullptr);
  }
  Tensor offset2bag;
  if (mode == kSum && padding_idx < 0 && weight.dtype() != DType::Float64 && weight.is_contiguous()) {
    // unused by the backward: empty where PyTorch leaves it empty (its float32 fast path)
    const int64_t none = 0;
    offset2bag = empty_tensor(IntArrayRef(&none, 1), DType::Int64);
  } else {
    offset2bag = empty_tensor(IntArrayRef(&n, 1), DType::Int64);
    int64_t* o2b = offset2bag.data<int64_t>();
    int64_t bag = 0;  // positions past empty bags belong to the next non-empty one
    for (int64_t i = 0; i < n; ++i) {
      while (bag + 1 < nb && bags.begin[size_t(bag) + 1] <= i) ++bag;
      o2b[i] = bag;
    }
  }
  offset2bag = on_device(offset2bag, dev);
  if (mode == kMean) max_idx = clone(bag_size);
  return {out, _to_dtype(offset2bag, idt), _to_dtype(bag_size, idt), _to_dtype(max_idx, idt)};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor, Tensor> embedding_bag_forward_impl(
    const Tensor& weight, const Tensor& indices, const Tensor& offsets, bool, int64_t mode, bool,
    const std::optional<Tensor>& per_sample_weights, bool include_last_offset, int64_t padding_idx, OutArg) {
  return bag_kernel(weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx, false);
}

std::tuple<Tensor, Tensor, Tensor, Tensor> embedding_bag_forward_only_impl(
    const Tensor& weight, const Tensor& indices, const Tensor& offsets, bool, int64_t mode, bool,
    const std::optional<Tensor>& per_sample_weights, bool include_last_offset, int64_t padding_idx, OutArg) {
  return bag_kernel(weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx, true);
}

std::tuple<Tensor, Tensor, Tensor, Tensor> embedding_bag_impl(const Tensor& weight, const Tensor& indices,
                                                              const Tensor& offsets, bool scale_grad_by_freq,
                                                              int64_t mode, bool sparse,
                                                              const std::optional<Tensor>& per_sample_weights,
                                                              bool include_last_offset,
                                                              const std::optional<int64_t>& padding_idx, OutArg) {
  int64_t pad = -1;
  if (padding_idx) {
    const int64_t n = size_at(weight, 0);  // a 0-d weight: PyTorch's IndexError
    TP_CHECK(*padding_idx >= -n && *padding_idx < n, "padding_idx must be within the number of embeddings, ", -n,
             " through ", n - 1, ", but got ", *padding_idx);
    pad = *padding_idx < 0 ? *padding_idx + n : *padding_idx;
  }
  // PyTorch's choice: the gradient-recording kernel when an input requires grad (here also
  // when one carries a tangent)
  auto differentiable = [](const Tensor& t) {
    return t.requires_grad() || (autograd::fw_grad_enabled() && autograd::fw_grad(t).defined());
  };
  if (differentiable(weight) || (per_sample_weights && differentiable(*per_sample_weights)))
    return _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                          include_last_offset, pad);
  return _embedding_bag_forward_only(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                                     include_last_offset, pad);
}

// ------------------------------------------------------------------ gradients

namespace {

#ifdef TP_USE_CUDA
/// The sum/mean weight gradient on the GPU: the entries (rows[j], bag_of[j], scale[j]) grouped
/// by row on the host (stable: each row keeps the CPU's order), then one thread per (row, column).
template <class A>
void rows_backward_cuda(const std::vector<int64_t>& rows, const std::vector<int64_t>& bag_of,
                        const std::vector<A>& scale, DType acc_dt, const Tensor& g, const Tensor& gw) {
  std::vector<int64_t> order(rows.size());
  for (size_t j = 0; j < order.size(); ++j) order[j] = int64_t(j);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return rows[size_t(x)] < rows[size_t(y)]; });
  std::vector<int64_t> uniq, seg, bags;
  std::vector<A> scales;
  for (size_t k = 0; k < order.size(); ++k) {
    const size_t j = size_t(order[k]);
    if (rows[j] < 0 || rows[j] >= gw.size(0)) continue;  // the backward does not check its indices: skip, not corrupt
    if (uniq.empty() || uniq.back() != rows[j]) {
      uniq.push_back(rows[j]);
      seg.push_back(int64_t(bags.size()));
    }
    bags.push_back(bag_of[j]);
    scales.push_back(scale[j]);
  }
  seg.push_back(int64_t(bags.size()));
  const Device dev = gw.device();
  cuda::embedding_bag_backward_rows(g, vector_on(uniq, DType::Int64, dev), vector_on(seg, DType::Int64, dev),
                                    vector_on(bags, DType::Int64, dev), vector_on(scales, acc_dt, dev), gw);
}
#endif

}  // namespace


Tensor embedding_bag_backward_impl(const Tensor& grad_output, const Tensor& indices, const Tensor& offsets,
                                   const Tensor& offset2bag, const Tensor& bag_size, const Tensor& maximum_indices,
                                   int64_t num_weights, bool scale_grad_by_freq, int64_t mode, bool sparse,
                                   const std::optional<Tensor>& per_sample_weights, int64_t padding_idx, OutArg) {
  (void)offset2bag;
  TP_CHECK_KIND(ErrorKind::NotImplemented, !sparse, "embedding_bag: sparse=True asks for a sparse gradient of the "
                "weight, and TensorPlay has no sparse tensors; use sparse=False (a dense gradient)");
  TP_CHECK(grad_output.dim() == 2, "expected grad_output of 2 dims, but got ", shape_str(grad_output.sizes()));
  TP_CHECK(!per_sample_weights || mode == kSum, "embedding_bag_backward: per_sample_weights only supported for "
           "mode='sum'");
  const int64_t nb = grad_output.size(0), D = grad_output.size(1);
  const Device dev = grad_output.device();
  if (is_meta(grad_output)) {
    check_bag_args(indices, offsets, dev);
    const int64_t wd[2] = {num_weights, D};
    return empty_tensor(wd, grad_output.dtype(), dev);
  }
  Bags bags = make_bags(indices, offsets, nb, false, num_weights, false, dev);
  const int64_t* ix = bags.index.data<int64_t>();
  const int64_t n = bags.index.numel();
  Tensor g = contiguous(grad_output);
  const DType dt = grad_output.dtype(), acc_dt = is_float16_or_bfloat16(dt) ? DType::Float32 : dt;
  const int64_t wd[2] = {num_weights, D};
  Tensor gw = zeros(wd, acc_dt, dev);
  visit_weight(dt, [&](auto t, auto a) {
    using T = decltype(t);
    using A = decltype(a);
    if (mode == kMax) {
      Tensor sizes = contiguous(_to_dtype(bag_size, DType::Int64));
      Tensor winners = contiguous(_to_dtype(maximum_indices, DType::Int64));
      TP_CHECK(winners.numel() == nb * D && sizes.numel() == nb, "embedding_bag_backward: max_indices and bag_size "
               "do not match the gradient's shape ", shape_str(grad_output.sizes()));
      if (dev.is_cuda()) {
#ifdef TP_USE_CUDA
        cuda::embedding_bag_backward_max(g, sizes, winners, gw);
#endif
        return;
      }
      cpu::embedding_bag_max_backward_stub(dt, g.data_ptr(), nb, D, sizes.data<int64_t>(), winners.data<int64_t>(),
                                           gw.data_ptr());
      return;
    }
    // each index's (bag, scale); padding indices get no entry
    std::vector<int64_t> count;
    if (scale_grad_by_freq) {
      count.assign(size_t(num_weights), 0);
      for (int64_t i = 0; i < n; ++i) ++count[size_t(ix[i])];
    }
    Tensor psw = per_sample_weights ? host_copy(*per_sample_weights) : Tensor();
    const T* pw = psw.defined() ? psw.data<T>() : nullptr;
    std::vector<int64_t> rows, bag_of;
    std::vector<A> scale;
    rows.reserve(size_t(n));
    for (int64_t b = 0; b < nb; ++b) {
      int64_t size = 0;
      for (int64_t i = bags.begin[size_t(b)]; i < bags.begin[size_t(b) + 1]; ++i) size += ix[i] != padding_idx;
      for (int64_t i = bags.begin[size_t(b)]; i < bags.begin[size_t(b) + 1]; ++i) {
        if (ix[i] == padding_idx) continue;
        A s = pw ? A(pw[i]) : A(1);
        if (mode == kMean) s /= A(size);
        if (scale_grad_by_freq) s /= A(count[size_t(ix[i])]);
        rows.push_back(ix[i]);
        bag_of.push_back(b);
        scale.push_back(s);
      }
    }
    if (dev.is_cuda()) {
#ifdef TP_USE_CUDA
      rows_backward_cuda(rows, bag_of, scale, acc_dt, g, gw);
#endif
      return;
    }
    cpu::embedding_bag_backward_stub(dt, g.data_ptr(), D, rows.data(), bag_of.data(), scale.data(),
                                     int64_t(rows.size()), gw.data_ptr());
  });
  return _to_dtype(gw, dt);
}

Tensor embedding_bag_per_sample_weights_backward_impl(const Tensor& grad_output, const Tensor& weight,
                                                      const Tensor& indices, const Tensor& offsets,
                                                      const Tensor& offset2bag, int64_t mode, int64_t padding_idx,
                                                      OutArg) {
  (void)offset2bag;
  TP_CHECK(mode == kSum, "embedding_bag_backward: per_sample_weights only supported for mode='sum'");
  TP_CHECK(grad_output.dim() == 2 && weight.dim() == 2 && grad_output.size(1) == weight.size(1),
           "embedding_bag_backward: expected grad_output and weight with as many columns, but got ",
           shape_str(grad_output.sizes()), " and ", shape_str(weight.sizes()));
  check_same_device(weight, grad_output);
  const int64_t nb = grad_output.size(0), D = weight.size(1);
  const Device dev = weight.device();
  if (is_meta(weight)) {
    check_bag_args(indices, offsets, dev);
    const int64_t n = indices.numel();
    return empty_tensor(IntArrayRef(&n, 1), weight.dtype(), dev);
  }
  Bags bags = make_bags(indices, offsets, nb, false, weight.size(0), true, dev);
  const int64_t* ix = bags.index.data<int64_t>();
  const int64_t n = bags.index.numel();
  Tensor g = contiguous(_to_dtype(grad_output, weight.dtype())), w = contiguous(weight);
  Tensor out = empty_tensor(IntArrayRef(&n, 1), weight.dtype(), dev);
  if (dev.is_cuda()) {
#ifdef TP_USE_CUDA
    std::vector<int64_t> bag_of(size_t(n), -1);
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t i = bags.begin[size_t(b)]; i < bags.begin[size_t(b) + 1]; ++i) bag_of[size_t(i)] = b;
    cuda::embedding_bag_per_sample_weights_backward(g, w, on_device(bags.index, dev),
                                                    vector_on(bag_of, DType::Int64, dev), padding_idx, out);
#endif
    return out;
  }
  check_weight_dtype(weight.dtype());
  cpu::embedding_bag_per_sample_weights_backward_stub(weight.dtype(), g.data_ptr(), w.data_ptr(), ix,
                                                      bags.begin.data(), nb, D, padding_idx, out.data_ptr());
  return out;
}

Tensor embedding_bag_jvp(const Tensor& weight_t, const Tensor& per_sample_weights_t, const Tensor& weight,
                         const Tensor& indices, const Tensor& offsets, int64_t mode,
                         const std::optional<Tensor>& per_sample_weights, bool include_last_offset, int64_t padding_idx,
                         const Tensor& max_indices, const Tensor& bag_size) {
  if (mode == kMax) {  // the tangent's rows at the winners; zeros for empty bags
    Tensor picked = gather(weight_t, 0, _to_dtype(max_indices, DType::Int64));
    Tensor filled = unsqueeze(gt(bag_size, wrapped_scalar(Scalar(int64_t(0)))), 1);
    return where(filled, picked, zeros(IntArrayRef(), picked.dtype()));
  }
  Tensor r = std::get<0>(_embedding_bag(weight_t, indices, offsets, false, mode, false, per_sample_weights,
                                        include_last_offset, padding_idx));
  if (per_sample_weights_t.defined())
    r = r + std::get<0>(_embedding_bag(weight, indices, offsets, false, mode, false, per_sample_weights_t,
                                       include_last_offset, padding_idx));
  return r;
}

// ------------------------------------------------------------------ max_norm

Tensor embedding_renorm_impl(const Tensor& self, const Tensor& indices, double max_norm, double norm_type, OutArg) {
  TP_CHECK(self.dim() == 2, "Expected 2-dimensional tensor, but got ", self.dim(), "-dimensional tensor for argument "
           "#1 'self' (while checking arguments for embedding_renorm_)");
  TP_CHECK(index_name(indices.dtype()), "Expected tensor for argument #2 'indices' to have one of the following "
           "scalar types: Long, Int; but got ", dtype_scalar_name(indices.dtype()), " instead (while checking "
           "arguments for embedding_renorm_)");
  if (is_complex(self.dtype())) TP_FAIL_NOT_IMPLEMENTED("embedding_renorm_: ", "complex inputs are not supported yet (got ", dtype_scalar_name(self.dtype()), ")");
  TP_CHECK(is_floating(self.dtype()), "norm(): input dtype should be either floating point or complex. Got ",
           dtype_scalar_name(self.dtype()), " instead.");
  if (is_meta(self)) return self;  // no rows to renormalise
  Tensor ix = host_copy(_to_dtype(indices, DType::Int64));
  const int64_t rows = self.size(0), D = self.size(1), rs = self.stride(0), cs = self.stride(1);
  std::vector<int64_t> uniq(ix.data<int64_t>(), ix.data<int64_t>() + ix.numel());
  for (int64_t& r : uniq) {
    TP_CHECK_INDEX(r >= -rows && r < rows, "select(): index ", r, " out of range for tensor of size ",
                   shape_str(self.sizes()), " at dimension 0");
    if (r < 0) r += rows;
  }
  std::sort(uniq.begin(), uniq.end());
  uniq.erase(std::unique(uniq.begin(), uniq.end()), uniq.end());
  if (self.device().is_cuda()) {
#ifdef TP_USE_CUDA
    cuda::embedding_renorm(self, vector_on(uniq, DType::Int64, self.device()), max_norm, norm_type);
#endif
    self.impl()->bump_version();
    return self;
  }
  visit_weight(self.dtype(), [&](auto t, auto a) {
    using T = decltype(t);
    using A = decltype(a);
    T* base = reinterpret_cast<T*>(self.data_ptr());
    for (int64_t r : uniq) {
      T* row = base + r * rs;
      double norm = 0;
      if (norm_type == 2) {
        for (int64_t d = 0; d < D; ++d) norm += double(row[d * cs]) * double(row[d * cs]);
        norm = std::sqrt(norm);
      } else if (std::isinf(norm_type)) {
        norm = D ? std::fabs(double(row[0])) : 0.0;
        for (int64_t d = 0; d < D; ++d)
          norm = norm_type > 0 ? std::max(norm, std::fabs(double(row[d * cs]))) : std::min(norm, std::fabs(double(row[d * cs])));
      } else if (norm_type == 0) {
        for (int64_t d = 0; d < D; ++d) norm += double(row[d * cs]) != 0;
      } else {
        for (int64_t d = 0; d < D; ++d) norm += std::pow(std::fabs(double(row[d * cs])), norm_type);
        norm = std::pow(norm, 1 / norm_type);
      }
      if (norm > max_norm) {
        const A scale = A(max_norm / (norm + 1e-7));
        for (int64_t d = 0; d < D; ++d) row[d * cs] = T(A(row[d * cs]) * scale);
      }
    }
  });
  self.impl()->bump_version();
  return self;
}

}  // namespace tp
