// How Keras prints a shape whose first dim is the batch: "(None, 28, 28, 1)", "(None, 10)", "(None,)".
#pragma once

#include <string>

#include "framework/core/shape.h"

namespace kestrel {

/// The shape with its batch dim written as None, as Keras's summaries and messages show it.
std::string keras_batch_shape(const Shape& shape);

}  // namespace kestrel
