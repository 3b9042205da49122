// WordPieceTokenizer's encode, encode_batch, pad and map_fn: Hugging Face's prepare_for_model
// (truncation, special tokens, token type ids) and pad, on top of tokenize_ids.
#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "datasets/text/truncation.h"
#include "datasets/text/wordpiece_tokenizer.h"
#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "framework/logging/logging.h"

namespace kestrel::text {
namespace {

constexpr std::int64_t kBatchGrain = 32;  // texts per chunk: tokenizing one text takes microseconds

// The lengths EncodeOptions resolves to, with Hugging Face's checks.
struct Resolved {
  std::optional<std::int64_t> max_length;
};

Resolved resolve(const EncodeOptions& options, std::int64_t model_max_length, const char* op) {
  if (options.max_length && *options.max_length < 0) {
    throw ValueError(std::string("[WordPieceTokenizer] ") + op + ": max_length is " +
                     std::to_string(*options.max_length) + "; it must be at least 0");
  }
  if (options.pad_to_multiple_of < 0) {
    throw ValueError(std::string("[WordPieceTokenizer] ") + op + ": pad_to_multiple_of is " +
                     std::to_string(options.pad_to_multiple_of) + "; use 0 for no rounding or a positive multiple");
  }
  Resolved r{options.max_length};
  const bool truncating = options.truncation != Truncation::do_not_truncate;
  const bool padding = options.padding != Padding::do_not_pad;
  if (!r.max_length && (options.padding == Padding::max_length || truncating)) r.max_length = model_max_length;
  if (truncating && padding && options.pad_to_multiple_of > 0 && r.max_length &&
      *r.max_length % options.pad_to_multiple_of != 0) {
    throw ValueError(std::string("[WordPieceTokenizer] ") + op +
                     ": truncation and padding are both on, but max_length " + std::to_string(*r.max_length) +
                     " is not a multiple of pad_to_multiple_of " + std::to_string(options.pad_to_multiple_of) +
                     "; make max_length a multiple of it");
  }
  return r;
}

void warn_untruncated(Truncation strategy, std::int64_t max_length) {
  // Hugging Face logs this for every sequence; once per process is enough to be noticed.
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  const char* name = strategy == Truncation::only_first    ? "only_first"
                     : strategy == Truncation::only_second ? "only_second"
                                                           : "longest_first";
  logging::get("kestrel.data")
      ->warn(
          "WordPieceTokenizer: Truncation::{} cannot bring a sequence to max_length {}: the sequence it may cut "
          "is too short, or max_length leaves no room beside the special tokens; the sequence is left longer "
          "(raise max_length, or use Truncation::longest_first for pairs)",
          name, max_length);
}

std::string batch_error(const char* what, std::size_t index, const std::string& message) {
  // Keep the original message after naming which text of the batch failed.
  std::string rest = message;
  const std::string prefix = "[WordPieceTokenizer]";
  if (rest.rfind(prefix, 0) == 0) rest = rest.substr(prefix.size());
  return prefix + " encode_batch: " + what + " " + std::to_string(index) + ":" + rest;
}

}  // namespace

Encoding WordPieceTokenizer::prepare_for_model(std::vector<std::int64_t> ids, std::vector<std::int64_t>* pair_ids,
                                               const EncodeOptions& options) const {
  const Resolved r = resolve(options, options_.model_max_length, "encode");
  const bool pair = pair_ids != nullptr;
  const auto special = options.add_special_tokens ? (pair ? 3 : 2) : 0;
  const auto total = static_cast<std::int64_t>(ids.size() + (pair ? pair_ids->size() : 0)) + special;
  if (options.truncation != Truncation::do_not_truncate && r.max_length && *r.max_length > 0 && total > *r.max_length) {
    if (!truncate_sequences(ids, pair_ids, total - *r.max_length, options.truncation)) {
      warn_untruncated(options.truncation, *r.max_length);
    }
  }

  Encoding e;
  const std::size_t n_first = ids.size() + (options.add_special_tokens ? 2 : 0);
  if (options.add_special_tokens) {
    e.input_ids.reserve(n_first + (pair ? pair_ids->size() + 1 : 0));
    e.input_ids.push_back(cls_id_);
    e.input_ids.insert(e.input_ids.end(), ids.begin(), ids.end());
    e.input_ids.push_back(sep_id_);
    if (pair) {
      e.input_ids.insert(e.input_ids.end(), pair_ids->begin(), pair_ids->end());
      e.input_ids.push_back(sep_id_);
    }
  } else {
    e.input_ids = std::move(ids);
    if (pair) e.input_ids.insert(e.input_ids.end(), pair_ids->begin(), pair_ids->end());
  }
  const std::size_t size = e.input_ids.size();
  if (options.return_token_type_ids) {
    // Without special tokens Hugging Face's slow tokenizers give the second sequence type 0 too.
    e.token_type_ids.assign(size, 0);
    if (options.add_special_tokens && pair)
      std::fill(e.token_type_ids.begin() + static_cast<std::ptrdiff_t>(n_first), e.token_type_ids.end(), 1);
  }
  if (options.return_special_tokens_mask) {
    e.special_tokens_mask.assign(size, 0);
    if (options.add_special_tokens) {
      e.special_tokens_mask.front() = 1;
      e.special_tokens_mask[n_first - 1] = 1;
      e.special_tokens_mask.back() = 1;
    }
  }
  if (options.return_attention_mask) e.attention_mask.assign(size, 1);

  if (options.padding != Padding::do_not_pad) {
    const std::int64_t target = options.padding == Padding::longest ? static_cast<std::int64_t>(size) : *r.max_length;
    pad_right(e, round_up_to_multiple(target, options.pad_to_multiple_of), pad_id_,
              {.attention_mask = options.return_attention_mask,
               .token_type_ids = options.return_token_type_ids,
               .special_tokens_mask = options.return_special_tokens_mask});
  }
  return e;
}

Encoding WordPieceTokenizer::encode(std::string_view text, EncodeOptions options) const {
  std::vector<std::int64_t> ids;
  ids.reserve(text.size() / 4 + 2);  // English averages about 4 bytes per token
  tokenize_ids(text, ids);
  return prepare_for_model(std::move(ids), nullptr, options);
}

Encoding WordPieceTokenizer::encode(std::string_view text, std::string_view text_pair, EncodeOptions options) const {
  std::vector<std::int64_t> ids, pair_ids;
  tokenize_ids(text, ids);
  tokenize_ids(text_pair, pair_ids);
  return prepare_for_model(std::move(ids), &pair_ids, options);
}

BatchEncoding WordPieceTokenizer::encode_batch(const std::vector<std::string>& texts, EncodeOptions options) const {
  resolve(options, options_.model_max_length, "encode_batch");
  std::vector<Encoding> encodings(texts.size());
  EncodeOptions unpadded = options;
  unpadded.padding = Padding::do_not_pad;  // the batch is padded together below
  parallel_for(static_cast<std::int64_t>(texts.size()), kBatchGrain, [&](std::int64_t begin, std::int64_t end) {
    for (auto i = static_cast<std::size_t>(begin); i < static_cast<std::size_t>(end); ++i) {
      try {
        encodings[i] = encode(texts[i], unpadded);
      } catch (const ValueError& e) {
        throw ValueError(batch_error("text", i, e.what()));
      }
    }
  });
  return pad(std::move(encodings), options);
}

BatchEncoding WordPieceTokenizer::encode_batch(const std::vector<std::string>& texts,
                                               const std::vector<std::string>& text_pairs,
                                               EncodeOptions options) const {
  if (texts.size() != text_pairs.size()) {
    throw ValueError("[WordPieceTokenizer] encode_batch: " + std::to_string(texts.size()) + " texts but " +
                     std::to_string(text_pairs.size()) + " text pairs; pass one pair per text");
  }
  resolve(options, options_.model_max_length, "encode_batch");
  std::vector<Encoding> encodings(texts.size());
  EncodeOptions unpadded = options;
  unpadded.padding = Padding::do_not_pad;
  parallel_for(static_cast<std::int64_t>(texts.size()), kBatchGrain, [&](std::int64_t begin, std::int64_t end) {
    for (auto i = static_cast<std::size_t>(begin); i < static_cast<std::size_t>(end); ++i) {
      try {
        encodings[i] = encode(texts[i], text_pairs[i], unpadded);
      } catch (const ValueError& e) {
        throw ValueError(batch_error("pair", i, e.what()));
      }
    }
  });
  return pad(std::move(encodings), options);
}

BatchEncoding WordPieceTokenizer::pad(std::vector<Encoding> encodings, EncodeOptions options) const {
  options.truncation = Truncation::do_not_truncate;  // pad reads only the padding fields
  const Resolved r = resolve(options, options_.model_max_length, "pad");
  PaddedFields fields{.attention_mask = options.return_attention_mask};
  std::int64_t longest = 0;
  for (std::size_t i = 0; i < encodings.size(); ++i) {
    const Encoding& e = encodings[i];
    for (const auto* field : {&e.token_type_ids, &e.attention_mask, &e.special_tokens_mask}) {
      if (!field->empty() && field->size() != e.input_ids.size()) {
        throw ValueError("[WordPieceTokenizer] pad: encoding " + std::to_string(i) + " has " +
                         std::to_string(e.input_ids.size()) + " input_ids but a field of " +
                         std::to_string(field->size()) + " values; every field needs one value per token");
      }
    }
    fields.token_type_ids = fields.token_type_ids || !e.token_type_ids.empty();
    fields.special_tokens_mask = fields.special_tokens_mask || !e.special_tokens_mask.empty();
    fields.attention_mask = fields.attention_mask || !e.attention_mask.empty();
    longest = std::max(longest, e.size());
  }
  std::optional<std::int64_t> target;
  if (options.padding == Padding::longest) target = longest;
  if (options.padding == Padding::max_length) target = r.max_length;
  for (Encoding& e : encodings) {
    if (options.return_attention_mask && e.attention_mask.empty()) e.attention_mask.assign(e.input_ids.size(), 1);
    if (target) pad_right(e, round_up_to_multiple(*target, options.pad_to_multiple_of), pad_id_, fields);
  }
  return BatchEncoding{std::move(encodings)};
}

std::function<data::Element(data::Element)> WordPieceTokenizer::map_fn(EncodeOptions options,
                                                                       std::string text_key) const {
  resolve(options, options_.model_max_length, "map_fn");
  auto tokenizer = std::make_shared<const WordPieceTokenizer>(*this);
  return [tokenizer, options, text_key = std::move(text_key)](data::Element element) {
    const data::Strings& strings = element.strings(text_key);
    if (strings.shape().rank() != 0) {
      throw ShapeError("[WordPieceTokenizer] map_fn: '" + text_key + "' is string" + strings.shape().to_string() +
                       "; map_fn encodes one string per element, so map before batching");
    }
    Encoding encoding = tokenizer->encode(strings.scalar(), options);
    element.erase(text_key);
    data::Element fields = encoding.to_element();
    for (const auto& [name, value] : fields.values()) element.set(name, value);
    return element;
  };
}

}  // namespace kestrel::text
