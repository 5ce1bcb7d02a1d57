// The boxed calling convention: an op's arguments and results as a stack of IValues, so one
// function can serve every op (op handles called from Python, the Python dispatcher).
#pragma once
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "core/error.h"
#include "core/generator.h"
#include "core/scalar.h"
#include "core/tensor_impl.h"

namespace tp {

/// One boxed value. A Scalar argument is boxed as the int, float or bool it holds, as in
/// PyTorch; an absent optional is None.
class IValue {
 public:
  using Variant = std::variant<std::monostate, Tensor, int64_t, double, bool, std::string,
                               std::vector<int64_t>, std::vector<double>, std::vector<Tensor>,
                               std::vector<std::optional<Tensor>>, DType, Device, Generator,
                               complex128_t>;
  enum class Tag : uint8_t {
    None, Tensor, Int, Double, Bool, Str, IntList, DoubleList, TensorList, OptionalTensorList,
    DType, Device, Generator, Complex
  };

  IValue() = default;
  IValue(Tensor t) { if (t.defined()) v_ = std::move(t); }
  IValue(int64_t i) : v_(i) {}
  IValue(int i) : v_(int64_t(i)) {}
  IValue(double d) : v_(d) {}
  IValue(bool b) : v_(b) {}
  IValue(std::string s) : v_(std::move(s)) {}
  IValue(std::vector<int64_t> v) : v_(std::move(v)) {}
  IValue(IntArrayRef v) : v_(std::vector<int64_t>(v.begin(), v.end())) {}
  IValue(std::vector<double> v) : v_(std::move(v)) {}
  IValue(std::vector<Tensor> v) : v_(std::move(v)) {}
  IValue(std::span<const Tensor> v) : v_(std::vector<Tensor>(v.begin(), v.end())) {}
  IValue(std::vector<std::optional<Tensor>> v) : v_(std::move(v)) {}
  IValue(DType d) : v_(d) {}
  IValue(Device d) : v_(d) {}
  IValue(Generator g) { if (g.defined()) v_ = std::move(g); }
  IValue(complex128_t c) : v_(c) {}
  IValue(const Scalar& s) {
    if (s.is_bool()) v_ = s.to_bool();
    else if (s.is_integral()) v_ = s.to_int();
    else if (s.is_complex()) v_ = s.to_complex();
    else v_ = s.to_double();
  }
  template <class T>
  IValue(const std::optional<T>& o) {
    if (o) *this = IValue(*o);
  }

  Tag tag() const { return Tag(v_.index()); }
  bool is_none() const { return tag() == Tag::None; }
  bool is_tensor() const { return tag() == Tag::Tensor; }

  const Tensor& to_tensor() const { return get<Tensor>("Tensor"); }
  /// A Tensor result, None standing for an undefined tensor (a gradient not computed).
  Tensor to_tensor_or_undefined() const { return is_none() ? Tensor() : to_tensor(); }
  Tensor& mutable_tensor() { return std::get<Tensor>(v_); }
  std::optional<Tensor> to_optional_tensor() const {
    return is_none() ? std::nullopt : std::optional<Tensor>(to_tensor());
  }
  int64_t to_int() const {
    if (tag() == Tag::Bool) return std::get<bool>(v_);
    return get<int64_t>("int");
  }
  double to_double() const {
    if (tag() == Tag::Int) return double(std::get<int64_t>(v_));
    return get<double>("float");
  }
  bool to_bool() const { return get<bool>("bool"); }
  const std::string& to_str() const { return get<std::string>("str"); }
  Scalar to_scalar() const {
    switch (tag()) {
      case Tag::Bool: return Scalar(std::get<bool>(v_));
      case Tag::Int: return Scalar(std::get<int64_t>(v_));
      case Tag::Double: return Scalar(std::get<double>(v_));
      case Tag::Complex: return Scalar(std::get<complex128_t>(v_));
      default: TP_FAIL("IValue: expected a number, got ", tag_name());
    }
  }
  IntArrayRef to_int_list() const { return get<std::vector<int64_t>>("int[]"); }
  const std::vector<double>& to_double_list() const { return get<std::vector<double>>("float[]"); }
  std::span<const Tensor> to_tensor_list() const { return get<std::vector<Tensor>>("Tensor[]"); }
  const std::vector<std::optional<Tensor>>& to_optional_tensor_list() const {
    return get<std::vector<std::optional<Tensor>>>("Tensor?[]");
  }
  DType to_dtype() const { return get<DType>("ScalarType"); }
  Device to_device() const { return get<Device>("Device"); }
  Generator to_generator() const { return is_none() ? Generator() : get<Generator>("Generator"); }
  template <class T>
  std::optional<T> to_optional(T (IValue::*get)() const) const {
    return is_none() ? std::nullopt : std::optional<T>((this->*get)());
  }

  const Variant& variant() const { return v_; }
  const char* tag_name() const;

 private:
  template <class T>
  const T& get(const char* want) const {
    if (const T* p = std::get_if<T>(&v_)) return *p;
    TP_FAIL("IValue: expected ", want, ", got ", tag_name());
  }
  Variant v_;
};

/// An op's arguments on the way in, its results on the way out.
using Stack = std::vector<IValue>;

/// Pushes a result: a tensor, a tuple of tensors, or nothing.
inline void push_result(Stack& s, Tensor t) { s.emplace_back(std::move(t)); }
template <class... Ts>
void push_result(Stack& s, std::tuple<Ts...> t) {
  std::apply([&](auto&... v) { (s.emplace_back(std::move(v)), ...); }, t);
}

}  // namespace tp
