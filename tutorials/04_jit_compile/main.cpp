// jit_compile: what compiling the training step does, what it costs, and the rules a model must
// follow to be compiled — on Fashion-MNIST and on the fortunes corpus.
//
//   ./build/tutorials/04_jit_compile/jit_compile
//   ./build/tutorials/04_jit_compile/jit_compile --train-samples 2000 --test-samples 500 --max-per-language 60  # quick
//   KESTREL_LOG_LEVEL=warn ./build/tutorials/04_jit_compile/jit_compile     # without the compile log
//   KESTREL_DUMP_DIR=/tmp/dump ./build/tutorials/04_jit_compile/jit_compile  # each compiled graph, before and
//                                                                             # after optimisation, as text
//
// model.compile({..., .jit_compile = true}) changes how fit runs a step. Eagerly, every op runs its
// kernel as the C++ reaches it and a tape records it for the backward pass. Compiled, the first
// batch of a new shape traces the whole step — forward, loss, backward, optimizer update, metric
// update — on tensors that have a shape but no value; the graph is optimised (dead code removed,
// repeated work shared, chains of elementwise ops fused into one pass, optimizer updates written in
// place, all temporaries planned into one block of memory) and every later batch of that shape
// replays the program. Four parts:
//
//   1. The compile log and the first step. Each compile is logged on the "kestrel.jit" logger
//      (stderr, info level): which step, how long, how many ops before and after optimisation, for
//      which input shapes, which shapes were already compiled, and the memory plan. A callback
//      times every training step, to show what the first one pays.
//   2. Rule 1: no decision on a tensor's value in C++. While a step is traced its tensors have no
//      values, so a call() that reads one (item(), to_vector()) to choose what to do cannot be
//      compiled. Kestrel throws a JitError that names the rule, the op, the layer and the fix; the
//      fixed model keeps the decision inside the program with ops::where. (Rule 2 — no op whose
//      output shape depends on the data: boolean_mask, unique, nonzero — has a JitError of its own.)
//   3. Rule 3: every new input shape compiles again. Text batches padded to their longest text have
//      a new length almost every batch; rounding the length up to a multiple of 32 leaves a few.
//      The same model trains one epoch each way, and a table shows the shapes, compiles and times.
//   4. Eager against compiled: the same models on the same batches, milliseconds per step.
//
// Every time printed is measured as the program runs, on the machine it runs on.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kestrel.h"
#include "models/bert_classifier.h"
#include "programs/command_line.h"
#include "tutorials/common/fashion_mnist_flags.h"
#include "tutorials/common/seconds_since.h"
#include "tutorials/common/training_flags.h"

