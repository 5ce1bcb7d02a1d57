// Element types: the enum, per-type traits, promotion and casting rules.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/complex.h"
#include "core/half.h"

namespace tp {

/// Element type of a tensor. The order is part of the ABI of kernel tables.
enum class DType : int8_t {
  Bool, UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64,
  Complex64, Complex128,
  Undefined
};
constexpr int kNumDTypes = 12;

// X(c++ type, enum name)
#define TP_FORALL_DTYPES(X) \
  X(bool, Bool) X(uint8_t, UInt8) X(int8_t, Int8) X(int16_t, Int16) X(int32_t, Int32) \
  X(int64_t, Int64) X(::tp::Half, Float16) X(::tp::BFloat16, BFloat16) X(float, Float32) \
  X(double, Float64)
// The complex types: separate, so a visit over the real types never instantiates real-only
// arithmetic (comparisons, floor, bit ops) on a complex type (Note [Complex layout and
// arithmetic]).
#define TP_FORALL_COMPLEX_DTYPES(X) X(::tp::complex64_t, Complex64) X(::tp::complex128_t, Complex128)

template <class T> struct dtype_of;
#define TP_DTYPE_OF(T, N) \
  template <> struct dtype_of<T> { static constexpr DType value = DType::N; };
TP_FORALL_DTYPES(TP_DTYPE_OF)
TP_FORALL_COMPLEX_DTYPES(TP_DTYPE_OF)
#undef TP_DTYPE_OF

/// Raises NotImplementedError: `dt` (a complex type) has no kernel in a real-only visit.
[[noreturn]] void fail_unsupported_dtype(DType dt);

/// Calls f(T{}) with the C++ type of `dt`, a real type; a complex `dt` raises
/// NotImplementedError (visit_dtype_with_complex takes those too).
template <class F>
inline decltype(auto) visit_dtype(DType dt, F&& f) {
  switch (dt) {
#define TP_VISIT_CASE(T, N) case DType::N: return f(T{});
    TP_FORALL_DTYPES(TP_VISIT_CASE)
#undef TP_VISIT_CASE
    case DType::Complex64: case DType::Complex128: fail_unsupported_dtype(dt);
    default: return f(float{});
  }
}

/// visit_dtype over the real and the complex types.
template <class F>
inline decltype(auto) visit_dtype_with_complex(DType dt, F&& f) {
  switch (dt) {
#define TP_VISIT_CASE(T, N) case DType::N: return f(T{});
    TP_FORALL_DTYPES(TP_VISIT_CASE)
    TP_FORALL_COMPLEX_DTYPES(TP_VISIT_CASE)
#undef TP_VISIT_CASE
    default: return f(float{});
  }
}

size_t element_size(DType dt);
/// PyTorch's name without the "torch." prefix, e.g. "float32".
const char* dtype_name(DType dt);
/// PyTorch's ScalarType name used in error messages, e.g. "Float", "Long".
const char* dtype_scalar_name(DType dt);
/// The C++ type name PyTorch prints in some checks ("long int", "c10::Half"): random_'s
/// range errors, the out= dtype checks of triu / tril / diag.
const char* cpp_type_name(DType dt);

inline bool is_floating(DType dt) { return dt >= DType::Float16 && dt <= DType::Float64; }
inline bool is_integral(DType dt, bool include_bool) {
  return (dt >= DType::UInt8 && dt <= DType::Int64) || (include_bool && dt == DType::Bool);
}
inline bool is_complex(DType dt) { return dt == DType::Complex64 || dt == DType::Complex128; }
/// Floating or complex: the types that carry gradients.
inline bool is_floating_or_complex(DType dt) { return is_floating(dt) || is_complex(dt); }
inline bool is_signed(DType dt) { return dt != DType::Bool && dt != DType::UInt8; }
/// complex64 -> float32, complex128 -> float64; a real type maps to itself.
inline DType to_real_dtype(DType dt) {
  return dt == DType::Complex64 ? DType::Float32 : dt == DType::Complex128 ? DType::Float64 : dt;
}
/// The complex type of a floating type (float16/bfloat16/float32 -> complex64, float64 ->
/// complex128); a complex type maps to itself.
inline DType to_complex_dtype(DType dt) {
  return is_complex(dt) ? dt : dt == DType::Float64 ? DType::Complex128 : DType::Complex64;
}

/// The smallest type both `a` and `b` convert to without losing category.
DType promote_types(DType a, DType b);
/// Whether `from` may be written into `to` by an op (no float->int, no ->bool narrowing).
bool can_cast(DType from, DType to);

DType default_dtype();
void set_default_dtype(DType dt);

}  // namespace tp
