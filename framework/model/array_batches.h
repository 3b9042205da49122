// Batches of in-memory arrays for fit / evaluate / predict (internal to the training loop).
//
//   ArrayBatches data(x, y, sample_weight, /*batch_size=*/32);
//   data.shuffle(key);                        // a new order, a pure function of the key
//   for (std::int64_t b = 0; b < data.num_batches(); ++b) { Batch batch = data.batch(b); ... }
#pragma once

#include <cstdint>
#include <vector>

#include "framework/core/random.h"
#include "framework/model/batch.h"
#include "framework/model/inputs.h"

namespace kestrel::detail {

class ArrayBatches {
 public:
  /// x, y and sample_weight must agree on the number of samples (ShapeError naming both otherwise).
  ArrayBatches(Inputs x, Outputs y, Tensor sample_weight, std::int64_t batch_size);

  std::int64_t num_samples() const { return num_samples_; }
  std::int64_t num_batches() const;
  /// Batch b in the current order; the last batch may be smaller.
  Batch batch(std::int64_t b) const;
  /// Reorders samples by a permutation drawn from key.
  void shuffle(const random::Key& key);
  /// Splits off the last `fraction` of samples (Keras's validation_split, taken before shuffling).
  ArrayBatches split_tail(double fraction);

 private:
  Inputs x_;
  Outputs y_;
  Tensor sample_weight_;
  std::int64_t batch_size_;
  std::int64_t num_samples_;
  std::vector<std::int64_t> order_;  // empty: natural order
};

}  // namespace kestrel::detail
