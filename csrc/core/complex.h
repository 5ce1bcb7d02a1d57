// Complex element types (complex64 = Complex<float>, complex128 = Complex<double>).
//
// Note [Complex layout and arithmetic]: a complex element is two reals, real part first,
// aligned as its real type: the layout of NumPy's, DLPack's and PyTorch's complex types, so
// view_as_real is a pure metadata view and NumPy arrays share their memory. Multiplication
// is the textbook (ac - bd, ad + bc) without std::complex's NaN recovery (PyTorch does the
// same, and GCC otherwise calls __mulsc3 per element); division scales by the larger of
// |c| and |d| (Smith's method, as NumPy and PyTorch do) so |c|^2 cannot overflow. The
// transcendental functions go through std::complex on the host, whose C99 Annex G special
// cases (infinities, signed zeros, branch cuts) are what PyTorch's CPU results follow.
#pragma once
#include <cmath>
#include <complex>
#include <type_traits>

#include "core/macros.h"

namespace tp {

template <class T>
struct Complex {
  T re, im;
  Complex() = default;
  TP_HD constexpr Complex(T r) : re(r), im(0) {}
  TP_HD constexpr Complex(T r, T i) : re(r), im(i) {}
  // Between precisions, and from any real (integers, bool, half types via float).
  template <class U>
  TP_HD explicit constexpr Complex(const Complex<U>& o) : re(T(o.re)), im(T(o.im)) {}
  template <class U, class = std::enable_if_t<!std::is_same_v<U, T> && std::is_arithmetic_v<U>>>
  TP_HD constexpr Complex(U r) : re(T(r)), im(0) {}
  Complex(const std::complex<T>& c) : re(c.real()), im(c.imag()) {}
  std::complex<T> std() const { return {re, im}; }

  TP_HD constexpr T real() const { return re; }
  TP_HD constexpr T imag() const { return im; }
  // A cast to a real keeps the real part (copy_ warns once, as PyTorch).
  TP_HD explicit constexpr operator T() const { return re; }
  template <class U, class = std::enable_if_t<!std::is_same_v<U, T> && std::is_arithmetic_v<U>>>
  TP_HD explicit constexpr operator U() const { return U(re); }
  TP_HD explicit constexpr operator bool() const { return re != T(0) || im != T(0); }

  TP_HD Complex& operator+=(Complex o) { re += o.re; im += o.im; return *this; }
  TP_HD Complex& operator-=(Complex o) { re -= o.re; im -= o.im; return *this; }
  TP_HD Complex& operator*=(Complex o) { return *this = *this * o; }
  TP_HD Complex& operator/=(Complex o) { return *this = *this / o; }

  TP_HD friend Complex operator+(Complex a, Complex b) { return {a.re + b.re, a.im + b.im}; }
  TP_HD friend Complex operator-(Complex a, Complex b) { return {a.re - b.re, a.im - b.im}; }
  TP_HD friend Complex operator-(Complex a) { return {-a.re, -a.im}; }
  TP_HD friend Complex operator+(Complex a) { return a; }
  TP_HD friend Complex operator*(Complex a, Complex b) {
    return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
  }
  TP_HD friend Complex operator/(Complex a, Complex b) {
    const T ac = b.re < 0 ? -b.re : b.re, ad = b.im < 0 ? -b.im : b.im;
    if (ac >= ad) {
      if (ac == T(0) && ad == T(0)) return {a.re / ac, a.im / ad};  // inf or nan parts
      const T r = b.im / b.re, s = T(1) / (b.re + b.im * r);
      return {(a.re + a.im * r) * s, (a.im - a.re * r) * s};
    }
    const T r = b.re / b.im, s = T(1) / (b.im + b.re * r);
    return {(a.re * r + a.im) * s, (a.im * r - a.re) * s};
  }
  TP_HD friend bool operator==(Complex a, Complex b) { return a.re == b.re && a.im == b.im; }
  TP_HD friend bool operator!=(Complex a, Complex b) { return !(a == b); }
};

using complex64_t = Complex<float>;
using complex128_t = Complex<double>;

template <class T> struct is_complex_t : std::false_type {};
template <class T> struct is_complex_t<Complex<T>> : std::true_type {};
template <class T> inline constexpr bool kComplex = is_complex_t<T>::value;

/// The real type of a complex type; the type itself otherwise.
template <class T> struct real_of { using type = T; };
template <class T> struct real_of<Complex<T>> { using type = T; };
template <class T> using real_t = typename real_of<T>::type;

template <class T> TP_HD inline Complex<T> conj(Complex<T> a) { return {a.re, -a.im}; }
template <class T> inline T abs(Complex<T> a) { return std::hypot(a.re, a.im); }
template <class T> inline T arg(Complex<T> a) { return std::atan2(a.im, a.re); }

}  // namespace tp
