#include "framework/model/step_functions.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>

#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/distribute/replica_context.h"
#include "framework/distribute/replica_shards.h"
#include "framework/jit/memory_plan.h"
#include "framework/jit/state_trace.h"
#include "framework/logging/logging.h"
#include "framework/losses/loss.h"
#include "framework/model/batch_args.h"
#include "framework/model/model.h"
#include "framework/model/partial_batch.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::detail {
namespace {

// How many elements of each row the loss's mean counts: 1 a row, or its label mask's sum.
std::vector<double> counted_per_row(const Batch& padded, const losses::Loss* loss) {
  const std::int64_t rows = rows_of(padded);
  std::vector<double> counted(static_cast<std::size_t>(rows), 1.0);
  const Tensor mask = loss != nullptr ? loss->label_mask(padded.y) : Tensor();
  if (mask.defined()) {
    const std::vector<float> per_row = ops::sum(ops::reshape(mask, {rows, -1}), {.axes = {1}}).to_vector<float>();
    counted.assign(per_row.begin(), per_row.end());
  }
  if (padded.row_mask.defined()) {
    const std::vector<float> real = padded.row_mask.to_vector<float>();
    for (std::size_t i = 0; i < counted.size(); ++i) counted[i] *= real[i];
  }
  return counted;
}

// Each replica's share of the global batch's mean loss (see SplitBatch::shares).
std::vector<double> shares_of(const Batch& padded, int replicas, const losses::Loss* loss) {
  const std::vector<double> counted = counted_per_row(padded, loss);
  const double total = std::accumulate(counted.begin(), counted.end(), 0.0);
  const std::size_t shard = counted.size() / static_cast<std::size_t>(replicas);
  std::vector<double> shares;
  for (std::size_t r = 0; r < static_cast<std::size_t>(replicas); ++r) {
    const auto begin = counted.begin() + static_cast<std::ptrdiff_t>(r * shard);
    const double mine = std::accumulate(begin, begin + static_cast<std::ptrdiff_t>(shard), 0.0);
    shares.push_back(total > 0 ? mine / total : 0.0);
  }
  return shares;
}

// The replica's share of the global batch's loss (compute_loss scales by it) while it lives; an
// undefined share (one replica) changes nothing.
class LossShareScope {
 public:
  explicit LossShareScope(const Tensor& share) {
    if (!share.defined()) return;
    distribute::ReplicaContext context = *distribute::replica_context();
    context.loss_scale = share;
    scope_.emplace(std::move(context));
  }

 private:
  std::optional<distribute::ReplicaScope> scope_;
};

}  // namespace

StepFunctions::StepFunctions(Model& model, const distribute::Distribution& distribution, bool jit)
    : model_(model), distribution_(distribution), jit_(jit), ties_before_placement_(layers::find_weight_ties(model)) {}

StepFunctions::~StepFunctions() = default;

JitStats StepFunctions::stats() const {
  JitStats out;
  for (const auto* function : {&train_, &test_, &predict_}) {
    if (!*function) continue;
    out.compiles += (*function)->compile_count();
    out.compile_seconds += (*function)->compile_seconds();
    out.arena_bytes += (*function)->arena_bytes();
    out.arena_bytes_per_replica += (*function)->arena_bytes_per_replica();
  }
  return out;
}

StepOutputs StepFunctions::run(std::unique_ptr<jit::ReplicatedFunction>& function, const char* name,
                               const std::vector<SplitBatch>& steps,
                               const std::function<std::vector<Variable>()>& state, const Step& step) {
  if (!jit_) {
    StepOutputs outputs;
    for (const SplitBatch& parts : steps) outputs.push_back(run_eagerly(parts, step));
    return outputs;
  }
  if (!function) {
    jit::ReplicaDeviceMemory memory{.limit = distribution_.memory_per_replica().value_or(0),
                                    .device = "a " + distribution_.name() + " replica"};
    function = std::make_unique<jit::ReplicatedFunction>(
        unique_variables(state()),
        [step](const jit::Args& args) {
          // Each step in turn (steps_per_execution), reading the state the one before left.
          std::vector<Tensor> outputs;
          for (const jit::Args& one : split_steps(args)) {
            const auto share = one.find("loss_scale");
            const LossShareScope with_share(share != one.end() ? share->second : Tensor());
            const std::vector<Tensor> out = step(batch_of(one));
            outputs.insert(outputs.end(), out.begin(), out.end());
          }
          return outputs;
        },
        name, distribution_, std::move(memory));
  }
  const std::size_t replicas = steps[0].shards.size();
  std::vector<jit::Args> args(replicas);
  if (loss_scales_.size() < steps.size()) loss_scales_.resize(steps.size(), std::vector<Tensor>(replicas));
  for (std::size_t r = 0; r < replicas; ++r) {
    std::vector<jit::Args> per_step;
    for (std::size_t k = 0; k < steps.size(); ++k) {
      per_step.push_back(args_of(steps[k].shards[r]));
      if (steps[k].shares.empty()) continue;
      // Written into last step's scalar when nothing else holds it: a steady step allocates nothing.
      Tensor& share = loss_scales_[k][r];
      share = Tensor::empty_or_reused(std::move(share), Shape{}, DType::float32);
      *static_cast<float*>(share.view().data) = static_cast<float>(steps[k].shares[r]);
      per_step.back().emplace("loss_scale", share);
    }
    args[r] = join_steps(per_step);
  }
  const std::size_t weights_before = model_.weights().size();
  const std::vector<std::vector<Tensor>> per_replica = (*function)(args);
  if (model_.weights().size() != weights_before) {
    throw JitError("model '" + model_.name() + "' created weights while its '" + function->name() +
                   "' was being compiled; they would be frozen into the program as constants. Build every layer "
                   "before fit (model.build(input_shape), or call the model once)");
  }
  // Each replica's outputs are its steps' in turn, the same count for every step.
  StepOutputs outputs(steps.size(), std::vector<std::vector<Tensor>>(replicas));
  const std::size_t per_step = per_replica[0].size() / steps.size();
  for (std::size_t r = 0; r < replicas; ++r) {
    for (std::size_t k = 0; k < steps.size(); ++k) {
      outputs[k][r].assign(per_replica[r].begin() + static_cast<std::ptrdiff_t>(k * per_step),
                           per_replica[r].begin() + static_cast<std::ptrdiff_t>((k + 1) * per_step));
    }
  }
  return outputs;
}

