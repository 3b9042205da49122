// WordPieceTokenizer::decode: ids back to text the way Hugging Face's BertTokenizer does it.
#include <string>
#include <string_view>
#include <utility>

#include "datasets/text/wordpiece_tokenizer.h"

namespace kestrel::text {
namespace {

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  std::string out;
  std::size_t start = 0;
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, start)) {
    out.append(text, start, at - start);
    out.append(to);
    start = at + from.size();
  }
  if (start == 0) return;
  out.append(text, start, std::string::npos);
  text = std::move(out);
}

// Hugging Face's clean_up_tokenization: the spaces that joining tokens put before punctuation
// and English contractions go away. Each replacement runs over the whole text, in this order.
void clean_up_tokenization(std::string& text) {
  static constexpr std::pair<std::string_view, std::string_view> kReplacements[] = {
      {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
  };
  for (const auto& [from, to] : kReplacements) replace_all(text, from, to);
}

void strip_spaces(std::string& text) {
  // Python's str.strip() on ASCII whitespace is enough: tokens never begin or end with other spaces.
  const char* spaces = " \t\n\r\f\v";
  const std::size_t first = text.find_first_not_of(spaces);
  if (first == std::string::npos) {
    text.clear();
    return;
  }
  text = text.substr(first, text.find_last_not_of(spaces) - first + 1);
}

}  // namespace

std::string WordPieceTokenizer::decode(const std::vector<std::int64_t>& ids, bool skip_special_tokens) const {
  // Tokens joined by spaces, continuations glued to what precedes them (" ##" removed), then
  // the spaces before punctuation cleaned up.
  std::string text;
  bool first = true;
  for (std::int64_t id : ids) {
    const std::string& token = id_to_token(id);
    // An unknown id reads as the unknown token, so it is skipped with the special tokens.
    if (skip_special_tokens && (is_special_id(id) || is_special_id(token_to_id(token)))) continue;
    if (!first) text.push_back(' ');
    text += token;
    first = false;
  }
  if (!continuing_prefix_.empty()) replace_all(text, " " + continuing_prefix_, "");
  strip_spaces(text);
  clean_up_tokenization(text);
  return text;
}

}  // namespace kestrel::text
