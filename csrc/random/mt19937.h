// The 32-bit Mersenne Twister with the bookkeeping of PyTorch's CPU generator (`left`,
// `next`, the 64-bit seed), so its state maps one to one onto PyTorch's serialised form
// and a stream continues bit for bit across a get_state / set_state.
#pragma once
#include <algorithm>
#include <cstdint>

namespace tp::random {

constexpr int kMtN = 624;
constexpr int kMtM = 397;

struct MT19937 {
  uint64_t seed = 0;  // the full 64-bit seed (initial_seed); the state uses its low word
  int32_t left = 1;   // draws until the next twist, plus one
  bool seeded = false;
  uint32_t next = 0;  // index of the next state word to temper
  uint32_t state[kMtN];

  /// Knuth's initialisation from the low 32 bits of `s`, as std::mt19937 does.
  void init(uint64_t s) {
    seed = s;
    seeded = true;
    state[0] = uint32_t(s);
    for (int j = 1; j < kMtN; ++j)
      state[j] = 1812433253u * (state[j - 1] ^ (state[j - 1] >> 30)) + uint32_t(j);
    left = 1;
    next = 0;
  }

  bool valid() const { return seeded && left > 0 && left <= kMtN && next <= uint32_t(kMtN); }

  static uint32_t temper(uint32_t y) {
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    return y ^ (y >> 18);
  }

  /// Regenerates the 624 state words (written so the compiler can vectorise each run).
  void twist() {
    auto mix = [](uint32_t u, uint32_t v) {
      uint32_t y = (u & 0x80000000u) | (v & 0x7fffffffu);
      return (y >> 1) ^ ((v & 1u) ? 0x9908b0dfu : 0u);
    };
    int i = 0;
    for (; i < kMtN - kMtM; ++i) state[i] = state[i + kMtM] ^ mix(state[i], state[i + 1]);
    for (; i < kMtN - 1; ++i) state[i] = state[i + kMtM - kMtN] ^ mix(state[i], state[i + 1]);
    state[kMtN - 1] = state[kMtM - 1] ^ mix(state[kMtN - 1], state[0]);
    left = kMtN;
    next = 0;
  }

  /// One 32-bit draw.
  uint32_t operator()() {
    if (--left == 0) twist();
    return temper(state[next++]);
  }

  /// n consecutive draws into out: the same words and final state as n calls.
  void fill(uint32_t* out, int64_t n) {
    while (n > 0) {
      if (left == 1) {  // this draw twists first
        twist();
        *out++ = temper(state[next++]);
        --n;
        continue;
      }
      int64_t k = std::min<int64_t>(n, left - 1);
      const uint32_t* s = state + next;
      for (int64_t i = 0; i < k; ++i) out[i] = temper(s[i]);
      out += k;
      n -= k;
      next += uint32_t(k);
      left -= int32_t(k);
    }
  }
};

}  // namespace tp::random
