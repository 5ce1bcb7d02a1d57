// Boxed values between Python and C++: arguments bound by a schema (with PyTorch's messages
// when they do not bind) and results converted back (csrc/python/dispatch.cpp).
#pragma once
#include "dispatch/registry.h"
#include "python/bindings.h"

namespace tp::python {

/// Binds a vectorcall's arguments (positional, then the values of `kwnames`) to `s`'s
/// arguments, defaults filled in; raises RuntimeError with PyTorch's wording if they do not bind.
Stack bind_arguments(const FunctionSchema& s, PyObject* const* args, size_t nargs, PyObject* kwnames);
/// One boxed value as a Python object.
nb::object ivalue_to_python(const IValue& v);
/// A boxed call's results: None, the one result, or a tuple.
nb::object results_to_python(const FunctionSchema& s, Stack& stack);
/// Replaces the stack with the results a Python kernel or handler of `who` returned, checked
/// against the schema's return types (TypeError naming `who` when one does not fit).
void results_from_python(const FunctionSchema& s, nb::handle result, Stack& stack, nb::handle who);

}  // namespace tp::python
