#include "datasets/text/truncation.h"

#include <algorithm>
#include <cstdlib>

namespace kestrel::text {
namespace {

void drop_last(std::vector<std::int64_t>& ids, std::int64_t count) {
  const auto keep = std::max<std::int64_t>(0, static_cast<std::int64_t>(ids.size()) - count);
  ids.resize(static_cast<std::size_t>(keep));
}

}  // namespace

bool truncate_sequences(std::vector<std::int64_t>& ids, std::vector<std::int64_t>* pair_ids, std::int64_t count,
                        Truncation strategy) {
  if (count <= 0 || strategy == Truncation::do_not_truncate) return true;
  const auto len_ids = static_cast<std::int64_t>(ids.size());
  if (strategy == Truncation::only_first || (strategy == Truncation::longest_first && pair_ids == nullptr)) {
    if (len_ids <= count) return false;
    drop_last(ids, count);
    return true;
  }
  if (strategy == Truncation::longest_first) {
    const auto len_pair = static_cast<std::int64_t>(pair_ids->size());
    const std::int64_t first_remove = std::min(std::abs(len_pair - len_ids), count);
    const std::int64_t second_remove = count - first_remove;
    std::int64_t from_ids = 0, from_pair = 0;
    if (len_ids > len_pair) {
      from_ids = first_remove + second_remove / 2;
      from_pair = second_remove - second_remove / 2;
    } else {
      from_ids = second_remove / 2;
      from_pair = first_remove + second_remove - second_remove / 2;
    }
    drop_last(ids, from_ids);
    drop_last(*pair_ids, from_pair);
    return true;
  }
  // only_second; without a second sequence there is nothing it may remove.
  if (pair_ids == nullptr || static_cast<std::int64_t>(pair_ids->size()) <= count) return false;
  drop_last(*pair_ids, count);
  return true;
}

std::int64_t round_up_to_multiple(std::int64_t length, std::int64_t multiple) {
  if (multiple <= 0 || length % multiple == 0) return length;
  return (length / multiple + 1) * multiple;
}

void pad_right(Encoding& encoding, std::int64_t length, std::int64_t pad_id, PaddedFields fields) {
  if (encoding.size() >= length) return;
  const auto n = static_cast<std::size_t>(length);
  auto extend = [n](std::vector<std::int64_t>& field, bool wanted, std::int64_t value) {
    if (wanted || !field.empty()) field.resize(n, value);
  };
  extend(encoding.attention_mask, fields.attention_mask, 0);
  extend(encoding.token_type_ids, fields.token_type_ids, 0);
  extend(encoding.special_tokens_mask, fields.special_tokens_mask, 1);
  encoding.input_ids.resize(n, pad_id);
}

}  // namespace kestrel::text
