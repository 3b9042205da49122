#include "datasets/text/data_collator.h"

#include <array>
#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/data/batching.h"

namespace kestrel::text {
namespace {

using Field = std::vector<std::int64_t> Encoding::*;

bool is_tokenizer_key(const std::string& key) {
  for (const EncodingField& field : kEncodingFields) {
    if (key == field.name) return true;
  }
  return false;
}

std::vector<std::int64_t> read_ids(const data::Element& feature, const std::string& key, std::size_t index,
                                   const std::string& who) {
  const Tensor& t = feature.tensor(key);
  if (!is_integer(t.dtype()) && t.dtype() != DType::bool_) {
    throw TypeError(who + ": '" + key + "' of example " + std::to_string(index) + " is " + t.spec().to_string() +
                    "; token ids and masks must be integers (int64)");
  }
  if (t.rank() != 1) {
    throw ShapeError(who + ": '" + key + "' of example " + std::to_string(index) + " is " + t.spec().to_string() +
                     "; the collator takes one unbatched sequence per example (int64 [L]): collate before batching");
  }
  return t.to_vector<std::int64_t>();
}

// [B, L] from one field of equally long encodings.
Tensor stack_field(const std::vector<Encoding>& encodings, Field field, const std::string& key,
                   const std::string& who) {
  const std::size_t length = (encodings.front().*field).size();
  std::vector<std::int64_t> values;
  values.reserve(length * encodings.size());
  for (std::size_t i = 0; i < encodings.size(); ++i) {
    const std::vector<std::int64_t>& row = encodings[i].*field;
    if (row.size() != length) {
      throw ValueError(who + ": after padding, '" + key + "' of example " + std::to_string(i) + " has " +
                       std::to_string(row.size()) + " tokens but example 0 has " + std::to_string(length) +
                       "; pad with {.padding = text::Padding::longest} (or max_length) to make one tensor");
    }
    values.insert(values.end(), row.begin(), row.end());
  }
  return Tensor::from_vector<std::int64_t>(
      values, Shape{static_cast<std::int64_t>(encodings.size()), static_cast<std::int64_t>(length)});
}

// What both collators do first: pad the tokenizer's keys with tokenizer.pad() and stack the rest.
data::Element pad_features(const WordPieceTokenizer& tokenizer, const std::vector<data::Element>& features,
                           const EncodeOptions& pad_options, const std::string& who) {
  if (features.empty()) throw ValueError(who + ": got no examples; a batch needs at least one");
  const data::Element& first = features.front();
  std::vector<Encoding> encodings(features.size());
  std::vector<data::Element> others(features.size());
  for (std::size_t i = 0; i < features.size(); ++i) {
    const data::Element& feature = features[i];
    if (!feature.contains("input_ids")) {
      throw ValueError(who + ": example " + std::to_string(i) + " has no 'input_ids' (its keys are " +
                       feature.keys_string() + "); tokenize first, e.g. dataset.map(tokenizer.map_fn())");
    }
    for (const EncodingField& field : kEncodingFields) {
      const std::string key = field.name;
      if (feature.contains(key) != first.contains(key)) {
        throw ValueError(who + ": '" + key + "' is in example " + std::to_string(first.contains(key) ? 0 : i) +
                         " but not in example " + std::to_string(first.contains(key) ? i : 0) +
                         "; every example needs the same keys");
      }
      if (!feature.contains(key)) continue;
      encodings[i].*field.ids = read_ids(feature, key, i, who);
      if ((encodings[i].*field.ids).size() != encodings[i].input_ids.size()) {
        throw ShapeError(who + ": '" + key + "' of example " + std::to_string(i) + " has " +
                         std::to_string((encodings[i].*field.ids).size()) + " values but input_ids has " +
                         std::to_string(encodings[i].input_ids.size()));
      }
    }
    for (const auto& [key, value] : feature.values()) {
      if (!is_tokenizer_key(key)) others[i].set(key, value);
    }
    if (others[i].keys() != others.front().keys()) {
      throw ValueError(who + ": example " + std::to_string(i) + " has keys " + feature.keys_string() +
                       " but example 0 has " + first.keys_string() + "; every example needs the same keys");
    }
    for (const auto& [key, value] : others[i].values()) {
      const data::ValueSpec spec = data::spec_of(value), expected = data::spec_of(others.front().at(key));
      if (spec == expected) continue;
      const std::string message = who + ": '" + key + "' is " + spec.to_string() + " in example " + std::to_string(i) +
                                  " but " + expected.to_string() +
                                  " in example 0; only the tokenizer's keys are padded, so other values must "
                                  "agree in shape and type";
      if (spec.shape != expected.shape) throw ShapeError(message);
      throw TypeError(message);
    }
  }

  BatchEncoding padded = tokenizer.pad(std::move(encodings), pad_options);
  data::Element batch;
  if (!others.front().values().empty()) batch = data::detail::stack_elements(others, who);
  for (const EncodingField& field : kEncodingFields) {
    if (!(padded.encodings.front().*field.ids).empty()) {
      batch.set(field.name, stack_field(padded.encodings, field.ids, field.name, who));
    }
  }
  return batch;
}

void check_probability(double p, const char* name) {
  if (!(p >= 0.0 && p <= 1.0)) {
    throw ValueError(std::string("DataCollatorForLanguageModeling: ") + name + " is " + std::to_string(p) +
                     "; it must be between 0 and 1");
  }
}

}  // namespace

// ---- DataCollatorWithPadding

DataCollatorWithPadding::DataCollatorWithPadding(const WordPieceTokenizer& tokenizer,
                                                 DataCollatorWithPaddingOptions options)
    : tokenizer_(std::make_shared<const WordPieceTokenizer>(tokenizer)), options_(std::move(options)) {
  if (options_.pad_to_multiple_of < 0) {
    throw ValueError("DataCollatorWithPadding: pad_to_multiple_of is " + std::to_string(options_.pad_to_multiple_of) +
                     "; use 0 (no rounding) or a positive multiple such as 8");
  }
}

data::Element DataCollatorWithPadding::operator()(const std::vector<data::Element>& features) const {
  EncodeOptions pad_options;
  pad_options.padding = options_.padding;
  pad_options.max_length = options_.max_length;
  pad_options.pad_to_multiple_of = options_.pad_to_multiple_of;
  data::Element batch = pad_features(*tokenizer_, features, pad_options, "DataCollatorWithPadding");
  // Models and losses read "labels", as in Hugging Face Transformers.
  for (const char* alias : {"label", "label_ids"}) {
    if (!batch.contains(alias)) continue;
    if (batch.contains("labels")) {
      throw ValueError(std::string("DataCollatorWithPadding: the examples have both '") + alias +
                       "' and 'labels', and '" + alias + "' would be renamed 'labels'; keep only one");
    }
    batch.set("labels", batch.at(alias));
    batch.erase(alias);
  }
  return batch;
}

// ---- DataCollatorForLanguageModeling

DataCollatorForLanguageModeling::DataCollatorForLanguageModeling(const WordPieceTokenizer& tokenizer,
                                                                 DataCollatorForLanguageModelingOptions options)
    : tokenizer_(std::make_shared<const WordPieceTokenizer>(tokenizer)), options_(options) {
  if (options_.mlm) {
    const std::string& mask = tokenizer.options().mask_token;
    const std::int64_t id = tokenizer.mask_token_id();
    if (mask.empty() || id < 0 || id >= tokenizer.vocab_size() || tokenizer.vocab()[id] != mask) {
      throw ValueError(
          "DataCollatorForLanguageModeling: the tokenizer has no mask token, which masked language "
          "modelling needs; add [MASK] to the vocabulary, or pass {.mlm = false} for causal "
          "language modelling");
    }
    check_probability(options_.mlm_probability, "mlm_probability");
  }
  check_probability(options_.mask_replace_prob, "mask_replace_prob");
  check_probability(options_.random_replace_prob, "random_replace_prob");
  if (options_.mask_replace_prob + options_.random_replace_prob > 1.0) {
    throw ValueError("DataCollatorForLanguageModeling: mask_replace_prob + random_replace_prob is " +
                     std::to_string(options_.mask_replace_prob + options_.random_replace_prob) +
                     "; the two shares of the selected tokens cannot exceed 1");
  }
  if (options_.pad_to_multiple_of < 0) {
    throw ValueError("DataCollatorForLanguageModeling: pad_to_multiple_of is " +
                     std::to_string(options_.pad_to_multiple_of) + "; use 0 (no rounding) or a positive multiple");
  }
}

data::Element DataCollatorForLanguageModeling::operator()(const std::vector<data::Element>& features) const {
  const std::string who = "DataCollatorForLanguageModeling";
  const std::uint64_t call = calls_.take();
  EncodeOptions pad_options;
  pad_options.padding = Padding::longest;
  pad_options.pad_to_multiple_of = options_.pad_to_multiple_of;
  data::Element batch = pad_features(*tokenizer_, features, pad_options, who);

  const Shape shape = batch.tensor("input_ids").shape();
  std::vector<std::int64_t> ids = batch.tensor("input_ids").to_vector<std::int64_t>();
  std::vector<std::int64_t> labels(ids.size(), kIgnoreIndex);
  const WordPieceTokenizer& tok = *tokenizer_;

  if (!options_.mlm) {
    // As Hugging Face: every pad id is ignored by the loss (the model shifts labels itself).
    for (std::size_t i = 0; i < ids.size(); ++i) labels[i] = ids[i] == tok.pad_token_id() ? kIgnoreIndex : ids[i];
  } else {
    std::vector<std::int64_t> special;
    if (batch.contains("special_tokens_mask")) {
      special = batch.tensor("special_tokens_mask").to_vector<std::int64_t>();
      batch.erase("special_tokens_mask");
    }
    std::vector<std::int64_t> attention;
    if (batch.contains("attention_mask")) attention = batch.tensor("attention_mask").to_vector<std::int64_t>();

    // Three independent streams per batch: selection, the mask/random/keep choice, random tokens.
    const random::Key key = random::Key(options_.seed).fold_in(call);
    std::vector<float> select(ids.size()), choice(ids.size());
    random::uniform_fill(key.fold_in(0), 0, select);
    random::uniform_fill(key.fold_in(1), 0, choice);
    const random::Key token_key = key.fold_in(2);
    const auto vocab = static_cast<std::uint64_t>(tok.vocab_size());

    for (std::size_t i = 0; i < ids.size(); ++i) {
      const bool is_special = special.empty() ? tok.is_special_id(ids[i]) : special[i] != 0;
      const bool is_padding = !attention.empty() && attention[i] == 0;
      if (is_special || is_padding || !(select[i] < options_.mlm_probability)) continue;
      labels[i] = ids[i];
      if (choice[i] < options_.mask_replace_prob) {
        ids[i] = tok.mask_token_id();
      } else if (choice[i] < options_.mask_replace_prob + options_.random_replace_prob) {
        // Uniform over the whole vocabulary, special tokens included, as Hugging Face draws it.
        const std::uint64_t bits = token_key.bits(0, i)[0];
        ids[i] = static_cast<std::int64_t>((bits * vocab) >> 32);
      }
    }
    batch.set("input_ids", Tensor::from_vector<std::int64_t>(ids, shape));
  }
  if (batch.contains("special_tokens_mask")) batch.erase("special_tokens_mask");
  batch.set("labels", Tensor::from_vector<std::int64_t>(labels, shape));
  return batch;
}

}  // namespace kestrel::text