std::vector<std::vector<Tensor>> StepFunctions::run_eagerly(const SplitBatch& parts, const Step& step) const {
  std::vector<std::vector<Tensor>> outputs(parts.shards.size());
  distribution_.call_for_each_replica([&](int r) {
    const auto i = static_cast<std::size_t>(r);
    const LossShareScope with_share(parts.shares.empty() ? Tensor() : Tensor::scalar(parts.shares[i]));
    outputs[i] = step(parts.shards[i]);
  });
  return outputs;
}

void StepFunctions::place_model(const Batch& shard) {
  if (placed_) return;
  // Layers create their weights on first use, which replicas running side by side must not do,
  // and which a trace would freeze into its program as constants.
  if (!model_.built()) {
    autodiff::NoGradScope no_grad;
    model_(shard.x, /*training=*/false);
  }
  placed_ = true;
  const int replicas = distribution_.num_replicas_in_sync();
  if (replicas == 1) return;
  // Workers that sum each other's gradients must train one model.
  distribution_.check_workers_agree("the models", "model '" + model_.name() + "' with " +
                                                      std::to_string(model_.count_params()) + " parameters in " +
                                                      std::to_string(model_.weights().size()) + " weights");
  // From here on every replica reads these variables. A tie the model had when compiled, or
  // makes once built, must hold now: untied, the two slots would train apart on every replica.
  model_.tie_weights();
  const std::string where = std::to_string(replicas) + " replicas of " + distribution_.name();
  auto log = logging::get("kestrel.distribute");
  for (const std::string& retied :
       layers::restore_weight_ties(model_, ties_before_placement_, "placement on " + where)) {
    log->warn("model '{}': a tied weight came apart before placement on {}; re-tied {}", model_.name(), where, retied);
  }
  std::string ties;
  for (const layers::WeightTie& tie : layers::find_weight_ties(model_)) ties += "; tied: " + tie.to_string();
  log->info("model '{}' placed on {}: one shared copy of its {} parameters{}", model_.name(), where,
            model_.count_params(), ties);
}

SplitBatch StepFunctions::split_global(const Batch& batch, std::size_t step, const char* method,
                                       const losses::Loss* loss) {
  const int replicas = distribution_.num_replicas_in_sync();  // over every worker
  const int local = distribution_.num_local_replicas();
  const int first = distribution_.first_local_replica();
  const std::int64_t rows = rows_of(batch);
  if (rows_ == 0) {
    rows_ = rows;
    // Every worker splits the same global batch: one with another batch size would not.
    distribution_.check_workers_agree(std::string(method) + "'s global batches",
                                      jit::signature_of_args(method, args_of(batch), ""));
  }
  // A larger batch is a new global size (and, compiled, a new shape); a smaller one is padded.
  const std::int64_t global = std::max(rows, rows_);
  const std::string where = std::string(method) + " (" + distribution_.name() + ")";
  distribute::rows_per_replica(global, replicas, where,
                               "use a global batch size that is a multiple of " + std::to_string(replicas) + " (e.g. " +
                                   std::to_string(replicas * std::max<std::int64_t>(1, global / replicas)) + ")");
  // Eagerly on one replica a short last batch runs as it is, as in Keras: padding is what static
  // shapes (compiled) and equal shards (several replicas) need. Those batches always carry a row
  // mask, so every batch has one signature; a full batch reuses one mask of ones, so a steady
  // step allocates nothing for it.
  Batch padded;
  if (!jit_ && replicas == 1) {
    padded = batch;
  } else if (rows == global) {
    if (!full_mask_.defined() || full_mask_.shape()[0] != global) full_mask_ = Tensor::ones({global});
    padded = batch;
    padded.row_mask = full_mask_;
  } else {
    padded = pad_rows(batch, global);
  }
  SplitBatch parts{.global = padded};
  if (replicas == 1) {
    parts.shards.push_back(padded);
  } else {
    // Each tensor's rows cut into the shard buffers this step of an execution used last time.
    // Every worker has the global batch and keeps its replicas' shards: worker w's replicas are
    // [first, first + local) of all the replicas in sync.
    if (shard_buffers_.size() <= step) shard_buffers_.resize(step + 1);
    std::vector<jit::Args> shards(static_cast<std::size_t>(local));
    for (const auto& [name, tensor] : args_of(padded)) {
      std::vector<Tensor>& buffers = shard_buffers_[step][name];
      distribute::shard_rows(tensor, replicas, buffers, where);
      for (std::size_t r = 0; r < shards.size(); ++r) shards[r].emplace(name, buffers[first + r]);
    }
    for (const jit::Args& shard : shards) parts.shards.push_back(batch_of(shard));
    if (loss != nullptr) {
      const std::vector<double> shares = shares_of(padded, replicas, loss);
      parts.shares.assign(shares.begin() + first, shares.begin() + first + local);
    }
  }
  place_model(parts.shards[0]);
  return parts;
}

