// Errors raised by the core. Each carries the Python exception kind a PyTorch user
// expects; the bindings translate ErrorKind into that exception type.
#pragma once
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace tp {

/// LinAlg: a matrix the algorithm cannot handle (singular, not positive-definite, no
/// convergence); Python's tp.linalg.LinAlgError, a RuntimeError subclass.
enum class ErrorKind { Runtime, Type, Value, Index, NotImplemented, LinAlg };

/// An error from TensorPlay's C++ core; `kind` picks the Python exception type.
class Error : public std::exception {
 public:
  Error(ErrorKind kind, std::string msg) : kind_(kind), msg_(std::move(msg)) {}
  const char* what() const noexcept override { return msg_.c_str(); }
  ErrorKind kind() const { return kind_; }
  /// Puts "op: " in front of the message, unless it already starts with the op's name;
  /// nested ops read outermost first ("full: fill_: value cannot ...").
  void name_op(const char* op) {
    if (msg_.rfind(op, 0) == 0) return;
    msg_ = std::string(op) + ": " + msg_;
  }
  /// Appends text (e.g. a forward traceback) to the message.
  void append_note(const std::string& note) { msg_ += note; }

 private:
  ErrorKind kind_;
  std::string msg_;
};

namespace detail {
// Message pieces are appended without iostreams: no locale machinery on the error path
// (and none of the libstdc++ version coupling iostreams brings into an extension).
inline void append(std::string& out, std::string_view s) { out.append(s); }
inline void append(std::string& out, const char* s) { out.append(s ? s : "(null)"); }
inline void append(std::string& out, const std::string& s) { out.append(s); }
inline void append(std::string& out, char c) { out.push_back(c); }
inline void append(std::string& out, bool b) { out.append(b ? "true" : "false"); }
template <class T>
  requires std::is_arithmetic_v<T>
inline void append(std::string& out, T v) {
  char buf[32];
  int n;
  if constexpr (std::is_floating_point_v<T>) n = std::snprintf(buf, sizeof buf, "%g", double(v));
  else if constexpr (std::is_signed_v<T>) n = std::snprintf(buf, sizeof buf, "%lld", (long long)v);
  else n = std::snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
  out.append(buf, size_t(n));
}
}  // namespace detail

/// Builds the message from its parts and throws; kept out of line of the hot path.
template <class... Args>
[[noreturn]] __attribute__((noinline, cold)) void fail(ErrorKind kind, const Args&... args) {
  std::string msg;
  (detail::append(msg, args), ...);
  throw Error(kind, std::move(msg));
}

}  // namespace tp

#define TP_CHECK_KIND(kind, cond, ...)                      \
  do {                                                      \
    if (__builtin_expect(!(cond), 0)) ::tp::fail(kind, __VA_ARGS__); \
  } while (0)
#define TP_CHECK(cond, ...) TP_CHECK_KIND(::tp::ErrorKind::Runtime, cond, __VA_ARGS__)
#define TP_CHECK_TYPE(cond, ...) TP_CHECK_KIND(::tp::ErrorKind::Type, cond, __VA_ARGS__)
#define TP_CHECK_VALUE(cond, ...) TP_CHECK_KIND(::tp::ErrorKind::Value, cond, __VA_ARGS__)
#define TP_CHECK_INDEX(cond, ...) TP_CHECK_KIND(::tp::ErrorKind::Index, cond, __VA_ARGS__)
#define TP_FAIL(...) ::tp::fail(::tp::ErrorKind::Runtime, __VA_ARGS__)
#define TP_FAIL_NOT_IMPLEMENTED(...) ::tp::fail(::tp::ErrorKind::NotImplemented, __VA_ARGS__)
#define TP_FAIL_LINALG(...) ::tp::fail(::tp::ErrorKind::LinAlg, __VA_ARGS__)
