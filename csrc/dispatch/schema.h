// Op schemas as data: PyTorch's notation parsed once into a FunctionSchema, printed back
// exactly as PyTorch prints it. Note [Schemas as data] in schema.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tp {

/// An alias annotation: `Tensor(a)` (a view of set a), `Tensor(a!)` (written in place),
/// `Tensor(a -> *)` (the results alias it too).
struct AliasInfo {
  std::string set;          // "a"
  bool is_write = false;    // the `!`
  bool to_wildcard = false; // `-> *`
};

/// The element kinds a schema type names.
enum class TypeKind : uint8_t {
  Tensor, Int, SymInt, Float, Bool, Str, Scalar, ScalarType, Layout, Device, MemoryFormat,
  Generator, Storage, Dimname, Complex, Any
};

/// A schema type: an element kind, maybe a list (`int[]`, `int[2]`), maybe optional (`?`),
/// and for lists of optionals the inner `?` (`Tensor?[]`).
struct SchemaType {
  TypeKind kind = TypeKind::Tensor;
  bool is_list = false;
  int64_t list_size = 0;        // N of `int[N]`, 0 when unsized
  bool optional = false;        // the outer `?`
  bool elem_optional = false;   // `Tensor?[]`
  std::optional<AliasInfo> alias;
  /// As PyTorch prints it: "Tensor(a!)", "SymInt[2]", "Tensor?[]", "int[1]?".
  std::string str() const;
  bool is_tensor_like() const { return kind == TypeKind::Tensor; }
};

/// A default value, kept as written so it prints as PyTorch prints it.
struct DefaultValue {
  enum class Kind : uint8_t { None, Bool, Int, Float, Str, IntList, FloatList, Ident } kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;                 // Str, Ident (contiguous_format, Mean)
  std::vector<int64_t> ints;     // IntList
  std::vector<double> floats;    // FloatList
  std::string str() const;
};

struct Argument {
  std::string name;
  SchemaType type;
  std::optional<DefaultValue> default_value;
  bool kwarg_only = false;
  /// An `out=` argument: kwarg-only and written (`Tensor(a!) out`).
  bool is_out() const { return kwarg_only && type.alias && type.alias->is_write; }
};

struct FunctionSchema {
  std::string ns = "aten";   // namespace ("aten", or a tp.library namespace)
  std::string name;          // "add", "add_"
  std::string overload;      // "Tensor", "" for default
  std::vector<Argument> arguments;
  std::vector<Argument> returns;  // names optional
  /// "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
  std::string str() const;
  /// "aten::add"
  std::string qualified_name() const { return ns + "::" + name; }
  /// Index of the argument called `name`, or -1.
  int find_argument(std::string_view arg) const;
  bool is_mutable() const;
};

/// Parses PyTorch's schema notation; the namespace defaults to `default_ns` when the name
/// has none. Raises RuntimeError naming the schema on bad syntax.
FunctionSchema parse_schema(std::string_view text, std::string_view default_ns = "aten");

}  // namespace tp
