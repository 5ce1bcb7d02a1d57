// Host side of the CUDA random ops: the generator, a dense layout of the output in memory
// order (Note [Philox streams]), the launch (random_kernels.h), and a copy into a
// non-dense output.
#include <algorithm>
#include <atomic>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/graphs/capture.h"
#include "cuda/copy.h"
#include "cuda/random.h"
#include "cuda/random_kernels.h"
#include "cuda/runtime.h"
#include "ops/shape_utils.h"
#include "tensorplay/ops_api.h"

namespace tp::cuda {

namespace {

std::atomic<int> g_grid_limit{0};

int device_of(const Tensor& t) {
  return t.device().index < 0 ? current_device() : t.device().index;
}

bool is_dense(const Tensor& t) { return t.impl()->is_non_overlapping_and_dense(); }

/// An uninitialised dense tensor shaped like t, its dims in t's memory order.
Tensor dense_like(const Tensor& t, DType dtype) {
  return empty_strided_tensor(t.sizes(), preserving_strides(t.sizes(), t.strides()), dtype,
                              t.device());
}

/// `t` itself when dense, else a dense copy of it.
Tensor dense_copy(const Tensor& t) {
  if (is_dense(t)) return t;
  Tensor d = dense_like(t, t.dtype());
  cuda::copy_(d, t, false);
  return d;
}

/// A device int32 flag set to 0 on stream s, for a check kernel to raise.
Tensor new_flag(const Device& device, const Stream& s) {
  const int64_t one[1] = {1};
  Tensor flag = empty_tensor(one, DType::Int32, device);
  TP_CUDA_CHECK(cudaMemsetAsync(flag.data_ptr(), 0, sizeof(int32_t), s.handle));
  return flag;
}

/// The flag's value once the work queued on s has finished.
bool flag_raised(const Tensor& flag, const Stream& s) {
  if (graphs::skip_host_checks(s.handle)) return false;  // Note [Checks under capture]
  int32_t host = 0;
  TP_CUDA_CHECK(cudaMemcpyAsync(&host, flag.data_ptr(), sizeof(int32_t), cudaMemcpyDeviceToHost,
                                s.handle));
  s.synchronize();
  return host != 0;
}

/// Runs fill(target) over self's elements in memory order: straight into self when it is
/// dense, else into a dense temporary that is then copied into self.
template <class F>
void fill_dense(const Tensor& self, F&& fill) {
  if (self.numel() == 0) return;
  const int dev = device_of(self);
  DeviceGuard guard(dev);
  const Tensor dst = is_dense(self) ? self : dense_like(self, self.dtype());
  fill(FillTarget{dst.data_ptr(), dst.numel(), dst.dtype(), dev, current_stream(dev).handle}, dev);
  if (!dst.is_same(self)) cuda::copy_(self, dst, false);
}

}  // namespace

int philox_grid(int64_t philox_blocks, int device, int blocks_per_sm) {
  const int limit = g_grid_limit.load(std::memory_order_relaxed);
  const int64_t cap = limit > 0 ? limit
                                : std::max(blocks_per_sm, 1) *
                                      int64_t(device_properties(device).multi_processor_count);
  const int64_t want = (philox_blocks + kPhiloxThreads - 1) / kPhiloxThreads;
  return int(std::max<int64_t>(1, std::min(want, cap)));
}

void set_philox_grid_limit(int blocks) { g_grid_limit.store(std::max(blocks, 0)); }

void uniform_(const Tensor& self, double from, double to, const std::optional<Generator>& gen) {
  fill_dense(self, [&](const FillTarget& t, int dev) {
    launch_uniform(t, generator_for(gen, dev), from, to);
  });
}

void normal_(const Tensor& self, double mean, double std, const std::optional<Generator>& gen) {
  fill_dense(self, [&](const FillTarget& t, int dev) {
    launch_normal(t, generator_for(gen, dev), mean, std, false);
  });
}

void log_normal_(const Tensor& self, double mean, double std, const std::optional<Generator>& gen) {
  fill_dense(self, [&](const FillTarget& t, int dev) {
    launch_normal(t, generator_for(gen, dev), mean, std, true);
  });
}

void exponential_(const Tensor& self, double lambda, const std::optional<Generator>& gen) {
  fill_dense(self, [&](const FillTarget& t, int dev) {
    launch_exponential(t, generator_for(gen, dev), lambda);
  });
}

void cauchy_(const Tensor& self, double median, double sigma, const std::optional<Generator>& gen) {
  fill_dense(self, [&](const FillTarget& t, int dev) {
    launch_cauchy(t, generator_for(gen, dev), median, sigma);
  });
}

void geometric_(const Tensor& self, double p, const std::optional<Generator>& gen) {
  fill_dense(self, [&](const FillTarget& t, int dev) {
    launch_geometric(t, generator_for(gen, dev), p);
  });
}

void random_(const Tensor& self, int64_t base, uint64_t range, const std::optional<Generator>& gen) {
  fill_dense(self, [&](const FillTarget& t, int dev) {
    launch_random(t, generator_for(gen, dev), base, range);
  });
}

void bernoulli_(const Tensor& self, double p, const std::optional<Generator>& gen) {
  fill_dense(self, [&](const FillTarget& t, int dev) {
    launch_bernoulli(t, generator_for(gen, dev), p);
  });
}

bool bernoulli_(const Tensor& self, const Tensor& p, const std::optional<Generator>& gen) {
  TP_CHECK(is_floating(p.dtype()), "expected probabilities tensor to have floating type, got ",
           dtype_scalar_name(p.dtype()));
  const Tensor pe = expand_impl(p, self.sizes(), OutArg{});
  if (self.numel() == 0) return true;
  const int dev = device_of(self);
  DeviceGuard guard(dev);
  const Stream s = current_stream(dev);
  const Tensor dst = is_dense(self) ? self : dense_like(self, self.dtype());
  // p as float (double for a float64 output) laid out like dst, on its device
  const bool wide = self.dtype() == DType::Float64;
  Tensor pd = empty_strided_tensor(dst.sizes(), dst.strides(), wide ? DType::Float64 : DType::Float32,
                                   dst.device());
  cuda::copy_(pd, pe, false);
  const Tensor bad = new_flag(dst.device(), s);
  launch_check_probabilities(pd.data_ptr(), pd.numel(), wide, bad.device_data<int32_t>(), s.handle);
  if (flag_raised(bad, s)) return false;
  launch_bernoulli(FillTarget{dst.data_ptr(), dst.numel(), dst.dtype(), dev, s.handle},
                   generator_for(gen, dev), pd.data_ptr());
  if (!dst.is_same(self)) cuda::copy_(self, dst, false);
  return true;
}

std::tuple<Tensor, Tensor> native_dropout(const Tensor& input, double p,
                                          const std::optional<Generator>& gen) {
  const int dev = device_of(input);
  DeviceGuard guard(dev);
  const Tensor in = dense_copy(input);
  Tensor out = empty_strided_tensor(in.sizes(), in.strides(), in.dtype(), in.device());
  Tensor mask = empty_strided_tensor(in.sizes(), in.strides(), DType::Bool, in.device());
  if (in.numel())
    launch_dropout(FillTarget{out.data_ptr(), out.numel(), out.dtype(), dev, current_stream(dev).handle},
                   generator_for(gen, dev), in.data_ptr(), mask.device_data<bool>(), p);
  return {out, mask};
}

Tensor native_dropout_backward(const Tensor& grad, const Tensor& mask, double scale) {
  TP_CHECK(mask.dtype() == DType::Bool, "Mask should be Bool Scalar Type",
           dtype_scalar_name(mask.dtype()));
  TP_CHECK(mask.device() == grad.device(), "Expected all tensors to be on the same device, but "
           "found at least two devices, ", grad.device().str(), " and ", mask.device().str(), "!");
  if (!is_floating(grad.dtype()))
    TP_FAIL_NOT_IMPLEMENTED("\"native_dropout_backward_cuda\" not implemented for '",
                            dtype_scalar_name(grad.dtype()), "'");
  const DimVector shape = broadcast_shapes_of(grad, mask, "native_dropout_backward");
  const int dev = device_of(grad);
  DeviceGuard guard(dev);
  const auto same_layout = [&](const Tensor& t) {
    return std::equal(t.sizes().begin(), t.sizes().end(), shape.begin(), shape.end()) && is_dense(t);
  };
  Tensor g = grad, m = mask;
  if (!(same_layout(g) && same_layout(m) &&
        std::equal(g.strides().begin(), g.strides().end(), m.strides().begin(), m.strides().end()))) {
    g = empty_tensor(shape, grad.dtype(), grad.device());
    cuda::copy_(g, grad, false);
    m = empty_tensor(shape, DType::Bool, grad.device());
    cuda::copy_(m, mask, false);
  }
  Tensor out = empty_strided_tensor(g.sizes(), g.strides(), g.dtype(), g.device());
  launch_dropout_backward(FillTarget{out.data_ptr(), out.numel(), out.dtype(), dev,
                                     current_stream(dev).handle},
                          g.data_ptr(), m.device_data<bool>(), scale);
  return out;
}

void randperm(const Tensor& result, const std::optional<Generator>& gen) {
  const int64_t n = result.numel();
  if (n == 0) return;
  const int dev = device_of(result);
  DeviceGuard guard(dev);
  const cudaStream_t s = current_stream(dev).handle;
  const int64_t size[1] = {n};
  const Tensor keys = empty_tensor(size, DType::Int64, result.device());
  launch_random(FillTarget{keys.data_ptr(), n, DType::Int64, dev, s}, generator_for(gen, dev), 0,
                0);
  const bool direct = result.dtype() == DType::Int64 && result.is_contiguous();
  const Tensor perm = direct ? result : empty_tensor(size, DType::Int64, result.device());
  launch_randperm_sort(keys.device_data<int64_t>(), n, perm.device_data<int64_t>(), dev, s);
  if (!direct) cuda::copy_(result, perm, false);
}

ProbabilityIssues scan_probabilities(const Tensor& p, int64_t rows, int64_t n_categories) {
  const int dev = device_of(p);
  DeviceGuard guard(dev);
  const Stream s = current_stream(dev);
  const int64_t two[1] = {2}, nrows[1] = {rows};
  const Tensor found = empty_tensor(two, DType::Int64, p.device());
  const Tensor nonzero = empty_tensor(nrows, DType::Int32, p.device());
  TP_CUDA_CHECK(cudaMemsetAsync(found.data_ptr(), 0xff, 8, s.handle));
  TP_CUDA_CHECK(cudaMemsetAsync(found.data_ptr() + 8, 0, 8, s.handle));
  if (rows) TP_CUDA_CHECK(cudaMemsetAsync(nonzero.data_ptr(), 0, size_t(rows) * 4, s.handle));
  auto* words = reinterpret_cast<unsigned long long*>(found.data_ptr());
  launch_scan_probabilities(p.data_ptr(), p.dtype() == DType::Float64, rows, n_categories, words,
                            nonzero.device_data<int32_t>(), s.handle);
  if (graphs::skip_host_checks(s.handle)) return {0, false, false};  // Note [Checks under capture]
  unsigned long long host[2] = {0, 0};
  TP_CUDA_CHECK(cudaMemcpyAsync(host, words, sizeof(host), cudaMemcpyDeviceToHost, s.handle));
  s.synchronize();
  return {host[0] == ~0ull ? 0 : int(host[0] & 3), (host[1] & 1) != 0, (host[1] & 2) != 0};
}

Tensor multinomial_keys(const Tensor& p, const std::optional<Generator>& gen) {
  const int dev = device_of(p);
  DeviceGuard guard(dev);
  Tensor keys = empty_tensor(p.sizes(), p.dtype(), p.device());
  if (keys.numel())
    launch_multinomial_keys(FillTarget{keys.data_ptr(), keys.numel(), keys.dtype(), dev,
                                       current_stream(dev).handle},
                            generator_for(gen, dev), p.data_ptr());
  return keys;
}

void multinomial_draws(const Tensor& cum, int64_t n_sample, const std::optional<Generator>& gen,
                       const Tensor& result) {
  if (result.numel() == 0) return;
  const int dev = device_of(result);
  DeviceGuard guard(dev);
  const Tensor dst =
      result.is_contiguous() ? result : empty_tensor(result.sizes(), DType::Int64, result.device());
  launch_multinomial_draws(FillTarget{dst.data_ptr(), dst.numel(), DType::Int64, dev,
                                      current_stream(dev).handle},
                           generator_for(gen, dev), cum.device_data<double>(),
                           cum.size(cum.dim() - 1), n_sample);
  if (!dst.is_same(result)) cuda::copy_(result, dst, false);
}

bool poisson(const Tensor& self, const Tensor& out, const std::optional<Generator>& gen) {
  if (out.numel() == 0) return true;
  const int dev = device_of(out);
  DeviceGuard guard(dev);
  const Stream s = current_stream(dev);
  const Tensor rates = contiguous(self);
  const Tensor bad = new_flag(out.device(), s);
  launch_check_rates(rates.data_ptr(), rates.numel(), rates.dtype(), bad.device_data<int32_t>(),
                     s.handle);
  if (flag_raised(bad, s)) return false;
  launch_poisson(FillTarget{out.data_ptr(), out.numel(), out.dtype(), dev, s.handle},
                 generator_for(gen, dev), rates.data_ptr());
  return true;
}

}  // namespace tp::cuda
