// The Conjugate key's view of an in-place or out= call's written tensor (Note [Conjugate and
// negative bits], dispatch/math_bits.cpp); included by the generated kernel calls.
#pragma once
#include <cstdint>

#include "kernels/tensor_iterator.h"

namespace tp {

/// The conjugate / negative bits of the tensor an in-place or out= call writes: an out= with
/// a bit takes the Conjugate key even where the inputs have none. dispatch::special_key
/// finds this overload by argument-dependent lookup (OutArg lives in namespace tp).
inline uint8_t key_bits(const OutArg& out) { return out.tensor ? out.tensor->impl()->math_bits() : 0; }

/// t with its bits applied by the ops (resolve_conj, resolve_neg), so autograd records the
/// resolution; t itself without bits. For the kernels whose gradient flows through their
/// decomposition (`impl:` with `derivatives: decomposed`): they skip the Conjugate key, whose
/// fallback runs below autograd, and resolve their operands with this.
Tensor resolved(const Tensor& t);

}  // namespace tp
