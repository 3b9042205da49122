// Test support for the BERT classifier: a small configuration and padded batches.
//
//   models::BertClassifier model(testing::small_bert());
//   Inputs in = testing::padded({{1, 7, 9}, {1, 4}}, /*length=*/8);   // ids padded with 0 + mask
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "framework/model/inputs.h"
#include "models/bert_classifier.h"

namespace kestrel::testing {

/// Small enough for fast tests, with every part of the real model; no dropout, so calls repeat.
inline models::BertOptions small_bert() {
  return {.vocab_size = 32,
          .hidden_size = 16,
          .num_layers = 2,
          .num_heads = 2,
          .intermediate_size = 32,
          .max_length = 32,
          .dropout = 0.0,
          .num_classes = 3};
}

/// input_ids (int64, padded with pad_id) and attention_mask (int64, 1 = real token) for the rows.
inline Inputs padded(const std::vector<std::vector<std::int64_t>>& rows, std::int64_t length, std::int64_t pad_id = 0) {
  std::vector<std::int64_t> ids;
  std::vector<std::int64_t> mask;
  for (const auto& row : rows) {
    for (std::int64_t i = 0; i < length; ++i) {
      const bool real = i < static_cast<std::int64_t>(row.size());
      ids.push_back(real ? row[static_cast<std::size_t>(i)] : pad_id);
      mask.push_back(real ? 1 : 0);
    }
  }
  const Shape shape{static_cast<std::int64_t>(rows.size()), length};
  return Inputs{{"input_ids", Tensor::from_vector<std::int64_t>(ids, shape)},
                {"attention_mask", Tensor::from_vector<std::int64_t>(mask, shape)}};
}

/// Largest |a - b| over two float tensors of one shape.
inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  std::vector<float> x = a.to_vector<float>();
  std::vector<float> y = b.to_vector<float>();
  double worst = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, static_cast<double>(std::abs(x[i] - y[i])));
  return worst;
}

}  // namespace kestrel::testing
