#include "dispatch/schema.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace tp {

// Note [Schemas as data]
// Every op's schema is written once, in PyTorch's notation (csrc/ops/*.yaml, or a
// tp.library definition), and parsed here into a FunctionSchema: argument names, types,
// alias annotations, defaults and keyword-only markers. The boxed calling convention binds
// arguments by it, op handles expose it as `_schema`, and the Python dispatcher converts a
// call's values to Python by it. Defaults are kept as values and printed as PyTorch prints
// them (a float with 17 significant digits and a trailing dot when integral, `reduction=Mean`
// as 1, `memory_format=contiguous_format` as 0), so str(schema) equals PyTorch's string.

namespace {

struct Parser {
  std::string_view text;
  size_t pos = 0;

  [[noreturn]] void fail(const char* what) const {
    TP_FAIL("invalid schema '", std::string(text), "': ", what, " at position ", pos);
  }
  void skip() {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  }
  bool peek(char c) {
    skip();
    return pos < text.size() && text[pos] == c;
  }
  bool peek(std::string_view s) {
    skip();
    return text.substr(pos, s.size()) == s;
  }
  bool accept(char c) {
    if (!peek(c)) return false;
    ++pos;
    return true;
  }
  bool accept(std::string_view s) {
    if (!peek(s)) return false;
    pos += s.size();
    return true;
  }
  void expect(char c) {
    if (!accept(c)) {
      char msg[32];
      std::snprintf(msg, sizeof msg, "expected '%c'", c);
      fail(msg);
    }
  }
  std::string ident() {
    skip();
    size_t b = pos;
    while (pos < text.size() && (std::isalnum(static_cast<unsigned char>(text[pos])) || text[pos] == '_'))
      ++pos;
    if (b == pos) fail("expected a name");
    return std::string(text.substr(b, pos - b));
  }

  static TypeKind kind_of(const std::string& base, bool& ok) {
    static const struct { const char* name; TypeKind kind; } kinds[] = {
        {"Tensor", TypeKind::Tensor}, {"int", TypeKind::Int}, {"SymInt", TypeKind::SymInt},
        {"float", TypeKind::Float}, {"bool", TypeKind::Bool}, {"str", TypeKind::Str},
        {"Scalar", TypeKind::Scalar}, {"ScalarType", TypeKind::ScalarType},
        {"Layout", TypeKind::Layout}, {"Device", TypeKind::Device},
        {"MemoryFormat", TypeKind::MemoryFormat}, {"Generator", TypeKind::Generator},
        {"Storage", TypeKind::Storage}, {"Dimname", TypeKind::Dimname},
        {"complex", TypeKind::Complex}, {"Any", TypeKind::Any}};
    for (const auto& k : kinds)
      if (base == k.name) return ok = true, k.kind;
    ok = false;
    return TypeKind::Any;
  }

  SchemaType type() {
    SchemaType t;
    bool ok;
    std::string base = ident();
    t.kind = kind_of(base, ok);
    if (!ok) fail(("unknown type " + base).c_str());
    if (accept('(')) {  // alias annotation
      AliasInfo a;
      a.set = ident();
      if (accept('!')) a.is_write = true;
      if (accept("->")) {
        expect('*');
        a.to_wildcard = true;
      }
      expect(')');
      t.alias = a;
    }
    if (accept('?')) t.optional = true;
    if (accept('[')) {
      t.is_list = true;
      t.elem_optional = t.optional;
      t.optional = false;
      skip();
      if (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
        t.list_size = std::strtoll(text.data() + pos, nullptr, 10);
        while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
      }
      expect(']');
      if (accept('?')) t.optional = true;
    }
    return t;
  }

  /// A number as written: int unless it has a '.', an exponent, or the type is float.
  void number(DefaultValue& d, bool as_float) {
    skip();
    const char* b = text.data() + pos;
    char* e = nullptr;
    double f = std::strtod(b, &e);
    if (e == b) fail("expected a default value");
    std::string_view lit(b, size_t(e - b));
    pos += lit.size();
    bool is_float = as_float || lit.find_first_of(".eEn") != std::string_view::npos;
    if (is_float) {
      d.kind = DefaultValue::Kind::Float;
      d.f = f;
    } else {
      d.kind = DefaultValue::Kind::Int;
      d.i = std::strtoll(b, nullptr, 10);
    }
  }

  DefaultValue default_value(const SchemaType& t) {
    DefaultValue d;
    bool float_elem = t.kind == TypeKind::Float;
    if (accept("None")) return d;
    if (accept("True")) return d.kind = DefaultValue::Kind::Bool, d.b = true, d;
    if (accept("False")) return d.kind = DefaultValue::Kind::Bool, d.b = false, d;
    if (peek('"') || peek('\'')) {
      char q = text[pos++];
      size_t e = text.find(q, pos);
      if (e == std::string_view::npos) fail("unterminated string default");
      d.kind = DefaultValue::Kind::Str;
      d.s = std::string(text.substr(pos, e - pos));
      pos = e + 1;
      return d;
    }
    if (accept('[')) {
      d.kind = float_elem ? DefaultValue::Kind::FloatList : DefaultValue::Kind::IntList;
      while (!accept(']')) {
        DefaultValue v;
        number(v, float_elem);
        if (float_elem) d.floats.push_back(v.f);
        else d.ints.push_back(v.i);
        accept(',');
      }
      return d;
    }
    skip();
    if (pos < text.size() && (std::isalpha(static_cast<unsigned char>(text[pos])) || text[pos] == '_')) {
      // PyTorch's named constants, stored (and printed) as the ints they stand for
      static const struct { const char* name; int64_t value; } names[] = {
          {"contiguous_format", 0}, {"preserve_format", 1}, {"channels_last", 2},
          {"channels_last_3d", 3}, {"Mean", 1}, {"Sum", 2}, {"strided", 0}};
      std::string id = ident();
      for (const auto& n : names)
        if (id == n.name) return d.kind = DefaultValue::Kind::Int, d.i = n.value, d;
      d.kind = DefaultValue::Kind::Ident;
      d.s = id;
      return d;
    }
    number(d, float_elem && !t.is_list);
    return d;
  }

