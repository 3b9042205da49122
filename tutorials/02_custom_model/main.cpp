// A custom model: subclass Model, as in Keras, to write the forward pass yourself — here a small
// convolutional network for Fashion-MNIST — or build the same network with the Functional API;
// let callbacks watch over training, save the whole model, and go on training it in a new process.
//
//   ./build/tutorials/02_custom_model/custom_model
//   ./build/tutorials/02_custom_model/custom_model --api functional        # with BatchNormalization
//   ./build/tutorials/02_custom_model/custom_model --resume runs/02_custom_model/model.keras --epochs 2
//   ./build/tutorials/02_custom_model/custom_model --train-samples 2000 --test-samples 500 --epochs 1   # quick
//
// Tutorial 01 stacked layers with Sequential. A subclass is for everything a stack cannot say:
// branches, several inputs, layers used twice, or code that behaves differently while training.
// The recipe is Keras's: create the layers in the constructor with add<T>(...), which owns them and
// hands back a reference, and say what to do with them in call(inputs, training). fit, evaluate,
// save and the rest work on the subclass unchanged.
//
// The Functional API says the same as a graph of layer calls: Input() gives a Keras tensor, each
// layer called on one records the call, and Model(inputs, outputs) replays them. Its version of
// the network adds BatchNormalization after each convolution.
//
// Either model is saved whole, as Keras 3's .keras archive (config, weights, optimizer state):
// model.save() writes it, and models::load_model() makes the model again — for the subclass, from
// the config its get_config() writes and its registered from_config() reads. --resume loads such
// a file and goes on training where it stopped: same weights, same optimizer state.
//
// The callbacks:
//   ModelCheckpoint  saves the weights whenever val_accuracy beats its best so far;
//   EarlyStopping    ends training when val_accuracy stops improving, and puts back the best weights;
//   TensorBoard      writes the curves for `tensorboard --logdir`;
//   CSVLogger        writes one row of metrics per epoch.
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kestrel.h"
#include "programs/command_line.h"
#include "tutorials/common/fashion_mnist_flags.h"
#include "tutorials/common/seconds_since.h"
#include "tutorials/common/test_metrics.h"
#include "tutorials/common/training_flags.h"

namespace {

using namespace kestrel;  // NOLINT(google-build-using-namespace): a tutorial reads best as Keras reads
namespace fashion_mnist = datasets::fashion_mnist;

constexpr double kValidationSplit = 0.1;  // the share of the training data fit() holds out

// Two rounds of "convolution finds local patterns, pooling halves the picture", then a small
// classifier on the 5x5x64 feature maps:
//   [n,28,28,1] -conv 3x3-> [n,26,26,32] -pool-> [n,13,13,32] -conv 3x3-> [n,11,11,64] -pool-> [n,5,5,64]
//   -flatten-> [n,1600] -dense-> [n,128] -dropout-> -dense-> [n,10] logits
class FashionCnn : public Model {
 public:
  // Layers are created in the constructor, in the order they run; each add<T>() takes T's
  // constructor arguments. Their weights are made on the first call, from the input's shape.
  explicit FashionCnn(double dropout_rate)
      : Model("", "FashionCnn"),  // name "fashion_cnn", from the class name
        conv1_(add<layers::Conv2D>(32, std::array{3, 3}, layers::Conv2DOptions{.activation = "relu"})),
        pool1_(add<layers::MaxPooling2D>()),
        conv2_(add<layers::Conv2D>(64, std::array{3, 3}, layers::Conv2DOptions{.activation = "relu"})),
        pool2_(add<layers::MaxPooling2D>()),
        flatten_(add<layers::Flatten>()),
        hidden_(add<layers::Dense>(128, layers::DenseOptions{.activation = "relu"})),
        dropout_(add<layers::Dropout>(dropout_rate)),
        logits_(add<layers::Dense>(10)),
        dropout_rate_(dropout_rate) {}

  // The forward pass. `training` is true inside fit's steps and false in evaluate and predict;
  // Dropout uses it to drop activations only while training.
  Tensor call(const Inputs& inputs, bool training) override {
    Tensor x = pool1_(conv1_(inputs));
    x = pool2_(conv2_(x));
    x = hidden_(flatten_(x));
    return logits_(dropout_(x, training));
  }

  // What a .keras file records of the model: its constructor's argument, as Keras's get_config.
  // from_config makes the model again from it; the registration below lets load_model find it.
  nlohmann::json get_config() const override {
    nlohmann::json config = Model::get_config();
    config["dropout_rate"] = dropout_rate_;
    return config;
  }
  static std::unique_ptr<FashionCnn> from_config(const nlohmann::json& config) {
    auto model = std::make_unique<FashionCnn>(config.at("dropout_rate").get<double>());
    model->build({1, 28, 28, 1});
    return model;
  }

