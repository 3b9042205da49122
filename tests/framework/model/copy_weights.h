// For the model tests that compare two models (or layers) of one architecture: the second made to
// start from the first's weights.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "framework/layers/layer.h"

namespace kestrel::testing {

/// Copies `from`'s weights into `to`, which has the same architecture (a Model is a Layer).
inline void copy_weights(const Layer& from, const Layer& to) {
  const std::vector<Variable> source = from.weights();
  const std::vector<Variable> target = to.weights();
  ASSERT_EQ(source.size(), target.size());
  for (std::size_t i = 0; i < source.size(); ++i) target[i].assign(source[i].value());
}

}  // namespace kestrel::testing