namespace {

using namespace kestrel;  // NOLINT(google-build-using-namespace): a tutorial reads best as Keras reads
namespace fashion_mnist = datasets::fashion_mnist;
namespace fortunes = datasets::fortunes;
using Clock = std::chrono::steady_clock;

double milliseconds_since(Clock::time_point start) { return 1e3 * tutorials::seconds_since(start); }

double median(std::vector<double> values) {
  if (values.empty()) return NAN;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Pixels come as 0..255; the initial weights are made for inputs in [0, 1].
Tensor scaled_pixels(const Tensor& images) { return images / 255.0; }

// Adam on the cross-entropy of integer labels against logits, with accuracy: the same choices in
// every part, so the only difference between two runs is the one being shown.
CompileOptions classifier_options(bool jit_compile, double learning_rate) {
  return {.optimizer = optimizers::Adam({.learning_rate = learning_rate}),
          .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
          .metrics = {"accuracy"},
          .jit_compile = jit_compile};
}

// The numbers the parts measure, for --json-out.
struct Measurements {
  Logs test_logs;
  double first_step_ms = 0, median_step_ms = 0, first_fit_compile_ms = 0;
  std::int64_t compiles_unpadded = 0, compiles_padded = 0;
  double compile_seconds_unpadded = 0, compile_seconds_padded = 0;
  double epoch_seconds_unpadded = 0, epoch_seconds_padded = 0;
  double mlp_eager_ms = 0, mlp_jit_ms = 0, bert_eager_ms = 0, bert_jit_ms = 0;
};

// ---------------------------------------------------------------------------------------------
// Part 1: the compile log, and the cost of the first step against the later ones.

// Tutorial 01's MLP: 784 pixels -> 512 -> 256 -> 10 logits.
Sequential make_fashion_mlp() {
  return Sequential({layers::Flatten(), layers::Dense(512, {.activation = "relu"}),
                     layers::Dense(256, {.activation = "relu"}), layers::Dense(10)},
                    "fashion_mlp");
}

// Times every training step. fit reads the batch before on_train_batch_begin, so what lies between
// the two hooks is the step alone — and, for a batch of a new shape, the trace and compile first.
class StepTimer : public Callback {
 public:
  void on_train_batch_begin(std::int64_t /*batch*/, const Logs& /*logs*/) override { start_ = Clock::now(); }
  void on_train_batch_end(std::int64_t /*batch*/, const Logs& /*logs*/) override {
    milliseconds_.push_back(milliseconds_since(start_));
  }
  const std::vector<double>& milliseconds() const { return milliseconds_; }

 private:
  Clock::time_point start_;
  std::vector<double> milliseconds_;
};

// Fits with a StepTimer among the callbacks and returns the time of every step, in ms.
std::vector<double> fit_timing_steps(Model& model, const Tensor& x, const Tensor& y, FitOptions options) {
  // A callback given as a shared_ptr stays ours to read after fit.
  auto timer = std::make_shared<StepTimer>();
  options.callbacks.push_back(timer);
  model.fit(x, y, options);
  return timer->milliseconds();
}

void print_first_and_rest(const char* label, const std::vector<double>& steps) {
  std::printf("   %-12s first step %7.1f ms; median of the other %zu steps %.3f ms\n", label, steps.front(),
              steps.size() - 1, median(std::vector<double>(steps.begin() + 1, steps.end())));
}

// Builds the model (makes its weights) before compiling it, so that the first step's time is not
// also the making of the weights.
void build_and_compile(Sequential& model, bool jit_compile, double learning_rate) {
  model.build({1, 28, 28});
  model.compile(classifier_options(jit_compile, learning_rate));
}

void show_compile_log_and_first_step(const fashion_mnist::Data& data, std::int64_t batch_size, int epochs,
                                     double learning_rate, int verbose, Measurements& out) {
  std::printf("\n1. THE COMPILE LOG, AND THE FIRST STEP AGAINST THE OTHERS\n\n");
  std::printf(
      "   fit the MLP of tutorial 01 for %d epoch(s), batches of %lld, compiled. Its first step traces\n"
      "   and compiles 'train_step'; the log lines on stderr (kestrel.jit) say what, for which input\n"
      "   shapes, and how much memory the program plans. The last batch of an epoch is usually short:\n"
      "   it is padded to the compiled batch size and masked, so it does not compile again.\n\n",
      epochs, static_cast<long long>(batch_size));
  std::fflush(stdout);
  const Tensor x_train = scaled_pixels(data.train.images);
  Sequential model = make_fashion_mlp();
  build_and_compile(model, /*jit_compile=*/true, learning_rate);
  const std::vector<double> compiled_steps = fit_timing_steps(
      model, x_train, data.train.labels, {.batch_size = batch_size, .epochs = epochs, .verbose = verbose});
  const JitStats fit_jit = model.jit_stats();

  // The same model run eagerly for a few steps: what a first step costs without any compile (the
  // optimizer makes its slot variables on its first step either way).
  Sequential eager = make_fashion_mlp();
  build_and_compile(eager, /*jit_compile=*/false, learning_rate);
  const std::vector<double> eager_steps = fit_timing_steps(
      eager, x_train, data.train.labels, {.batch_size = batch_size, .verbose = 0, .steps_per_epoch = 20});

  std::printf("\n");
  print_first_and_rest("compiled", compiled_steps);
  print_first_and_rest("eager", eager_steps);
  const double compile_ms = 1e3 * fit_jit.compile_seconds;
  std::printf(
      "   jit_stats    %lld compile(s) during fit, %.1f ms tracing and compiling (%.0f%% of the compiled first "
      "step)\n",
      static_cast<long long>(fit_jit.compiles), compile_ms, 100.0 * compile_ms / compiled_steps.front());

  // evaluate runs a step of its own (no gradient, no update): it compiles 'test_step' once.
  std::fflush(stdout);
  out.test_logs = model.evaluate(scaled_pixels(data.test.images), data.test.labels, {.batch_size = 256, .verbose = 0});
  const JitStats total = model.jit_stats();
  std::printf(
      "   evaluate     test loss %.4f, test accuracy %.4f; the model has compiled %lld programs in all "
      "(%.1f ms)\n",
      out.test_logs.at("loss"), out.test_logs.at("accuracy"), static_cast<long long>(total.compiles),
      1e3 * total.compile_seconds);
  out.first_step_ms = compiled_steps.front();
  out.median_step_ms = median(std::vector<double>(compiled_steps.begin() + 1, compiled_steps.end()));
  out.first_fit_compile_ms = compile_ms;
}

// ---------------------------------------------------------------------------------------------
// Part 2: rule 1 — a decision on a tensor's value, made in C++ — caught, then fixed.

// A small MLP that takes pixels either raw (0..255) or already scaled to [0, 1]. The two
// subclasses below differ only in how they decide whether to scale.
class PixelMlp : public Model {
 public:
  explicit PixelMlp(const std::string& class_name)
      : Model("", class_name),
        flatten_(add<layers::Flatten>()),
        hidden_(add<layers::Dense>(128, layers::DenseOptions{.activation = "relu"})),
        logits_(add<layers::Dense>(10)) {}

 protected:
  Tensor classify(const Tensor& pixels, bool training) {
    return logits_(hidden_(flatten_(pixels), training), training);
  }

 private:
  layers::Flatten& flatten_;
  layers::Dense& hidden_;
  layers::Dense& logits_;
};

// The natural first version: look at the pixels, and scale them if they are still 0..255. Eagerly
// this works: item() reads the value the max op has just computed. Under jit_compile the step is
// traced before any batch value exists, so there is nothing to read, and the branch cannot be
// decided once for all the batches the program will run on.
class HostBranchMlp : public PixelMlp {
 public:
  HostBranchMlp() : PixelMlp("HostBranchMlp") {}
  Tensor call(const Inputs& inputs, bool training) override {
    Tensor x = inputs;
    if (ops::max(x).item() > 1.0) x = x / 255.0;  // the mistake: a host read of a tensor's value
    return classify(x, training);
  }
};

// The fix: compute both sides and let the program pick with ops::where, so the decision is made
// for each batch when the compiled program runs; the price is one division over the batch that may
// not be used. (ops::max(x, {.axes = {1, 2}, .keepdims = true}) would decide image by image.)
class InProgramBranchMlp : public PixelMlp {
 public:
  InProgramBranchMlp() : PixelMlp("InProgramBranchMlp") {}
  Tensor call(const Inputs& inputs, bool training) override {
    const Tensor x = inputs;
    const Tensor still_raw = ops::greater(ops::max(x), ops::scalar_like(x, 1.0));
    return classify(ops::where(still_raw, x / 255.0, x), training);
  }
};

// Makes the weights from the seed, compiles, and trains one epoch on the raw pixels. Every model
// below is made the same way from the same seed, so they start from the same weights and see the
// batches in the same order: only the way they run differs.
History fit_one_epoch_from_seed(PixelMlp& model, const fashion_mnist::Split& train, std::uint64_t seed,
                                bool jit_compile, std::int64_t batch_size, double learning_rate) {
  random::set_global_seed(seed);
  model.build({1, 28, 28});
  model.compile(classifier_options(jit_compile, learning_rate));
  return model.fit(train.images, train.labels, {.batch_size = batch_size, .epochs = 1, .verbose = 0});
}

// Prints text in lines of at most `width` characters, each starting with `indent`.
void print_wrapped(const std::string& text, const std::string& indent, std::size_t width) {
  std::string line;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find(' ', begin);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(begin, end - begin);
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) {
      std::printf("%s%s\n", indent.c_str(), line.c_str());
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    begin = end + 1;
  }
  if (!line.empty()) std::printf("%s%s\n", indent.c_str(), line.c_str());
}

double max_abs_difference(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.to_vector<float>();
  const std::vector<float> y = b.to_vector<float>();
  double worst = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(x[i]) - y[i]));
  return worst;
}

