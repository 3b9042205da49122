// Quickstart: train a two-layer MLP with Kestrel's tensors, ops and autodiff, from nothing.
//
//   ./build/tutorials/00_quickstart/quickstart
//   ./build/tutorials/00_quickstart/quickstart --steps 5000 --learning-rate 0.1 --seed 3 --json-out metrics.json
//
// The data is made here: points drawn from a 4-D standard normal, labelled by which of three
// concentric shells they fall in. No straight line separates the shells, so the hidden ReLU layer
// has real work to do. The model is written with raw ops (matmul, relu, cross-entropy);
// value_and_grad differentiates the loss, and plain SGD updates the weights.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kestrel.h"
#include "programs/command_line.h"

namespace {

using kestrel::DType;
using kestrel::Tensor;
namespace ops = kestrel::ops;
namespace random = kestrel::random;

constexpr std::int64_t kFeatures = 4;
constexpr std::int64_t kHidden = 64;
constexpr std::int64_t kClasses = 3;
constexpr std::int64_t kTrainSize = 4096;
constexpr std::int64_t kTestSize = 1024;
constexpr std::int64_t kBatch = 128;
// Squared radii of the shell boundaries: the 1/3 and 2/3 quantiles of a chi-square with 4 degrees
// of freedom, so the three classes are about equally common.
constexpr double kInnerShell = 2.38;
constexpr double kOuterShell = 4.58;

struct Split {
  Tensor x;  // [n, kFeatures] float32
  Tensor y;  // [n] int64 class ids
};

// Class = how many shell boundaries the point lies beyond (0, 1 or 2).
Split make_shells(std::int64_t n, const random::Key& key) {
  Tensor x = random::normal({n, kFeatures}, key);
  Tensor r2 = ops::sum(ops::square(x), {.axes = {-1}});
  Tensor beyond_inner = ops::cast(ops::greater(r2, ops::scalar_like(r2, kInnerShell)), DType::int64);
  Tensor beyond_outer = ops::cast(ops::greater(r2, ops::scalar_like(r2, kOuterShell)), DType::int64);
  return {x, ops::add(beyond_inner, beyond_outer)};
}

// params = {W1 [F,H], b1 [H], W2 [H,C], b2 [C]}; returns logits [n, C].
Tensor forward(const std::vector<Tensor>& params, const Tensor& x) {
  Tensor hidden = ops::relu(ops::add(ops::matmul(x, params[0]), params[1]));
  return ops::add(ops::matmul(hidden, params[2]), params[3]);
}

Tensor mean_loss(const std::vector<Tensor>& params, const Tensor& x, const Tensor& y) {
  return ops::mean(ops::sparse_softmax_cross_entropy(forward(params, x), y));
}

// A prediction is right when the true class's logit is the largest one.
double accuracy(const std::vector<Tensor>& params, const Split& split) {
  Tensor logits = forward(params, split.x);
  Tensor true_logit = ops::sum(ops::multiply(logits, ops::one_hot(split.y, kClasses)), {.axes = {-1}});
  Tensor best_logit = ops::max(logits, {.axes = {-1}});
  return ops::mean(ops::cast(ops::greater_equal(true_logit, best_logit), DType::float32)).item();
}

// He initialization keeps the ReLU layer's activations at a steady scale; biases start at zero.
std::vector<Tensor> init_params(const random::Key& key) {
  return {random::normal({kFeatures, kHidden}, key.fold_in(0), 0.0, std::sqrt(2.0 / kFeatures)),
          Tensor::zeros({kHidden}), random::normal({kHidden, kClasses}, key.fold_in(1), 0.0, std::sqrt(2.0 / kHidden)),
          Tensor::zeros({kClasses})};
}

double class_share(const Tensor& y, int cls) {
  return ops::mean(ops::cast(ops::equal(y, ops::scalar_like(y, cls)), DType::float32)).item();
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 2000;
  double learning_rate = 0.2;
  std::uint64_t seed = 0;
  std::string json_out;
  kestrel::programs::CommandLine cli("quickstart",
                                     "Kestrel quickstart: a two-layer MLP, written with raw ops, learns to classify "
                                     "points by the shell they lie in");
  cli.add_option("--steps", steps, "SGD steps").range(1, 10'000'000);
  cli.add_option("--learning-rate", learning_rate, "SGD learning rate (> 0)");
  cli.add_option("--seed", seed, "seed for the data and the initial weights");
  cli.add_option("--json-out", json_out, "write the final metrics to this JSON file");
  if (auto exit_code = cli.parse(argc, argv)) return *exit_code;
  if (!(learning_rate > 0)) {
    std::fprintf(stderr, "quickstart: --learning-rate must be > 0, got %g\n", learning_rate);
    return 2;
  }

  const auto start = std::chrono::steady_clock::now();
  const random::Key key(seed);
  const Split train = make_shells(kTrainSize, key.fold_in(1));
  const Split test = make_shells(kTestSize, key.fold_in(2));
  std::vector<Tensor> params = init_params(key.fold_in(3));

  std::printf("Kestrel quickstart: a two-layer MLP learns which of three concentric shells a point lies in.\n\n");
  std::printf(
      "data   %lld training and %lld test points from a %lld-D standard normal; the class is how many\n"
      "       of the squared radii %.2f and %.2f a point lies beyond. Training class shares: %.2f %.2f %.2f\n",
      static_cast<long long>(kTrainSize), static_cast<long long>(kTestSize), static_cast<long long>(kFeatures),
      kInnerShell, kOuterShell, class_share(train.y, 0), class_share(train.y, 1), class_share(train.y, 2));
  std::printf("model  logits = relu(x W1 + b1) W2 + b2 with W1 %lldx%lld and W2 %lldx%lld: %lld parameters\n",
              static_cast<long long>(kFeatures), static_cast<long long>(kHidden), static_cast<long long>(kHidden),
              static_cast<long long>(kClasses),
              static_cast<long long>(kFeatures * kHidden + kHidden + kHidden * kClasses + kClasses));
  std::printf(
      "train  %d steps of plain SGD (learning rate %g, batches of %lld); value_and_grad gives the\n"
      "       gradients of the mean cross-entropy with respect to W1, b1, W2, b2\n\n",
      steps, learning_rate, static_cast<long long>(kBatch));

  const double initial_loss = mean_loss(params, train.x, train.y).item();
  std::printf("step %5d  loss %.4f  (before training; ln 3 = %.4f is a uniform guess)\n", 0, initial_loss,
              std::log(3.0));

  const int report_every = std::max(1, steps / 10);
  double loss_sum = 0;
  int loss_count = 0;
  for (int step = 1; step <= steps; ++step) {
    // Batches walk through the training set in order; its points are independent draws already.
    const std::int64_t offset = (static_cast<std::int64_t>(step - 1) * kBatch) % kTrainSize;
    Tensor xb = ops::slice(train.x, {offset, 0}, {kBatch, -1});
    Tensor yb = ops::slice(train.y, {offset}, {kBatch});
    auto [loss, grads] =
        kestrel::value_and_grad([&](const std::vector<Tensor>& p) { return mean_loss(p, xb, yb); }, params);
    for (std::size_t i = 0; i < params.size(); ++i) {
      params[i] = ops::subtract(params[i], ops::multiply(grads[i], ops::scalar_like(grads[i], learning_rate)));
    }
    loss_sum += loss.item();
    ++loss_count;
    if (step % report_every == 0 || step == steps) {
      std::printf("step %5d  loss %.4f  (mean over the last %d batches)\n", step, loss_sum / loss_count, loss_count);
      loss_sum = 0;
      loss_count = 0;
    }
  }

  const double train_loss = mean_loss(params, train.x, train.y).item();
  const double test_loss = mean_loss(params, test.x, test.y).item();
  const double train_accuracy = accuracy(params, train);
  const double test_accuracy = accuracy(params, test);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "\nresult train loss %.4f, accuracy %.1f%%; test loss %.4f, accuracy %.1f%% (a constant guess: ~33%%)\n"
      "       in %.2f s\n",
      train_loss, 100 * train_accuracy, test_loss, 100 * test_accuracy, seconds);

  if (!json_out.empty()) {
    nlohmann::ordered_json metrics = {{"steps", steps},
                                      {"learning_rate", learning_rate},
                                      {"seed", seed},
                                      {"initial_loss", initial_loss},
                                      {"train_loss", train_loss},
                                      {"test_loss", test_loss},
                                      {"train_accuracy", train_accuracy},
                                      {"test_accuracy", test_accuracy},
                                      {"seconds", seconds}};
    std::ofstream file(json_out);
    file << metrics.dump(2) << "\n";
    if (!file) {
      std::fprintf(stderr, "quickstart: cannot write %s\n", json_out.c_str());
      return 1;
    }
    std::printf("       metrics written to %s\n", json_out.c_str());
  }
  return 0;
}
