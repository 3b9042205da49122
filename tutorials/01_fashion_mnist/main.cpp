// Fashion-MNIST with a Sequential model: the Keras workflow in C++ — build, compile, fit,
// evaluate, save the weights, and load them into a fresh model.
//
//   ./build/tutorials/01_fashion_mnist/fashion_mnist
//   ./build/tutorials/01_fashion_mnist/fashion_mnist --epochs 3 --output-dir /tmp/fmnist --json-out metrics.json
//   ./build/tutorials/01_fashion_mnist/fashion_mnist --train-samples 2000 --test-samples 500 --epochs 1   # quick
//
// The data: 70,000 grey 28x28 pictures of clothes in ten classes (T-shirt, trouser, ... ankle boot),
// 60,000 to train on and 10,000 to test on. The model: a multi-layer perceptron, which sees each
// picture as a flat vector of 784 pixels. The program ends by saving the trained weights as a Keras 3
// ".weights.h5" file, loading that file into a second model built from scratch, and checking that the
// second model scores exactly what the first one did.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "kestrel.h"
#include "programs/command_line.h"
#include "tutorials/common/fashion_mnist_flags.h"
#include "tutorials/common/precision_flag.h"
#include "tutorials/common/seconds_since.h"
#include "tutorials/common/test_metrics.h"
#include "tutorials/common/training_flags.h"

