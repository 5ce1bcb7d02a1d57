// Which of PyTorch's CPU kernel builds to reproduce, bit for bit.
//
// PyTorch compiles its random kernels once per CPU capability and picks one at start-up:
// the AVX2 (or AVX-512) build on CPUs with AVX2 and FMA, unless ATEN_CPU_CAPABILITY=default
// asks for the baseline build. The builds draw the same words but round differently:
// the vector builds are compiled with FMA, so the compiler fuses `a * b + c` in the
// transforms (uniform_'s scaling, normal's `x * std + mean`, cauchy_), and float normal
// fills of 16 or more elements use a vectorised Box-Muller (random/vec_avx2.cpp). The
// baseline build rounds each product and uses the scalar Box-Muller. We follow the same
// choice, from the same inputs, so a seed gives PyTorch's numbers on this machine: the
// vector rounding at our AVX2 and AVX-512 levels, the baseline's at our DEFAULT level
// (Note [CPU capability]; TP_CPU_CAPABILITY or ATEN_CPU_CAPABILITY=default selects it).
#pragma once

namespace tp::random {

/// True where PyTorch would run its AVX2/AVX-512 random kernels.
bool vector_capability();

}  // namespace tp::random
