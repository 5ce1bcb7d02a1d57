// CPU capability levels and the per-level kernel stubs: Note [CPU capability].
#pragma once
#include <utility>

namespace tp::cpu {

// Note [CPU capability]
// The library is compiled for the portable x86-64 baseline. The CPU kernels (the files of
// csrc/kernels/cpu/ named in CMakeLists.txt's TP_CPU_KERNEL_SOURCES, and the generated
// pointwise loops) are compiled once more per capability level, AVX2 (+FMA, F16C) and
// AVX-512 (F, BW, VL, DQ), each copy inside its own namespace (TP_CPU_NS), and register
// their entry points in a KernelStub under their level. At start-up capability() picks the
// highest level the CPU and the OS support; TP_CPU_CAPABILITY (or PyTorch's
// ATEN_CPU_CAPABILITY) = default | avx2 | avx512 may lower it, never raise it. A stub call
// runs the chosen level's kernel (or the nearest lower one registered), so a wheel runs on
// any x86-64 CPU and every level of a kernel sees the same inputs. Where PyTorch's levels
// agree, ours do too: the levels differ only in vector width and in FMA contraction, and
// tests run the op database at each level the machine allows (tests/python/test_cpu_capability.py).
//
// One-definition rule: the per-level copies of a file share its inline functions and
// templates by name. Everything a kernel file defines lives in TP_CPU_NS; for the library
// code it includes (std::, core headers), the baseline objects come first on the link line,
// so the linker keeps their copies of any shared inline function (it keeps the first).
// That is only safe for code that means the same at every level. Headers whose inline code
// depends on the level (the functors of kernels/functors/, with their libmvec vectors and
// intrinsics) put it in `inline namespace TP_CPU_NS` when compiled in a kernel file, so each
// level's copies are distinct symbols. Found by the -O0 sanitizer build (nothing inlined):
// vec_load(const float*) returns __m512 at AVX-512 and __m128 at the baseline, the return
// type is not part of the symbol, and the AVX-512 exp/sin/cos loops called the baseline's
// copy (wrong values past the fourth lane). At -O2 it was always inlined, so hidden.
enum class Capability : int { Default = 0, AVX2 = 1, AVX512 = 2 };
constexpr int kNumCapabilities = 3;

/// The level the kernels run at (detected once; TP_CPU_CAPABILITY may lower it).
Capability capability();
/// The highest level this CPU and OS support (what capability() would be with no override).
Capability supported_capability();
/// PyTorch's name of a level: "DEFAULT", "AVX2", "AVX512".
const char* capability_name(Capability c);

/// A CPU kernel entry point with one implementation per compiled capability level: the
/// per-level copies of a kernel file fill `fns` at static initialisation (zero-initialised
/// before any of them runs), and a call picks the chosen level's or the nearest lower one.
template <class Fn>
struct KernelStub {
  Fn fns[kNumCapabilities] = {};
  Fn get() const {
    for (int c = int(capability()); c >= 0; --c)
      if (fns[c]) return fns[c];
    return nullptr;
  }
  template <class... A>
  decltype(auto) operator()(A&&... a) const {
    return get()(std::forward<A>(a)...);
  }
};

/// Registers `fn` as the current kernel file's level of `stub` (in a kernel file only).
struct RegisterKernel {
  template <class Fn, class F>
  RegisterKernel(KernelStub<Fn>& stub, int level, F fn) {
    stub.fns[level] = fn;
  }
};

}  // namespace tp::cpu

// In a per-level kernel file, CMake defines TP_CPU_CAPABILITY as 0, 1 or 2.
#ifdef TP_CPU_CAPABILITY
#if TP_CPU_CAPABILITY == 0
#define TP_CPU_NS cap_default
#elif TP_CPU_CAPABILITY == 1
#define TP_CPU_NS cap_avx2
#else
#define TP_CPU_NS cap_avx512
#endif
#define TP_CPU_CAT2(a, b) a##b
#define TP_CPU_CAT(a, b) TP_CPU_CAT2(a, b)
/// In a kernel file (inside namespace TP_CPU_NS): this level's implementation of `stub`.
#define TP_REGISTER_CPU_KERNEL(stub, fn) \
  static const ::tp::cpu::RegisterKernel TP_CPU_CAT(tp_register_, __LINE__)(stub, TP_CPU_CAPABILITY, fn)
#endif
