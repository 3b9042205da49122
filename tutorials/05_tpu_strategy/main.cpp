// TPUStrategy: tutorial 03's language identification trained the way a TPU trains it — 8 cores
// running one compiled program in sync, each on its share of every global batch. Kestrel simulates
// the cores on the CPU, with the rules and the failures of the real thing.
//
//   ./build/tutorials/05_tpu_strategy/tpu_strategy
//   ./build/tutorials/05_tpu_strategy/tpu_strategy --batch-size 128                      # 16 texts per core
//   ./build/tutorials/05_tpu_strategy/tpu_strategy --epochs 1                            # a third of the time
//   KESTREL_LOG_LEVEL=warn ./build/tutorials/05_tpu_strategy/tpu_strategy                # without the logs
//
// The data, the tokenizer and the model are tutorial 03's. What this program adds is the TPU
// recipe, four rules, each explained where the code follows it (the pipelines' and the compile's,
// shared with tutorial 07, in tutorials/common/language_id_pipeline.h):
//
//   rule 1  Make a TPUStrategy for the TPU system, then make the model (and with it its optimizer
//           and metrics) and the input pipelines inside strategy.scope().
//   rule 2  Compile with jit_compile.
//   rule 3  Keep shapes static: pad every batch's length to a multiple of 32, and give training
//           batches one global size, a multiple of the 8 cores.
//   rule 4  Evaluate with the training's global batch size.
//
// It ends with the figures that say whether a TPU run is healthy — compiles, padding efficiency,
// memory per replica — then saves the weights, reloads them into a fresh model made in the scope,
// and checks that it scores exactly the same.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "framework/jit/memory_plan.h"
#include "kestrel.h"
#include "models/bert_classifier.h"
#include "programs/command_line.h"
#include "tutorials/05_tpu_strategy/tpu_report.h"
#include "tutorials/common/language_id_pipeline.h"
#include "tutorials/common/precision_flag.h"
#include "tutorials/common/seconds_since.h"
#include "tutorials/common/text_flags.h"
#include "tutorials/common/training_flags.h"
#include "tutorials/common/vocab_flags.h"

namespace {

using namespace kestrel;  // NOLINT(google-build-using-namespace): a tutorial reads best as Keras reads
using namespace kestrel::tutorials::language_id;  // NOLINT(google-build-using-namespace): the pipeline's steps
namespace fortunes = datasets::fortunes;

}  // namespace

