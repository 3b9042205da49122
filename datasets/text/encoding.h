// Encoding: one tokenized sequence (or sentence pair), as a row of Hugging Face's BatchEncoding.
//
//   text::Encoding e = tokenizer.encode("Hello, world!");
//   e.input_ids;        // {101, 7592, 1010, 2088, 999, 102}  ([CLS] hello , world ! [SEP] in BERT's vocab)
//   e.attention_mask;   // {1, 1, 1, 1, 1, 1}
//   data::Element row = e.to_element();   // int64 [L] tensors under the same names
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/data/element.h"

namespace kestrel::text {

struct Encoding {
  std::vector<std::int64_t> input_ids;
  /// 0 for the first sentence (and its [CLS]/[SEP]), 1 for the second.
  std::vector<std::int64_t> token_type_ids;
  /// 1 for real tokens, 0 for padding.
  std::vector<std::int64_t> attention_mask;
  /// 1 for special tokens ([CLS], [SEP], [PAD]); filled when EncodeOptions asks for it.
  std::vector<std::int64_t> special_tokens_mask;

  std::int64_t size() const { return static_cast<std::int64_t>(input_ids.size()); }
  /// The non-empty fields as int64 [L] tensors named as above.
  data::Element to_element() const;
  /// Reads the fields back from int64 [L] tensors (input_ids is required; the others are optional).
  static Encoding from_element(const data::Element& element);
};

/// One of Encoding's id lists and the name Hugging Face gives it.
struct EncodingField {
  const char* name;
  std::vector<std::int64_t> Encoding::*ids;
};

/// Encoding's id lists in the order Hugging Face's BatchEncoding lists them; input_ids comes first.
inline constexpr std::array<EncodingField, 4> kEncodingFields = {{
    {"input_ids", &Encoding::input_ids},
    {"token_type_ids", &Encoding::token_type_ids},
    {"attention_mask", &Encoding::attention_mask},
    {"special_tokens_mask", &Encoding::special_tokens_mask},
}};

}  // namespace kestrel::text
