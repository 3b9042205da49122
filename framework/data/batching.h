// Stacking elements into a batch, with or without padding: what batch, padded_batch and
// bucket_by_sequence_length share.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "framework/data/element.h"
#include "framework/data/padding_stats.h"

namespace kestrel::data::detail {

struct PadSpec {
  std::int64_t pad_to_multiple_of = 1;
  std::map<std::string, std::vector<std::int64_t>> padded_shapes;
  std::map<std::string, double> padding_values;
};

/// Stacks elements of equal shapes along a new first dimension; `transform` names the caller in errors.
Element stack_elements(const std::vector<Element>& elements, const std::string& transform);

/// Pads every value to the batch's longest (or padded_shapes), rounded up to pad_to_multiple_of, and
/// stacks. Records the batch in stats, counting every value padded, unless stats is null (a
/// caller that measures its padding another way).
Element pad_and_stack(const std::vector<Element>& elements, const PadSpec& spec, const std::string& transform,
                      PaddingStats* stats);

/// "input_ids:int64[32,64] labels:int64[32]": the batch's shapes, one compile each under jit_compile.
std::string shape_signature(const Element& batch);

}  // namespace kestrel::data::detail
