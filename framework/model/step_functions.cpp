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
#include "framework/ops/data_dependent.h"
#include "framework/ops/elementwise.h"
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

// Per-row counts (counted_per_row) summed over each of `replicas` equal shards of `rows` rows (the
// numerators of SplitBatch::shares); rows past the counts are padding and count none.
std::vector<double> counted_per_replica(const std::vector<double>& counted, std::int64_t rows, int replicas) {
  const std::size_t shard = static_cast<std::size_t>(rows) / static_cast<std::size_t>(replicas);
  std::vector<double> out;
  for (std::size_t r = 0; r < static_cast<std::size_t>(replicas); ++r) {
    const std::size_t begin = std::min(counted.size(), r * shard);
    const std::size_t end = std::min(counted.size(), (r + 1) * shard);
    out.push_back(std::accumulate(counted.begin() + static_cast<std::ptrdiff_t>(begin),
                                  counted.begin() + static_cast<std::ptrdiff_t>(end), 0.0));
  }
  return out;
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
    for (const auto& [dtype, bytes] : (*function)->live_peak_by_dtype_per_replica()) {
      out.live_peak_by_dtype_per_replica[dtype] += bytes;
    }
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
    model_.outputs_of(shard.x, /*training=*/false);
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

Batch StepFunctions::padded_to(const Batch& batch, std::int64_t rows) {
  if (rows_of(batch) != rows) return pad_rows(batch, rows);
  if (batch.row_mask.defined()) return batch;
  // A full batch reuses one mask of ones, so a steady step allocates nothing for it.
  if (!full_mask_.defined() || full_mask_.shape()[0] != rows) full_mask_ = Tensor::ones({rows});
  Batch padded = batch;
  padded.row_mask = full_mask_;
  return padded;
}

std::vector<Batch> StepFunctions::shards_of(const Batch& padded, std::size_t step, int replicas, int first, int local,
                                            const std::string& where) {
  // Each tensor's rows cut into the shard buffers this step of an execution used last time.
  if (shard_buffers_.size() <= step) shard_buffers_.resize(step + 1);
  std::vector<jit::Args> shards(static_cast<std::size_t>(local));
  for (const auto& [name, tensor] : args_of(padded)) {
    std::vector<Tensor>& buffers = shard_buffers_[step][name];
    distribute::shard_rows(tensor, replicas, buffers, where);
    for (std::size_t r = 0; r < shards.size(); ++r) shards[r].emplace(name, buffers[first + r]);
  }
  std::vector<Batch> out;
  for (const jit::Args& shard : shards) out.push_back(batch_of(shard));
  return out;
}

SplitBatch StepFunctions::split_global(const Batch& batch, std::size_t step, const char* method, bool scaled) {
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
  // mask, so every batch has one signature.
  const Batch padded = !jit_ && replicas == 1 ? batch : padded_to(batch, global);
  SplitBatch parts{.global = padded, .global_rows = global};
  if (replicas == 1) {
    parts.shards.push_back(padded);
  } else {
    // Every worker has the global batch and keeps its replicas' shards: worker w's replicas are
    // [first, first + local) of all the replicas in sync.
    parts.shards = shards_of(padded, step, replicas, first, local, where);
    if (scaled) {
      const std::vector<double> counted = counted_per_replica(counted_per_row(padded, model_.loss()), global, replicas);
      const double total = std::accumulate(counted.begin(), counted.end(), 0.0);
      for (int r = first; r < first + local; ++r) parts.shares.push_back(total > 0 ? counted[r] / total : 0.0);
    }
  }
  place_model(parts.shards[0]);
  return parts;
}

SplitBatch StepFunctions::split_worker_part(const Batch& part, std::size_t step, const char* method, bool scaled) {
  const int local = distribution_.num_local_replicas();
  const int workers = distribution_.num_workers();
  const std::string where = std::string(method) + " (" + distribution_.name() + ", each worker's own batches)";
  // The workers tell each other their parts' rows and the loss elements they count (padding counts
  // none): the largest part sets the size, as the first batch does for a global batch (a worker
  // whose data holds less than a part pads it), and the counts make each replica's share.
  const std::vector<double> counted_rows = counted_per_row(part, model_.loss());
  const double mine[] = {static_cast<double>(rows_of(part)),
                         std::accumulate(counted_rows.begin(), counted_rows.end(), 0.0)};
  const std::vector<double> all = distribution_.gather_from_workers(mine);
  std::int64_t largest = 0;
  double total = 0;
  for (std::size_t w = 0; w < all.size(); w += 2) {
    largest = std::max(largest, static_cast<std::int64_t>(all[w]));
    total += all[w + 1];
  }
  if (worker_rows_ == 0) worker_rows_ = largest;
  const std::int64_t size = std::max(largest, worker_rows_);
  distribute::rows_per_replica(size, local, where,
                               "use a global batch size that is a multiple of " +
                                   std::to_string(distribution_.num_replicas_in_sync()) +
                                   ", so each worker's part divides by its " + std::to_string(local) + " replicas");
  const Batch padded = padded_to(part, size);
  SplitBatch parts{.global = padded, .global_rows = size * workers};
  parts.shards = shards_of(padded, step, local, 0, local, where);
  if (scaled) {
    for (const double c : counted_per_replica(counted_rows, size, local)) {
      parts.shares.push_back(total > 0 ? c / total : 0.0);
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

std::vector<SplitBatch> StepFunctions::split_each(const std::vector<Batch>& batches, const char* method, bool scaled,
                                                  bool per_worker) {
  std::vector<SplitBatch> out;
  for (std::size_t k = 0; k < batches.size(); ++k) {
    out.push_back(per_worker ? split_worker_part(batches[k], k, method, scaled)
                             : split_global(batches[k], k, method, scaled));
  }
  return out;
}

void StepFunctions::train(const std::vector<Batch>& batches, bool per_worker) {
  const std::vector<SplitBatch> steps = split_each(batches, "fit", /*scaled=*/true, per_worker);
  trained_rows_ = steps.back().global_rows;
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

void StepFunctions::test(const std::vector<Batch>& batches, bool per_worker) {
  const std::vector<SplitBatch> steps = split_each(batches, "evaluate", /*scaled=*/true, per_worker);
  run(
      test_, "test_step", steps, [this] { return test_state(); },
      [this](const Batch& shard) {
        model_.test_step(shard);
        return std::vector<Tensor>{};
      });
  warn_if_not_at_training_batch(steps.back().global_rows);
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

std::vector<Outputs> StepFunctions::predict(const std::vector<Batch>& batches, bool per_worker) {
  const std::vector<SplitBatch> steps = split_each(batches, "predict", /*scaled=*/false, per_worker);
  // A step's outputs travel as a list: the one tensor, or the model's outputs in name order.
  std::vector<std::string> names = model_.output_names();
  std::sort(names.begin(), names.end());
  const StepOutputs results = run(
      predict_, "predict_step", steps, [this] { return model_.weights(); },
      // By value: a compiled step keeps this function and calls it again to trace a new signature.
      [this, names](const Batch& shard) {
        autodiff::NoGradScope no_grad;
        const Outputs predicted = model_.predict_step(shard.x);
        std::vector<std::string> keys;
        for (const auto& [key, tensor] : predicted.named()) keys.push_back(key);
        if (keys != names) {
          throw ValueError("model '" + model_.name() + "': predict_step returned " +
                           (keys.empty() ? std::string("one tensor") : std::to_string(keys.size()) + " named outputs") +
                           ", and the model has " +
                           (names.empty() ? std::string("one output") : std::to_string(names.size()) + " outputs") +
                           "; return what call_outputs returns");
        }
        return predicted.tensors();
      });
  std::vector<Outputs> out;
  for (std::size_t k = 0; k < results.size(); ++k) {
    // Each worker's part ends in its own padding: the rows every worker's mask keeps, once a step.
    const Tensor kept = per_worker ? rows_every_worker_keeps(steps[k]) : Tensor();
    std::vector<Tensor> joined;
    for (std::size_t i = 0; i < results[k][0].size(); ++i) {
      std::vector<Tensor> replicas;
      for (const std::vector<Tensor>& replica : results[k]) replicas.push_back(replica.at(i));
      // Every replica's rows in sync, on every worker: predict returns the whole batch's outputs.
      const Tensor gathered = distribution_.all_gather(replicas);
      joined.push_back(kept.defined() ? ops::boolean_mask(gathered, kept) : first_rows(gathered, rows_of(batches[k])));
    }
    if (names.empty()) {
      out.emplace_back(joined.front());
      continue;
    }
    std::map<std::string, Tensor> named;
    for (std::size_t i = 0; i < names.size(); ++i) named.emplace(names[i], joined[i]);
    out.emplace_back(std::move(named));
  }
  return out;
}

Tensor StepFunctions::rows_every_worker_keeps(const SplitBatch& step) const {
  std::vector<Tensor> masks;
  for (const Batch& shard : step.shards) masks.push_back(shard.row_mask);
  const Tensor kept = distribution_.all_gather(masks);
  return ops::greater(kept, ops::scalar_like(kept, 0.0));
}

}  // namespace kestrel::detail
