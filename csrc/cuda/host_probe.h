// A diagnostic of the host cost of launch-bound CUDA work (scripts/profile_cuda_host.py).
#pragma once
#include <map>
#include <string>

namespace tp::cuda {

/// Nanoseconds of host time per call of each step of a tiny CUDA op (median of `rounds`).
std::map<std::string, double> host_probe(int rounds);

}  // namespace tp::cuda