int main(int argc, char** argv) {
  // Training texts batch by length into at most --max-shapes padded lengths, multiples of 4. A
  // core's matmuls see a shard's texts x length as rows, and 8 texts a replica make that a
  // multiple of 8 (a TPU's sublanes) for any length, so the lengths need no coarser multiple.
  tutorials::TextFlags text_flags{.batch_size = 64, .pad_to_multiple_of = 4};
  int max_shapes = 4;
  tutorials::VocabFlags vocab_flags;
  tutorials::TrainingFlags flags{.epochs = 3, .output_dir = "runs/05_tpu_strategy"};
  std::string precision = "float32";
  programs::CommandLine cli("tpu_strategy",
                            "Kestrel tutorial 05: tutorial 03's language identification on a TPUStrategy of 8 "
                            "simulated cores — model and pipeline in strategy.scope(), jit_compile, static padded "
                            "batches");
  tutorials::add_text_flags(cli, text_flags, "texts per step over all cores (the global batch); a multiple of 8");
  tutorials::add_vocab_flags(cli, vocab_flags);
  tutorials::add_training_flags(cli, flags);
  tutorials::add_precision_flag(cli, precision);
  cli.add_option("--max-shapes", max_shapes,
                 "training batch lengths at most: texts of like length batch together, padded to the lengths that "
                 "pad least (0: each batch pads to its longest text)")
      .range(0, 64);
  if (auto exit_code = cli.parse(argc, argv)) return *exit_code;
  const auto& [epochs, output_dir, json_out, seed, verbose] = flags;
  const auto& [global_batch, max_length, pad_to_multiple_of, max_per_language, learning_rate] = text_flags;

  try {
    const auto start = std::chrono::steady_clock::now();
    // The library's logs go to stderr and this program's story to stdout; line buffering keeps the
    // two in order when both go to one file or pipe.
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    random::set_global_seed(seed);
    std::filesystem::create_directories(output_dir);
    std::printf("Kestrel tutorial 05: language identification on a TPUStrategy\n\n");

    // 1. The TPU system (rule 1): a local one of 8 simulated cores (a TPU v3-8), each with 16 GiB
    //    of memory. The strategy logs what it found on "kestrel.distribute" (stderr).
    distribute::TPUStrategy strategy(distribute::TPUClusterResolver::local());
    const int replicas = strategy.num_replicas_in_sync();
    const std::int64_t core_memory = strategy.memory_per_replica().value_or(0);
    std::printf("tpu      %s: %d replicas in sync, %s of memory per core\n", strategy.name().c_str(), replicas,
                jit::format_bytes(core_memory).c_str());
    // Each global batch is cut into one equal shard per core, so its size must divide by the
    // number of cores: the per-replica batch times the replicas.
    if (global_batch % replicas != 0) {
      throw ValueError("--batch-size " + std::to_string(global_batch) + " does not divide by the " +
                       std::to_string(replicas) + " replicas; use a multiple of " + std::to_string(replicas) +
                       " (the batch per replica times " + std::to_string(replicas) + ")");
    }
    std::printf("         global batch %lld = %lld texts per replica x %d replicas\n",
                static_cast<long long>(global_batch), static_cast<long long>(global_batch / replicas), replicas);
    // The precision policy (the seeds' bf16 on TPUs), set before any layer is made: every layer
    // takes the global policy as it is constructed. mixed_bfloat16 keeps float32 weights and
    // computes in bfloat16; bfloat16 stores the weights in bfloat16 too. Either way the loss, the
    // metrics and the model's outputs stay float32 (outputs stay bfloat16 under bfloat16).
    mixed_precision::set_global_policy(precision);
    std::printf("         precision %s\n", precision.c_str());

    // The texts and the WordPiece vocabulary, as in tutorial 03. They are plain host values (no
    // variables), so where they are made does not matter.
    fortunes::LanguageId data = fortunes::load_language_id(
        {.directory = vocab_flags.fortunes_dir, .max_per_language = max_per_language, .seed = seed});
    const auto num_classes = static_cast<std::int64_t>(data.languages.size());
    std::string language_list;
    for (const std::string& language : data.languages) language_list += (language_list.empty() ? "" : " ") + language;
    std::printf("\ndata     %lld train, %lld validation, %lld test texts in %lld languages: %s\n",
                static_cast<long long>(data.train.size()), static_cast<long long>(data.validation.size()),
                static_cast<long long>(data.test.size()), static_cast<long long>(num_classes), language_list.c_str());
    const text::WordPieceTokenizer tokenizer = tutorials::make_tokenizer(vocab_flags, data.train.texts, output_dir);

    // 2. Everything that trains is made inside the scope (rule 1): the model's weights, and at
    //    compile time the optimizer's state and the metrics' counters, all belong to the strategy,
    //    which keeps one copy of each for all the replicas and sums the replicas' gradients into one
    //    update. A model made outside and trained under the strategy fails with the name of its
    //    first weight not created in the scope. The pipelines are made here too. These hold no
    //    variables, so for them it changes nothing; a pipeline that did (a map looking ids up in a
    //    table of weights) would need it, and making every pipeline in the scope never misses that one.
    auto scope = strategy.scope();
    auto [train, validation, test] =
        make_pipelines(data, tokenizer, global_batch, max_length, pad_to_multiple_of, seed, max_shapes);

    const models::BertOptions model_options =
        classifier_options(tokenizer.vocab_size(), num_classes, max_length, pad_to_multiple_of);
    models::BertClassifier model(model_options);
    model.build({1, model_options.max_length});
    // drop_remainder: full batches only, counted by a pass over the pipeline (each length bucket
    // drops its own last few texts).
    const std::int64_t epoch_steps = count_steps_per_epoch(train, global_batch);
    const std::int64_t total_steps = epochs * epoch_steps;
    compile_model(model, learning_rate, total_steps);
    std::printf("\nmodel    ");
    model.summary();

    // 3. Training. Each step cuts the global batch into 8 shards, and every replica runs the one
    //    compiled train step on its shard: forward and backward side by side, then the program's
    //    all-reduce sums their gradients in a fixed order, and its update runs once. The first
    //    batch of each new shape compiles (the kestrel.jit log on stderr says which, and in how
    //    many stages the program runs between its collectives).
    const std::string padding = max_shapes > 0 ? "bucketed by length into at most " + std::to_string(max_shapes) +
                                                     " lengths, multiples of " + std::to_string(pad_to_multiple_of)
                                               : "each padded to a multiple of " + std::to_string(pad_to_multiple_of);
    std::printf("\ntrain    %d epoch(s) of %lld steps of %lld texts (%lld per replica), %s, AdamW peaking at %g\n",
                epochs, static_cast<long long>(epoch_steps), static_cast<long long>(global_batch),
                static_cast<long long>(global_batch / replicas), padding.c_str(), learning_rate);
    const auto fit_start = std::chrono::steady_clock::now();
    const History history = model.fit(train, {.epochs = epochs,
                                              .verbose = verbose,
                                              .callbacks = {callbacks::CSVLogger(output_dir + "/training.csv"),
                                                            callbacks::TensorBoard({.log_dir = output_dir + "/logs"})},
                                              .validation_data = validation});
    const double fit_seconds = tutorials::seconds_since(fit_start);
    std::printf("         trained in %.1f s (%.1f s per epoch); final val_accuracy %.4f\n", fit_seconds,
                fit_seconds / static_cast<double>(history.epoch.size()), history.history.at("val_accuracy").back());

    // 4. Test, at the same global batch: the programs validation compiled serve it as they are.
    const Logs test_logs = model.evaluate(test, {.verbose = 0});
    std::printf("\ntest     test loss %.4f, test accuracy %.4f on %lld texts\n", test_logs.at("loss"),
                test_logs.at("accuracy"), static_cast<long long>(data.test.size()));

    tutorials::tpu::RunReport report{.precision = precision,
                                     .replicas = replicas,
                                     .steps = static_cast<std::int64_t>(history.epoch.size()) * epoch_steps,
                                     .global_batch = global_batch,
                                     .fit_seconds = fit_seconds,
                                     .fit_jit = history.jit,
                                     .jit = model.jit_stats(),
                                     .padding = train.padding_stats(),
                                     .memory = tutorials::tpu::memory_per_replica(model, core_memory),
                                     .test_logs = test_logs};
    tutorials::tpu::print_report(report);

    // 5. Save, then reload into a fresh model made in the scope too (its weights must belong to the
    //    strategy like the first one's), compiled the same way so the optimizer's saved state loads.
    //    Its test accuracy must be the trained model's exactly: the replicas sum in a fixed order, so
    //    the same weights give the same bits.
    const std::string weights_path = output_dir + "/model.weights.h5";
    model.save_weights(weights_path);
    models::BertClassifier reloaded(model_options);
    reloaded.build({1, model_options.max_length});
    compile_model(reloaded, learning_rate, total_steps);
    reloaded.load_weights(weights_path);
    const Logs reloaded_logs = reloaded.evaluate(test, {.verbose = 0});
    report.reloaded_accuracy = reloaded_logs.at("accuracy");
    const bool same = report.reloaded_accuracy == test_logs.at("accuracy");
    std::printf(
        "\nsave     weights in %s; a fresh model made in the scope and loaded from them scores %.4f "
        "on the test texts: %s\n",
        weights_path.c_str(), report.reloaded_accuracy,
        same ? "identical to the trained model" : "DIFFERENT from the trained model");

    if (!json_out.empty()) {
      tutorials::tpu::write_json(json_out, report);
      std::printf("         summary written to %s\n", json_out.c_str());
    }
    std::printf("\ndone in %.1f s; logs in %s (tensorboard --logdir %s/logs)\n", tutorials::seconds_since(start),
                output_dir.c_str(), output_dir.c_str());
    if (!same) {
      std::fprintf(stderr,
                   "tpu_strategy: the reloaded model's test accuracy %.6f differs from the trained model's %.6f\n",
                   report.reloaded_accuracy, test_logs.at("accuracy"));
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tpu_strategy: %s\n", e.what());
    return 1;
  }
}
