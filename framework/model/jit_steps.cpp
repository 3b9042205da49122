#include "framework/model/jit_steps.h"

#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/model/batch_args.h"
#include "framework/model/model.h"
#include "framework/model/partial_batch.h"

namespace kestrel::detail {
namespace {

std::vector<Variable> metric_state(const std::vector<std::shared_ptr<metrics::Metric>>& metrics) {
  std::vector<Variable> out;
  for (const auto& m : metrics) {
    std::vector<Variable> vs = m->variables();
    out.insert(out.end(), vs.begin(), vs.end());
  }
  return out;
}

}  // namespace

JitSteps::JitSteps(Model& model) : model_(model) {}
JitSteps::~JitSteps() = default;

void JitSteps::start_run() {
  train_.rows = 0;
  test_.rows = 0;
  predict_.rows = 0;
}

void JitSteps::build_model(const Batch& batch) {
  // Layers create their weights on first use; inside a trace they would be frozen into the
  // program as constants, so the model runs once, eagerly, before its first compile.
  if (model_.built()) return;
  autodiff::NoGradScope no_grad;
  model_(batch.x, /*training=*/false);
}

std::vector<Variable> JitSteps::weight_state() const { return unique_variables(model_.weights()); }

std::vector<Variable> JitSteps::test_state() const {
  std::vector<Variable> state = model_.weights();
  for (const std::vector<Variable>& more : {metric_state(model_.metrics_), model_.loss_tracker_->variables()}) {
    state.insert(state.end(), more.begin(), more.end());
  }
  return unique_variables(state);
}

std::vector<Variable> JitSteps::train_state() const {
  std::vector<Variable> state = test_state();
  const std::vector<Variable> optimizer = model_.optimizer_->variables();
  state.insert(state.end(), optimizer.begin(), optimizer.end());
  return unique_variables(state);
}

std::vector<Tensor> JitSteps::run(Step& step, const Batch& batch) {
  const std::int64_t rows = rows_of(batch);
  if (step.rows == 0) step.rows = rows;
  // A smaller batch (the last of an epoch) is padded to the compiled size; a larger one is a new
  // shape and compiles, as any new shape does. A full batch reuses one mask of ones, so a steady
  // step allocates nothing.
  Batch padded;
  if (rows == step.rows) {
    if (!step.ones.defined() || step.ones.shape()[0] != rows) step.ones = Tensor::ones({rows});
    padded = batch;
    padded.row_mask = step.ones;
  } else {
    padded = pad_rows(batch, std::max(rows, step.rows));
  }
  const std::size_t weights_before = model_.weights().size();
  std::vector<Tensor> outputs = (*step.function)(args_of(padded));
  if (model_.weights().size() != weights_before) {
    throw JitError("model '" + model_.name() + "' created weights while its '" + step.function->name() +
                   "' was being compiled; they would be frozen into the program as constants. Build every layer "
                   "before fit (model.build(input_shape), or call the model once)");
  }
  return outputs;
}

void JitSteps::make_function(Step& step, const Batch& batch, const char* name,
                             const std::function<std::vector<Variable>()>& state, StepBody body) {
  if (step.function) return;
  build_model(batch);
  step.function = std::make_unique<jit::StatefulFunction>(
      state(), [body = std::move(body)](const jit::Args& args) { return body(batch_of(args)); }, name);
}

void JitSteps::train(const Batch& batch) {
  make_function(
      train_, batch, "train_step",
      [this] {
        model_.optimizer_->build(model_.trainable_weights());  // its slots are state too
        return train_state();
      },
      [this](const Batch& b) {
        model_.train_step(b);
        return std::vector<Tensor>{};
      });
  run(train_, batch);
}

void JitSteps::test(const Batch& batch) {
  make_function(
      test_, batch, "test_step", [this] { return test_state(); },
      [this](const Batch& b) {
        model_.test_step(b);
        return std::vector<Tensor>{};
      });
  run(test_, batch);
}

Tensor JitSteps::predict(const Batch& batch) {
  make_function(
      predict_, batch, "predict_step", [this] { return weight_state(); },
      [this](const Batch& b) { return std::vector<Tensor>{model_.predict_step(b.x)}; });
  return first_rows(run(predict_, batch).at(0), rows_of(batch));
}

JitStats JitSteps::stats() const {
  JitStats out;
  for (const Step* step : {&train_, &test_, &predict_}) {
    if (!step->function) continue;
    out.compiles += step->function->compile_count();
    out.compile_seconds += step->function->compile_seconds();
    out.arena_bytes += step->function->arena_bytes();
  }
  out.arena_bytes_per_replica = out.arena_bytes;
  return out;
}

}  // namespace kestrel::detail
