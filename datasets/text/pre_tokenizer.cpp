#include "datasets/text/pre_tokenizer.h"

#include "datasets/text/char_classes.h"

namespace kestrel::text {

void split_on_whitespace(std::u32string_view text, std::vector<std::u32string_view>& out) {
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    while (i < n && is_split_space(text[i])) ++i;
    const std::size_t start = i;
    while (i < n && !is_split_space(text[i])) ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
}

void split_on_punctuation(std::u32string_view word, std::vector<std::u32string_view>& out) {
  std::size_t start = 0;
  for (std::size_t i = 0; i < word.size(); ++i) {
    if (!is_bert_punctuation(word[i])) continue;
    if (i > start) out.push_back(word.substr(start, i - start));
    out.push_back(word.substr(i, 1));
    start = i + 1;
  }
  if (start < word.size()) out.push_back(word.substr(start));
}

}  // namespace kestrel::text
