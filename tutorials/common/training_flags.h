// The flags every training tutorial takes: --epochs, --output-dir, --json-out, --seed, --verbose;
// and --batch-size and --learning-rate for those that train with Adam on batches of images.
//
//   tutorials::TrainingFlags flags{.epochs = 5, .output_dir = "runs/01_fashion_mnist"};
//   tutorials::add_training_flags(cli, flags);   // the values given are the defaults --help shows
//   if (auto exit_code = cli.parse(argc, argv)) return *exit_code;
#pragma once

#include <cstdint>
#include <string>

#include "programs/command_line.h"

namespace kestrel::tutorials {

struct TrainingFlags {
  int epochs = 1;
  /// Checkpoints, the CSV log and TensorBoard logs go here.
  std::string output_dir;
  /// Empty: no JSON.
  std::string json_out;
  std::uint64_t seed = 0;
  /// Keras's fit verbosity: 0 quiet, 1 progress bar, 2 one line per epoch.
  int verbose = 1;
};

/// Registers the flags on cli, bound to flags' fields.
void add_training_flags(programs::CommandLine& cli, TrainingFlags& flags);

/// Registers --batch-size and --learning-rate (Adam's), bound to the variables; their values are
/// the defaults --help shows.
void add_step_flags(programs::CommandLine& cli, std::int64_t& batch_size, double& learning_rate);

}  // namespace kestrel::tutorials
