// Model's training loops: fit, evaluate, predict, and the per-batch steps they run.
#include <cmath>
#include <optional>

#include "framework/autodiff/gradient_tape.h"
#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/layers/training_step.h"
#include "framework/model/array_batches.h"
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

Logs run_evaluation(Model& model, detail::ArrayBatches& data, detail::CallbackList& callbacks, std::int64_t steps,
                    const std::function<Logs(const detail::Batch&)>& test_step) {
  callbacks.on_test_begin({});
  Logs logs;
  const std::int64_t batches = steps > 0 ? std::min(steps, data.num_batches()) : data.num_batches();
  for (std::int64_t b = 0; b < batches; ++b) {
    callbacks.on_test_batch_begin(b, {});
    logs = test_step(data.batch(b));
    callbacks.on_test_batch_end(b, logs);
  }
  callbacks.on_test_end(logs);
  return logs;
}

}  // namespace

History Model::fit(const Inputs& x, const Tensor& y, FitOptions options) {
  require_compiled("fit");
  if (options.epochs < 0 || options.initial_epoch < 0) {
    throw ValueError("fit: epochs and initial_epoch must be >= 0");
  }
  detail::ArrayBatches train(x, y, combined_sample_weight(y, options.sample_weight, options.class_weight),
                             options.batch_size);
  const std::int64_t val_batch = options.validation_batch_size > 0 ? options.validation_batch_size : options.batch_size;
  std::optional<detail::ArrayBatches> validation;
  if (options.validation_data) {
    const ValidationData& v = *options.validation_data;
    validation.emplace(v.x, v.y, v.sample_weight, val_batch);
  } else if (options.validation_split > 0.0) {
    validation.emplace(train.split_tail(options.validation_split));
  }

  const std::int64_t steps_per_epoch =
      options.steps_per_epoch > 0 ? std::min(options.steps_per_epoch, train.num_batches()) : train.num_batches();
  detail::CallbackList callbacks(
      with_progress_bar(options.callbacks, options.verbose, options.epochs, steps_per_epoch), this);
  History history;
  stop_training = false;
  // One key per fit, drawn from the global stream: the same seed and program give the same orders.
  const random::Key shuffle_key = random::next_global_key();
  auto test = [this](const detail::Batch& b) { return test_step(b.x, b.y, b.sample_weight); };

  callbacks.on_train_begin({});
  Logs logs;
  for (int epoch = options.initial_epoch; epoch < options.epochs && !stop_training; ++epoch) {
    reset_metrics();
    callbacks.on_epoch_begin(epoch, {});
    if (options.shuffle) train.shuffle(shuffle_key.fold_in(static_cast<std::uint64_t>(epoch)));
    for (std::int64_t b = 0; b < steps_per_epoch; ++b) {
      callbacks.on_train_batch_begin(b, {});
      detail::Batch batch = train.batch(b);
      logs = train_step(batch.x, batch.y, batch.sample_weight);
      callbacks.on_train_batch_end(b, logs);
      if (stop_training) break;
    }
    Logs epoch_logs = logs;
    if (validation) {
      reset_metrics();
      for (const auto& [key, value] : run_evaluation(*this, *validation, callbacks, 0, test)) {
        epoch_logs["val_" + key] = value;
      }
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
  detail::ArrayBatches data(x, y, options.sample_weight, options.batch_size);
  const std::int64_t steps = options.steps > 0 ? std::min(options.steps, data.num_batches()) : data.num_batches();
  detail::CallbackList callbacks(with_progress_bar(options.callbacks, options.verbose, 1, steps), this);
  reset_metrics();
  return run_evaluation(*this, data, callbacks, options.steps,
                        [this](const detail::Batch& b) { return test_step(b.x, b.y, b.sample_weight); });
}

Tensor Model::predict(const Inputs& x, PredictOptions options) {
  detail::ArrayBatches data(x, Tensor(), Tensor(), options.batch_size);
  const std::int64_t batches =
      options.steps > 0 ? std::min(options.steps, data.num_batches()) : data.num_batches();
  detail::CallbackList callbacks(with_progress_bar(options.callbacks, options.verbose, 1, batches), this);
  autodiff::NoGradScope no_grad;
  callbacks.on_predict_begin({});
  std::vector<Tensor> outputs;
  for (std::int64_t b = 0; b < batches; ++b) {
    callbacks.on_predict_batch_begin(b, {});
    outputs.push_back((*this)(data.batch(b).x, /*training=*/false));
    callbacks.on_predict_batch_end(b, {});
  }
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
