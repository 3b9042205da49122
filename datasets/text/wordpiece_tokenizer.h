// WordPieceTokenizer: BERT's tokenizer, matching Hugging Face's BertTokenizer token for token.
//
//   auto tok = text::WordPieceTokenizer::from_vocab_file("vocab.txt");     // or from_tokenizer_json
//   tok.tokenize("Héllo, wörld!");              // {"hello", ",", "world", "!"}
//   text::Encoding e = tok.encode("a question", "its context",
//                                 {.truncation = text::Truncation::longest_first, .max_length = 128});
//   text::BatchEncoding b = tok.encode_batch(lines, {.padding = text::Padding::longest,
//                                                    .pad_to_multiple_of = 32});   // thread pool
//   data::Element batch = b.to_element();       // input_ids, token_type_ids, attention_mask: int64 [n, L]
//
// Text goes through BERT normalization (control characters removed, whitespace cleaned, CJK
// characters split, lower-casing and accent stripping), a split on whitespace and punctuation, then
// greedy longest-match-first WordPiece with "##" continuations; a word longer than
// max_input_chars_per_word, or one that cannot be split, becomes [UNK].
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "datasets/text/encoding.h"
#include "framework/data/element.h"

namespace kestrel::text {

/// Hugging Face's padding strategies.
enum class Padding { do_not_pad, longest, max_length };
/// Hugging Face's truncation strategies.
enum class Truncation { do_not_truncate, longest_first, only_first, only_second };

/// What to do with bytes that are not valid UTF-8.
enum class InvalidUtf8 {
  error,    ///< throw ValueError naming the byte offset (the default)
  replace,  ///< replace each invalid sequence with U+FFFD, as Python's errors="replace"
};

/// BertTokenizer's constructor arguments, with its defaults.
struct TokenizerOptions {
  bool do_lower_case = true;
  /// Unset: strip accents exactly when lower-casing (BERT's rule).
  std::optional<bool> strip_accents;
  bool tokenize_chinese_chars = true;
  std::string unk_token = "[UNK]";
  std::string sep_token = "[SEP]";
  std::string pad_token = "[PAD]";
  std::string cls_token = "[CLS]";
  std::string mask_token = "[MASK]";
  std::int64_t max_input_chars_per_word = 100;
  /// Used for truncation and Padding::max_length when EncodeOptions gives no max_length.
  std::int64_t model_max_length = 512;
  InvalidUtf8 invalid_utf8 = InvalidUtf8::error;
};

/// The arguments of BertTokenizer.__call__ (and of pad), with its defaults.
struct EncodeOptions {
  bool add_special_tokens = true;
  Padding padding = Padding::do_not_pad;
  Truncation truncation = Truncation::do_not_truncate;
  /// Unset: model_max_length (for truncation and Padding::max_length).
  std::optional<std::int64_t> max_length;
  /// Round the padded length up to a multiple of this (0: no rounding).
  std::int64_t pad_to_multiple_of = 0;
  bool return_token_type_ids = true;
  bool return_attention_mask = true;
  bool return_special_tokens_mask = false;
};

/// Several encodings, padded together when EncodeOptions asked for padding.
struct BatchEncoding {
  std::vector<Encoding> encodings;
  /// int64 [n, L] tensors; throws ValueError when lengths differ (the message names Padding::longest).
  data::Element to_element() const;
};

class WordPieceTokenizer {
 public:
  /// One token per line; the id is the line number. Throws IOError naming the file.
  static WordPieceTokenizer from_vocab_file(const std::string& path, TokenizerOptions options = {});
  /// A Hugging Face tokenizer.json with a WordPiece model and a BertNormalizer; its settings
  /// (lowercase, strip_accents, handle_chinese_chars, unk_token, continuing_subword_prefix,
  /// max_input_chars_per_word) override the defaults.
  static WordPieceTokenizer from_tokenizer_json(const std::string& path);
  /// Tokens in id order; the special tokens of `options` must be in it.
  explicit WordPieceTokenizer(std::vector<std::string> vocab, TokenizerOptions options = {});

  /// Normalized, split and WordPiece'd tokens, without special tokens.
  std::vector<std::string> tokenize(std::string_view text) const;
  Encoding encode(std::string_view text, EncodeOptions options = {}) const;
  /// A sentence pair: [CLS] a [SEP] b [SEP], token_type_ids 0 then 1.
  Encoding encode(std::string_view text, std::string_view text_pair, EncodeOptions options = {}) const;
  /// Encodes on the thread pool; the result is in input order and independent of the thread count.
  BatchEncoding encode_batch(const std::vector<std::string>& texts, EncodeOptions options = {}) const;
  BatchEncoding encode_batch(const std::vector<std::string>& texts, const std::vector<std::string>& text_pairs,
                             EncodeOptions options = {}) const;
  /// Pads encoded sequences together (Hugging Face's tokenizer.pad): only padding, max_length,
  /// pad_to_multiple_of and return_attention_mask are read.
  BatchEncoding pad(std::vector<Encoding> encodings, EncodeOptions options = {}) const;

  /// A map() function for a Dataset: reads the string under `text_key`, replaces it with the
  /// encoding's fields (int64 [L] tensors).
  std::function<data::Element(data::Element)> map_fn(EncodeOptions options = {},
                                                     std::string text_key = "text") const;

  std::string decode(const std::vector<std::int64_t>& ids, bool skip_special_tokens = false) const;
  std::vector<std::string> convert_ids_to_tokens(const std::vector<std::int64_t>& ids) const;
  /// The id of a token, or unk_token_id() when absent.
  std::int64_t token_to_id(std::string_view token) const;
  const std::string& id_to_token(std::int64_t id) const;

  std::int64_t vocab_size() const { return static_cast<std::int64_t>(vocab_.size()); }
  const std::vector<std::string>& vocab() const { return vocab_; }
  const TokenizerOptions& options() const { return options_; }
  std::int64_t pad_token_id() const { return pad_id_; }
  std::int64_t unk_token_id() const { return unk_id_; }
  std::int64_t cls_token_id() const { return cls_id_; }
  std::int64_t sep_token_id() const { return sep_id_; }
  std::int64_t mask_token_id() const { return mask_id_; }
  /// [UNK], [SEP], [PAD], [CLS], [MASK] ids.
  std::vector<std::int64_t> all_special_ids() const;
  bool is_special_id(std::int64_t id) const;

  /// Writes vocab.txt (one token per line).
  void save_vocabulary(const std::string& path) const;

 private:
  std::vector<std::string> vocab_;
  std::unordered_map<std::string, std::int64_t> ids_;
  TokenizerOptions options_;
  std::int64_t pad_id_ = 0, unk_id_ = 0, cls_id_ = 0, sep_id_ = 0, mask_id_ = 0;
  std::string continuing_prefix_ = "##";
};

}  // namespace kestrel::text
