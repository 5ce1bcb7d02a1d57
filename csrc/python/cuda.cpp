// tensorplay._C's CUDA entry points (_cuda_*), used by python/tensorplay/cuda/, the CPU block cache's (_cpu_*), and _has_cudnn /
// _cudnn_version / the cuDNN backend-API switch (_cudnn_set_backend_api, _cudnn_backend_api,
// _cudnn_plan_cache_size) / the cuDNN attention switch (_cudnn_set_sdpa, _cudnn_sdpa,
// _cudnn_sdpa_available, _cudnn_sdpa_graphs). In a build without CUDA only _cuda_compiled and _has_cudnn (both False)
// exist; the Python package raises from there.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <atomic>

#include "core/storage.h"
#include "python/bindings.h"

#ifdef TP_USE_CUDA
#include "cuda/caching_allocator.h"
#include "cuda/copy.h"
#include "cuda/generator.h"
#include "cuda/graphs/graph.h"
#include "cuda/host_probe.h"
#include "cuda/runtime.h"
#endif
#ifdef TP_USE_CUDNN
#include "cuda/cudnn_attention.h"
#include "cuda/cudnn_conv.h"
#endif

namespace tp::python {

#ifdef TP_USE_CUDA
namespace {

using StreamTuple = std::tuple<uintptr_t, int, int>;  // (cuda_stream, device_index, priority)

StreamTuple as_tuple(const cuda::Stream& s) {
  return {reinterpret_cast<uintptr_t>(s.handle), s.device, s.priority};
}
cuda::Stream from_tuple(uintptr_t handle, int device, int priority) {
  return cuda::Stream{reinterpret_cast<cudaStream_t>(handle), device, priority};
}

}  // namespace
#endif

void bind_cuda(nb::module_& m) {
  // the CPU block cache (Note [CPU block cache]): tp.cpu.empty_cache / tp.cpu.memory_cached
  m.def("_cpu_empty_cache", [] { return cpu_empty_cache(); });
  m.def("_cpu_cached_bytes", [] { return cpu_cached_bytes(); });
#ifdef TP_USE_CUDNN
  m.attr("_has_cudnn") = true;
  m.def("_cudnn_version", [] { return cuda::cudnn::version(); });
  // Note [cuDNN backend API] (cuda/cudnn_conv.cpp): the switch and the plan cache's size
  m.def("_cudnn_set_backend_api", [](bool on) { cuda::cudnn::set_backend_api(on); });
  m.def("_cudnn_backend_api", [] { return cuda::cudnn::backend_api(); });
  m.def("_cudnn_plan_cache_size", [] { return cuda::cudnn::plan_cache_size(); });
  // Note [cuDNN attention] (cuda/cudnn_attention.cpp): the switch, whether the build has the
  // cuDNN frontend, and the graphs built
  m.def("_cudnn_set_sdpa", [](bool on) { cuda::cudnn::set_sdpa(on); });
  m.def("_cudnn_sdpa", [] { return cuda::cudnn::sdpa(); });
  m.def("_cudnn_sdpa_available", [] { return cuda::cudnn::sdpa_available(); });
  m.def("_cudnn_sdpa_graphs", [] { return cuda::cudnn::sdpa_graph_count(); });
#else
  m.attr("_has_cudnn") = false;
  // without cuDNN the switch only remembers its value (nothing reads it) and no plan is cached
  static std::atomic<bool> backend_api{true};
  m.def("_cudnn_set_backend_api", [](bool on) { backend_api.store(on); });
  m.def("_cudnn_backend_api", [] { return backend_api.load(); });
  m.def("_cudnn_plan_cache_size", [] { return int64_t(0); });
  static std::atomic<bool> sdpa{true};
  m.def("_cudnn_set_sdpa", [](bool on) { sdpa.store(on); });
  m.def("_cudnn_sdpa", [] { return sdpa.load(); });
  m.def("_cudnn_sdpa_available", [] { return false; });
  m.def("_cudnn_sdpa_graphs", [] { return int64_t(0); });
#endif
#ifndef TP_USE_CUDA
  m.attr("_cuda_compiled") = false;
#else
  m.attr("_cuda_compiled") = true;
  cuda::allocator::install();
  cuda::register_stream_hooks();
  m.def("_cuda_getDeviceCount", [] { return cuda::device_count(); });
  m.def("_cuda_initError", [] { return cuda::init_error(); });
  m.def("_cuda_init", [] { cuda::lazy_init(); });
  m.def("_cuda_getDevice", [] { return cuda::current_device(); });
  m.def("_cuda_setDevice", [](int d) { cuda::set_device(d); });
  m.def("_cuda_exchangeDevice", [](int d) {
    if (d < 0) return -1;
    int prev = cuda::current_device();
    cuda::set_device(d);
    return prev;
  });
  m.def("_cuda_synchronize", [](int d) {
    nb::gil_scoped_release r;
    cuda::synchronize(d);
  });
  m.def("_cuda_getDeviceProperties", [](int d) {
    const cuda::DeviceProperties& p = cuda::device_properties(d);
    nb::dict out;
    out["name"] = p.name;
    out["major"] = p.major;
    out["minor"] = p.minor;
    out["multi_processor_count"] = p.multi_processor_count;
    out["total_memory"] = p.total_memory;
    out["warp_size"] = p.warp_size;
    out["max_threads_per_multi_processor"] = p.max_threads_per_multi_processor;
    out["L2_cache_size"] = p.l2_cache_size;
    out["uuid"] = p.uuid;
    return out;
  });
  m.def("_cuda_memGetInfo", [](int d) {
    size_t free = 0, total = 0;
    cuda::mem_get_info(d, &free, &total);
    return std::make_tuple(free, total);
  });

  // streams: (cuda_stream, device_index, priority) tuples
  m.def("_cuda_getCurrentStream", [](int d) { return as_tuple(cuda::current_stream(d)); });
  m.def("_cuda_getDefaultStream", [](int d) { return as_tuple(cuda::default_stream(d)); });
  m.def("_cuda_setStream", [](uintptr_t h, int d, int p) { cuda::set_stream(from_tuple(h, d, p)); });
  m.def("_cuda_streamFromPool", [](int priority, int d) {
    return as_tuple(cuda::get_stream_from_pool(priority, d));
  });
  m.def("_cuda_externalStream", [](uintptr_t h, int d) { return as_tuple(cuda::external_stream(h, d)); });
  m.def("_cuda_streamQuery", [](uintptr_t h, int d) { return from_tuple(h, d, 0).query(); });
  m.def("_cuda_streamSynchronize", [](uintptr_t h, int d) {
    nb::gil_scoped_release r;
    from_tuple(h, d, 0).synchronize();
  });
  m.def("_cuda_streamPriorityRange", [] {
    int least = 0, greatest = 0;
    cuda::stream_priority_range(&least, &greatest);
    return std::make_tuple(least, greatest);
  });

  nb::class_<cuda::Event>(m, "_CudaEventBase")
      .def(nb::init<bool, bool, bool>(), nb::arg("enable_timing") = false,
           nb::arg("blocking") = false, nb::arg("interprocess") = false)
      .def("_record", [](cuda::Event& e, uintptr_t h, int d) { e.record(from_tuple(h, d, 0)); })
      .def("_wait", [](const cuda::Event& e, uintptr_t h, int d) { e.wait(from_tuple(h, d, 0)); })
      .def("query", &cuda::Event::query)
      .def("synchronize", [](const cuda::Event& e) {
        nb::gil_scoped_release r;
        e.synchronize();
      })
      .def("elapsed_time", &cuda::Event::elapsed_time, nb::arg("end_event"))
      .def_prop_ro("cuda_event", [](const cuda::Event& e) { return reinterpret_cast<uintptr_t>(e.handle()); })
      .def_prop_ro("_device", [](const cuda::Event& e) { return e.device(); });

  // memory
  m.def("_cuda_host_probe", [](int rounds) { return cuda::host_probe(rounds); });
  // Note [Row pipeline]: a switch for timing the register-row kernels against the pipelined ones
  m.def("_cuda_set_row_pipeline", [](bool on) { cuda::set_row_pipeline_enabled(on); });
  m.def("_cuda_row_pipeline", [] { return cuda::row_pipeline_enabled(); });
  // Note [Warp rows]: one warp per half-type row, off unless switched on (unmeasured)
  m.def("_cuda_set_warp_rows", [](bool on) { cuda::set_warp_rows_enabled(on); });
  m.def("_cuda_warp_rows", [] { return cuda::warp_rows_enabled(); });
  // Note [Lean half rows] (cuda/row_pipeline.cuh): on by default, off to time the old kernels
  m.def("_cuda_set_lean_half_rows", [](bool on) { cuda::set_lean_half_rows_enabled(on); });
  m.def("_cuda_lean_half_rows", [] { return cuda::lean_half_rows_enabled(); });
  // Note [Narrow norm rows] (cuda/norm_kernels.cu): on by default, off to time the 256-thread kernel
  m.def("_cuda_set_narrow_norm_rows", [](bool on) { cuda::set_narrow_norm_rows_enabled(on); });
  m.def("_cuda_narrow_norm_rows", [] { return cuda::narrow_norm_rows_enabled(); });
  // Note [Packed half rows] (cuda/nn_launch.cuh): 256 threads by default, 128, or 0 (off) to time the others
  m.def("_cuda_set_packed_half_rows", [](int threads) { cuda::set_packed_half_rows(threads); });
  m.def("_cuda_packed_half_rows", [] { return cuda::packed_half_rows(); });
  // Note [Flash attention on mma.sync]: the mma kernels (the default), off to use the WMMA ones
  m.def("_cuda_set_flash_mma", [](bool on) { cuda::set_flash_mma_enabled(on); });
  m.def("_cuda_flash_mma", [] { return cuda::flash_mma_enabled(); });
  m.def("_cuda_emptyCache", [] { cuda::allocator::empty_cache(); });
  m.def("_cuda_memoryStats", [](int d) { return cuda::allocator::memory_stats(d); });
  m.def("_cuda_resetPeakMemoryStats", [](int d) { cuda::allocator::reset_peak_stats(d); });
  m.def("_cuda_resetAccumulatedMemoryStats", [](int d) { cuda::allocator::reset_accumulated_stats(d); });
  m.def("_cuda_setMemoryFraction", [](double f, int d) { cuda::allocator::set_memory_fraction(f, d); });
  m.def("_cuda_getMemoryFraction", [](int d) { return cuda::allocator::get_memory_fraction(d); });
  m.def("_cuda_rawAlloc", [](size_t n, uintptr_t h, int d) {
    return reinterpret_cast<uintptr_t>(cuda::allocator::raw_alloc(n, from_tuple(h, d, 0)));
  });
  m.def("_cuda_rawFree", [](uintptr_t p) { cuda::allocator::raw_free(reinterpret_cast<void*>(p)); });
  m.def("_cuda_memorySnapshot", [] {
    nb::list out;
    for (const auto& s : cuda::allocator::snapshot()) {
      nb::dict d;
      d["device"] = s.device;
      d["address"] = s.address;
      d["total_size"] = s.total_size;
      d["allocated_size"] = s.allocated_size;
      d["stream"] = s.stream;
      d["segment_type"] = s.is_large ? "large" : "small";
      d["blocks"] = s.blocks;
      out.append(d);
    }
    return out;
  });

  // tensors
  m.def("_cuda_recordStream", [](const Tensor& t, uintptr_t h, int d) {
    TP_CHECK(t.device().is_cuda(), "record_stream: expected a CUDA tensor, got one on ", t.device().str());
    cuda::allocator::record_stream(t.impl()->storage()->data(), from_tuple(h, d, 0));
  });
  m.def("_cuda_pinMemory", [](const Tensor& t) { return cuda::pin_memory(t); });
  m.def("_cuda_isPinned", [](const Tensor& t) {
    return t.device().is_cpu() && cuda::is_pinned(t.impl()->storage()->data());
  });

  // CUDA graphs (Note [CUDA graphs] in cuda/graphs/graph.cpp); tp.cuda.CUDAGraph wraps it
  using cuda::graphs::Graph;
  m.def("_cuda_graph_pool_handle", [] { return cuda::graphs::graph_pool_handle(); });
  m.def("_cuda_isCurrentStreamCapturing", [] {
    return cuda::graphs::is_capturing(cuda::current_stream(-1).handle);
  });
  nb::class_<Graph>(m, "_CUDAGraph")
      .def(nb::init<bool>(), nb::arg("keep_graph") = false)
      .def("capture_begin", [](Graph& g, std::optional<cuda::MempoolId> pool, const std::string& mode) {
        cudaStreamCaptureMode m;
        if (mode == "global") m = cudaStreamCaptureModeGlobal;
        else if (mode == "thread_local") m = cudaStreamCaptureModeThreadLocal;
        else if (mode == "relaxed") m = cudaStreamCaptureModeRelaxed;
        else TP_CHECK_VALUE(false, "Unknown capture_error_mode '", mode,
                            "': expected 'global', 'thread_local' or 'relaxed'");
        g.capture_begin(pool.value_or(cuda::MempoolId{0, 0}), m);
      }, nb::arg("pool").none() = nb::none(), nb::arg("capture_error_mode") = "global")
      .def("capture_end", &Graph::capture_end)
      .def("_abort_capture", &Graph::abort_capture)
      .def("replay", &Graph::replay)
      .def("reset", &Graph::reset)
      .def("pool", &Graph::pool)
      .def("enable_debug_mode", &Graph::enable_debug_mode)
      .def("debug_dump", &Graph::debug_dump, nb::arg("debug_path"))
      .def("register_generator_state", [](Graph& g, const Generator& gen) {
        TP_CHECK_VALUE(gen.defined() && gen.impl()->device().is_cuda(),
                       "register_generator_state: expected a CUDA generator");
        g.register_generator(static_cast<cuda::CUDAGenerator&>(*gen.impl()));
      })
      .def("stage_and_launch", &Graph::stage_and_launch, nb::arg("static_inputs"), nb::arg("new_inputs"))
      .def("begin_capture_to_if_node", &Graph::begin_capture_to_if_node, nb::arg("predicate"))
      .def("begin_capture_to_while_node", &Graph::begin_capture_to_while_node, nb::arg("predicate"))
      .def("end_capture_to_conditional_node", &Graph::end_capture_to_conditional_node)
      .def_prop_ro("_capturing", &Graph::capturing)
      .def_prop_ro("_num_nodes", &Graph::num_nodes)
      .def_prop_ro("_device", &Graph::device);
#endif
}

}  // namespace tp::python
