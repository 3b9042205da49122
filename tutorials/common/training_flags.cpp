#include "tutorials/common/training_flags.h"

namespace kestrel::tutorials {

void add_training_flags(programs::CommandLine& cli, TrainingFlags& flags) {
  cli.add_option("--epochs", flags.epochs, "passes over the training data").range(1, 1000);
  cli.add_option("--output-dir", flags.output_dir, "where the weights, the CSV log and the TensorBoard logs go");
  cli.add_option("--json-out", flags.json_out, "write the final test metrics to this JSON file");
  cli.add_option("--seed", flags.seed, "seeds the initial weights, the shuffling and dropout");
  cli.add_option("--verbose", flags.verbose, "0 quiet, 1 progress bar, 2 one line per epoch (Keras's fit verbose)")
      .range(0, 2);
}

void add_step_flags(programs::CommandLine& cli, std::int64_t& batch_size, double& learning_rate) {
  cli.add_option("--batch-size", batch_size, "samples per training step").range(1, 60000);
  cli.add_option("--learning-rate", learning_rate, "Adam's learning rate").positive();
}

}  // namespace kestrel::tutorials
