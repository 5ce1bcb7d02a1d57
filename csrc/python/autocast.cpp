// tp.autocast's state functions and `_autocast_args`, the casts of Python-level functions.
#include <vector>

#include "autograd/autocast.h"
#include "core/error.h"
#include "python/bindings.h"

namespace tp::python {
namespace {

/// "cpu" / "cuda" (Python has already parsed the string as a device).
DeviceType autocast_device(const std::string& type) {
  if (type == "cpu") return DeviceType::CPU;
  if (type == "cuda") return DeviceType::CUDA;
  TP_FAIL("User specified an unsupported autocast device_type '", type, "'");
}

/// `args` with the tensors cast per `name`'s entry in csrc/ops/autocast.yaml, as a listed
/// C++ op casts its arguments (non-tensors and uncast tensors come back as passed).
nb::tuple autocast_args(const std::string& name, nb::args args) {
  if (!autocast::armed()) return args;
  const autocast::OpPolicy* policy = autocast::find_policy(name);
  TP_CHECK(policy, "_autocast_args: ", name, " is not in csrc/ops/autocast.yaml");
  std::vector<Tensor> tensors;
  for (nb::handle h : args)
    if (nb::isinstance<Tensor>(h)) tensors.push_back(nb::cast<Tensor>(h));
  if (tensors.empty()) return args;
  autocast::Redispatch ac(policy->cpu, policy->cuda, policy->name, policy->banned_message,
                          &tensors[0]);
  if (!ac) return args;
  ac.widen(std::span<const Tensor>(tensors));
  nb::list out;
  size_t i = 0;
  for (nb::handle h : args) {
    if (!nb::isinstance<Tensor>(h)) {
      out.append(h);
      continue;
    }
    Tensor c = ac.cast(tensors[i++]);
    out.append(c.is_same(tensors[i - 1]) ? nb::borrow(h) : nb::cast(std::move(c)));
  }
  return nb::tuple(out);
}

}  // namespace

void bind_autocast(nb::module_& m) {
  m.def("_autocast_is_enabled", [](const std::string& t) { return autocast::is_enabled(autocast_device(t)); });
  m.def("_autocast_set_enabled", [](const std::string& t, bool on) { autocast::set_enabled(autocast_device(t), on); });
  m.def("_autocast_get_dtype", [](const std::string& t) { return autocast::get_dtype(autocast_device(t)); });
  m.def("_autocast_set_dtype", [](const std::string& t, DType dt) { autocast::set_dtype(autocast_device(t), dt); });
  m.def("autocast_increment_nesting", &autocast::increment_nesting);
  m.def("autocast_decrement_nesting", &autocast::decrement_nesting);
  m.def("clear_autocast_cache", &autocast::clear_cache);
  m.def("is_autocast_cache_enabled", &autocast::is_cache_enabled);
  m.def("set_autocast_cache_enabled", &autocast::set_cache_enabled, nb::arg("enabled"));
  m.def("_autocast_cache_size", &autocast::cache_size);
  // nn.functional's Python code asks this (one call) before paying for _autocast_args
  m.def("_autocast_armed", &autocast::armed);
  m.def("_autocast_args", &autocast_args);
  // The policy of a name on a device type ("lower_precision", "fp32", "promote", "banned",
  // or None when not listed): how tests check the yaml is wired.
  m.def("_autocast_policy", [](const std::string& name, const std::string& t) -> nb::object {
    const autocast::OpPolicy* p = autocast::find_policy(name);
    if (!p) return nb::none();
    static constexpr const char* names[] = {nullptr, "lower_precision", "fp32", "promote", "banned"};
    const char* s = names[int(autocast_device(t) == DeviceType::CUDA ? p->cuda : p->cpu)];
    return s ? nb::object(nb::str(s)) : nb::none();
  });
}

}  // namespace tp::python
