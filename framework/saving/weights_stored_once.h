// A weight tied between layers is one variable, so a weights file holds it once: under the first
// layer, in the file's layer order, that has it. Later layers store only their other weights, and
// loading reads them the same way, so the tie comes back as one variable with one value.
//
//   WeightsStoredOnce stored;
//   for (const Layer* layer : layers_in_file_order) write(layer, stored.first_time(layer->weights()));
#pragma once

#include <unordered_set>
#include <vector>

#include "framework/core/variable.h"

namespace kestrel::saving {

class WeightsStoredOnce {
 public:
  /// Of `weights`, the ones no earlier call returned; from now on they count as stored.
  std::vector<Variable> first_time(const std::vector<Variable>& weights) {
    std::vector<Variable> out;
    for (const Variable& v : weights) {
      if (stored_.insert(v.id()).second) out.push_back(v);
    }
    return out;
  }

 private:
  std::unordered_set<const void*> stored_;
};

}  // namespace kestrel::saving