void show_rule_one_mistake_and_fix(const fashion_mnist::Data& data, std::int64_t batch_size, double learning_rate,
                                   std::uint64_t seed) {
  std::printf("\n2. RULE 1: A DECISION ON A TENSOR'S VALUE, MADE IN C++\n\n");
  std::printf(
      "   HostBranchMlp::call scales raw pixels itself:\n"
      "       if (ops::max(x).item() > 1.0) x = x / 255.0;\n"
      "   Each fit below is one epoch on the %lld raw (0..255) training images, from the same seed.\n\n",
      static_cast<long long>(data.train.images.shape()[0]));

  HostBranchMlp eager;
  const History eager_history =
      fit_one_epoch_from_seed(eager, data.train, seed, /*jit_compile=*/false, batch_size, learning_rate);
  const double eager_loss = eager_history.history.at("loss").back();
  std::printf("   eager      HostBranchMlp trains: loss %.6f, accuracy %.4f\n", eager_loss,
              eager_history.history.at("accuracy").back());

  HostBranchMlp compiled;
  std::fflush(stdout);
  try {
    fit_one_epoch_from_seed(compiled, data.train, seed, /*jit_compile=*/true, batch_size, learning_rate);
    std::printf("   compiled   HostBranchMlp trained: the host read was NOT caught\n");
  } catch (const JitError& e) {
    // The message names the rule, the op whose value was read, the layer, and the fix.
    std::printf("   compiled   the same model with jit_compile: fit throws kestrel::JitError while tracing:\n\n");
    print_wrapped(e.what(), "       ", 104);
  }

  InProgramBranchMlp fixed;
  std::printf(
      "\n   fixed      InProgramBranchMlp::call keeps the decision in the program:\n"
      "                  still_raw = ops::greater(ops::max(x), ops::scalar_like(x, 1.0));\n"
      "                  return classify(ops::where(still_raw, x / 255.0, x), training);\n");
  std::fflush(stdout);
  const History fixed_history =
      fit_one_epoch_from_seed(fixed, data.train, seed, /*jit_compile=*/true, batch_size, learning_rate);
  const double fixed_loss = fixed_history.history.at("loss").back();
  std::printf(
      "              compiled: loss %.6f, accuracy %.4f, %lld compile; relative difference in loss from "
      "eager %.1e\n",
      fixed_loss, fixed_history.history.at("accuracy").back(), static_cast<long long>(fixed_history.jit.compiles),
      std::abs(fixed_loss - eager_loss) / eager_loss);

  // The decision is now made on every batch, inside the program: raw and scaled pixels give the
  // same predictions, from one compiled predict program (one input shape, so one compile).
  const std::int64_t n = std::min<std::int64_t>(256, data.test.images.shape()[0]);
  const Tensor raw = ops::slice(data.test.images, {0, 0, 0}, {n, -1, -1});
  const double difference =
      max_abs_difference(fixed.predict(raw, {.batch_size = 64}), fixed.predict(scaled_pixels(raw), {.batch_size = 64}));
  std::printf("              predict on %lld test images, raw and pre-scaled: largest logit difference %.2g\n",
              static_cast<long long>(n), difference);
}