  Argument argument(bool kwarg_only, bool is_return) {
    Argument a;
    a.type = type();
    a.kwarg_only = kwarg_only;
    skip();
    if (pos < text.size() && (std::isalpha(static_cast<unsigned char>(text[pos])) || text[pos] == '_'))
      a.name = ident();
    else if (!is_return)
      fail("expected an argument name");
    if (!is_return && accept('=')) a.default_value = default_value(a.type);
    return a;
  }
};

/// PyTorch's printing of a float default: 17 significant digits, a trailing dot when the
/// result reads as an integer ("1.", "0.5", "1.0000000000000001e-05").
std::string float_str(double f) {
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  if (std::isnan(f)) return "nan";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", f);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += '.';
  return s;
}

const char* kind_name(TypeKind k) {
  static constexpr const char* names[] = {"Tensor", "int", "SymInt", "float", "bool", "str",
                                          "Scalar", "ScalarType", "Layout", "Device",
                                          "MemoryFormat", "Generator", "Storage", "Dimname",
                                          "complex", "Any"};
  return names[int(k)];
}

void append_args(std::string& out, const std::vector<Argument>& args, bool is_return) {
  bool kw = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const Argument& a = args[i];
    if (i) out += ", ";
    if (!is_return && a.kwarg_only && !kw) {
      out += "*, ";
      kw = true;
    }
    out += a.type.str();
    if (!a.name.empty()) out += " " + a.name;
    if (a.default_value) out += "=" + a.default_value->str();
  }
}

}  // namespace

std::string SchemaType::str() const {
  std::string s = kind_name(kind);
  if (alias) {
    s += "(" + alias->set;
    if (alias->is_write) s += "!";
    if (alias->to_wildcard) s += " -> *";
    s += ")";
  }
  if (is_list) {
    if (elem_optional) s += "?";
    s += "[";
    if (list_size) s += std::to_string(list_size);
    s += "]";
  }
  if (optional) s += "?";
  return s;
}

std::string DefaultValue::str() const {
  switch (kind) {
    case Kind::None: return "None";
    case Kind::Bool: return b ? "True" : "False";
    case Kind::Int: return std::to_string(i);
    case Kind::Float: return float_str(f);
    case Kind::Str: return "\"" + s + "\"";
    case Kind::Ident: return s;
    case Kind::IntList: {
      std::string r = "[";
      for (size_t k = 0; k < ints.size(); ++k) r += (k ? ", " : "") + std::to_string(ints[k]);
      return r + "]";
    }
    case Kind::FloatList: {
      std::string r = "[";
      for (size_t k = 0; k < floats.size(); ++k) r += (k ? ", " : "") + float_str(floats[k]);
      return r + "]";
    }
  }
  return "";
}

std::string FunctionSchema::str() const {
  std::string out = qualified_name();
  if (!overload.empty()) out += "." + overload;
  out += "(";
  append_args(out, arguments, false);
  out += ") -> ";
  if (returns.size() == 1) {  // one result prints bare, its name (if any) after the type
    out += returns[0].type.str();
    if (!returns[0].name.empty()) out += " " + returns[0].name;
  } else {
    out += "(";
    append_args(out, returns, true);
    out += ")";
  }
  return out;
}

int FunctionSchema::find_argument(std::string_view arg) const {
  for (size_t i = 0; i < arguments.size(); ++i)
    if (arguments[i].name == arg) return int(i);
  return -1;
}

bool FunctionSchema::is_mutable() const {
  for (const Argument& a : arguments)
    if (a.type.alias && a.type.alias->is_write) return true;
  return false;
}

FunctionSchema parse_schema(std::string_view text, std::string_view default_ns) {
  Parser p{text};
  FunctionSchema s;
  std::string first = p.ident();
  if (p.accept("::")) {
    s.ns = first;
    s.name = p.ident();
  } else {
    s.ns = std::string(default_ns);
    s.name = first;
  }
  if (p.accept('.')) s.overload = p.ident();
  if (s.overload == "default") s.overload.clear();
  p.expect('(');
  bool kw = false;
  while (!p.accept(')')) {
    if (p.accept('*')) {
      kw = true;
    } else {
      s.arguments.push_back(p.argument(kw, false));
    }
    if (!p.peek(')')) p.expect(',');
  }
  if (!p.accept("->")) p.fail("expected '->'");
  if (p.accept('(')) {
    while (!p.accept(')')) {
      s.returns.push_back(p.argument(false, true));
      if (!p.peek(')')) p.expect(',');
    }
  } else {
    s.returns.push_back(p.argument(false, true));
  }
  p.skip();
  if (p.pos != text.size()) p.fail("unexpected text after the returns");
  return s;
}

}  // namespace tp
