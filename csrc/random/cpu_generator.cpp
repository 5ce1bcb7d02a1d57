// The CPU generator and its serialised state.
#include "random/cpu_generator.h"

#include <chrono>
#include <cstring>
#include <fstream>

#include "core/error.h"

namespace tp::random {

namespace {

// The serialised state, field for field PyTorch's layout (x86-64 alignment): the legacy
// part keeps the state words widened to 64 bits and the cached double normal in normal_y
// (normal_x and normal_rho are unused); the cached float normal follows.
struct LegacyState {
  uint64_t the_initial_seed;
  int32_t left;
  int32_t seeded;
  uint64_t next;
  uint64_t state[kMtN];
  double normal_x;
  double normal_y;
  double normal_rho;
  int32_t normal_is_valid;
};
struct State {
  LegacyState legacy;
  float next_float_normal_sample;
  bool is_next_float_normal_sample_valid;
};
static_assert(sizeof(State) == kStateSize, "PyTorch's state layout");

/// 64 nondeterministic bits: /dev/urandom, or the clock where it is missing.
uint64_t nondeterministic_seed() {
  uint64_t s = 0;
  std::ifstream f("/dev/urandom", std::ios::binary);
  if (!f.read(reinterpret_cast<char*>(&s), sizeof(s)))
    s = uint64_t(std::chrono::high_resolution_clock::now().time_since_epoch().count());
  return s;
}

}  // namespace

CPUGenerator::CPUGenerator(uint64_t seed) : GeneratorImpl(Device(DeviceType::CPU)) {
  engine.init(seed);
}

void CPUGenerator::set_current_seed(uint64_t seed) {
  next_double_normal.reset();
  next_float_normal.reset();
  engine.init(seed);
}

uint64_t CPUGenerator::seed() {
  uint64_t s = nondeterministic_seed();
  set_current_seed(s);
  return s;
}

Tensor CPUGenerator::get_state() const {
  State st;
  std::memset(&st, 0, sizeof(st));  // padding bytes too: equal states serialise equally
  st.legacy.the_initial_seed = engine.seed;
  st.legacy.left = engine.left;
  st.legacy.seeded = engine.seeded;
  st.legacy.next = engine.next;
  for (int i = 0; i < kMtN; ++i) st.legacy.state[i] = engine.state[i];
  if (next_double_normal) {
    st.legacy.normal_is_valid = 1;
    st.legacy.normal_y = *next_double_normal;
  }
  if (next_float_normal) {
    st.is_next_float_normal_sample_valid = true;
    st.next_float_normal_sample = *next_float_normal;
  }
  const int64_t size[1] = {int64_t(kStateSize)};
  Tensor t = empty_tensor(size, DType::UInt8);
  std::memcpy(t.data_ptr(), &st, sizeof(st));
  return t;
}

void CPUGenerator::set_state(const Tensor& t) {
  TP_CHECK_TYPE(t.dtype() == DType::UInt8 && t.device().is_cpu(),
                "expected a torch.ByteTensor, but got ", t.device().is_cpu() ? "" : "cuda ",
                dtype_scalar_name(t.dtype()), "Tensor");
  const size_t n = size_t(t.numel());
  TP_CHECK(n == kStateSize, "Expected a CPUGeneratorImplState of size ", kStateSize,
           " but found the input RNG state size to be ", n);
  TP_CHECK(t.is_contiguous(), "RNG state must be contiguous");
  State st;
  std::memcpy(&st, t.data_ptr(), n);
  std::optional<double> dnormal;
  std::optional<float> fnormal;
  if (st.is_next_float_normal_sample_valid) fnormal = st.next_float_normal_sample;
  if (st.legacy.normal_is_valid) dnormal = st.legacy.normal_y;
  MT19937 e;
  e.seed = st.legacy.the_initial_seed;
  e.left = st.legacy.left;
  e.seeded = st.legacy.seeded != 0;
  e.next = uint32_t(st.legacy.next);
  for (int i = 0; i < kMtN; ++i) e.state[i] = uint32_t(st.legacy.state[i]);
  TP_CHECK(e.valid(), "Invalid mt19937 state");
  engine = e;
  next_double_normal = dnormal;
  next_float_normal = fnormal;
}

intrusive_ptr<GeneratorImpl> CPUGenerator::clone() const {
  auto g = make_intrusive<CPUGenerator>();
  g->engine = engine;
  g->next_double_normal = next_double_normal;
  g->next_float_normal = next_float_normal;
  return g;
}

CPUGenerator& default_cpu_generator() {
  static CPUGenerator* gen = [] {
    auto* g = new CPUGenerator(kDefaultSeed);
    g->incref();  // lives for the whole process; handles to it never free it
    return g;
  }();
  return *gen;
}

Generator default_cpu_generator_handle() {
  return Generator(intrusive_ptr<GeneratorImpl>(&default_cpu_generator()));
}

CPUGenerator& cpu_generator(const std::optional<Generator>& gen) {
  if (!gen || !gen->defined()) return default_cpu_generator();
  TP_CHECK(gen->impl()->device().is_cpu(), "Expected a 'cpu' device type for generator but found '",
           device_type_name(gen->impl()->device().type), "'");
  return static_cast<CPUGenerator&>(*gen->impl());
}

}  // namespace tp::random