// ---------------------------------------------------------------------------------------------
// Part 3: rule 3 — every new input shape compiles again — with and without pad_to_multiple_of.

struct TextData {
  fortunes::LanguageId corpus;
  std::shared_ptr<text::WordPieceTokenizer> tokenizer;
};

// The language-identification texts of tutorial 03 and a small WordPiece vocabulary trained on the
// training texts only.
TextData load_text_data(const std::string& fortunes_dir, std::int64_t max_per_language, std::int64_t max_chars,
                        std::int64_t vocab_size, std::uint64_t seed, const std::string& output_dir) {
  TextData data{
      fortunes::load_language_id(
          {.directory = fortunes_dir, .max_per_language = max_per_language, .max_chars = max_chars, .seed = seed}),
      nullptr};
  const auto start = Clock::now();
  std::vector<std::string> vocab =
      text::train_wordpiece_vocab(data.corpus.train.texts, {.vocab_size = vocab_size, .min_frequency = 2});
  data.tokenizer = std::make_shared<text::WordPieceTokenizer>(vocab);
  data.tokenizer->save_vocabulary(output_dir + "/vocab.txt");
  std::printf(
      "   data       %lld training texts in %zu languages (fortunes), a WordPiece vocabulary of %lld trained "
      "in %.1f s\n",
      static_cast<long long>(data.corpus.train.size()), data.corpus.languages.size(),
      static_cast<long long>(data.tokenizer->vocab_size()), tutorials::seconds_since(start));
  return data;
}

