#include "tutorials/common/text_flags.h"

namespace kestrel::tutorials {

void add_text_flags(programs::CommandLine& cli, TextFlags& flags, const std::string& batch_help) {
  cli.add_option("--batch-size", flags.batch_size, batch_help).range(1, 4096);
  cli.add_option("--max-length", flags.max_length, "tokens kept per text (longer texts are truncated)").range(8, 512);
  cli.add_option("--pad-to-multiple-of", flags.pad_to_multiple_of, "round each batch's length up to a multiple of this")
      .range(1, 512);
  cli.add_option("--max-per-language", flags.max_per_language, "texts per language, before the split (0: all)")
      .non_negative();
  cli.add_option("--learning-rate", flags.learning_rate, "AdamW's peak learning rate").positive();
}

}  // namespace kestrel::tutorials