namespace {

using namespace kestrel;  // NOLINT(google-build-using-namespace): a tutorial reads best as Keras reads
namespace fashion_mnist = datasets::fashion_mnist;

constexpr double kValidationSplit = 0.1;  // the share of the training data fit() holds out

// The model, written once so the reloaded copy is built exactly like the trained one.
// Flatten turns each [28, 28] picture into 784 numbers; two hidden ReLU layers learn features; the
// last Dense gives one score (a logit) per class. No softmax at the end: the loss takes logits,
// which is numerically safer, and the largest logit is the predicted class either way.
Sequential make_model() {
  return Sequential({layers::Flatten(), layers::Dense(512, {.activation = "relu"}),
                     layers::Dense(256, {.activation = "relu"}), layers::Dense(10)},
                    "fashion_mlp");
}

// compile() picks how the model learns: Adam on the cross-entropy of integer labels (0..9) against
// the logits, and reports accuracy as it goes. The learning rate follows a cosine from its start
// value down to zero over the whole run: big steps early, small ones at the end to settle.
void compile_model(Sequential& model, double learning_rate, std::int64_t total_steps) {
  optimizers::schedules::CosineDecay schedule({.initial_learning_rate = learning_rate, .decay_steps = total_steps});
  model.compile({.optimizer = optimizers::Adam({.learning_rate = schedule}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t batch_size = 64;
  double learning_rate = 1e-3;
  tutorials::TrainingFlags flags{.epochs = 5, .output_dir = "runs/01_fashion_mnist"};
  programs::CommandLine cli("fashion_mnist",
                            "Kestrel tutorial 01: a Sequential MLP learns Fashion-MNIST; its weights are saved, "
                            "reloaded into a fresh model and checked");
  tutorials::add_step_flags(cli, batch_size, learning_rate);
  tutorials::FashionMnistFlags data_flags;
  tutorials::add_fashion_mnist_flags(cli, data_flags);
  tutorials::add_training_flags(cli, flags);
  std::string precision = "float32";
  tutorials::add_precision_flag(cli, precision);
  if (auto exit_code = cli.parse(argc, argv)) return *exit_code;
  const auto& [epochs, output_dir, json_out, seed, verbose] = flags;

  try {
    const auto start = std::chrono::steady_clock::now();
    // Everything random (initial weights, the order of the batches) draws from one seeded stream,
    // so two runs with the same flags train the same model.
    random::set_global_seed(seed);
    std::filesystem::create_directories(output_dir);
    // Layers take the global precision policy as they are made (tutorial 05 shows what each costs).
    mixed_precision::set_global_policy(precision);

    // 1. Data. Pixels come as 0..255; dividing by 255 puts them in [0, 1], the scale the initial
    //    weights are made for.
    std::printf("Kestrel tutorial 01: Fashion-MNIST with a Sequential MLP (precision %s)\n\n", precision.c_str());
    const fashion_mnist::Data data = tutorials::load_fashion_mnist(data_flags);
    const fashion_mnist::Split& train = data.train;
    const fashion_mnist::Split& test = data.test;
    const Tensor x_train = ops::divide(train.images, ops::scalar_like(train.images, 255.0));
    const Tensor x_test = ops::divide(test.images, ops::scalar_like(test.images, 255.0));
    std::printf(
        "data   %lld training and %lld test images of 28x28 from %s, pixels scaled to [0, 1];\n"
        "       10 classes: %s, %s, %s, ... %s\n\n",
        static_cast<long long>(x_train.shape()[0]), static_cast<long long>(x_test.shape()[0]),
        data_flags.data_dir.c_str(), fashion_mnist::kClassNames[0], fashion_mnist::kClassNames[1],
        fashion_mnist::kClassNames[2], fashion_mnist::kClassNames[9]);

    // 2. Model. A layer makes its weights the first time it sees data, so build() runs the model once
    //    on an input shape (a batch of 1) to make them now, and summary() can count them. The
    //    learning-rate schedule needs the number of training steps: fit() trains on the first 90% of
    //    the training data (the rest validates), one step per batch, the last batch possibly short.
    const auto fit_samples =
        static_cast<std::int64_t>(std::floor(static_cast<double>(x_train.shape()[0]) * (1.0 - kValidationSplit)));
    const std::int64_t total_steps = epochs * ((fit_samples + batch_size - 1) / batch_size);
    Sequential model = make_model();
    model.build({1, 28, 28});
    compile_model(model, learning_rate, total_steps);
    model.summary();

    // 3. Training. Each epoch fit() shuffles the training part, runs one Adam step per batch, then
    //    evaluates on the held-out 10% (val_loss, val_accuracy): a check on data the model never
    //    trains on. CSVLogger and TensorBoard record the curves in the output folder.
    std::printf(
        "\ntrain  %d epochs, batches of %lld, Adam with a cosine learning rate from %g to 0 over %lld steps;\n"
        "       %.0f%% of the training data held out for validation\n",
        epochs, static_cast<long long>(batch_size), learning_rate, static_cast<long long>(total_steps),
        100 * kValidationSplit);
    const auto fit_start = std::chrono::steady_clock::now();
    History history = model.fit(x_train, train.labels,
                                {.batch_size = batch_size,
                                 .epochs = epochs,
                                 .verbose = verbose,
                                 .callbacks = {callbacks::CSVLogger(output_dir + "/training.csv"),
                                               callbacks::TensorBoard({.log_dir = output_dir + "/logs"})},
                                 .validation_split = kValidationSplit});
    const double fit_seconds = tutorials::seconds_since(fit_start);
    std::printf("       trained in %.1f s (%.1f s per epoch); final val_accuracy %.4f\n\n", fit_seconds,
                fit_seconds / static_cast<double>(history.epoch.size()), history.history.at("val_accuracy").back());

    // 4. Evaluation on the test set, which played no part in training.
    std::printf("test   evaluate on the %lld test images\n", static_cast<long long>(x_test.shape()[0]));
    const Logs test_logs = model.evaluate(x_test, test.labels, {.batch_size = 256, .verbose = verbose});
    std::printf("       test loss %.4f, test accuracy %.4f\n\n", test_logs.at("loss"), test_logs.at("accuracy"));

    // 5. Save and reload. ".weights.h5" is the Keras 3 layout, which Keras and h5py can read too;
    //    the optimizer's state is saved with the weights, so training could resume from the file.
    //    A fresh model has no weights until it is built, so it is built before load_weights().
    const std::string weights_path = output_dir + "/fashion_mnist.weights.h5";
    model.save_weights(weights_path);
    std::printf("save   weights written to %s\n", weights_path.c_str());
    Sequential reloaded = make_model();
    reloaded.build({1, 28, 28});
    compile_model(reloaded, learning_rate, total_steps);
    reloaded.load_weights(weights_path);
    const Logs reloaded_logs = reloaded.evaluate(x_test, test.labels, {.batch_size = 256, .verbose = 0});
    std::printf("load   a fresh model with the loaded weights: test loss %.4f, test accuracy %.4f\n",
                reloaded_logs.at("loss"), reloaded_logs.at("accuracy"));
    // The same weights on the same data must give the same predictions, so the metrics match exactly.
    const bool same =
        reloaded_logs.at("accuracy") == test_logs.at("accuracy") && reloaded_logs.at("loss") == test_logs.at("loss");
    std::printf("       %s\n", same ? "identical to the trained model's: the file holds the whole trained state"
                                    : "DIFFERENT from the trained model's: saving or loading lost something");

    if (!json_out.empty()) {
      tutorials::write_test_metrics(json_out, test_logs);
      std::printf("       test metrics written to %s\n", json_out.c_str());
    }
    std::printf("\ndone in %.1f s; logs in %s (tensorboard --logdir %s/logs)\n", tutorials::seconds_since(start),
                output_dir.c_str(), output_dir.c_str());
    return same ? 0 : 1;
  } catch (const std::exception& e) {
    // Kestrel's errors name what failed (a missing data file says which package installs it).
    std::fprintf(stderr, "fashion_mnist: %s\n", e.what());
    return 1;
  }
}
