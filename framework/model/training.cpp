// Model's training loops: fit, evaluate, predict, and the per-batch steps they run.
#include <cmath>
#include <optional>

#include "framework/autodiff/gradient_tape.h"
#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/layers/training_step.h"
#include "framework/logging/logging.h"
#include "framework/model/array_batches.h"
#include "framework/model/batch_source.h"
#include "framework/model/callback_list.h"
#include "framework/model/model.h"
#include "framework/model/progress_bar.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/shape_ops.h"

namespace kestrel {
namespace {

// Per-sample weights from class_weight (by integer label) times any sample_weight.
Tensor combined_sample_weight(const Tensor& y, const Tensor& sample_weight,
                              const std::map<std::int64_t, double>& class_weight) {
  if (class_weight.empty()) return sample_weight;
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
std::vector<Handle<Callback>> with_progress_bar(const std::vector<Handle<Callback>>& callbacks, int verbose,
                                                int epochs, std::int64_t steps) {
  std::vector<Handle<Callback>> out;
  if (verbose > 0) out.push_back(ProgressBar({.verbose = verbose, .epochs = epochs, .steps = steps}));
  out.insert(out.end(), callbacks.begin(), callbacks.end());
  return out;
}

}  // namespace

void Model::reset_metrics() {
  loss_total_ = 0.0;
  loss_count_ = 0.0;
  for (auto& m : metrics_) m->reset_state();
}

Logs Model::metric_logs() const {
  Logs logs;
  logs["loss"] = loss_count_ > 0 ? loss_total_ / loss_count_ : 0.0;
  for (const auto& m : metrics_) logs[m->name()] = m->result();
  return logs;
}

Tensor Model::compute_loss(const Inputs& x, const Tensor& y, const Tensor& y_pred, const Tensor& sample_weight) {
  if (!loss_) {
    throw ValueError("model '" + name() + "' was compiled without a loss; pass .loss to compile() or override compute_loss()");
  }
  return (*loss_)(y, y_pred, sample_weight);
}

Logs Model::train_step(const Inputs& x, const Tensor& y, const Tensor& sample_weight) {
  // Random layers key their draws on the step, so a resumed run repeats an uninterrupted one.
  layers::set_training_step(optimizer_->iterations());
  Tensor y_pred, loss;
  std::vector<Variable> variables;
  std::vector<Tensor> gradients;
  {
    GradientTape tape;
    y_pred = (*this)(x, /*training=*/true);
    variables = trainable_weights();
    loss = compute_loss(x, y, y_pred, sample_weight);
    std::vector<Tensor> sources;
    for (const Variable& v : variables) sources.push_back(v.value());
    gradients = tape.gradient(loss, sources);
  }
  optimizer_->apply(gradients, variables);

  autodiff::NoGradScope no_grad;
  const auto batch = static_cast<double>(x.batch_size());
  loss_total_ += loss.item() * batch;
  loss_count_ += batch;
  update_metrics(y, y_pred, sample_weight);
  return metric_logs();
}

Logs Model::test_step(const Inputs& x, const Tensor& y, const Tensor& sample_weight) {
  autodiff::NoGradScope no_grad;
  Tensor y_pred = (*this)(x, /*training=*/false);
  Tensor loss = compute_loss(x, y, y_pred, sample_weight);
  const auto batch = static_cast<double>(x.batch_size());
  loss_total_ += loss.item() * batch;
  loss_count_ += batch;
  update_metrics(y, y_pred, sample_weight);
  return metric_logs();
}

namespace {

std::unique_ptr<detail::BatchSource> validation_source(const ValidationSource& data, std::int64_t batch_size,
                                                       std::int64_t validation_steps) {
  if (const auto* arrays = std::get_if<ValidationData>(&data)) {
    return detail::array_source(detail::ArrayBatches(arrays->x, arrays->y, arrays->sample_weight, batch_size),
                                std::nullopt, validation_steps);
  }
  return detail::dataset_source(std::get<data::Dataset>(data), validation_steps, "fit (validation_data)",
                                "validation_steps");
}

// Dataset batches carry their own shuffling, weighting and batching; these options would be ignored.
void reject_array_options(const FitOptions& options) {
  const char* option = options.validation_split > 0.0  ? "validation_split"
                       : options.sample_weight.defined() ? "sample_weight"
                       : !options.class_weight.empty()   ? "class_weight"
                                                         : nullptr;
  if (option != nullptr) {
    throw ValueError(std::string("fit: ") + option +
                     " applies to arrays, not to a Dataset; put it in the dataset (a \"sample_weight\" key, "
                     "take/skip for a validation split)");
  }
}

}  // namespace

History Model::fit(const Inputs& x, const Tensor& y, FitOptions options) {
  require_compiled("fit");
  detail::ArrayBatches batches(x, y, combined_sample_weight(y, options.sample_weight, options.class_weight),
                               options.batch_size);
  const std::int64_t val_batch = options.validation_batch_size > 0 ? options.validation_batch_size : options.batch_size;
  std::unique_ptr<detail::BatchSource> validation;
  if (options.validation_data) {
    validation = validation_source(*options.validation_data, val_batch, options.validation_steps);
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
  auto train = detail::dataset_source(dataset, options.steps_per_epoch, "fit", "steps_per_epoch");
  std::unique_ptr<detail::BatchSource> validation;
  if (options.validation_data) {
    const std::int64_t val_batch =
        options.validation_batch_size > 0 ? options.validation_batch_size : options.batch_size;
    validation = validation_source(*options.validation_data, val_batch, options.validation_steps);
  }
  return fit_batches(*train, validation.get(), options);
}

History Model::fit_batches(detail::BatchSource& train, detail::BatchSource* validation, const FitOptions& options) {
  if (options.epochs < 0 || options.initial_epoch < 0) {
    throw ValueError("fit: epochs and initial_epoch must be >= 0");
  }
  const std::int64_t steps_per_epoch =
      options.steps_per_epoch > 0 && train.steps() >= 0 ? std::min(options.steps_per_epoch, train.steps())
                                                        : train.steps();
  detail::CallbackList callbacks(
      with_progress_bar(options.callbacks, options.verbose, options.epochs, std::max<std::int64_t>(steps_per_epoch, 0)),
      this);
  History history;
  stop_training = false;

  callbacks.on_train_begin({});
  Logs logs;
  for (int epoch = options.initial_epoch; epoch < options.epochs && !stop_training; ++epoch) {
    reset_metrics();
    callbacks.on_epoch_begin(epoch, {});
    train.start_epoch(epoch);
    std::int64_t steps_done = 0;
    for (; steps_per_epoch < 0 || steps_done < steps_per_epoch; ++steps_done) {
      std::optional<detail::Batch> batch = train.next();
      if (!batch) break;
      callbacks.on_train_batch_begin(steps_done, {});
      logs = train_step(batch->x, batch->y, batch->sample_weight);
      callbacks.on_train_batch_end(steps_done, logs);
      if (stop_training) break;
    }
    train.end_epoch("fit");
    if (train.ran_out()) {
      // As Keras: data read on across epochs that ends early ends training; an epoch that got no
      // batch at all is not an epoch.
      logging::get("kestrel.data")
          ->warn("fit: the input ran out of data after {} of {} steps in epoch {}; training stops. Give a dataset "
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
      for (std::int64_t b = 0; std::optional<detail::Batch> batch = validation->next(); ++b) {
        callbacks.on_test_batch_begin(b, {});
        val_logs = test_step(batch->x, batch->y, batch->sample_weight);
        callbacks.on_test_batch_end(b, val_logs);
      }
      callbacks.on_test_end(val_logs);
      for (const auto& [key, value] : val_logs) epoch_logs["val_" + key] = value;
    }
    callbacks.on_epoch_end(epoch, epoch_logs);
    history.epoch.push_back(epoch);
    for (const auto& [key, value] : epoch_logs) history.history[key].push_back(value);
    logs = epoch_logs;
  }
  callbacks.on_train_end(logs);
  return history;
}

Logs Model::evaluate(const Inputs& x, const Tensor& y, EvaluateOptions options) {
  require_compiled("evaluate");
  auto data = detail::array_source(detail::ArrayBatches(x, y, options.sample_weight, options.batch_size),
                                   std::nullopt, options.steps);
  return evaluate_batches(*data, options.callbacks, options.verbose);
}

Logs Model::evaluate(const data::Dataset& dataset, EvaluateOptions options) {
  require_compiled("evaluate");
  if (options.sample_weight.defined()) {
    throw ValueError("evaluate: sample_weight applies to arrays; put a \"sample_weight\" key in the dataset");
  }
  auto data = detail::dataset_source(dataset, options.steps, "evaluate", "steps");
  return evaluate_batches(*data, options.callbacks, options.verbose);
}

Logs Model::evaluate_batches(detail::BatchSource& data, std::vector<Handle<Callback>> user_callbacks, int verbose) {
  detail::CallbackList callbacks(
      with_progress_bar(user_callbacks, verbose, 1, std::max<std::int64_t>(data.steps(), 0)), this);
  reset_metrics();
  data.start_epoch(0);
  callbacks.on_test_begin({});
  Logs logs;
  for (std::int64_t b = 0; std::optional<detail::Batch> batch = data.next(); ++b) {
    callbacks.on_test_batch_begin(b, {});
    logs = test_step(batch->x, batch->y, batch->sample_weight);
    callbacks.on_test_batch_end(b, logs);
  }
  data.end_epoch("evaluate");
  callbacks.on_test_end(logs);
  return logs;
}

Tensor Model::predict(const Inputs& x, PredictOptions options) {
  auto data = detail::array_source(detail::ArrayBatches(x, Tensor(), Tensor(), options.batch_size),
                                   std::nullopt, options.steps);
  return predict_batches(*data, options);
}

Tensor Model::predict(const data::Dataset& dataset, PredictOptions options) {
  auto data = detail::dataset_source(dataset, options.steps, "predict", "steps");
  return predict_batches(*data, options);
}

Tensor Model::predict_batches(detail::BatchSource& data, const PredictOptions& options) {
  detail::CallbackList callbacks(
      with_progress_bar(options.callbacks, options.verbose, 1, std::max<std::int64_t>(data.steps(), 0)), this);
  autodiff::NoGradScope no_grad;
  data.start_epoch(0);
  callbacks.on_predict_begin({});
  std::vector<Tensor> outputs;
  for (std::int64_t b = 0; std::optional<detail::Batch> batch = data.next(); ++b) {
    callbacks.on_predict_batch_begin(b, {});
    outputs.push_back((*this)(batch->x, /*training=*/false));
    callbacks.on_predict_batch_end(b, {});
  }
  data.end_epoch("predict");
  callbacks.on_predict_end({});
  if (outputs.empty()) throw ValueError("predict: the inputs hold no samples");
  return outputs.size() == 1 ? outputs.front() : ops::concat(outputs, 0);
}

Logs Model::train_on_batch(const Inputs& x, const Tensor& y, const Tensor& sample_weight) {
  require_compiled("train_on_batch");
  reset_metrics();
  return train_step(x, y, sample_weight);
}

Logs Model::test_on_batch(const Inputs& x, const Tensor& y, const Tensor& sample_weight) {
  require_compiled("test_on_batch");
  reset_metrics();
  return test_step(x, y, sample_weight);
}

}  // namespace kestrel
