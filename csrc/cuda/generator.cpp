// The CUDA generator's state and the per-device default generators.
#include "cuda/generator.h"

#include <cstring>
#include <mutex>
#include <random>

#include "core/error.h"
#include "cuda/graphs/graph.h"
#include "cuda/runtime.h"
#include "random/cpu_generator.h"

namespace tp::cuda {

CUDAGenerator::CUDAGenerator(int device)
    : GeneratorImpl(Device(DeviceType::CUDA, int8_t(device))), seed_(random::kDefaultSeed) {}

void CUDAGenerator::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}

uint64_t CUDAGenerator::seed() {
  std::random_device rd;
  const uint64_t hi = rd(), lo = rd();
  const uint64_t s = ((hi << 32) + lo) & ((uint64_t(1) << 53) - 1);
  set_current_seed(s);
  return s;
}

Tensor CUDAGenerator::get_state() const {
  const int64_t size[1] = {int64_t(kGeneratorStateSize)};
  Tensor t = empty_tensor(size, DType::UInt8);
  const int64_t offset = int64_t(offset_);
  std::memcpy(t.data_ptr(), &seed_, 8);
  std::memcpy(t.data_ptr() + 8, &offset, 8);
  return t;
}

void CUDAGenerator::set_state(const Tensor& t) {
  TP_CHECK_TYPE(t.dtype() == DType::UInt8 && t.device().is_cpu(),
                "RNG state must be a torch.ByteTensor");
  TP_CHECK(t.is_contiguous(), "RNG state must be contiguous");
  const int64_t n = t.numel();
  TP_CHECK(n == 8 || n == int64_t(kGeneratorStateSize), "RNG state is wrong size");
  uint64_t seed = 0;
  int64_t offset = 0;
  std::memcpy(&seed, t.data_ptr(), 8);
  if (n == 16) std::memcpy(&offset, t.data_ptr() + 8, 8);
  TP_CHECK(uint64_t(offset) % 4 == 0, "offset must be a multiple of 4");
  seed_ = seed;
  offset_ = uint64_t(offset);
}

void CUDAGenerator::set_offset(uint64_t offset) {
  TP_CHECK(offset % 4 == 0, "offset must be a multiple of 4");
  offset_ = offset;
}

intrusive_ptr<GeneratorImpl> CUDAGenerator::clone() const {
  auto g = make_intrusive<CUDAGenerator>(device().index);
  g->seed_ = seed_;
  g->offset_ = offset_;
  return g;
}

philox::LaunchArgs CUDAGenerator::reserve(int64_t blocks, cudaStream_t stream) {
  philox::LaunchArgs args;
  if (graphs::capture_underway() && graphs::reserve_in_capture(*this, blocks, stream, &args))
    return args;
  return advance(uint64_t(blocks));
}

philox::LaunchArgs CUDAGenerator::advance(uint64_t blocks) {
  std::lock_guard<std::mutex> lock(mutex);
  const philox::LaunchArgs args{seed_, offset_ / 4};
  offset_ += 4 * blocks;
  return args;
}

CUDAGenerator& default_generator(int device) {
  static std::mutex m;
  static CUDAGenerator* gens[kMaxDevices] = {};
  const int d = check_device(device);
  std::lock_guard<std::mutex> lock(m);
  if (!gens[d]) {
    auto* g = new CUDAGenerator(d);
    g->incref();  // lives for the whole process; handles to it never free it
    g->seed();
    gens[d] = g;
  }
  return *gens[d];
}

Generator default_generator_handle(int device) {
  return Generator(intrusive_ptr<GeneratorImpl>(&default_generator(device)));
}

CUDAGenerator& generator_for(const std::optional<Generator>& gen, int device) {
  if (!gen || !gen->defined()) return default_generator(device);
  TP_CHECK(gen->impl()->device().is_cuda(), "Expected a 'cuda' device type for generator but found '",
           device_type_name(gen->impl()->device().type), "'");
  return static_cast<CUDAGenerator&>(*gen->impl());
}

}  // namespace tp::cuda
