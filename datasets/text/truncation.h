// Truncation and padding of id sequences, as Hugging Face's tokenizers do them.
//
//   std::vector<std::int64_t> a = {1, 2, 3, 4, 5}, b = {6, 7};
//   text::truncate_sequences(a, &b, 3, text::Truncation::longest_first);   // a = {1, 2}, b = {6, 7}
//   text::round_up_to_multiple(13, 8);                                     // 16
//   text::pad_right(encoding, 16, /*pad_id=*/0);   // ids padded with 0, attention_mask 0, special_tokens_mask 1
//
// longest_first splits the removal between the two sequences the way Hugging Face does: first
// the difference in length from the longer one, then the rest evenly (the odd token from the
// second sequence when the first is not the longer).
#pragma once

#include <cstdint>
#include <vector>

#include "datasets/text/encoding.h"
#include "datasets/text/wordpiece_tokenizer.h"

namespace kestrel::text {

/// Removes `count` tokens from the ends of `ids` and `pair_ids` (null for a single sequence) by
/// `strategy`. Returns false, changing nothing, when only_first or only_second cannot remove that
/// many from its sequence (Hugging Face logs an error there and keeps the sequences whole).
bool truncate_sequences(std::vector<std::int64_t>& ids, std::vector<std::int64_t>* pair_ids, std::int64_t count,
                        Truncation strategy);

/// `length` rounded up to a multiple of `multiple` (0: `length` unchanged).
std::int64_t round_up_to_multiple(std::int64_t length, std::int64_t multiple);

/// Which optional fields pad_right fills even when they are empty (an empty sequence has empty fields).
struct PaddedFields {
  bool attention_mask = false;
  bool token_type_ids = false;
  bool special_tokens_mask = false;
};

/// Pads `encoding` on the right to `length` tokens: input_ids with pad_id, attention_mask with 0,
/// token_type_ids with 0, special_tokens_mask with 1 (each when present or named in `fields`).
/// No-op when it is already as long.
void pad_right(Encoding& encoding, std::int64_t length, std::int64_t pad_id, PaddedFields fields = {});

}  // namespace kestrel::text
