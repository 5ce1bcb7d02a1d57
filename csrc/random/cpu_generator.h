// The CPU generator: PyTorch's CPU stream (mt19937 plus the cached second Box-Muller
// normal), its 5056-byte state layout, and the default generator.
#pragma once
#include <optional>

#include "core/generator.h"
#include "random/mt19937.h"

namespace tp::random {

/// PyTorch's default seed (torch.initial_seed() of a fresh process's default generator).
constexpr uint64_t kDefaultSeed = 67280421310721ull;
/// Size of the serialised state: PyTorch's CPUGeneratorImplState.
constexpr size_t kStateSize = 5056;

class CPUGenerator final : public GeneratorImpl {
 public:
  explicit CPUGenerator(uint64_t seed = kDefaultSeed);

  void set_current_seed(uint64_t seed) override;
  uint64_t current_seed() const override { return engine.seed; }
  uint64_t seed() override;
  Tensor get_state() const override;
  void set_state(const Tensor& state) override;
  intrusive_ptr<GeneratorImpl> clone() const override;

  /// One 32-bit draw, and a 64-bit draw from two (the first is the high word).
  uint32_t random() { return engine(); }
  uint64_t random64() {
    uint64_t hi = engine();
    return (hi << 32) | engine();
  }

  MT19937 engine;
  /// The second value of the last Box-Muller pair, used by the next scalar normal draw.
  std::optional<double> next_double_normal;
  std::optional<float> next_float_normal;
};

/// The process-wide default CPU generator (torch.default_generator).
CPUGenerator& default_cpu_generator();
Generator default_cpu_generator_handle();

/// The CPU generator an op draws from: `gen` (checked to be a CPU generator) or the
/// default one.
CPUGenerator& cpu_generator(const std::optional<Generator>& gen);

}  // namespace tp::random
