// A Python number crossing into C++: bool, integer, floating or complex.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace tp {

/// A dynamically typed number (PyTorch's Scalar).
class Scalar {
 public:
  enum class Tag : uint8_t { Bool, Int, Double, Complex };
  Scalar() : tag_(Tag::Int) { v_.i = 0; }
  Scalar(bool b) : tag_(Tag::Bool) { v_.i = b; }
  Scalar(int v) : tag_(Tag::Int) { v_.i = v; }
  Scalar(int64_t v) : tag_(Tag::Int) { v_.i = v; }
  Scalar(double v) : tag_(Tag::Double) { v_.d = v; }
  Scalar(complex128_t v) : tag_(Tag::Complex), im_(v.im) { v_.d = v.re; }

  Tag tag() const { return tag_; }
  bool is_bool() const { return tag_ == Tag::Bool; }
  bool is_integral() const { return tag_ == Tag::Int; }
  bool is_floating() const { return tag_ == Tag::Double; }
  bool is_complex() const { return tag_ == Tag::Complex; }
  /// The dtype PyTorch gives a wrapped number of this kind: bool, int64 or float64.
  DType dtype() const {
    return tag_ == Tag::Bool ? DType::Bool : tag_ == Tag::Int ? DType::Int64
         : tag_ == Tag::Double ? DType::Float64 : DType::Complex128;
  }
  bool real_tag() const { return tag_ == Tag::Double || tag_ == Tag::Complex; }
  /// The value (a complex one's real part) as a double.
  double to_double() const { return real_tag() ? v_.d : double(v_.i); }
  int64_t to_int() const { return real_tag() ? int64_t(v_.d) : v_.i; }
  bool to_bool() const { return real_tag() ? (v_.d != 0 || im_ != 0) : v_.i != 0; }
  complex128_t to_complex() const { return {to_double(), tag_ == Tag::Complex ? im_ : 0.0}; }
  double imag() const { return tag_ == Tag::Complex ? im_ : 0.0; }
  template <class T> T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (kComplex<T>) return T(to_complex());
    else if constexpr (std::is_integral_v<T>) return real_tag() ? T(v_.d) : T(v_.i);
    else return T(to_double());
  }

 private:
  Tag tag_;
  union { int64_t i; double d; } v_;
  double im_ = 0;
};

}  // namespace tp