// Tokenized texts, shuffled when a seed is given, grouped by the collator into batches padded to
// their longest text — rounded up to a multiple of pad_to_multiple_of (0: not rounded).
data::Dataset text_batches(const fortunes::Split& split, const text::WordPieceTokenizer& tokenizer,
                           std::int64_t batch_size, std::int64_t max_length, std::int64_t pad_to_multiple_of,
                           std::optional<std::uint64_t> shuffle_seed) {
  data::Dataset ds = split.to_dataset();
  if (shuffle_seed) ds = ds.shuffle(split.size(), *shuffle_seed);
  const text::EncodeOptions encode{
      .truncation = text::Truncation::longest_first, .max_length = max_length, .return_token_type_ids = false};
  return ds.map(tokenizer.map_fn(encode))
      .collate(batch_size, text::DataCollatorWithPadding(tokenizer, {.pad_to_multiple_of = pad_to_multiple_of}));
}

// A BERT-style classifier smaller than tutorial 03's BERT-tiny, so that many compiles still fit in
// a short run. max_length must cover the longest padded batch: max_length rounded up to 32.
models::BertOptions small_bert_options(std::int64_t vocab_size, std::int64_t num_classes, std::int64_t max_length) {
  return {.vocab_size = vocab_size,
          .hidden_size = 64,
          .num_layers = 2,
          .num_heads = 2,
          .intermediate_size = 128,
          .max_length = (max_length + 31) / 32 * 32,
          .num_classes = num_classes};
}

struct PaddingRun {
  std::int64_t pad_to_multiple_of = 0;
  data::PaddingReport padding;
  JitStats jit;
  double epoch_seconds = 0;
  double loss = 0;
};

// One compiled epoch of a fresh model (same seed each time) on batches padded with this multiple.
PaddingRun train_one_text_epoch(const TextData& data, std::int64_t batch_size, std::int64_t max_length,
                                std::int64_t pad_to_multiple_of, double learning_rate, std::uint64_t seed) {
  random::set_global_seed(seed);
  const std::int64_t num_classes = static_cast<std::int64_t>(data.corpus.languages.size());
  models::BertClassifier model(small_bert_options(data.tokenizer->vocab_size(), num_classes, max_length));
  model.compile(classifier_options(/*jit_compile=*/true, learning_rate));
  data::Dataset train =
      text_batches(data.corpus.train, *data.tokenizer, batch_size, max_length, pad_to_multiple_of, seed);
  const auto start = Clock::now();
  const History history = model.fit(train, {.epochs = 1, .verbose = 0});
  return {.pad_to_multiple_of = pad_to_multiple_of,
          .padding = train.padding_stats(),
          .jit = history.jit,
          .epoch_seconds = tutorials::seconds_since(start),
          .loss = history.history.at("loss").back()};
}

void print_padding_table(const std::vector<PaddingRun>& runs) {
  std::printf(
      "\n   pad_to_multiple_of   batch shapes   compiles   compile time   epoch time   padding efficiency   "
      "loss\n");
  for (const PaddingRun& run : runs) {
    const std::string multiple = run.pad_to_multiple_of == 0 ? "none" : std::to_string(run.pad_to_multiple_of);
    std::printf("   %18s   %12lld   %8lld   %10.2f s   %8.2f s   %17.1f%%   %.4f\n", multiple.c_str(),
                static_cast<long long>(run.padding.distinct_shapes), static_cast<long long>(run.jit.compiles),
                run.jit.compile_seconds, run.epoch_seconds, 100.0 * run.padding.efficiency(), run.loss);
  }
  std::printf(
      "   (a short last batch is a batch shape of its own, but compiled it is padded to the full batch\n"
      "   size, so it compiles only when its length is new. Every compiled program stays cached for as\n"
      "   long as the model lives; their intermediates share one arena, as large as the largest plan.)\n");
}

