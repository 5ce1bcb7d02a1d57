// Portability macros shared by host and device code.
#pragma once

// TP_HD marks functions that run on the host and, in CUDA translation units, on the
// device too (the pointwise functors and their math helpers).
#if defined(__CUDACC__)
#define TP_HD __host__ __device__
#else
#define TP_HD
#endif
