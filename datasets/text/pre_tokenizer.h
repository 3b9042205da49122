// BERT's word splitting: on whitespace, then around every punctuation character.
//
//   std::vector<std::u32string_view> words;
//   text::split_on_whitespace(U"  hello,  world ", words);   // {U"hello,", U"world"}
//   std::vector<std::u32string_view> pieces;
//   text::split_on_punctuation(U"hello,", pieces);           // {U"hello", U","}
//   text::split_on_punctuation(U"\u00BFqu\u00E9?", pieces);  // appends {U"\u00BF", U"qu\u00E9", U"?"}
//
// Both append views into their input, so the caller keeps the text alive while using them.
#pragma once

#include <string_view>
#include <vector>

namespace kestrel::text {

/// Appends the maximal runs of non-space characters (spaces as Python's str.split() knows them).
void split_on_whitespace(std::u32string_view text, std::vector<std::u32string_view>& out);
/// Appends the pieces of `word`: each punctuation character alone, the runs between them whole.
void split_on_punctuation(std::u32string_view word, std::vector<std::u32string_view>& out);

}  // namespace kestrel::text