void show_recompiles_with_and_without_padding(const TextData& data, std::int64_t batch_size, std::int64_t max_length,
                                              double learning_rate, std::uint64_t seed, Measurements& out) {
  std::printf("\n3. RULE 3: EVERY NEW INPUT SHAPE COMPILES AGAIN\n");
  std::printf(
      "\n   one compiled epoch of a small BERT-style classifier (models::BertClassifier: 2 blocks of\n"
      "   width 64) on batches of %lld texts of at most %lld tokens, padded by the collator\n"
      "   (text::DataCollatorWithPadding) to the longest text of each batch:\n",
      static_cast<long long>(batch_size), static_cast<long long>(max_length));
  // Without a multiple, nearly every batch compiles. Each compile's log line lists every shape
  // compiled before it, so here the info lines are turned off and only warnings show: look for
  // the one that says 'train_step' keeps compiling and names the fix.
  auto jit_log = logging::get("kestrel.jit");
  const auto level = jit_log->level();
  jit_log->set_level(std::max(level, spdlog::level::warn));
  std::printf("\n   a) pad_to_multiple_of unset (kestrel.jit log at warning level for this run: watch stderr)\n");
  std::fflush(stdout);
  const PaddingRun unpadded = train_one_text_epoch(data, batch_size, max_length, 0, learning_rate, seed);
  jit_log->set_level(level);

  std::printf("\n   b) pad_to_multiple_of = 32: a few lengths, a compile log line for each\n");
  std::fflush(stdout);
  const PaddingRun padded = train_one_text_epoch(data, batch_size, max_length, 32, learning_rate, seed);
  print_padding_table({unpadded, padded});
  out.compiles_unpadded = unpadded.jit.compiles;
  out.compiles_padded = padded.jit.compiles;
  out.compile_seconds_unpadded = unpadded.jit.compile_seconds;
  out.compile_seconds_padded = padded.jit.compile_seconds;
  out.epoch_seconds_unpadded = unpadded.epoch_seconds;
  out.epoch_seconds_padded = padded.epoch_seconds;
}

// ---------------------------------------------------------------------------------------------
// Part 4: eager against compiled, step by step.

struct StepTimes {
  std::vector<double> milliseconds;  // the steps that did not compile
  std::int64_t compiles = 0;
  double last_loss = 0;
};

// train_on_batch over the batches, timing each step. Steps that compiled (the model's compile count
// went up) are left out: they measure the compiler, which part 1 already did.
StepTimes time_train_steps(Model& model, const std::vector<Batch>& batches) {
  StepTimes times;
  for (const Batch& batch : batches) {
    const std::int64_t compiles_before = model.jit_stats().compiles;
    const auto start = Clock::now();
    const Logs logs = model.train_on_batch(batch.x, batch.y);
    const double ms = milliseconds_since(start);
    if (model.jit_stats().compiles == compiles_before) times.milliseconds.push_back(ms);
    times.last_loss = logs.at("loss");
  }
  times.compiles = model.jit_stats().compiles;
  return times;
}

// Trains two fresh copies of a model from the same seed on the same batches, eagerly then compiled.
template <class MakeModel>
std::pair<StepTimes, StepTimes> time_eager_and_jit(MakeModel make_model, const std::vector<Batch>& batches,
                                                   double learning_rate, std::uint64_t seed) {
  StepTimes times[2];
  for (const bool jit : {false, true}) {
    random::set_global_seed(seed);
    auto model = make_model();
    model.compile(classifier_options(jit, learning_rate));
    times[jit] = time_train_steps(model, batches);
  }
  return {times[0], times[1]};
}

void print_step_time_row(const char* name, const StepTimes& eager, const StepTimes& jit) {
  const double eager_ms = median(eager.milliseconds);
  const double jit_ms = median(jit.milliseconds);
  std::printf("   %-26s %7zu %15.3f %13.3f   %19.2f   %12lld   %.2e\n", name, eager.milliseconds.size(), eager_ms,
              jit_ms, eager_ms / jit_ms, static_cast<long long>(jit.compiles),
              std::abs(jit.last_loss - eager.last_loss) / std::abs(eager.last_loss));
}

