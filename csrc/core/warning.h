// Warnings raised by C++ code (PyTorch's TORCH_WARN): handed to whoever embeds the library.
//
// Note [Warnings from C++]: the core knows nothing of Python, so a warning goes to a
// handler that the Python module installs at import (csrc/python/module.cpp): a
// `UserWarning` through Python's warnings module, which filters it, records it
// (pytest.warns, catch_warnings) or raises it (`-W error`: the op then raises that
// exception). Without a handler (a C++ program) the message goes to stderr.
#pragma once
#include <string>

namespace tp {

using WarningHandler = void (*)(const std::string& message);

void set_warning_handler(WarningHandler handler);

/// Issues a UserWarning. May throw (the warning raised as an exception).
void warn(const std::string& message);

}  // namespace tp
