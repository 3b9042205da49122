#include "tutorials/common/training_flags.h"

namespace kestrel::tutorials {

void add_training_flags(CLI::App& cli, TrainingFlags& flags) {
  cli.add_option("--epochs", flags.epochs, "passes over the training data")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cli.add_option("--output-dir", flags.output_dir, "where the weights, the CSV log and the TensorBoard logs go")
      ->capture_default_str();
  cli.add_option("--json-out", flags.json_out, "write the final test metrics to this JSON file");
  cli.add_option("--seed", flags.seed, "seeds the initial weights, the shuffling and dropout")->capture_default_str();
  cli.add_option("--verbose", flags.verbose, "0 quiet, 1 progress bar, 2 one line per epoch (Keras's fit verbose)")
      ->check(CLI::Range(0, 2))
      ->capture_default_str();
}

void add_step_flags(CLI::App& cli, std::int64_t& batch_size, double& learning_rate) {
  cli.add_option("--batch-size", batch_size, "samples per training step")
      ->check(CLI::Range(1, 60000))
      ->capture_default_str();
  cli.add_option("--learning-rate", learning_rate, "Adam's learning rate")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

}  // namespace kestrel::tutorials
