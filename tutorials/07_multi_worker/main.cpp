// Beyond one machine: tutorial 05's language identification on a simulated TPU pod slice, a v3-16
// (2 hosts x 8 cores), run as 2 processes that mpirun starts, one per host. Each process is a
// worker: it runs its host's 8 cores as replicas, and the workers sum their gradients over MPI.
// A backup every few steps lets the job survive a worker that dies.
//
//   mpirun --oversubscribe -np 2 ./build/tutorials/07_multi_worker/multi_worker
//   mpirun --oversubscribe -np 2 ./build/tutorials/07_multi_worker/multi_worker --crash-at-step 40
//       # worker 1 is killed (SIGKILL) at step 40: mpirun ends the job and names the rank
//   mpirun --oversubscribe -np 2 ./build/tutorials/07_multi_worker/multi_worker
//       # the same command again: fit restores the last backup and ends with the same weights
//
// (--oversubscribe: more workers than cores, as on a laptop; as root, add --allow-run-as-root.)
//
// What changes from tutorial 05 is only the strategy and what a job of several processes needs:
//
//   1  The strategy: TPUStrategy(TPUClusterResolver::slice("v3-16")), one worker per host. The
//      slice needs exactly as many MPI ranks as it has hosts, and says so otherwise.
//   2  Every worker runs this same program on the same data: each reads every global batch and
//      trains on its rows (worker 0 the first half, worker 1 the second), its 8 cores 1/16 each.
//      The workers sum in a fixed order, so every one ends with the same weights, bit for bit.
//   3  The chief (worker 0) speaks and writes: the progress bar, the logs, the CSV, the weights.
//      The others stay quiet but for warnings.
//   4  callbacks::BackupAndRestore backs the run up; the same command restores it after a crash.
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/jit/memory_plan.h"
#include "kestrel.h"
#include "programs/command_line.h"
#include "tutorials/common/language_id_pipeline.h"
#include "tutorials/common/seconds_since.h"
#include "tutorials/common/text_flags.h"
#include "tutorials/common/training_flags.h"
#include "tutorials/common/vocab_flags.h"