std::vector<Variable> StepFunctions::test_state() const {
  std::vector<Variable> state = model_.weights();
  const std::vector<Variable> metrics = model_.metrics_variables();
  state.insert(state.end(), metrics.begin(), metrics.end());
  return state;
}

std::vector<SplitBatch> StepFunctions::split_each(const std::vector<Batch>& batches, const char* method,
                                                  const losses::Loss* loss) {
  std::vector<SplitBatch> out;
  for (std::size_t k = 0; k < batches.size(); ++k) out.push_back(split_global(batches[k], k, method, loss));
  return out;
}

void StepFunctions::train(const std::vector<Batch>& batches) {
  const std::vector<SplitBatch> steps = split_each(batches, "fit", model_.loss());
  trained_rows_ = rows_of(steps.back().global);
  model_.optimizer()->build(model_.trainable_weights());  // slots before any replica reads state
  run(
      train_, "train_step", steps,
      [this] {
        std::vector<Variable> state = test_state();
        const std::vector<Variable> optimizer = model_.optimizer()->variables();
        state.insert(state.end(), optimizer.begin(), optimizer.end());
        return state;
      },
      [this](const Batch& shard) {
        model_.train_step(shard);
        return std::vector<Tensor>{};
      });
}

void StepFunctions::test(const std::vector<Batch>& batches) {
  const std::vector<SplitBatch> steps = split_each(batches, "evaluate", model_.loss());
  run(
      test_, "test_step", steps, [this] { return test_state(); },
      [this](const Batch& shard) {
        model_.test_step(shard);
        return std::vector<Tensor>{};
      });
  warn_if_not_at_training_batch(rows_of(steps.back().global));
}

void StepFunctions::warn_if_not_at_training_batch(std::int64_t rows) {
  // What it warns of is memory per replica: one device's own would not hold a second program.
  if (distribution_.num_replicas_in_sync() == 1) return;
  if (trained_rows_ == 0 || rows == trained_rows_ || !train_ || !test_) return;
  if (!warned_batches_.insert(rows).second) return;
  logging::get("kestrel.distribute")
      ->warn(
          "model '{}': evaluation runs at a global batch of {} rows but training ran at {} on the {} replicas of {}: "
          "a second program with its own memory per replica (train_step {}, test_step {} planned per replica). "
          "Evaluate at the training batch size (evaluate's batch_size, fit's validation_batch_size = {}) to reuse "
          "its shape, as TPU guides advise",
          model_.name(), rows, trained_rows_, distribution_.num_replicas_in_sync(), distribution_.name(),
          jit::format_bytes(train_->planned_bytes_per_replica()), jit::format_bytes(test_->planned_bytes_per_replica()),
          trained_rows_);
}

std::vector<Tensor> StepFunctions::predict(const std::vector<Batch>& batches) {
  const std::vector<SplitBatch> steps = split_each(batches, "predict", nullptr);
  const StepOutputs results = run(
      predict_, "predict_step", steps, [this] { return model_.weights(); },
      [this](const Batch& shard) {
        autodiff::NoGradScope no_grad;
        return std::vector<Tensor>{model_.predict_step(shard.x)};
      });
  std::vector<Tensor> out;
  for (std::size_t k = 0; k < results.size(); ++k) {
    std::vector<Tensor> replicas;
    for (const std::vector<Tensor>& replica : results[k]) replicas.push_back(replica.at(0));
    // Every replica's rows in sync, on every worker: predict returns the whole batch's outputs.
    out.push_back(first_rows(distribution_.all_gather(replicas), rows_of(batches[k])));
  }
  return out;
}

}  // namespace kestrel::detail