// The first `count` batches of rows of the images, pixels scaled.
std::vector<Batch> image_batches(const fashion_mnist::Split& split, std::int64_t batch_size, std::int64_t count) {
  std::vector<Batch> batches;
  const Tensor x = scaled_pixels(split.images);
  const std::int64_t rows = x.shape()[0];
  for (std::int64_t begin = 0; begin + batch_size <= rows && std::ssize(batches) < count; begin += batch_size) {
    batches.push_back({.x = ops::slice(x, {begin, 0, 0}, {batch_size, -1, -1}),
                       .y = ops::slice(split.labels, {begin}, {batch_size})});
  }
  return batches;
}

// The first `count` batches of the text pipeline, padded to a multiple of 32, as the model's inputs.
std::vector<Batch> text_batch_list(const TextData& data, std::int64_t batch_size, std::int64_t max_length,
                                   std::int64_t count) {
  std::vector<Batch> batches;
  for (const data::Element& element :
       text_batches(data.corpus.train, *data.tokenizer, batch_size, max_length, 32, std::nullopt)) {
    if (std::ssize(batches) == count) break;
    batches.push_back(
        {.x = Inputs{{"input_ids", element.tensor("input_ids")}, {"attention_mask", element.tensor("attention_mask")}},
         .y = element.tensor("labels")});
  }
  return batches;
}

void show_eager_against_jit(const fashion_mnist::Data& images, const TextData& texts, std::int64_t image_batch_size,
                            std::int64_t text_batch_size, std::int64_t max_length, std::int64_t steps,
                            double learning_rate, std::uint64_t seed, Measurements& out) {
  std::printf(
      "\n4. EAGER AGAINST COMPILED\n\n"
      "   the same model, from the same seed, trained with train_on_batch on the same batches (the first\n"
      "   %lld at most), once eagerly and once compiled; the compiled median leaves out the steps that\n"
      "   compiled\n\n",
      static_cast<long long>(steps));
  std::fflush(stdout);
  // The compile lines of these models were shown above; here they would only interleave with the table.
  auto jit_log = logging::get("kestrel.jit");
  const auto level = jit_log->level();
  jit_log->set_level(std::max(level, spdlog::level::warn));

  const auto [mlp_eager, mlp_jit] =
      time_eager_and_jit(make_fashion_mlp, image_batches(images.train, image_batch_size, steps), learning_rate, seed);
  const std::int64_t num_classes = static_cast<std::int64_t>(texts.corpus.languages.size());
  const auto make_bert = [&] {
    return models::BertClassifier(small_bert_options(texts.tokenizer->vocab_size(), num_classes, max_length));
  };
  const auto [bert_eager, bert_jit] =
      time_eager_and_jit(make_bert, text_batch_list(texts, text_batch_size, max_length, steps), learning_rate, seed);
  jit_log->set_level(level);

  std::printf(
      "   model                      batches   eager ms/step   jit ms/step   eager / jit (ratio)   "
      "jit compiles   last loss: relative difference\n");
  const std::string mlp_name = "MLP, batches of " + std::to_string(image_batch_size);
  const std::string bert_name = "small BERT, batches of " + std::to_string(text_batch_size);
  print_step_time_row(mlp_name.c_str(), mlp_eager, mlp_jit);
  print_step_time_row(bert_name.c_str(), bert_eager, bert_jit);
  out.mlp_eager_ms = median(mlp_eager.milliseconds);
  out.mlp_jit_ms = median(mlp_jit.milliseconds);
  out.bert_eager_ms = median(bert_eager.milliseconds);
  out.bert_jit_ms = median(bert_jit.milliseconds);
}

