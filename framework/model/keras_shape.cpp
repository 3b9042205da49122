#include "framework/model/keras_shape.h"

namespace kestrel {

std::string keras_batch_shape(const Shape& shape) {
  std::string out = "(None";
  for (int d = 1; d < shape.rank(); ++d) out += ", " + std::to_string(shape[d]);
  if (shape.rank() == 1) out += ",";
  return out + ")";
}

}  // namespace kestrel
