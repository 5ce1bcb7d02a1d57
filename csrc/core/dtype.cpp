#include "core/dtype.h"

#include "core/error.h"

namespace tp {

namespace {
DType g_default_dtype = DType::Float32;

// Category rank: bool < integer < floating < complex.
int category(DType dt) {
  return dt == DType::Bool ? 0 : is_floating(dt) ? 2 : is_complex(dt) ? 3 : 1;
}
}  // namespace

size_t element_size(DType dt) {
  static constexpr size_t sizes[] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16};
  return sizes[int(dt)];
}

const char* cpp_type_name(DType dt) {
  switch (dt) {
    case DType::Bool: return "bool";
    case DType::UInt8: return "unsigned char";
    case DType::Int8: return "signed char";
    case DType::Int16: return "short int";
    case DType::Int32: return "int";
    case DType::Int64: return "long int";
    case DType::Float16: return "c10::Half";
    case DType::BFloat16: return "c10::BFloat16";
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::Complex64: return "c10::complex<float>";
    case DType::Complex128: return "c10::complex<double>";
    default: return dtype_name(dt);
  }
}

const char* dtype_name(DType dt) {
  static constexpr const char* names[] = {"bool",    "uint8",   "int8",     "int16",
                                          "int32",   "int64",   "float16",  "bfloat16",
                                          "float32", "float64", "complex64", "complex128",
                                          "undefined"};
  return names[int(dt)];
}

const char* dtype_scalar_name(DType dt) {
  static constexpr const char* names[] = {"Bool", "Byte", "Char",     "Short", "Int",
                                          "Long", "Half", "BFloat16", "Float", "Double",
                                          "ComplexFloat", "ComplexDouble", "Undefined"};
  return names[int(dt)];
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Undefined) return b;
  if (b == DType::Undefined) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  int ca = category(a), cb = category(b);
  if (ca == 3 || cb == 3) {
    // A complex type with any other: complex of the wider real precision (complex64 with
    // float64 is complex128; with float16 or an integer, complex64).
    DType ra = to_real_dtype(a), rb = to_real_dtype(b);
    bool wide = ra == DType::Float64 || rb == DType::Float64;
    return wide ? DType::Complex128 : DType::Complex64;
  }
  if (ca != cb) return ca > cb ? a : b;  // integer with floating: the floating type
  if (ca == 2) {
    bool half_pair = (a == DType::Float16 && b == DType::BFloat16) ||
                     (a == DType::BFloat16 && b == DType::Float16);
    if (half_pair) return DType::Float32;
    return a > b ? a : b;
  }
  // Both integers. uint8 with a signed type needs a signed type wider than 8 bits.
  if (a == DType::UInt8 || b == DType::UInt8) {
    DType other = a == DType::UInt8 ? b : a;
    return other == DType::Int8 ? DType::Int16 : other;
  }
  return a > b ? a : b;
}

bool can_cast(DType from, DType to) {
  if (is_complex(from) && !is_complex(to)) return false;
  if (is_floating(from) && is_integral(to, true)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

void fail_unsupported_dtype(DType dt) {
  TP_FAIL_NOT_IMPLEMENTED("not implemented for '", dtype_scalar_name(dt), "'");
}

DType default_dtype() { return g_default_dtype; }

void set_default_dtype(DType dt) {
  TP_CHECK_TYPE(dt == DType::Float32 || dt == DType::Float64 || dt == DType::Float16 ||
                    dt == DType::BFloat16,
                "only floating-point types are supported as the default type");
  g_default_dtype = dt;
}

}  // namespace tp
