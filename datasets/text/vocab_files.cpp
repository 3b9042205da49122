#include "datasets/text/vocab_files.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "datasets/text/utf8.h"
#include "framework/core/error.h"
#include "framework/io/read_file.h"

namespace kestrel::text {
namespace {

using Json = nlohmann::json;

[[noreturn]] void invalid_json(const std::string& path, const std::string& why) {
  throw ValueError("[WordPieceTokenizer] tokenizer.json '" + path + "': " + why);
}

// A whole number in [0, max]. nlohmann's get<std::int64_t> would convert a float such as 4.9e19
// or 1e300 with undefined behaviour, so only integers are accepted.
std::int64_t whole_number(const Json& value, std::int64_t max, const std::string& path, const std::string& what) {
  if (value.is_number_unsigned()) {
    if (value.get<std::uint64_t>() <= static_cast<std::uint64_t>(max)) return value.get<std::int64_t>();
  } else if (value.is_number_integer()) {
    const auto v = value.get<std::int64_t>();
    if (v >= 0 && v <= max) return v;
  } else {
    invalid_json(path, what + " is " + value.dump() + "; it must be a whole number");
  }
  invalid_json(path, what + " is " + value.dump() + "; it must lie in [0, " + std::to_string(max) + "]");
}

// An optional whole-number setting of `object`, kept at `fallback` when absent.
std::int64_t whole_number_or(const Json& object, const char* key, std::int64_t fallback, const std::string& path,
                             const std::string& where) {
  if (!object.contains(key)) return fallback;
  return whole_number(object.at(key), std::numeric_limits<std::int64_t>::max(), path, where + "." + key);
}

void read_normalizer(const Json& normalizer, const std::string& path, TokenizerOptions& options) {
  if (normalizer.is_null()) {
    // No normalizer: the text reaches the pre-tokenizer as it is.
    options.clean_text = false;
    options.tokenize_chinese_chars = false;
    options.do_lower_case = false;
    options.strip_accents = false;
    return;
  }
  const std::string type = normalizer.value("type", "");
  if (type != "BertNormalizer") {
    invalid_json(path, "the normalizer is '" + type +
                           "'; Kestrel's WordPieceTokenizer implements BertNormalizer only (BERT's normalization)");
  }
  options.clean_text = normalizer.value("clean_text", true);
  options.tokenize_chinese_chars = normalizer.value("handle_chinese_chars", true);
  options.do_lower_case = normalizer.value("lowercase", true);
  const Json& strip = normalizer.contains("strip_accents") ? normalizer.at("strip_accents") : Json();
  if (strip.is_null()) {
    options.strip_accents.reset();
  } else {
    options.strip_accents = strip.get<bool>();
  }
}

void read_pre_tokenizer(const Json& pre_tokenizer, const std::string& path) {
  const std::string type = pre_tokenizer.is_object() ? pre_tokenizer.value("type", "") : "null";
  if (type != "BertPreTokenizer") {
    invalid_json(path, "the pre_tokenizer is '" + type +
                           "'; Kestrel's WordPieceTokenizer implements BertPreTokenizer only (whitespace and "
                           "punctuation split)");
  }
}

// [CLS] and [SEP] come from the post-processor that adds them, in either of its two forms.
void read_post_processor(const Json& post, TokenizerOptions& options) {
  if (!post.is_object()) return;
  const std::string type = post.value("type", "");
  if (type == "BertProcessing") {
    if (post.contains("cls")) options.cls_token = post.at("cls").at(0).get<std::string>();
    if (post.contains("sep")) options.sep_token = post.at("sep").at(0).get<std::string>();
  } else if (type == "TemplateProcessing" && post.contains("single")) {
    bool seen_sequence = false;
    for (const Json& piece : post.at("single")) {
      if (piece.contains("Sequence")) {
        seen_sequence = true;
      } else if (piece.contains("SpecialToken")) {
        const std::string id = piece.at("SpecialToken").at("id").get<std::string>();
        (seen_sequence ? options.sep_token : options.cls_token) = id;
      }
    }
  }
}

// Special added tokens other than the five BERT names become additional special tokens, so the
// text never splits them either.
void read_added_special_tokens(const Json& root, TokenizerOptions& options) {
  if (!root.contains("added_tokens") || !root.at("added_tokens").is_array()) return;
  for (const Json& added : root.at("added_tokens")) {
    if (!added.value("special", false)) continue;
    const std::string content = added.at("content").get<std::string>();
    const bool named = content == options.unk_token || content == options.sep_token || content == options.pad_token ||
                       content == options.cls_token || content == options.mask_token;
    if (!named) options.additional_special_tokens.push_back(content);
  }
}

std::vector<std::string> read_vocab(const Json& root, const std::string& path) {
  const Json& vocab = root.at("model").at("vocab");
  if (!vocab.is_object()) invalid_json(path, "model.vocab is not a map from token to id");
  const bool has_added = root.contains("added_tokens") && root.at("added_tokens").is_array();
  // Ids run from 0 without gaps, so none can reach the number of entries that carry one: a larger
  // id is refused before it sizes the vocabulary ({"a": 100000000} in a 100-byte file).
  const std::size_t entries = vocab.size() + (has_added ? root.at("added_tokens").size() : 0);
  std::vector<std::string> tokens(vocab.size());
  std::vector<bool> seen(vocab.size());
  auto place = [&](const std::string& token, const Json& id_value, const char* where) {
    const std::string what = std::string(where) + " id of '" + token + "'";
    const std::int64_t id = whole_number(id_value, std::numeric_limits<std::int64_t>::max(), path, what);
    if (static_cast<std::uint64_t>(id) >= entries) {
      invalid_json(path, what + " is " + std::to_string(id) + ", but the file gives ids to " + std::to_string(entries) +
                             " tokens; ids must run from 0 without gaps");
    }
    const auto i = static_cast<std::size_t>(id);
    if (i >= tokens.size()) {
      tokens.resize(i + 1);
      seen.resize(i + 1);
    }
    if (seen[i] && tokens[i] != token) {
      invalid_json(path, std::string(where) + " gives id " + std::to_string(id) + " to both '" + tokens[i] + "' and '" +
                             token + "'");
    }
    tokens[i] = token;
    seen[i] = true;
  };
  for (const auto& [token, id] : vocab.items()) place(token, id, "model.vocab");
  if (has_added) {
    for (const Json& added : root.at("added_tokens")) {
      place(added.at("content").get<std::string>(), added.at("id"), "added_tokens");
    }
  }
  for (std::size_t i = 0; i < seen.size(); ++i) {
    if (!seen[i]) invalid_json(path, "no token has id " + std::to_string(i) + "; ids must run from 0 without gaps");
  }
  return tokens;
}

}  // namespace

std::vector<std::string> read_vocab_file(const std::string& path) {
  const std::string content = io::read_file(path, "[WordPieceTokenizer]", "vocab file");
  if (const std::size_t bad = utf8::find_invalid(content); bad != std::string::npos) {
    const auto line = 1 + std::count(content.begin(), content.begin() + static_cast<std::ptrdiff_t>(bad), '\n');
    throw IOError("[WordPieceTokenizer] vocab file '" + path + "': invalid UTF-8 at byte offset " +
                  std::to_string(bad) + " (line " + std::to_string(line) + "); save the file as UTF-8");
  }
  std::vector<std::string> tokens;
  std::size_t start = 0;
  std::size_t i = 0;
  while (i < content.size()) {
    const char c = content[i];
    if (c != '\n' && c != '\r') {
      ++i;
      continue;
    }
    tokens.push_back(content.substr(start, i - start));
    i += (c == '\r' && i + 1 < content.size() && content[i + 1] == '\n') ? 2 : 1;
    start = i;
  }
  if (start < content.size()) tokens.push_back(content.substr(start));
  return tokens;
}

void write_vocab_file(const std::string& path, const std::vector<std::string>& vocab) {
  for (std::size_t id = 0; id < vocab.size(); ++id) {
    if (vocab[id].find_first_of("\r\n") != std::string::npos) {
      throw ValueError("[WordPieceTokenizer] token " + std::to_string(id) +
                       " holds a line break, which vocab.txt cannot store; save a tokenizer without it");
    }
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw IOError("[WordPieceTokenizer] cannot write vocab file '" + path + "': " + std::strerror(errno));
  for (const std::string& token : vocab) out << token << '\n';
  out.flush();
  if (!out) throw IOError("[WordPieceTokenizer] cannot write vocab file '" + path + "': " + std::strerror(errno));
}

TokenizerJson read_tokenizer_json(const std::string& path) {
  const std::string content = io::read_file(path, "[WordPieceTokenizer]", "tokenizer.json");
  Json root;
  try {
    root = Json::parse(content);
  } catch (const Json::exception& e) {
    // parse_error, and out_of_range for a number past double's range such as 1e999.
    invalid_json(path, std::string("not valid JSON (") + e.what() + ")");
  }
  if (!root.is_object() || !root.contains("model") || !root.at("model").is_object()) {
    invalid_json(path, "no \"model\" object; is this a Hugging Face tokenizer.json?");
  }
  TokenizerJson result;
  try {
    const Json& model = root.at("model");
    const std::string type = model.value("type", "");
    if (type != "WordPiece") {
      invalid_json(path, "the model is '" + type + "'; Kestrel's WordPieceTokenizer reads WordPiece models only");
    }
    result.vocab = read_vocab(root, path);
    read_normalizer(root.contains("normalizer") ? root.at("normalizer") : Json(), path, result.options);
    read_pre_tokenizer(root.contains("pre_tokenizer") ? root.at("pre_tokenizer") : Json(), path);
    read_post_processor(root.contains("post_processor") ? root.at("post_processor") : Json(), result.options);
    result.options.unk_token = model.value("unk_token", result.options.unk_token);
    result.options.max_input_chars_per_word =
        whole_number_or(model, "max_input_chars_per_word", result.options.max_input_chars_per_word, path, "model");
    result.continuing_subword_prefix = model.value("continuing_subword_prefix", result.continuing_subword_prefix);
    if (root.contains("padding") && root.at("padding").is_object()) {
      result.options.pad_token = root.at("padding").value("pad_token", result.options.pad_token);
    }
    if (root.contains("truncation") && root.at("truncation").is_object()) {
      result.options.model_max_length =
          whole_number_or(root.at("truncation"), "max_length", result.options.model_max_length, path, "truncation");
    }
    read_added_special_tokens(root, result.options);  // after every special token name is known
  } catch (const Json::exception& e) {
    invalid_json(path, std::string("unexpected content (") + e.what() + ")");
  }
  return result;
}

}  // namespace kestrel::text
