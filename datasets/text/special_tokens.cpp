#include "datasets/text/special_tokens.h"

#include <utility>

#include "datasets/text/bert_normalizer.h"

namespace kestrel::text {

SpecialTokens::SpecialTokens(std::vector<std::u32string> tokens) {
  for (std::u32string& token : tokens) {
    if (token.empty()) continue;  // an empty token would match everywhere
    const char32_t c = token[0];
    if (c < 128) {
      ascii_first_[c / 64] |= std::uint64_t{1} << (c % 64);
    } else if (other_first_.find(c) == std::u32string::npos) {
      other_first_.push_back(c);
    }
    tokens_.push_back(std::move(token));
  }
}

int SpecialTokens::match_at(std::u32string_view text, std::size_t i) const {
  int best = -1;
  std::size_t best_size = 0;
  for (std::size_t k = 0; k < tokens_.size(); ++k) {
    const std::u32string& token = tokens_[k];
    if (token[0] != text[i] || token.size() <= best_size || i + token.size() > text.size()) continue;
    if (text.compare(i, token.size(), token) == 0) {
      best = static_cast<int>(k);
      best_size = token.size();
    }
  }
  return best;
}

void SpecialTokens::split(std::u32string_view text, std::vector<Segment>& out) const {
  if (tokens_.empty()) {
    if (!text.empty()) out.push_back({text, -1});
    return;
  }
  std::size_t start = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const int k = may_start(text[i]) ? match_at(text, i) : -1;
    if (k < 0) {
      ++i;
      continue;
    }
    if (i > start) out.push_back({text.substr(start, i - start), -1});
    const std::size_t size = tokens_[static_cast<std::size_t>(k)].size();
    out.push_back({text.substr(i, size), k});
    i += size;
    start = i;
  }
  if (start < text.size()) out.push_back({text.substr(start), -1});
}

void SpecialTokens::lowercase_outside(std::u32string_view text, std::u32string& out) const {
  if (tokens_.empty()) {
    lowercase_into(text, out);
    return;
  }
  out.clear();
  out.reserve(text.size());
  std::u32string lowered;
  std::size_t start = 0;
  std::size_t i = 0;
  auto flush = [&](std::size_t end) {
    if (end <= start) return;
    lowercase_into(text.substr(start, end - start), lowered);
    out += lowered;
  };
  while (i < text.size()) {
    const int k = may_start(text[i]) ? match_at(text, i) : -1;
    if (k < 0) {
      ++i;
      continue;
    }
    flush(i);
    const std::size_t size = tokens_[static_cast<std::size_t>(k)].size();
    out.append(text.substr(i, size));
    i += size;
    start = i;
  }
  flush(text.size());
}

}  // namespace kestrel::text
