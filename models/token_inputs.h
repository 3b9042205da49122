// TokenInputs: what a Transformer model over token ids reads from its Inputs, checked once for
// every such model (BertClassifier, GPT): the names it knows, integer ids of [batch, length] no
// longer than max_length, and per-token inputs shaped like the ids.
//
//   TokenInputs in = read_token_inputs(inputs, {"attention_mask"}, /*max_length=*/128, "layer 'gpt' (GPT): ");
//   in.input_ids;  in.get("attention_mask");   // undefined when not given
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "framework/model/inputs.h"

namespace kestrel::models {

struct TokenInputs {
  Tensor input_ids;
  std::map<std::string, Tensor> optional;  ///< the optional inputs given

  /// The optional input `name`, or an undefined tensor when it was not given.
  Tensor get(const std::string& name) const;
};

/// input_ids (a single unnamed tensor is taken as them) and the optional per-token inputs in
/// `optional_names`. Throws, after `who`, naming the input and the fix: ValueError for an unknown
/// name (a misspelt attention_mask would otherwise be ignored), TypeError for non-integer ids,
/// ShapeError for a wrong rank, a length over max_length or an input shaped unlike the ids.
TokenInputs read_token_inputs(const Inputs& inputs, const std::vector<std::string>& optional_names,
                              std::int64_t max_length, const std::string& who);

}  // namespace kestrel::models