 private:
  layers::Conv2D& conv1_;
  layers::MaxPooling2D& pool1_;
  layers::Conv2D& conv2_;
  layers::MaxPooling2D& pool2_;
  layers::Flatten& flatten_;
  layers::Dense& hidden_;
  layers::Dropout& dropout_;
  layers::Dense& logits_;
  double dropout_rate_;
};
KESTREL_REGISTER_SERIALIZABLE("tutorials", FashionCnn);

// The same network with the Functional API, a batch normalization after each convolution (its
// bias would be cancelled by the normalization, so the convolutions have none):
//   image -conv-> BN -> relu -> pool -conv-> BN -> relu -> pool -> flatten -dense-> dropout -dense-> logits
std::unique_ptr<Model> functional_cnn(double dropout_rate) {
  const Tensor image = Input({28, 28, 1}, {.name = "image"});
  Tensor x = layers::Conv2D(32, std::array{3, 3}, {.use_bias = false})(image);
  x = layers::Activation("relu")(layers::BatchNormalization()(x));
  x = layers::MaxPooling2D()(x);
  x = layers::Conv2D(64, std::array{3, 3}, {.use_bias = false})(x);
  x = layers::Activation("relu")(layers::BatchNormalization()(x));
  x = layers::Flatten()(layers::MaxPooling2D()(x));
  x = layers::Dense(128, {.activation = "relu"})(x);
  const Tensor logits = layers::Dense(10)(layers::Dropout(dropout_rate)(x));
  return std::make_unique<Model>(image, logits, "functional_cnn");
}

// Convolutions want channels: [n, 28, 28] pixels 0..255 become [n, 28, 28, 1] values in [0, 1].
Tensor to_images(const Tensor& pixels) {
  Tensor scaled = ops::divide(pixels, ops::scalar_like(pixels, 255.0));
  return ops::reshape(scaled, {pixels.shape()[0], 28, 28, 1});
}

// Adam with a cosine learning-rate decay, from learning_rate down to a tenth of it at the last step
// (and a tenth from then on, so a resumed run still learns).
void compile_model(Model& model, double learning_rate, std::int64_t total_steps) {
  optimizers::schedules::CosineDecay schedule(
      {.initial_learning_rate = learning_rate, .decay_steps = total_steps, .alpha = 0.1});
  model.compile({.optimizer = optimizers::Adam({.learning_rate = schedule}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
}

}  // namespace

int main(int argc, char** argv) {
  int patience = 2;
  std::int64_t batch_size = 64;
  double learning_rate = 2e-3;
  double dropout_rate = 0.3;
  tutorials::TrainingFlags flags{.epochs = 8, .output_dir = "runs/02_custom_model"};
  programs::CommandLine cli("custom_model",
                            "Kestrel tutorial 02: a subclassed Model (a small CNN) learns Fashion-MNIST under "
                            "ModelCheckpoint, EarlyStopping, TensorBoard and CSVLogger");
  cli.add_option("--patience", patience, "EarlyStopping: epochs without a better val_accuracy before stopping")
      .range(0, 1000);
  tutorials::add_step_flags(cli, batch_size, learning_rate);
  cli.add_option("--dropout", dropout_rate, "the dropout rate before the last layer").range(0.0, 0.95);
  std::string api = "subclass";
  cli.add_option("--api", api,
                 "how the CNN is built: a subclass of Model, or the Functional API (with BatchNormalization)")
      .choices({"subclass", "functional"});
  std::string resume;
  cli.add_option("--resume", resume, "a model.keras saved by an earlier run: load it and go on training it")
      .existing_file();
  tutorials::FashionMnistFlags data_flags;
  tutorials::add_fashion_mnist_flags(cli, data_flags);
  tutorials::add_training_flags(cli, flags);
  if (auto exit_code = cli.parse(argc, argv)) return *exit_code;
  const auto& [epochs, output_dir, json_out, seed, verbose] = flags;

  try {
    const auto start = std::chrono::steady_clock::now();
    random::set_global_seed(seed);
    std::filesystem::create_directories(output_dir);

    std::printf("Kestrel tutorial 02: a custom model (%s) with callbacks, saved whole and reloaded\n\n",
                !resume.empty()       ? "resumed from a .keras file"
                : api == "functional" ? "the Functional API"
                                      : "a subclass of Model");
    const fashion_mnist::Data data = tutorials::load_fashion_mnist(data_flags);
    const fashion_mnist::Split& train = data.train;
    const fashion_mnist::Split& test = data.test;
    const Tensor x_train = to_images(train.images);
    const Tensor x_test = to_images(test.images);
    std::printf("data   %lld training and %lld test images, shaped [n, 28, 28, 1] (one grey channel), in [0, 1]\n\n",
                static_cast<long long>(x_train.shape()[0]), static_cast<long long>(x_test.shape()[0]));

    // Build, compile, summarize: as for a Sequential model. The schedule counts the steps of all epochs.
    const auto fit_samples =
        static_cast<std::int64_t>(std::floor(static_cast<double>(x_train.shape()[0]) * (1.0 - kValidationSplit)));
    const std::int64_t total_steps = epochs * ((fit_samples + batch_size - 1) / batch_size);
    std::unique_ptr<Model> model;
    if (!resume.empty()) {
      // The file holds the model's config, weights and compile settings with the optimizer's
      // state: the model comes back compiled, its learning-rate schedule where it stopped.
      model = models::load_model(resume);
      const Logs before = model->evaluate(x_test, test.labels, {.batch_size = 256, .verbose = 0});
      std::printf("resume %s: model '%s' (%s) after %lld optimizer steps; test accuracy %.4f\n\n", resume.c_str(),
                  model->name().c_str(), model->class_name().c_str(),
                  static_cast<long long>(model->optimizer()->iterations()), before.at("accuracy"));
    } else if (api == "functional") {
      model = functional_cnn(dropout_rate);
      compile_model(*model, learning_rate, total_steps);
    } else {
      model = std::make_unique<FashionCnn>(dropout_rate);
      model->build({1, 28, 28, 1});
      compile_model(*model, learning_rate, total_steps);
    }
    model->summary();

    // The callbacks, each writing into the output folder. Both ModelCheckpoint and EarlyStopping
    // watch val_accuracy ("max" mode, from the name), so the checkpoint on disk and the weights
    // EarlyStopping restores at the end are the same: those of the best epoch.
    const std::string best_path = output_dir + "/best.weights.h5";
    if (resume.empty()) {
      std::printf(
          "\ntrain  up to %d epochs, batches of %lld, Adam with a cosine learning rate from %g to a tenth of it;\n",
          epochs, static_cast<long long>(batch_size), learning_rate);
    } else {
      std::printf("\ntrain  up to %d more epochs, batches of %lld, with the optimizer and schedule as saved;\n", epochs,
                  static_cast<long long>(batch_size));
    }
    std::printf(
        "       %.0f%% held out for validation; stop after %d epoch(s) without a better val_accuracy\n"
        "       and keep the best epoch's weights\n",
        100 * kValidationSplit, patience);
    const auto fit_start = std::chrono::steady_clock::now();
    History history = model->fit(
        x_train, train.labels,
        {.batch_size = batch_size,
         .epochs = epochs,
         .verbose = verbose,
         .callbacks =
             {callbacks::ModelCheckpoint(best_path, {.monitor = "val_accuracy", .verbose = 1, .save_best_only = true}),
              callbacks::EarlyStopping(
                  {.monitor = "val_accuracy", .patience = patience, .verbose = 1, .restore_best_weights = true}),
              callbacks::TensorBoard({.log_dir = output_dir + "/logs"}),
              callbacks::CSVLogger(output_dir + "/training.csv")},
         .validation_split = kValidationSplit});
    const double fit_seconds = tutorials::seconds_since(fit_start);

    // History holds every epoch's logs; the best epoch is the one the callbacks kept.
    const std::vector<double>& val_accuracy = history.history.at("val_accuracy");
    std::size_t best = 0;
    for (std::size_t i = 1; i < val_accuracy.size(); ++i) {
      if (val_accuracy[i] > val_accuracy[best]) best = i;
    }
    std::printf("       ran %zu epoch(s) in %.1f s (%.1f s per epoch); best val_accuracy %.4f at epoch %zu\n\n",
                history.epoch.size(), fit_seconds, fit_seconds / static_cast<double>(history.epoch.size()),
                val_accuracy[best], best + 1);

    std::printf("test   evaluate the restored best weights on the %lld test images\n",
                static_cast<long long>(x_test.shape()[0]));
    const Logs test_logs = model->evaluate(x_test, test.labels, {.batch_size = 256, .verbose = verbose});
    std::printf("       test loss %.4f, test accuracy %.4f\n\n", test_logs.at("loss"), test_logs.at("accuracy"));

    // The whole model in one file, then made again from it alone, as a new process would: the same
    // predictions, and an optimizer ready to go on (--resume).
    const std::string model_path = output_dir + "/model.keras";
    model->save(model_path);
    const std::unique_ptr<Model> reloaded = models::load_model(model_path);
    const Logs reloaded_logs = reloaded->evaluate(x_test, test.labels, {.batch_size = 256, .verbose = 0});
    std::printf("save   %s; loaded back: test loss %.4f, test accuracy %.4f\n", model_path.c_str(),
                reloaded_logs.at("loss"), reloaded_logs.at("accuracy"));
    const bool same =
        reloaded_logs.at("accuracy") == test_logs.at("accuracy") && reloaded_logs.at("loss") == test_logs.at("loss");
    std::printf("       %s\n", same ? "identical: the file holds the model EarlyStopping restored"
                                    : "DIFFERENT from the trained model's: the file does not hold the same model");
    std::printf("       go on training it later: custom_model --resume %s --epochs 2\n", model_path.c_str());

    if (!json_out.empty()) {
      tutorials::write_test_metrics(json_out, test_logs);
      std::printf("       test metrics written to %s\n", json_out.c_str());
    }
    std::printf("\ndone in %.1f s; model.keras, checkpoint, training.csv and logs/ in %s\n",
                tutorials::seconds_since(start), output_dir.c_str());
    return same ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "custom_model: %s\n", e.what());
    return 1;
  }
}
