// tensorplay._C's matmul precision settings (csrc/core/matmul_settings.h), behind
// tp.set_float32_matmul_precision and tp.backends.cuda.matmul / tp.backends.cudnn.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>

#include "core/matmul_settings.h"
#include "python/bindings.h"

namespace tp::python {

void bind_matmul_settings(nb::module_& m) {
  m.def("_get_float32_matmul_precision", [] {
    switch (float32_matmul_precision()) {
      case Float32MatmulPrecision::High: return "high";
      case Float32MatmulPrecision::Medium: return "medium";
      default: return "highest";
    }
  });
  // False (and no change) for a name other than highest / high / medium.
  m.def("_set_float32_matmul_precision", [](const std::string& p) {
    if (p == "highest") set_float32_matmul_precision(Float32MatmulPrecision::Highest);
    else if (p == "high") set_float32_matmul_precision(Float32MatmulPrecision::High);
    else if (p == "medium") set_float32_matmul_precision(Float32MatmulPrecision::Medium);
    else return false;
    return true;
  });
  m.def("_get_cublas_allow_tf32", [] { return allow_tf32_cublas(); });
  m.def("_set_cublas_allow_tf32", [](bool v) { set_allow_tf32_cublas(v); });
  m.def("_get_cublas_allow_fp16_reduced_precision_reduction", [] {
    ReducedPrecisionReduction r = fp16_reduced_precision_reduction();
    return std::make_pair(r.allow, r.allow_splitk);
  });
  m.def("_set_cublas_allow_fp16_reduced_precision_reduction", [](bool allow, bool splitk) {
    set_fp16_reduced_precision_reduction({allow, splitk});
  });
  m.def("_get_cublas_allow_bf16_reduced_precision_reduction", [] {
    ReducedPrecisionReduction r = bf16_reduced_precision_reduction();
    return std::make_pair(r.allow, r.allow_splitk);
  });
  m.def("_set_cublas_allow_bf16_reduced_precision_reduction", [](bool allow, bool splitk) {
    set_bf16_reduced_precision_reduction({allow, splitk});
  });
  m.def("_get_cublas_allow_fp16_accumulation", [] { return allow_fp16_accumulation(); });
  m.def("_set_cublas_allow_fp16_accumulation", [](bool v) { set_allow_fp16_accumulation(v); });
  m.def("_get_cudnn_allow_tf32", [] { return cudnn_allow_tf32(); });
  m.def("_set_cudnn_allow_tf32", [](bool v) { set_cudnn_allow_tf32(v); });
  // (enabled, benchmark, deterministic)
  m.def("_get_cudnn_flags", [] {
    CudnnFlags f = cudnn_flags();
    return std::make_tuple(f.enabled, f.benchmark, f.deterministic);
  });
  m.def("_set_cudnn_flags", [](bool enabled, bool benchmark, bool deterministic) {
    set_cudnn_flags({enabled, benchmark, deterministic});
  });
}

}  // namespace tp::python
