// TransformerSizes: the sizes every Transformer model's options share, checked in one place.
//
//   check_transformer_sizes("model 'gpt' (GPT): ", sizes_of(options));
#pragma once

#include <cstdint>
#include <string>

namespace kestrel::models {

struct TransformerSizes {
  std::int64_t vocab_size = 0;
  std::int64_t hidden_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  std::int64_t intermediate_size = 0;
  std::int64_t max_length = 0;
  double dropout = 0.0;
  double initializer_stddev = 0.0;
  double layer_norm_epsilon = 0.0;
};

/// The shared sizes of a model's options (any options struct with these fields).
template <class Options>
TransformerSizes sizes_of(const Options& o) {
  return {.vocab_size = o.vocab_size,
          .hidden_size = o.hidden_size,
          .num_layers = o.num_layers,
          .num_heads = o.num_heads,
          .intermediate_size = o.intermediate_size,
          .max_length = o.max_length,
          .dropout = o.dropout,
          .initializer_stddev = o.initializer_stddev,
          .layer_norm_epsilon = o.layer_norm_epsilon};
}

/// Throws ValueError, after `prefix`, naming the first size out of range and what it must be:
/// positive sizes, num_layers >= 0, num_heads dividing hidden_size, dropout in [0, 1), positive
/// initializer_stddev and layer_norm_epsilon.
void check_transformer_sizes(const std::string& prefix, const TransformerSizes& sizes);

}  // namespace kestrel::models
