// Fortunes: text corpora from Debian's fortune-cookie packages (installed by .ci/setup).
//
//   auto data = datasets::fortunes::load_language_id({.max_per_language = 2000});
//   data.languages;                      // {"en", "de", "es", ..., "zh"}: label i is languages[i]
//   data.train.texts[0];                 // one fortune, cleaned to a single line of UTF-8
//   data.train.labels;                   // int64 [n]
//   auto train = data.train.to_dataset() // {"text": string[], "labels": int64[]} per element
//                    .shuffle(10000, 42)
//                    .map(tokenizer.map_fn({.truncation = text::Truncation::longest_first, .max_length = 64}))
//                    .collate(32, text::DataCollatorWithPadding(tokenizer));
//
//   std::vector<std::string> corpus = datasets::fortunes::load_english_corpus();  // for language models
//
// Language identification covers 12 languages: English (fortunes, fortunes-min), German, Spanish,
// Italian, Russian, Polish, Czech, Brazilian Portuguese (fortunes-br, labelled "pt"), Esperanto,
// Bulgarian, Irish and Chinese. Each fortune is cleaned (terminal colour codes removed, attribution
// lines "-- Author" dropped, whitespace collapsed), kept when its length is within bounds and most of
// its letters are in its language's script, and deduplicated (a text found under two languages is
// dropped). The split is a pure function of the text, so a fortune is always in the same split,
// whatever the seed, the cap or the languages chosen.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/data/dataset.h"

namespace kestrel::datasets::fortunes {

inline constexpr const char* kDefaultDirectory = "/usr/share/games/fortunes";
/// ISO 639-1 codes in label order.
inline constexpr std::array<const char*, 12> kLanguages = {"en", "de", "es", "it", "ru", "pl",
                                                           "cs", "pt", "eo", "bg", "ga", "zh"};

struct Options {
  /// Where the packages put their files.
  std::string directory = kDefaultDirectory;
  /// At most this many texts per language before the split (0: no cap), a seeded sample.
  std::int64_t max_per_language = 2000;
  /// Bounds on a cleaned text's length, in Unicode code points.
  std::int64_t min_chars = 10;
  std::int64_t max_chars = 400;
  /// Picks the capped sample and the order of each split; the split itself does not depend on it.
  std::uint64_t seed = 0;
  double validation_fraction = 0.1;
  double test_fraction = 0.1;
  /// A subset of kLanguages, in the order labels should follow (empty: all 12). Only their
  /// packages need to be installed.
  std::vector<std::string> languages;
  /// Keep "-- Author" lines (dropped by default: they are names, not the language).
  bool keep_attributions = false;
};

struct Split {
  std::vector<std::string> texts;
  Tensor labels;  ///< int64 [n], indices into LanguageId::languages

  std::int64_t size() const { return static_cast<std::int64_t>(texts.size()); }
  /// One element per text: {"text": string scalar, "labels": int64 scalar}.
  data::Dataset to_dataset() const;
};

struct LanguageId {
  Split train;
  Split validation;
  Split test;
  std::vector<std::string> languages;
};

/// Reads, cleans, deduplicates, caps and splits the fortunes of options.languages; a missing
/// package raises IOError naming it and the command that installs it.
LanguageId load_language_id(const Options& options = {});

/// Every English fortune (fortunes and fortunes-min), cleaned, length-filtered and deduplicated,
/// in file order (options.max_per_language, seed, fractions and languages are not used).
std::vector<std::string> load_english_corpus(const Options& options = {});

}  // namespace kestrel::datasets::fortunes
