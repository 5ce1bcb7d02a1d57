// The CUDA generator: PyTorch's (seed, offset) state over Philox4x32-10 streams (Note
// [Philox streams] in philox.h), and the default generator of each GPU.
#pragma once
#include <cuda_runtime_api.h>

#include <optional>

#include "core/generator.h"
#include "cuda/philox.h"

namespace tp::cuda {

/// Size of the serialised state: seed (uint64) then offset (int64), PyTorch's layout.
constexpr size_t kGeneratorStateSize = 16;

class CUDAGenerator final : public GeneratorImpl {
 public:
  /// A generator of GPU `device` at PyTorch's default seed and offset 0 (torch.Generator's
  /// starting point); default generators are reseeded nondeterministically instead.
  explicit CUDAGenerator(int device);

  /// Also restarts the offset at 0.
  void set_current_seed(uint64_t seed) override;
  uint64_t current_seed() const override { return seed_; }
  /// A nondeterministic 53-bit seed (PyTorch's for CUDA generators).
  uint64_t seed() override;
  Tensor get_state() const override;
  /// Takes 16 bytes (seed, offset) or 8 (seed; offset 0); the offset must be a multiple of 4.
  void set_state(const Tensor& state) override;
  intrusive_ptr<GeneratorImpl> clone() const override;

  uint64_t offset() const { return offset_; }
  void set_offset(uint64_t offset);

  /// Reserves `blocks` Philox blocks for one launch queued on `stream` under the mutex:
  /// returns the key and the first block's counter, and moves the offset past them. When
  /// `stream` is being captured into a CUDA graph, the launch reads its key and counter
  /// from the graph's device memory instead (Note [Philox in graphs]).
  philox::LaunchArgs reserve(int64_t blocks, cudaStream_t stream);
  /// reserve()'s host part: the key and counter now, and the offset moved past `blocks`.
  philox::LaunchArgs advance(uint64_t blocks);

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

/// The default generator of GPU `device` (-1: the current one), created on first use with
/// a nondeterministic seed; it lives for the whole process.
CUDAGenerator& default_generator(int device = -1);
Generator default_generator_handle(int device);

/// The generator a CUDA op on `device` draws from: `gen` (checked to be a CUDA generator)
/// or that device's default generator.
CUDAGenerator& generator_for(const std::optional<Generator>& gen, int device);

}  // namespace tp::cuda
