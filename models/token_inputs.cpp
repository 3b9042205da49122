#include "models/token_inputs.h"

#include <algorithm>

#include "framework/core/error.h"

namespace kestrel::models {

Tensor TokenInputs::get(const std::string& name) const {
  auto found = optional.find(name);
  return found == optional.end() ? Tensor() : found->second;
}

TokenInputs read_token_inputs(const Inputs& inputs, const std::vector<std::string>& optional_names,
                              std::int64_t max_length, const std::string& who) {
  TokenInputs in;
  if (!inputs.is_named()) {
    in.input_ids = inputs.tensor();
  } else {
    std::string known = "input_ids";
    for (const std::string& name : optional_names) known += (&name == &optional_names.back() ? " and " : ", ") + name;
    for (const auto& [key, tensor] : inputs.named()) {
      if (key == "input_ids") continue;
      if (std::find(optional_names.begin(), optional_names.end(), key) == optional_names.end()) {
        // A misspelt "attention_mask" would otherwise be ignored and padding silently attended to.
        throw ValueError(who + "unknown input '" + key + "'; the model takes " + known + ": drop or rename it");
      }
      in.optional.emplace(key, tensor);
    }
    in.input_ids = inputs["input_ids"];
  }

  const Tensor& ids = in.input_ids;
  if (!is_integer(ids.dtype())) {
    throw TypeError(who + "input_ids are " + ids.spec().to_string() +
                    "; pass integer token ids (int32 or int64), as the tokenizer makes them");
  }
  if (ids.rank() != 2 || ids.shape()[1] == 0) {
    throw ShapeError(who + "input_ids are " + ids.shape().to_string() +
                     "; pass [batch, length] token ids with length >= 1 (batch a single sequence as [1, length])");
  }
  const std::int64_t length = ids.shape()[1];
  if (length > max_length) {
    throw ShapeError(who + "input_ids have length " + std::to_string(length) + " but max_length is " +
                     std::to_string(max_length) + "; truncate with the tokenizer's max_length (" +
                     std::to_string(max_length) +
                     "), cut the text into windows, or build the model with a "
                     "larger max_length");
  }
  for (const auto& [name, t] : in.optional) {
    if (t.shape() != ids.shape()) {
      throw ShapeError(who + name + " is " + t.shape().to_string() + " but input_ids are " + ids.shape().to_string() +
                       "; pass one entry per token, padded as the ids are");
    }
  }
  return in;
}

}  // namespace kestrel::models
