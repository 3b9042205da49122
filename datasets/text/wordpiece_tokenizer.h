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
// max_input_chars_per_word, or one that cannot be split, becomes [UNK]. As in Hugging Face's slow
// BertTokenizer, a special token typed in the text ("[MASK]", exactly so) stays one token, and
// with lower-casing the text is lower-cased character by character around the special tokens,
// then NFC-normalized before the words are split. Truncation, padding and pad() follow Hugging
// Face's prepare_for_model and pad (right side only). A tokenizer is immutable: copies share
// their tables, and every method may be called from many threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/text/encoding.h"
#include "datasets/text/utf8.h"  // InvalidUtf8
#include "framework/data/element.h"

namespace kestrel::text {

/// Hugging Face's padding strategies.
enum class Padding { do_not_pad, longest, max_length };
/// Hugging Face's truncation strategies.
enum class Truncation { do_not_truncate, longest_first, only_first, only_second };

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
  /// Empty for a vocabulary without one (mask_token_id() is then -1).
  std::string mask_token = "[MASK]";
  std::int64_t max_input_chars_per_word = 100;
  /// Used for truncation and Padding::max_length when EncodeOptions gives no max_length.
  std::int64_t model_max_length = 512;
  InvalidUtf8 invalid_utf8 = InvalidUtf8::error;
  /// Remove control characters and turn whitespace into spaces (a BertNormalizer's clean_text).
  bool clean_text = true;
  /// More tokens that are never split, as the five above (Hugging Face's additional_special_tokens).
  std::vector<std::string> additional_special_tokens;
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
  /// A Hugging Face tokenizer.json with a WordPiece model, a BertNormalizer (or none) and a
  /// BertPreTokenizer; its settings (lowercase, strip_accents, handle_chinese_chars, clean_text,
  /// unk_token, continuing_subword_prefix, max_input_chars_per_word, the post-processor's [CLS] and
  /// [SEP], padding's pad_token, truncation's max_length) override the defaults. Throws IOError
  /// when it cannot be read, ValueError naming the file for anything else it cannot use.
  static WordPieceTokenizer from_tokenizer_json(const std::string& path);
  /// Tokens in id order; the special tokens of `options` must be in it.
  explicit WordPieceTokenizer(std::vector<std::string> vocab, TokenizerOptions options = {});

  /// Normalized, split and WordPiece'd tokens, without special tokens.
  std::vector<std::string> tokenize(std::string_view text) const;
  /// One sequence: [CLS] text [SEP], then truncation and padding as `options` ask.
  Encoding encode(std::string_view text, EncodeOptions options = {}) const;
  /// A sentence pair: [CLS] a [SEP] b [SEP], token_type_ids 0 then 1.
  Encoding encode(std::string_view text, std::string_view text_pair, EncodeOptions options = {}) const;
  /// Encodes on the thread pool; the result is in input order and independent of the thread count.
  BatchEncoding encode_batch(const std::vector<std::string>& texts, EncodeOptions options = {}) const;
  /// Sentence pairs (texts[i], text_pairs[i]); throws ValueError when the counts differ.
  BatchEncoding encode_batch(const std::vector<std::string>& texts, const std::vector<std::string>& text_pairs,
                             EncodeOptions options = {}) const;
  /// Pads encoded sequences together (Hugging Face's tokenizer.pad): only padding, max_length,
  /// pad_to_multiple_of and return_attention_mask are read.
  BatchEncoding pad(std::vector<Encoding> encodings, EncodeOptions options = {}) const;

  /// A map() function for a Dataset: reads the string under `text_key`, replaces it with the
  /// encoding's fields (int64 [L] tensors). The function holds its own copy of the tokenizer.
  std::function<data::Element(data::Element)> map_fn(EncodeOptions options = {}, std::string text_key = "text") const;

  /// Tokens joined by spaces, "##" continuations glued on, spaces before punctuation and
  /// contractions removed (Hugging Face's clean_up_tokenization).
  std::string decode(const std::vector<std::int64_t>& ids, bool skip_special_tokens = false) const;
  /// The token of each id (see id_to_token).
  std::vector<std::string> convert_ids_to_tokens(const std::vector<std::int64_t>& ids) const;
  /// The id of a token, or unk_token_id() when absent.
  std::int64_t token_to_id(std::string_view token) const;
  /// The token with this id; an id outside the vocabulary reads as the unknown token, as in Hugging Face.
  const std::string& id_to_token(std::int64_t id) const;

  /// The number of ids (lines of vocab.txt), which sizes an embedding table.
  std::int64_t vocab_size() const { return static_cast<std::int64_t>(vocab_.size()); }
  const std::vector<std::string>& vocab() const { return vocab_; }
  const TokenizerOptions& options() const { return options_; }
  std::int64_t pad_token_id() const { return pad_id_; }
  std::int64_t unk_token_id() const { return unk_id_; }
  std::int64_t cls_token_id() const { return cls_id_; }
  std::int64_t sep_token_id() const { return sep_id_; }
  std::int64_t mask_token_id() const { return mask_id_; }
  /// [UNK], [SEP], [PAD], [CLS], [MASK], then the additional special tokens' ids, without repeats
  /// (and without a mask id of -1).
  std::vector<std::int64_t> all_special_ids() const;
  /// Whether id is one of all_special_ids().
  bool is_special_id(std::int64_t id) const;

  /// Writes vocab.txt (one token per line).
  void save_vocabulary(const std::string& path) const;

 private:
  struct Pipeline;  // normalizer, special-token splitter and WordPiece model, shared between copies

  WordPieceTokenizer(std::vector<std::string> vocab, TokenizerOptions options, std::string continuing_prefix);

  /// The ids of `text`, without special tokens, appended to `out`.
  void tokenize_ids(std::string_view text, std::vector<std::int64_t>& out) const;
  /// Truncation, special tokens and padding for one sequence or pair of id lists.
  Encoding prepare_for_model(std::vector<std::int64_t> ids, std::vector<std::int64_t>* pair_ids,
                             const EncodeOptions& options) const;

  std::vector<std::string> vocab_;
  TokenizerOptions options_;
  std::int64_t pad_id_ = 0, unk_id_ = 0, cls_id_ = 0, sep_id_ = 0, mask_id_ = 0;
  std::string continuing_prefix_ = "##";
  std::shared_ptr<const Pipeline> pipeline_;
};

}  // namespace kestrel::text
