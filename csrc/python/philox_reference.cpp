// Test hooks for the CUDA random ops, present in every build: Philox4x32-10 itself and the
// host recomputation of a CUDA sampling launch (Note [Philox streams]), which the GPU tests
// compare with the kernels bit for bit. Compiled with -ffp-contract=off (portable_math.h).
#include <nanobind/stl/array.h>

#include "cuda/random_samplers.h"
#include "python/bindings.h"
#include "tensorplay/ops_api.h"

namespace tp::python {

namespace {

/// A sampler's blocks run one after another on the host, as a launch from (seed, offset).
struct HostRunner {
  int64_t n;
  philox::LaunchArgs args;
  template <class S>
  void operator()(const S& s) const {
    const int64_t blocks = philox::blocks_for<S>(n);
    for (int64_t b = 0; b < blocks; ++b) philox::run_unit(s, args, b, n);
  }
};

/// A contiguous CPU copy of t in dtype dt.
Tensor host_copy(const Tensor& t, DType dt) {
  Tensor h = empty_tensor(t.sizes(), dt);
  copy_(h, t);
  return h;
}

/// What the CUDA kernel of `op` writes into n dense elements of `dtype` from (seed,
/// offset). Parameters: uniform (a=from, b=to), normal / log_normal (a=mean, b=std),
/// exponential (a=lambda), cauchy (a=median, b=sigma), geometric (a=p), random (base,
/// range; range 0 = 2^64), bernoulli (a=p), bernoulli_tensor (input=p), dropout (input=x,
/// a=p; returns (output, mask)), multinomial_keys (input=probabilities; dtype float32 or
/// float64), multinomial_draws (input=rows x categories float64 inclusive sums; n = rows
/// x samples; int64), poisson (input=rates). randperm's keys are random's with range 0.
nb::object reference(const std::string& op, DType dtype, int64_t n, uint64_t seed, uint64_t offset,
                     double a, double b, int64_t base, uint64_t range, std::optional<Tensor> input) {
  TP_CHECK(offset % 4 == 0, "offset must be a multiple of 4");
  const int64_t size[1] = {n};
  Tensor out = empty_tensor(size, dtype);
  const HostRunner run{n, philox::LaunchArgs{seed, offset / 4}};
  if (op == "uniform") philox::dispatch_uniform(run, dtype, out.data_ptr(), a, b);
  else if (op == "normal") philox::dispatch_normal(run, dtype, out.data_ptr(), a, b, false);
  else if (op == "log_normal") philox::dispatch_normal(run, dtype, out.data_ptr(), a, b, true);
  else if (op == "exponential") philox::dispatch_exponential(run, dtype, out.data_ptr(), a);
  else if (op == "cauchy") philox::dispatch_cauchy(run, dtype, out.data_ptr(), a, b);
  else if (op == "geometric") philox::dispatch_geometric(run, dtype, out.data_ptr(), a);
  else if (op == "random") philox::dispatch_random(run, dtype, out.data_ptr(), base, range);
  else if (op == "bernoulli") philox::dispatch_bernoulli_scalar(run, dtype, out.data_ptr(), a);
  else if (op == "multinomial_draws") {
    TP_CHECK(dtype == DType::Int64 && input && input->dim() == 2 && input->size(0) > 0 &&
                 input->size(1) > 0 && n % input->size(0) == 0,
             "_philox_reference: multinomial_draws needs rows x categories sums, n = rows x "
             "samples, int64");
    const Tensor cum = host_copy(*input, DType::Float64);
    philox::dispatch_multinomial_draws(run, cum.data<double>(), out.data<int64_t>(), cum.size(1),
                                       n / cum.size(0));
  } else if (op == "bernoulli_tensor" || op == "dropout" || op == "multinomial_keys" ||
             op == "poisson") {
    TP_CHECK(input && input->numel() == n, "_philox_reference: ", op, " needs an input of n elements");
    if (op == "bernoulli_tensor") {
      const Tensor p = host_copy(*input, dtype == DType::Float64 ? DType::Float64 : DType::Float32);
      philox::dispatch_bernoulli_tensor(run, dtype, out.data_ptr(), p.data_ptr());
    } else if (op == "multinomial_keys") {
      TP_CHECK(dtype == DType::Float32 || dtype == DType::Float64,
               "_philox_reference: multinomial_keys computes in float32 or float64");
      const Tensor p = host_copy(*input, dtype);
      philox::dispatch_multinomial_keys(run, dtype, p.data_ptr(), out.data_ptr());
    } else if (op == "poisson") {
      const Tensor rates = host_copy(*input, dtype);
      philox::dispatch_poisson(run, dtype, rates.data_ptr(), out.data_ptr());
    } else {
      const Tensor x = host_copy(*input, dtype);
      Tensor mask = empty_tensor(size, DType::Bool);
      philox::dispatch_dropout(run, dtype, x.data_ptr(), out.data_ptr(), mask.data<bool>(), a);
      return nb::make_tuple(out, mask);
    }
  } else {
    TP_FAIL("_philox_reference: unknown op '", op, "'");
  }
  return nb::cast(out);
}

}  // namespace

void bind_philox_reference(nb::module_& m) {
  m.def("_philox4x32_10", [](std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
    const philox::Block r = philox::philox4x32_10(c[0], c[1], c[2], c[3], k[0], k[1]);
    return std::array<uint32_t, 4>{r.w[0], r.w[1], r.w[2], r.w[3]};
  }, nb::arg("counter"), nb::arg("key"), "Philox4x32-10 of a 4-word counter under a 2-word key.");
  m.def("_philox_reference", &reference, nb::arg("op"), nb::arg("dtype"), nb::arg("n"),
        nb::arg("seed"), nb::arg("offset"), nb::arg("a") = 0.0, nb::arg("b") = 0.0,
        nb::arg("base") = 0, nb::arg("range") = 0, nb::arg("input").none() = nb::none(),
        "The values a CUDA random launch of `op` writes (Note [Philox streams]), computed on "
        "the host.");
}

}  // namespace tp::python
