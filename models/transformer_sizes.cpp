#include "models/transformer_sizes.h"

#include <sstream>

#include "framework/core/error.h"

namespace kestrel::models {
namespace {

std::string number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

void require_positive(const std::string& prefix, const char* field, std::int64_t value) {
  if (value <= 0) throw ValueError(prefix + field + " is " + std::to_string(value) + "; it must be positive");
}

}  // namespace

void check_transformer_sizes(const std::string& prefix, const TransformerSizes& s) {
  require_positive(prefix, "vocab_size", s.vocab_size);
  require_positive(prefix, "hidden_size", s.hidden_size);
  require_positive(prefix, "num_heads", s.num_heads);
  require_positive(prefix, "intermediate_size", s.intermediate_size);
  require_positive(prefix, "max_length", s.max_length);
  if (s.num_layers < 0)
    throw ValueError(prefix + "num_layers is " + std::to_string(s.num_layers) + "; it must be >= 0");
  if (s.hidden_size % s.num_heads != 0) {
    throw ValueError(prefix + "hidden_size " + std::to_string(s.hidden_size) + " does not split into " +
                     std::to_string(s.num_heads) + " heads; choose num_heads dividing hidden_size");
  }
  if (!(s.dropout >= 0.0 && s.dropout < 1.0)) {
    throw ValueError(prefix + "dropout is " + number(s.dropout) + "; it must be in [0, 1)");
  }
  if (!(s.initializer_stddev > 0.0)) {
    throw ValueError(prefix + "initializer_stddev is " + number(s.initializer_stddev) + "; it must be positive");
  }
  if (!(s.layer_norm_epsilon > 0.0)) {
    throw ValueError(prefix + "layer_norm_epsilon is " + number(s.layer_norm_epsilon) + "; it must be positive");
  }
}

}  // namespace kestrel::models