// --json-out: the MLP's test metrics as every tutorial writes them, and what the parts measured.
void write_json(const std::string& path, const Measurements& m) {
  nlohmann::ordered_json json;
  for (const auto& [name, value] : m.test_logs) json["test_" + name] = value;
  json["first_step_ms"] = m.first_step_ms;
  json["median_step_ms"] = m.median_step_ms;
  json["first_fit_compile_ms"] = m.first_fit_compile_ms;
  json["compiles_unpadded"] = m.compiles_unpadded;
  json["compiles_padded_to_32"] = m.compiles_padded;
  json["compile_seconds_unpadded"] = m.compile_seconds_unpadded;
  json["compile_seconds_padded_to_32"] = m.compile_seconds_padded;
  json["epoch_seconds_unpadded"] = m.epoch_seconds_unpadded;
  json["epoch_seconds_padded_to_32"] = m.epoch_seconds_padded;
  json["mlp_eager_ms_per_step"] = m.mlp_eager_ms;
  json["mlp_jit_ms_per_step"] = m.mlp_jit_ms;
  json["bert_eager_ms_per_step"] = m.bert_eager_ms;
  json["bert_jit_ms_per_step"] = m.bert_jit_ms;
  std::ofstream file(path);
  file << json.dump(2) << "\n";
  if (!file) throw IOError("cannot write the measurements to '" + path + "'");
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t batch_size = 64;
  std::int64_t text_batch_size = 16;
  std::int64_t max_length = 128;
  std::int64_t max_per_language = 300;
  std::int64_t max_chars = 200;
  std::int64_t vocab_size = 2000;
  std::int64_t timed_steps = 40;
  double learning_rate = 1e-3;
  std::string fortunes_dir = fortunes::kDefaultDirectory;
  tutorials::TrainingFlags flags{.epochs = 1, .output_dir = "runs/04_jit_compile"};
  programs::CommandLine cli("jit_compile",
                            "Kestrel tutorial 04: jit_compile — the compile log and the first step's cost, a rule-1 "
                            "error and its fix, recompiles with and without pad_to_multiple_of, eager against "
                            "compiled step times");
  cli.add_option("--text-batch-size", text_batch_size, "texts per step (parts 3, 4)").range(1, 4096);
  cli.add_option("--max-length", max_length, "tokens kept per text (longer texts are truncated)").range(8, 512);
  cli.add_option("--max-per-language", max_per_language, "fortunes per language, before the split (0: all)")
      .non_negative();
  cli.add_option("--max-chars", max_chars, "fortunes longer than this many characters are left out").range(20, 100000);
  cli.add_option("--vocab-size", vocab_size, "size of the trained WordPiece vocabulary").range(200, 100000);
  cli.add_option("--timed-steps", timed_steps, "batches timed eagerly and compiled (part 4)").range(2, 100000);
  tutorials::add_step_flags(cli, batch_size, learning_rate);  // Fashion-MNIST images per step (parts 1, 2, 4)
  cli.add_option("--fortunes-dir", fortunes_dir, "where the fortunes packages put their files");
  tutorials::FashionMnistFlags data_flags;
  tutorials::add_fashion_mnist_flags(cli, data_flags);
  tutorials::add_training_flags(cli, flags);
  if (auto exit_code = cli.parse(argc, argv)) return *exit_code;
  const auto& [epochs, output_dir, json_out, seed, verbose] = flags;

  try {
    const auto start = Clock::now();
    // The compile log goes to stderr and this program's story to stdout; line buffering keeps the
    // two in order when both are sent to one file or pipe.
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    random::set_global_seed(seed);
    std::filesystem::create_directories(output_dir);
    std::printf("Kestrel tutorial 04: jit_compile\n\n");

    const fashion_mnist::Data images = tutorials::load_fashion_mnist(data_flags);
    std::printf("   data       %lld training and %lld test images of Fashion-MNIST from %s\n",
                static_cast<long long>(images.train.images.shape()[0]),
                static_cast<long long>(images.test.images.shape()[0]), data_flags.data_dir.c_str());
    const TextData texts = load_text_data(fortunes_dir, max_per_language, max_chars, vocab_size, seed, output_dir);

    Measurements measured;
    show_compile_log_and_first_step(images, batch_size, epochs, learning_rate, verbose, measured);
    show_rule_one_mistake_and_fix(images, batch_size, learning_rate, seed);
    show_recompiles_with_and_without_padding(texts, text_batch_size, max_length, learning_rate, seed, measured);
    show_eager_against_jit(images, texts, batch_size, text_batch_size, max_length, timed_steps, learning_rate, seed,
                           measured);

    if (!json_out.empty()) {
      write_json(json_out, measured);
      std::printf("\n   test metrics and measurements written to %s\n", json_out.c_str());
    }
    std::printf("\ndone in %.1f s\n", tutorials::seconds_since(start));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jit_compile: %s\n", e.what());
    return 1;
  }
}
