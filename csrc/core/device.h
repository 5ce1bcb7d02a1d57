// Where a tensor lives. The CUDA type exists from the start so nothing assumes CPU.
#pragma once
#include <cstdint>
#include <string>

namespace tp {

enum class DeviceType : int8_t { CPU, CUDA, Meta };
constexpr int kNumDeviceTypes = 3;

/// A device type plus an index (-1: the current device of that type).
struct Device {
  DeviceType type = DeviceType::CPU;
  int8_t index = -1;

  Device() = default;
  Device(DeviceType t, int idx = -1) : type(t), index(int8_t(idx)) {}
  /// Parses "cpu", "cuda", "cuda:1", "meta"; raises RuntimeError on anything else.
  static Device parse(const std::string& s);

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  /// "cpu", "cuda:0", ...
  std::string str() const;
};

const char* device_type_name(DeviceType t);

}  // namespace tp
