// A Python number crossing into C++: bool, integer or floating (complex later).
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace tp {

/// A dynamically typed number (PyTorch's Scalar).
class Scalar {
 public:
  enum class Tag : uint8_t { Bool, Int, Double };
  Scalar() : tag_(Tag::Int) { v_.i = 0; }
  Scalar(bool b) : tag_(Tag::Bool) { v_.i = b; }
  Scalar(int v) : tag_(Tag::Int) { v_.i = v; }
  Scalar(int64_t v) : tag_(Tag::Int) { v_.i = v; }
  Scalar(double v) : tag_(Tag::Double) { v_.d = v; }

  Tag tag() const { return tag_; }
  bool is_bool() const { return tag_ == Tag::Bool; }
  bool is_integral() const { return tag_ == Tag::Int; }
  bool is_floating() const { return tag_ == Tag::Double; }
  /// The dtype PyTorch gives a wrapped number of this kind: bool, int64 or float64.
  DType dtype() const {
    return tag_ == Tag::Bool ? DType::Bool : tag_ == Tag::Int ? DType::Int64 : DType::Float64;
  }
  double to_double() const { return tag_ == Tag::Double ? v_.d : double(v_.i); }
  int64_t to_int() const { return tag_ == Tag::Double ? int64_t(v_.d) : v_.i; }
  bool to_bool() const { return tag_ == Tag::Double ? v_.d != 0 : v_.i != 0; }
  template <class T> T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_integral_v<T>) return tag_ == Tag::Double ? T(v_.d) : T(v_.i);
    else return T(to_double());
  }

 private:
  Tag tag_;
  union { int64_t i; double d; } v_;
};

}  // namespace tp
