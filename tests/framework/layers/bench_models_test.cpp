// The BENCH.md reference models, built from the layers, have the documented parameter counts.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "framework/layers/layers.h"

namespace kestrel {
namespace {

std::int64_t run_and_count(const std::vector<Layer*>& stack, Tensor x) {
  for (Layer* layer : stack) x = (*layer)(x);
  std::int64_t total = 0;
  for (Layer* layer : stack) total += layer->count_params();
  return total;
}

TEST(BenchModels, MlpHas535818Parameters) {
  layers::Dense hidden1(512, {.activation = "relu"});
  layers::Dense hidden2(256, {.activation = "relu"});
  layers::Dense logits(10);
  EXPECT_EQ(run_and_count({&hidden1, &hidden2, &logits}, Tensor::zeros({2, 784})), 535818);
}

TEST(BenchModels, CnnHas225034Parameters) {
  layers::Conv2D conv1(32, {3, 3}, {.activation = "relu"});
  layers::MaxPooling2D pool1;
  layers::Conv2D conv2(64, {3, 3}, {.activation = "relu"});
  layers::MaxPooling2D pool2;
  layers::Flatten flatten;
  layers::Dense hidden(128, {.activation = "relu"});
  layers::Dense logits(10);
  std::vector<Layer*> stack{&conv1, &pool1, &conv2, &pool2, &flatten, &hidden, &logits};
  EXPECT_EQ(run_and_count(stack, Tensor::zeros({2, 28, 28, 1})), 225034);
  EXPECT_EQ(flatten.last_output_shape(), Shape({2, 1600}));
}

}  // namespace
}  // namespace kestrel
