// The process-wide deterministic-algorithms switch (tp.use_deterministic_algorithms), as
// PyTorch's: kernels with a reproducible variant (the CUDA index writes) read it per call.
#pragma once

namespace tp {

/// Whether ops must produce bitwise-reproducible results (default false).
bool deterministic_algorithms();
/// Whether ops without a deterministic variant would only warn (PyTorch's warn_only).
bool deterministic_algorithms_warn_only();
/// Sets both flags (warn_only is stored as given, read back by the Python getter).
void set_deterministic_algorithms(bool enabled, bool warn_only);

}  // namespace tp
