#include "tutorials/common/text_flags.h"

namespace kestrel::tutorials {

void add_text_flags(CLI::App& cli, TextFlags& flags, const std::string& batch_help) {
  cli.add_option("--batch-size", flags.batch_size, batch_help)->check(CLI::Range(1, 4096))->capture_default_str();
  cli.add_option("--max-length", flags.max_length, "tokens kept per text (longer texts are truncated)")
      ->check(CLI::Range(8, 512))
      ->capture_default_str();
  cli.add_option("--pad-to-multiple-of", flags.pad_to_multiple_of, "round each batch's length up to a multiple of this")
      ->check(CLI::Range(1, 512))
      ->capture_default_str();
  cli.add_option("--max-per-language", flags.max_per_language, "texts per language, before the split (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cli.add_option("--learning-rate", flags.learning_rate, "AdamW's peak learning rate")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

}  // namespace kestrel::tutorials
