#include "dispatch/ivalue.h"

namespace tp {

const char* IValue::tag_name() const {
  static constexpr const char* names[] = {"None", "Tensor", "int", "float", "bool", "str",
                                          "int[]", "float[]", "Tensor[]", "Tensor?[]",
                                          "ScalarType", "Device", "Generator", "complex"};
  return names[v_.index()];
}

}  // namespace tp
