// Model's training loops: fit, evaluate, predict, and the per-batch steps they run.
#include <cmath>
#include <functional>
#include <optional>

#include <fmt/format.h>

#include "framework/autodiff/gradient_tape.h"
#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/distribute/merge_call.h"
#include "framework/layers/training_step.h"
#include "framework/logging/logging.h"
#include "framework/losses/scale_for_distribution.h"
#include "framework/model/array_batches.h"
#include "framework/model/batch_source.h"
#include "framework/model/callback_list.h"
#include "framework/model/compiled_loss.h"
#include "framework/model/compiled_metrics.h"
#include "framework/model/model.h"
#include "framework/model/partial_batch.h"
#include "framework/model/progress_bar.h"
#include "framework/model/step_functions.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"

namespace kestrel {
namespace {

// Per-sample weights from class_weight (by integer label) times any sample_weight.
Tensor combined_sample_weight(const Outputs& targets, const Tensor& sample_weight,
                              const std::map<std::int64_t, double>& class_weight) {
  if (class_weight.empty()) return sample_weight;
  if (targets.is_named()) {
    throw ValueError(
        "fit: class_weight weighs the classes of one output, and y is named by output (a model of several "
        "outputs); weigh samples with sample_weight instead");
  }
  const Tensor& y = targets.tensor();
  if (!y.defined() || !is_integer(y.dtype()) || y.rank() != 1) {
    throw ValueError("class_weight needs y as integer class indices of shape [n]; y is " +
                     (y.defined() ? y.spec().to_string() : std::string("undefined")));
  }
  std::vector<std::int64_t> labels = y.to_vector<std::int64_t>();
  std::vector<float> weights(labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    auto found = class_weight.find(labels[i]);
    weights[i] = found == class_weight.end() ? 1.0f : static_cast<float>(found->second);
  }
  Tensor w = Tensor::from_vector(weights, {static_cast<std::int64_t>(weights.size())});
  return sample_weight.defined() ? ops::multiply(w, ops::cast(sample_weight, DType::float32)) : w;
}

// The progress bar when verbose asks for one, then the user's callbacks: as in Keras, the epoch's
// progress line is written before what callbacks report about that epoch.
std::vector<Handle<Callback>> with_progress_bar(const std::vector<Handle<Callback>>& callbacks, int verbose, int epochs,
                                                std::int64_t steps, std::function<std::string()> note = nullptr) {
  std::vector<Handle<Callback>> out;
  if (verbose > 0) {
    out.push_back(ProgressBar({.verbose = verbose, .epochs = epochs, .steps = steps, .note = std::move(note)}));
  }
  out.insert(out.end(), callbacks.begin(), callbacks.end());
  return out;
}

// Runs steps over a source's batches in executions of up to `per_execution` steps (Keras's
// steps_per_execution): `on_begin(first step)` before each execution, then one call of `steps` on
// its batches, then `on_end(last step)`. Ends when the epoch has `limit` steps (< 0: none) or
// when on_end returns false. `done` steps of the epoch ran before (a resumed run), so the hooks'
// step indices count from there. Returns the epoch's steps.
std::int64_t run_executions(detail::BatchSource& source, std::int64_t limit, int per_execution,
                            const std::function<void(std::int64_t)>& on_begin,
                            const std::function<void(const std::vector<Batch>&)>& steps,
                            const std::function<bool(std::int64_t)>& on_end, std::int64_t done = 0) {
  while (limit < 0 || done < limit) {
    std::optional<Batch> batch = source.next();
    if (!batch) break;
    on_begin(done);
    std::vector<Batch> execution{std::move(*batch)};
    bool exhausted = false;
    while (static_cast<int>(execution.size()) < per_execution &&
           (limit < 0 || done + static_cast<std::int64_t>(execution.size()) < limit)) {
      batch = source.next();
      if (!batch) {
        exhausted = true;
        break;
      }
      execution.push_back(std::move(*batch));
    }
    steps(execution);
    done += static_cast<std::int64_t>(execution.size());
    if (!on_end(done - 1) || exhausted) break;
  }
  return done;
}

// Reads `steps` batches of the epoch without running them (< 0: to its end): a resumed run's
// replay of the input pipeline. Returns how many there were.
std::int64_t skip_batches(detail::BatchSource& source, std::int64_t steps) {
  std::int64_t skipped = 0;
  while ((steps < 0 || skipped < steps) && source.next()) ++skipped;
  return skipped;
}

}  // namespace

void Model::resume_training_at(int epoch, std::int64_t step) {
  if (epoch < 0 || step < 0) {
    throw ValueError("model '" + name() + "': resume_training_at(" + std::to_string(epoch) + ", " +
                     std::to_string(step) + "): the epoch and step must be >= 0");
  }
  resume_at_ = TrainingPosition{.epoch = epoch, .step = step};
}

void Model::reset_metrics() {
  loss_tracker_->reset_state();
  for (const detail::CompiledLoss::Term& term : compiled_loss_->terms()) {
    if (term.tracker) term.tracker->reset_state();
  }
  for (const auto& m : metrics()) m->reset_state();
}

Logs Model::metric_logs() const {
  Logs logs;
  logs["loss"] = loss_tracker_->result();
  for (const detail::CompiledLoss::Term& term : compiled_loss_->terms()) {
    if (term.tracker) logs[term.tracker->name()] = term.tracker->result();
  }
  for (std::size_t i = 0; i < metrics().size(); ++i) logs[compiled_metrics_->log_name(i)] = metrics()[i]->result();
  return logs;
}

namespace {

// The rows a batch's losses are a mean over: its real rows.
Tensor real_rows(const Batch& batch) {
  return batch.row_mask.defined() ? ops::sum(batch.row_mask)
                                  : Tensor::scalar(static_cast<double>(batch.x.batch_size()));
}

}  // namespace

Tensor Model::compute_loss(const Batch& batch, const Outputs& y_pred) {
  if (compiled_loss_->empty()) {
    throw ValueError("model '" + name() +
                     "' was compiled without a loss; pass .loss to compile() or override compute_loss()");
  }
  // A replica's share of the global batch's loss (Keras scales by the replicas in sync): the
  // replicas' gradients then add up to the global batch's, and their losses to its loss.
  std::vector<Tensor> per_output = compiled_loss_->per_output(batch, y_pred);
  for (Tensor& loss : per_output) loss = losses::scale_loss_for_distribution(loss);
  if (per_output.size() > 1) {
    // Each output's loss, unweighted, goes to its own tracker, as the total goes to the model's.
    std::vector<Tensor> tracked = per_output;
    tracked.push_back(real_rows(batch));
    distribute::merge_call("the output loss trackers", std::move(tracked),
                           [this](const distribute::MergedValues& merged) {
                             autodiff::NoGradScope no_grad;
                             const std::vector<Tensor> global = merged.sum();
                             const std::vector<detail::CompiledLoss::Term>& terms = compiled_loss_->terms();
                             for (std::size_t i = 0; i < terms.size(); ++i) {
                               terms[i].tracker->add_values(global[i], global.back());
                             }
                           });
  }
  return compiled_loss_->total(per_output);
}

void Model::track_loss(const Batch& batch, const Tensor& loss) {
  // The epoch's loss is a mean over samples: each batch weighs as many as its real rows.
  // Replicas meet here: their losses, each scaled by its share, add up to the global batch's,
  // which weighs as many samples as all their rows.
  distribute::merge_call("the loss tracker", {loss, real_rows(batch)}, [this](const distribute::MergedValues& merged) {
    autodiff::NoGradScope no_grad;
    const std::vector<Tensor> global = merged.sum();
    loss_tracker_->add_values(global[0], global[1]);
  });
}

void Model::update_metrics(const Batch& batch, const Outputs& y_pred) {
  if (metrics().empty()) return;
  // Replicas meet here: the metrics see the global batch, every replica's rows in replica order.
  distribute::merge_call("the metrics", compiled_metrics_->values_of(batch, y_pred),
                         [this](const distribute::MergedValues& merged) {
                           autodiff::NoGradScope no_grad;
                           compiled_metrics_->update(merged);
                         });
}

void Model::train_step(const Batch& batch) {
  // Random layers key their draws on the step count (traced, in a compiled step), so a resumed
  // run repeats an uninterrupted one.
  layers::TrainingStepScope step(optimizer_->iterations_variable().value());
  GradientTape tape;
  const Outputs y_pred = outputs_of(batch.x, /*training=*/true);
  const Tensor loss = compute_loss(batch, y_pred);
  std::vector<Tensor> sources;
  for (const Variable& v : trainable_weights()) sources.push_back(v.value());
  optimizer_->apply(tape.gradient(loss, sources), trainable_weights());
  autodiff::NoGradScope no_grad;
  track_loss(batch, loss);
  update_metrics(batch, y_pred);
}

void Model::test_step(const Batch& batch) {
  autodiff::NoGradScope no_grad;
  const Outputs y_pred = outputs_of(batch.x, /*training=*/false);
  track_loss(batch, compute_loss(batch, y_pred));
  update_metrics(batch, y_pred);
}

Outputs Model::predict_step(const Inputs& x) { return outputs_of(x, /*training=*/false); }

JitStats Model::jit_stats() const { return steps_ ? steps_->stats() : JitStats{}; }

namespace {

std::unique_ptr<detail::BatchSource> validation_source(const ValidationSource& data, std::int64_t batch_size,
                                                       std::int64_t validation_steps,
                                                       const distribute::Distribution* distribution,
                                                       const std::vector<std::string>& output_names) {
  if (const auto* arrays = std::get_if<ValidationData>(&data)) {
    return detail::array_source(detail::ArrayBatches(arrays->x, arrays->y, arrays->sample_weight, batch_size),
                                std::nullopt, validation_steps);
  }
  return detail::dataset_source(std::get<data::Dataset>(data), validation_steps, "fit (validation_data)",
                                "validation_steps", distribution, output_names);
}

// Dataset batches carry their own shuffling, weighting and batching; these options would be ignored.
void reject_array_options(const FitOptions& options) {
  const char* option = options.validation_split > 0.0    ? "validation_split"
                       : options.sample_weight.defined() ? "sample_weight"
                       : !options.class_weight.empty()   ? "class_weight"
                                                         : nullptr;
  if (option != nullptr) {
    throw ValueError(std::string("fit: ") + option +
                     " applies to arrays, not to a Dataset; put it in the dataset (a \"sample_weight\" key, "
                     "take/skip for a validation split)");
  }
}

// fit's validation_data beside a dataset: its own batch size when given.
std::unique_ptr<detail::BatchSource> dataset_validation_source(const FitOptions& options,
                                                               const distribute::Distribution* distribution,
                                                               const std::vector<std::string>& output_names) {
  if (!options.validation_data) return nullptr;
  const std::int64_t val_batch = options.validation_batch_size > 0 ? options.validation_batch_size : options.batch_size;
  return validation_source(*options.validation_data, val_batch, options.validation_steps, distribution, output_names);
}

void reject_sample_weight_beside_dataset(const EvaluateOptions& options) {
  if (options.sample_weight.defined()) {
    throw ValueError("evaluate: sample_weight applies to arrays; put a \"sample_weight\" key in the dataset");
  }
}

}  // namespace

History Model::fit(const Inputs& x, const Outputs& y, FitOptions options) {
  require_compiled("fit");
  detail::ArrayBatches batches(x, y, combined_sample_weight(y, options.sample_weight, options.class_weight),
                               options.batch_size);
  const std::int64_t val_batch = options.validation_batch_size > 0 ? options.validation_batch_size : options.batch_size;
  std::unique_ptr<detail::BatchSource> validation;
  if (options.validation_data) {
    validation =
        validation_source(*options.validation_data, val_batch, options.validation_steps, distribution_, output_names());
  } else if (options.validation_split > 0.0) {
    validation = detail::array_source(batches.split_tail(options.validation_split));
  }
  // One key per fit, drawn from the global stream: the same seed and program give the same orders.
  std::optional<random::Key> shuffle_key;
  if (options.shuffle) shuffle_key = random::next_global_key();
  auto train = detail::array_source(std::move(batches), shuffle_key);
  return fit_batches(*train, validation.get(), options);
}

History Model::fit(const data::Dataset& dataset, FitOptions options) {
  require_compiled("fit");
  reject_array_options(options);
  auto train =
      detail::dataset_source(dataset, options.steps_per_epoch, "fit", "steps_per_epoch", distribution_, output_names());
  auto validation = dataset_validation_source(options, distribution_, output_names());
  return fit_batches(*train, validation.get(), options);
}

History Model::fit(const distribute::DistributedDataset& dataset, FitOptions options) {
  require_compiled("fit");
  reject_array_options(options);
  auto train = detail::distributed_source(dataset, options.steps_per_epoch, "fit", "steps_per_epoch",
                                          distribution_or_default(), output_names());
  auto validation = dataset_validation_source(options, distribution_, output_names());
  return fit_batches(*train, validation.get(), options);
}

History Model::fit_batches(detail::BatchSource& train, detail::BatchSource* validation, const FitOptions& options) {
  std::optional<distribute::DistributionScope> scope;
  enter_distribution(scope, "fit");
  if (options.epochs < 0 || options.initial_epoch < 0) {
    throw ValueError("fit: epochs and initial_epoch must be >= 0");
  }
  const std::int64_t steps_per_epoch = options.steps_per_epoch > 0 && train.steps() >= 0
                                           ? std::min(options.steps_per_epoch, train.steps())
                                           : train.steps();
  const JitStats jit_before = jit_stats();
  detail::CallbackList callbacks(with_progress_bar(options.callbacks, options.verbose, options.epochs,
                                                   std::max<std::int64_t>(steps_per_epoch, 0), jit_note()),
                                 this);
  History history;
  stop_training = false;
  steps().start_run();

  resume_at_.reset();
  callbacks.on_train_begin({});
  // A restored run (BackupAndRestore) starts where its backup was taken: the epochs before are
  // replayed in the input pipeline only, and so are the steps of its first epoch that ran.
  const TrainingPosition start = resume_at_ && resume_at_->epoch >= options.initial_epoch
                                     ? *resume_at_
                                     : TrainingPosition{options.initial_epoch, 0};
  resume_at_.reset();
  for (int epoch = options.initial_epoch; epoch < start.epoch; ++epoch) {
    train.start_epoch(epoch);
    skip_batches(train, steps_per_epoch);
    // Validation's pipeline too: one that reshuffles each pass or reads on across epochs is where
    // the uninterrupted run's was.
    if (validation != nullptr) {
      validation->start_epoch(epoch);
      skip_batches(*validation, -1);
    }
  }
  Logs logs;
  for (int epoch = start.epoch; epoch < options.epochs && !stop_training; ++epoch) {
    reset_metrics();
    callbacks.on_epoch_begin(epoch, {});
    train.start_epoch(epoch);
    const std::int64_t resumed_steps = epoch == start.epoch ? skip_batches(train, start.step) : 0;
    // The epoch's logs so far (its metrics were restored as it began): what it reports even when
    // its last step was the one backed up.
    if (resumed_steps > 0) logs = metric_logs();
    const std::int64_t steps_done = run_executions(
        train, steps_per_epoch, compile_options_.steps_per_execution,
        [&](std::int64_t step) { callbacks.on_train_batch_begin(step, {}); },
        [&](const std::vector<Batch>& batches) { steps().train(batches, train.per_worker()); },
        [&](std::int64_t step) {
          logs = metric_logs();
          callbacks.on_train_batch_end(step, logs);
          return !stop_training;
        },
        resumed_steps);
    train.end_epoch("fit");
    if (train.ran_out()) {
      // As Keras: data read on across epochs that ends early ends training; an epoch that got no
      // batch at all is not an epoch.
      logging::get("kestrel.data")
          ->warn(
              "fit: the input ran out of data after {} of {} steps in epoch {}; training stops. Give a dataset "
              "that yields steps_per_epoch * epochs batches (repeat() it)",
              steps_done, steps_per_epoch, epoch + 1);
      stop_training = true;
      if (steps_done == 0) break;
    }
    Logs epoch_logs = logs;
    if (validation != nullptr) {
      reset_metrics();
      validation->start_epoch(epoch);
      callbacks.on_test_begin({});
      Logs val_logs;
      run_executions(
          *validation, -1, compile_options_.steps_per_execution,
          [&](std::int64_t step) { callbacks.on_test_batch_begin(step, {}); },
          [&](const std::vector<Batch>& batches) { steps().test(batches, validation->per_worker()); },
          [&](std::int64_t step) {
            val_logs = metric_logs();
            callbacks.on_test_batch_end(step, val_logs);
            return true;
          });
      callbacks.on_test_end(val_logs);
      for (const auto& [key, value] : val_logs) epoch_logs["val_" + key] = value;
    }
    callbacks.on_epoch_end(epoch, epoch_logs);
    history.epoch.push_back(epoch);
    for (const auto& [key, value] : epoch_logs) history.history[key].push_back(value);
    logs = epoch_logs;
  }
  callbacks.on_train_end(logs);
  const JitStats jit_after = jit_stats();
  history.jit = {.compiles = jit_after.compiles - jit_before.compiles,
                 .compile_seconds = jit_after.compile_seconds - jit_before.compile_seconds,
                 .arena_bytes = jit_after.arena_bytes,
                 .arena_bytes_per_replica = jit_after.arena_bytes_per_replica,
                 .live_peak_by_dtype_per_replica = jit_after.live_peak_by_dtype_per_replica};
  return history;
}

std::function<std::string()> Model::jit_note() const {
  if (!jit_enabled()) return nullptr;
  return [this] {
    const JitStats stats = jit_stats();
    return fmt::format(" - compiles: {} ({:.0f}ms)", stats.compiles, stats.compile_seconds * 1e3);
  };
}

Logs Model::evaluate(const Inputs& x, const Outputs& y, EvaluateOptions options) {
  require_compiled("evaluate");
  auto data = detail::array_source(detail::ArrayBatches(x, y, options.sample_weight, options.batch_size), std::nullopt,
                                   options.steps);
  return evaluate_batches(*data, options.callbacks, options.verbose);
}

Logs Model::evaluate(const data::Dataset& dataset, EvaluateOptions options) {
  require_compiled("evaluate");
  reject_sample_weight_beside_dataset(options);
  auto data = detail::dataset_source(dataset, options.steps, "evaluate", "steps", distribution_, output_names());
  return evaluate_batches(*data, options.callbacks, options.verbose);
}

Logs Model::evaluate(const distribute::DistributedDataset& dataset, EvaluateOptions options) {
  require_compiled("evaluate");
  reject_sample_weight_beside_dataset(options);
  auto data = detail::distributed_source(dataset, options.steps, "evaluate", "steps", distribution_or_default(),
                                         output_names());
  return evaluate_batches(*data, options.callbacks, options.verbose);
}

Logs Model::evaluate_batches(detail::BatchSource& data, std::vector<Handle<Callback>> user_callbacks, int verbose) {
  std::optional<distribute::DistributionScope> scope;
  enter_distribution(scope, "evaluate");
  detail::CallbackList callbacks(
      with_progress_bar(user_callbacks, verbose, 1, std::max<std::int64_t>(data.steps(), 0), jit_note()), this);
  reset_metrics();
  steps().start_run();
  data.start_epoch(0);
  callbacks.on_test_begin({});
  Logs logs;
  run_executions(
      data, -1, compile_options_.steps_per_execution,
      [&](std::int64_t step) { callbacks.on_test_batch_begin(step, {}); },
      [&](const std::vector<Batch>& batches) { steps().test(batches, data.per_worker()); },
      [&](std::int64_t step) {
        logs = metric_logs();
        callbacks.on_test_batch_end(step, logs);
        return true;
      });
  data.end_epoch("evaluate");
  callbacks.on_test_end(logs);
  return logs;
}

Outputs Model::predict(const Inputs& x, PredictOptions options) {
  auto data = detail::array_source(detail::ArrayBatches(x, Outputs(), Tensor(), options.batch_size), std::nullopt,
                                   options.steps);
  return predict_batches(*data, options);
}

Outputs Model::predict(const data::Dataset& dataset, PredictOptions options) {
  auto data = detail::dataset_source(dataset, options.steps, "predict", "steps", distribution_, output_names());
  return predict_batches(*data, options);
}

Outputs Model::predict(const distribute::DistributedDataset& dataset, PredictOptions options) {
  auto data =
      detail::distributed_source(dataset, options.steps, "predict", "steps", distribution_or_default(), output_names());
  return predict_batches(*data, options);
}

Outputs Model::predict_batches(detail::BatchSource& data, const PredictOptions& options) {
  std::optional<distribute::DistributionScope> scope;
  enter_distribution(scope, "predict");
  detail::CallbackList callbacks(
      with_progress_bar(options.callbacks, options.verbose, 1, std::max<std::int64_t>(data.steps(), 0), jit_note()),
      this);
  steps().start_run();
  data.start_epoch(0);
  callbacks.on_predict_begin({});
  std::vector<Outputs> outputs;
  run_executions(
      data, -1, compile_options_.steps_per_execution,
      [&](std::int64_t step) { callbacks.on_predict_batch_begin(step, {}); },
      [&](const std::vector<Batch>& batches) {
        autodiff::NoGradScope no_grad;
        const std::vector<Outputs> predicted = steps().predict(batches, data.per_worker());
        outputs.insert(outputs.end(), predicted.begin(), predicted.end());
      },
      [&](std::int64_t step) {
        callbacks.on_predict_batch_end(step, {});
        return true;
      });
  data.end_epoch("predict");
  callbacks.on_predict_end({});
  if (outputs.empty()) throw ValueError("predict: the inputs hold no samples");
  return outputs.size() == 1 ? outputs.front() : Outputs::concat_rows(outputs);
}

Logs Model::train_on_batch(const Inputs& x, const Outputs& y, const Tensor& sample_weight) {
  std::optional<distribute::DistributionScope> scope;
  enter_distribution(scope, "train_on_batch");
  require_compiled("train_on_batch");
  reset_metrics();
  steps().train({{.x = x, .y = y, .sample_weight = sample_weight}});
  return metric_logs();
}

Logs Model::test_on_batch(const Inputs& x, const Outputs& y, const Tensor& sample_weight) {
  std::optional<distribute::DistributionScope> scope;
  enter_distribution(scope, "test_on_batch");
  require_compiled("test_on_batch");
  reset_metrics();
  steps().test({{.x = x, .y = y, .sample_weight = sample_weight}});
  return metric_logs();
}

}  // namespace kestrel
