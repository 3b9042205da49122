// What the Fashion-MNIST tutorials share: where the data is, and a subset for quick runs.
//
//   tutorials::FashionMnistFlags data_flags;
//   tutorials::add_fashion_mnist_flags(cli, data_flags);    // --data-dir, --train-samples, --test-samples
//   if (auto exit_code = cli.parse(argc, argv)) return *exit_code;
//   datasets::fashion_mnist::Data data = tutorials::load_fashion_mnist(data_flags);
#pragma once

#include <cstdint>
#include <string>

#include "datasets/builtin/fashion_mnist.h"
#include "programs/command_line.h"

namespace kestrel::tutorials {

struct FashionMnistFlags {
  std::string data_dir = datasets::fashion_mnist::kDefaultDirectory;
  /// Use only the first N samples of each split (0: all), for a quick run.
  std::int64_t train_samples = 0;
  std::int64_t test_samples = 0;
};

/// Registers --data-dir, --train-samples and --test-samples, bound to flags' fields.
void add_fashion_mnist_flags(programs::CommandLine& cli, FashionMnistFlags& flags);

/// The dataset from flags.data_dir, cut to the requested sizes.
datasets::fashion_mnist::Data load_fashion_mnist(const FashionMnistFlags& flags);

}  // namespace kestrel::tutorials
