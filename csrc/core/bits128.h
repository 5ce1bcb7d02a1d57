#pragma once
// A 16-byte element type for kernels that only move bits and pick their element type by
// itemsize: complex128 is the one 16-byte dtype, so their `case 8` must not be a `default`
// that also takes it (that copied half of each complex128 element).
#include <cstdint>

namespace tp {

/// Two 64-bit words, aligned as complex128 is.
struct alignas(16) Bits128 {
  uint64_t lo, hi;
};

}  // namespace tp
