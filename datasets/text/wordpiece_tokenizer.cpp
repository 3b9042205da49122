#include "datasets/text/wordpiece_tokenizer.h"

#include <algorithm>
#include <utility>

#include "datasets/text/basic_tokenizer.h"
#include "datasets/text/special_tokens.h"
#include "datasets/text/vocab_files.h"
#include "datasets/text/wordpiece.h"
#include "framework/core/error.h"

namespace kestrel::text {

// Everything tokenizing needs besides the vocabulary, built once and shared by copies of the
// tokenizer (collators and map functions hold copies).
struct WordPieceTokenizer::Pipeline {
  BasicTokenizer basic;
  SpecialTokens specials;
  std::vector<std::int64_t> special_ids;  // the id of each of specials.tokens()
  WordPiece wordpiece;
  bool lowercase = true;
};

namespace {

constexpr const char* kTokenizerPrefix = "[WordPieceTokenizer]";

std::int64_t require_token(const std::vector<std::string>& vocab, const std::string& token, const char* option) {
  // The last occurrence wins, as when Hugging Face builds its token -> id map.
  for (std::size_t i = vocab.size(); i-- > 0;) {
    if (vocab[i] == token) return static_cast<std::int64_t>(i);
  }
  throw ValueError(std::string(kTokenizerPrefix) + " the special token '" + token + "' (TokenizerOptions::" + option +
                   ") is not in the vocabulary of " + std::to_string(vocab.size()) +
                   " tokens: add it to the vocabulary, or name the vocabulary's own token in TokenizerOptions");
}

struct TokenizerScratch {
  std::u32string decoded;
  std::u32string lowered;
  std::vector<Segment> segments;
  Words words;
};

TokenizerScratch& tokenizer_scratch() {
  thread_local TokenizerScratch s;
  return s;
}

}  // namespace

WordPieceTokenizer::WordPieceTokenizer(std::vector<std::string> vocab, TokenizerOptions options)
    : WordPieceTokenizer(std::move(vocab), std::move(options), "##") {}

WordPieceTokenizer::WordPieceTokenizer(std::vector<std::string> vocab, TokenizerOptions options,
                                       std::string continuing_prefix)
    : vocab_(std::move(vocab)), options_(std::move(options)), continuing_prefix_(std::move(continuing_prefix)) {
  if (options_.max_input_chars_per_word < 1) {
    throw ValueError(std::string(kTokenizerPrefix) + " max_input_chars_per_word is " +
                     std::to_string(options_.max_input_chars_per_word) + "; it must be at least 1");
  }
  if (options_.model_max_length < 1) {
    throw ValueError(std::string(kTokenizerPrefix) + " model_max_length is " +
                     std::to_string(options_.model_max_length) + "; it must be at least 1");
  }
  unk_id_ = require_token(vocab_, options_.unk_token, "unk_token");
  sep_id_ = require_token(vocab_, options_.sep_token, "sep_token");
  pad_id_ = require_token(vocab_, options_.pad_token, "pad_token");
  cls_id_ = require_token(vocab_, options_.cls_token, "cls_token");
  // A vocabulary for causal language modelling may have no mask token at all.
  mask_id_ = options_.mask_token.empty() ? -1 : require_token(vocab_, options_.mask_token, "mask_token");

  std::vector<std::u32string> specials;
  std::vector<std::int64_t> special_ids;
  const std::pair<const std::string*, std::int64_t> named[] = {{&options_.unk_token, unk_id_},
                                                               {&options_.sep_token, sep_id_},
                                                               {&options_.pad_token, pad_id_},
                                                               {&options_.cls_token, cls_id_},
                                                               {&options_.mask_token, mask_id_}};
  auto add_special = [&](const std::string& token, std::int64_t id) {
    if (id < 0) return;
    std::u32string decoded = utf8::decode(token, InvalidUtf8::error, std::string(kTokenizerPrefix) + " special token:");
    if (std::find(specials.begin(), specials.end(), decoded) != specials.end()) return;
    specials.push_back(std::move(decoded));
    special_ids.push_back(id);
  };
  for (const auto& [token, id] : named) add_special(*token, id);
  for (const std::string& token : options_.additional_special_tokens) {
    add_special(token, require_token(vocab_, token, "additional_special_tokens"));
  }
  // BERT's rule: an unset strip_accents follows do_lower_case. Lower-casing itself happens before
  // the basic tokenizer (outside the special tokens), so the basic tokenizer does not repeat it.
  const bool strip = options_.strip_accents.value_or(options_.do_lower_case);
  NormalizerOptions normalizer{.clean_text = options_.clean_text,
                               .tokenize_chinese_chars = options_.tokenize_chinese_chars,
                               .lowercase = false,
                               .strip_accents = strip};
  pipeline_ = std::make_shared<const Pipeline>(Pipeline{
      .basic = BasicTokenizer(normalizer, specials),
      .specials = SpecialTokens(specials),
      .special_ids = std::move(special_ids),
      .wordpiece = WordPiece(vocab_, {.unk_id = unk_id_,
                                      .continuing_subword_prefix = continuing_prefix_,
                                      .max_input_chars_per_word = options_.max_input_chars_per_word}),
      .lowercase = options_.do_lower_case,
  });
}

WordPieceTokenizer WordPieceTokenizer::from_vocab_file(const std::string& path, TokenizerOptions options) {
  return WordPieceTokenizer(read_vocab_file(path), std::move(options));
}

WordPieceTokenizer WordPieceTokenizer::from_tokenizer_json(const std::string& path) {
  TokenizerJson json = read_tokenizer_json(path);
  return WordPieceTokenizer(std::move(json.vocab), std::move(json.options), std::move(json.continuing_subword_prefix));
}

void WordPieceTokenizer::tokenize_ids(std::string_view text, std::vector<std::int64_t>& out) const {
  const Pipeline& p = *pipeline_;
  TokenizerScratch& s = tokenizer_scratch();
  utf8::decode_into(text, options_.invalid_utf8, kTokenizerPrefix, s.decoded);
  std::u32string_view view = s.decoded;
  // As Hugging Face's slow tokenizers: lower-case around the special tokens first, then find them,
  // so "[CLS]" typed in the text stays one token while "[cls]" is ordinary text.
  if (p.lowercase) {
    p.specials.lowercase_outside(view, s.lowered);
    view = s.lowered;
  }
  s.segments.clear();
  p.specials.split(view, s.segments);
  for (const Segment& segment : s.segments) {
    if (segment.special >= 0) {
      out.push_back(p.special_ids[static_cast<std::size_t>(segment.special)]);
      continue;
    }
    s.words.clear();
    p.basic.tokenize(segment.text, s.words);
    for (std::size_t i = 0; i < s.words.size(); ++i) p.wordpiece.tokenize(s.words[i], out);
  }
}

std::vector<std::string> WordPieceTokenizer::tokenize(std::string_view text) const {
  std::vector<std::int64_t> ids;
  tokenize_ids(text, ids);
  return convert_ids_to_tokens(ids);
}

std::int64_t WordPieceTokenizer::token_to_id(std::string_view token) const {
  return pipeline_->wordpiece.find(token).value_or(unk_id_);
}

const std::string& WordPieceTokenizer::id_to_token(std::int64_t id) const {
  // Hugging Face answers an unknown id with the unknown token rather than failing.
  if (id < 0 || id >= vocab_size()) return vocab_[static_cast<std::size_t>(unk_id_)];
  return vocab_[static_cast<std::size_t>(id)];
}

std::vector<std::string> WordPieceTokenizer::convert_ids_to_tokens(const std::vector<std::int64_t>& ids) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (std::int64_t id : ids) tokens.push_back(id_to_token(id));
  return tokens;
}

std::vector<std::int64_t> WordPieceTokenizer::all_special_ids() const { return pipeline_->special_ids; }

bool WordPieceTokenizer::is_special_id(std::int64_t id) const {
  const std::vector<std::int64_t>& ids = pipeline_->special_ids;
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

void WordPieceTokenizer::save_vocabulary(const std::string& path) const { write_vocab_file(path, vocab_); }

}  // namespace kestrel::text
