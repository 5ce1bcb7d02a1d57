#pragma once
// The CPU FFT kernel's entry point (csrc/ops/fft/fft_kernel.cpp, compiled once per CPU
// capability level, Note [CPU capability]) and what fft.cpp hands it.
#include <cstdint>
#include <vector>

#include "core/cpu_capability.h"
#include "ops/fft/fft.h"

namespace tp::fft {

/// One transform of the three primitives over `axes` of a strided array.
struct CpuTransform {
  Kind kind;
  bool is_double;  // float64 / complex128 (else float32 / complex64)
  bool forward;
  // The signal's sizes: for r2c the real input's, for c2r the real output's (the complex side
  // holds n/2+1 of the last axis; a two-sided r2c result's other half is not written).
  std::vector<int64_t> shape;
  std::vector<int64_t> stride_in, stride_out;  // in bytes
  std::vector<int64_t> axes;                   // transformed in order; r2c/c2r halve the last
  const void* in;
  void* out;  // never overlaps `in`
  double fct;  // the normalisation factor
};

using CpuFftFn = void (*)(const CpuTransform&);
extern cpu::KernelStub<CpuFftFn> fft_cpu_stub;

}  // namespace tp::fft
