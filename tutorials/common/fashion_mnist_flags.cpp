#include "tutorials/common/fashion_mnist_flags.h"

#include "framework/ops/shape_ops.h"

namespace kestrel::tutorials {
namespace {

namespace fashion_mnist = datasets::fashion_mnist;

// Keeps the first n samples (n <= 0: all of them).
fashion_mnist::Split first_samples(const fashion_mnist::Split& split, std::int64_t n) {
  if (n <= 0 || n >= split.labels.shape()[0]) return split;
  return {ops::slice(split.images, {0, 0, 0}, {n, -1, -1}), ops::slice(split.labels, {0}, {n})};
}

}  // namespace

void add_fashion_mnist_flags(programs::CommandLine& cli, FashionMnistFlags& flags) {
  cli.add_option("--data-dir", flags.data_dir, "the folder of the four Fashion-MNIST IDX files");
  cli.add_option("--train-samples", flags.train_samples, "train on the first N training samples (0: all)")
      .non_negative();
  cli.add_option("--test-samples", flags.test_samples, "test on the first N test samples (0: all)").non_negative();
}

fashion_mnist::Data load_fashion_mnist(const FashionMnistFlags& flags) {
  fashion_mnist::Data data = fashion_mnist::load_data(flags.data_dir);
  return {first_samples(data.train, flags.train_samples), first_samples(data.test, flags.test_samples)};
}

}  // namespace kestrel::tutorials