namespace {

using namespace kestrel;  // NOLINT(google-build-using-namespace): a tutorial reads best as Keras reads
using namespace kestrel::tutorials::language_id;  // NOLINT(google-build-using-namespace): the pipeline's steps

// A fingerprint of the weights' bytes (64-bit FNV-1a): equal fingerprints, equal bits.
std::uint64_t fingerprint(const std::vector<Tensor>& weights) {
  std::uint64_t hash = 14695981039346656037ull;
  for (const Tensor& w : weights) {
    const auto* bytes = static_cast<const unsigned char*>(w.raw_data());
    for (std::size_t i = 0; i < w.nbytes(); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  }
  return hash;
}

std::string hex(std::uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  tutorials::TextFlags text_flags{.batch_size = 64};
  std::string slice;
  std::string backup_dir;
  std::int64_t backup_every = 20;
  std::int64_t crash_at_step = 0;
  tutorials::VocabFlags vocab_flags;
  tutorials::TrainingFlags flags{.epochs = 3, .output_dir = "runs/07_multi_worker"};
  programs::CommandLine cli("multi_worker",
                            "Kestrel tutorial 07: tutorial 05's language identification on a simulated TPU pod slice, "
                            "one worker per host, started by mpirun; backed up, and restored after a crash");
  cli.add_option("--slice", slice, "the pod slice (default: v3-<8 x the MPI ranks>, v3-16 on 2)");
  tutorials::add_text_flags(cli, text_flags,
                            "texts per step over all cores of all workers (the global batch); a multiple of them");
  cli.add_option("--backup-dir", backup_dir,
                 "where BackupAndRestore keeps the run's backup (default: <output-dir>/backup)");
  cli.add_option("--backup-every", backup_every, "training steps between backups").positive();
  cli.add_option("--crash-at-step", crash_at_step,
                 "kill the last worker (SIGKILL, as kill -9) when training reaches this step, counted over epochs (0: "
                 "never)")
      .non_negative();
  tutorials::add_vocab_flags(cli, vocab_flags);
  tutorials::add_training_flags(cli, flags);
  if (auto exit_code = cli.parse(argc, argv)) return *exit_code;
  const auto& [epochs, output_dir, json_out, seed, verbose] = flags;
  const auto& [global_batch, max_length, pad_to_multiple_of, max_per_language, learning_rate] = text_flags;
  if (backup_dir.empty()) backup_dir = output_dir + "/backup";

  try {
    const auto start = std::chrono::steady_clock::now();
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    random::set_global_seed(seed);

    // 1. The pod slice: one worker per host, each this same program in its own process. Only the
    //    chief tells the story; the others would print the same lines.
    const std::shared_ptr<const distribute::Workers> job = distribute::Workers::of_this_job();
    if (slice.empty()) slice = "v3-" + std::to_string(8 * job->count());
    distribute::TPUStrategy strategy(distribute::TPUClusterResolver::slice(slice));
    const bool chief = strategy.workers().is_chief();
    const auto say = [chief](auto... args) {
      if (chief) std::printf(args...);
    };
    say("Kestrel tutorial 07: language identification on a TPU pod slice of %d workers\n\n", strategy.num_workers());
    const int replicas = strategy.num_replicas_in_sync(), local = strategy.num_local_replicas();
    say("slice    %s: %d workers (hosts) x %d cores = %d replicas in sync, %s of memory per core\n", slice.c_str(),
        strategy.num_workers(), local, replicas, jit::format_bytes(strategy.memory_per_replica().value_or(0)).c_str());
    if (global_batch % replicas != 0) {
      throw ValueError("--batch-size " + std::to_string(global_batch) + " does not divide by the " +
                       std::to_string(replicas) + " replicas of the slice; use a multiple of " +
                       std::to_string(replicas));
    }
    // 2. Every worker reads every global batch and keeps its own rows (DATA auto-sharding, set on
    //    the pipelines below): worker w the w-th block of global_batch / workers rows, cut again
    //    into one shard per core.
    const std::int64_t per_worker = global_batch / strategy.num_workers();
    for (int w = 0; w < strategy.num_workers(); ++w) {
      say("         worker %d: rows %lld..%lld of each global batch of %lld, %lld per core (replicas %d..%d)\n", w,
          static_cast<long long>(w * per_worker), static_cast<long long>((w + 1) * per_worker - 1),
          static_cast<long long>(global_batch), static_cast<long long>(per_worker / local), w * local,
          (w + 1) * local - 1);
    }

    datasets::fortunes::LanguageId data = datasets::fortunes::load_language_id(
        {.directory = vocab_flags.fortunes_dir, .max_per_language = max_per_language, .seed = seed});
    const auto num_classes = static_cast<std::int64_t>(data.languages.size());
    say("\ndata     %lld train, %lld validation, %lld test texts in %lld languages (the same on every worker)\n",
        static_cast<long long>(data.train.size()), static_cast<long long>(data.validation.size()),
        static_cast<long long>(data.test.size()), static_cast<long long>(num_classes));
    // Each worker builds its vocabulary file in a directory of its own: two processes writing one
    // file would meet in it.
    const std::string worker_dir = output_dir + "/worker" + std::to_string(strategy.worker_index());
    std::filesystem::create_directories(worker_dir);
    const text::WordPieceTokenizer tokenizer =
        tutorials::make_tokenizer(vocab_flags, data.train.texts, worker_dir, /*quiet=*/!chief);

    auto scope = strategy.scope();
    auto [train, validation, test] =
        make_pipelines(data, tokenizer, global_batch, max_length, pad_to_multiple_of, seed);
    // The texts are in memory on every worker, not in files to share out: DATA auto-sharding, as
    // Keras picks for arrays (AUTO would come to it too, with a warning that no file was found).
    data::Options sharding;
    sharding.experimental_distribute.auto_shard_policy = data::AutoShardPolicy::data;
    for (data::Dataset* pipeline : {&train, &validation, &test}) *pipeline = pipeline->with_options(sharding);
    const models::BertOptions model_options =
        classifier_options(tokenizer.vocab_size(), num_classes, max_length, pad_to_multiple_of);
    models::BertClassifier model(model_options);
    model.build({1, model_options.max_length});  // BackupAndRestore restores into built weights
    // drop_remainder: full batches only
    const std::int64_t epoch_steps = steps_per_epoch(data.train.size(), global_batch);
    compile_model(model, learning_rate, epochs * epoch_steps);

    // 4. The callbacks. BackupAndRestore is every worker's: all restore from the backup, the chief
    //    alone writes it. The CSV log is the chief's alone (Callback::chief_worker_only).
    std::vector<Handle<Callback>> callbacks = {callbacks::BackupAndRestore(backup_dir, {.save_freq = backup_every}),
                                               callbacks::CSVLogger(output_dir + "/training.csv")};
    const bool restoring = std::filesystem::exists(std::filesystem::path(backup_dir) / "checkpoint");
    if (crash_at_step > 0 && strategy.worker_index() == strategy.num_workers() - 1) {
      // The last worker dies at that step as a machine does: no exception, no goodbye.
      auto epoch = std::make_shared<int>(0);
      callbacks.push_back(
          callbacks::LambdaCallback({.on_epoch_begin = [epoch](int e, const Logs&) { *epoch = e; },
                                     .on_train_batch_begin =
                                         [epoch, crash_at_step, epoch_steps](std::int64_t batch, const Logs&) {
                                           if (*epoch * epoch_steps + batch + 1 == crash_at_step) std::raise(SIGKILL);
                                         }}));
    }
    say("\ntrain    %d epoch(s) of %lld steps; a backup every %lld steps in %s%s\n", epochs,
        static_cast<long long>(epoch_steps), static_cast<long long>(backup_every), backup_dir.c_str(),
        restoring ? " (one is there: this run continues from it)" : "");
    const auto fit_start = std::chrono::steady_clock::now();
    const History history =
        model.fit(train, {.epochs = epochs, .verbose = verbose, .callbacks = callbacks, .validation_data = validation});
    const double fit_seconds = tutorials::seconds_since(fit_start);
    say("         trained in %.1f s; final val_accuracy %.4f\n", fit_seconds,
        history.history.at("val_accuracy").back());

    // Aggregated over every worker, so each has the same figures.
    const Logs test_logs = model.evaluate(test, {.verbose = 0});
    say("\ntest     test loss %.4f, test accuracy %.4f on %lld texts\n", test_logs.at("loss"), test_logs.at("accuracy"),
        static_cast<long long>(data.test.size()));

    // 3. The chief writes the weights; every worker calls save_weights and returns once they are
    //    written. Then each checks that all hold the same bits.
    const std::string weights_path = output_dir + "/model.weights.h5";
    model.save_weights(weights_path);
    const std::string weights_fingerprint = hex(fingerprint(model.get_weights()));
    strategy.check_workers_agree("the trained weights", weights_fingerprint);
    say("\nsave     the chief wrote %s; weights fingerprint %s, the same on all %d workers\n", weights_path.c_str(),
        weights_fingerprint.c_str(), strategy.num_workers());

    if (chief && !json_out.empty()) {
      nlohmann::ordered_json json;
      for (const auto& [name, value] : test_logs) json["test_" + name] = value;
      json["weights_fingerprint"] = weights_fingerprint;
      json["restored_from_backup"] = restoring;
      json["workers"] = strategy.num_workers();
      json["replicas"] = replicas;
      json["fit_seconds"] = fit_seconds;
      std::ofstream(json_out) << json.dump(2) << "\n";
      say("         summary written to %s\n", json_out.c_str());
    }
    say("\ndone in %.1f s\n", tutorials::seconds_since(start));
    return 0;
  } catch (const std::exception& e) {
    // An error only this worker saw (the chief's failed write, say) would leave the others waiting
    // for it in a collective: the job ends here instead, as when a worker dies.
    const std::shared_ptr<const distribute::Workers> job = distribute::Workers::of_this_job();
    if (job->count() > 1) job->abort(1, std::string("multi_worker: ") + e.what());
    std::fprintf(stderr, "multi_worker: %s\n", e.what());
    return 1;
  }
}
