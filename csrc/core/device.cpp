#include "core/device.h"

#include <cctype>

#include "core/error.h"

namespace tp {

const char* device_type_name(DeviceType t) {
  switch (t) {
    case DeviceType::CPU: return "cpu";
    case DeviceType::CUDA: return "cuda";
    case DeviceType::Meta: return "meta";
  }
  return "unknown";
}

Device Device::parse(const std::string& s) {
  auto colon = s.find(':');
  std::string type = s.substr(0, colon);
  Device d;
  if (type == "cpu") d.type = DeviceType::CPU;
  else if (type == "cuda") d.type = DeviceType::CUDA;
  else if (type == "meta") d.type = DeviceType::Meta;
  else
    TP_FAIL("Expected one of cpu, cuda, meta device type at start of device string: ", s);
  if (colon != std::string::npos) {
    std::string idx = s.substr(colon + 1);
    bool ok = !idx.empty() && idx.size() < 4;
    for (char c : idx) ok = ok && std::isdigit((unsigned char)c);
    TP_CHECK(ok && (idx.size() == 1 || idx[0] != '0'), "Invalid device string: '", s, "'");
    d.index = int8_t(std::stoi(idx));
  }
  return d;
}

std::string Device::str() const {
  std::string s = device_type_name(type);
  if (index >= 0) s += ":" + std::to_string(index);
  return s;
}

}  // namespace tp
