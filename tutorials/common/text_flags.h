// The flags of the tutorials that train on text (03, 05, 07): the batch, the tokens kept per text,
// the padding multiple, the texts per language, and AdamW's peak learning rate.
//
//   tutorials::TextFlags text{.batch_size = 64};
//   tutorials::add_text_flags(cli, text, "texts per step over all cores (the global batch)");
//   if (auto exit_code = cli.parse(argc, argv)) return *exit_code;
//   const auto& [batch_size, max_length, pad_to_multiple_of, max_per_language, learning_rate] = text;
#pragma once

#include <cstdint>
#include <string>

#include "programs/command_line.h"

namespace kestrel::tutorials {

struct TextFlags {
  std::int64_t batch_size = 32;
  std::int64_t max_length = 64;
  std::int64_t pad_to_multiple_of = 32;
  /// Texts per language before the split; 0: all.
  std::int64_t max_per_language = 2000;
  double learning_rate = 1e-3;
};

/// Registers --batch-size (described by batch_help), --max-length, --pad-to-multiple-of,
/// --max-per-language and --learning-rate, bound to the fields; their values are the defaults --help shows.
void add_text_flags(programs::CommandLine& cli, TextFlags& flags, const std::string& batch_help);

}  // namespace kestrel::tutorials
