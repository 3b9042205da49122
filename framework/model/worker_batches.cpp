#include "framework/model/worker_batches.h"

#include <algorithm>
#include <array>
#include <functional>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/model/batch_args.h"

namespace kestrel::detail {
namespace {

// The shape of a batch but for its rows: what the workers' batches of a step must share.
std::string shape_without_rows(const Batch& batch) {
  std::string out;
  for (const auto& [name, tensor] : args_of(batch)) {
    if (name == "row_mask") continue;  // a worker's last, masked batch has one; the others may not
    std::string dims = "[rows";
    for (std::size_t d = 1; d < tensor.shape().dims().size(); ++d) {
      dims += ',';
      dims += std::to_string(tensor.shape().dims()[d]);
    }
    out += (out.empty() ? "" : ", ") + name + ": " + std::string(to_string(tensor.dtype())) + dims + "]";
  }
  return out;
}

// A hash that a double holds exactly, so it can travel with the other counts.
double hash_of(const std::string& text) { return static_cast<double>(std::hash<std::string>{}(text)&0xffffffffu); }

// What a worker tells the others at each step.
struct StepNote {
  static constexpr std::size_t kSize = 3;
  bool has_batch = false;
  bool ran_out = false;  // its data, read on across epochs, ended (BatchSource::ran_out)
  // The hash of shape_without_rows: of its batch, or of its last one when it has none (-1: never had one).
  double shape = -1;

  std::array<double, kSize> encode() const { return {has_batch ? 1.0 : 0.0, ran_out ? 1.0 : 0.0, shape}; }
  static StepNote decode(const double* values) { return {values[0] != 0, values[1] != 0, values[2]}; }
};

class WorkerBatches final : public BatchSource {
 public:
  WorkerBatches(std::unique_ptr<BatchSource> own, const distribute::Distribution& distribution, const char* method)
      : own_(std::move(own)), distribution_(distribution), method_(method) {
    // Workers whose pipelines differ in length run as many steps as the longest.
    const double mine[] = {static_cast<double>(own_->steps())};
    const std::vector<double> all = distribution_.gather_from_workers(mine);
    const bool known = std::all_of(all.begin(), all.end(), [](double steps) { return steps >= 0; });
    steps_ = known ? static_cast<std::int64_t>(*std::max_element(all.begin(), all.end())) : -1;
  }

  std::int64_t steps() const override { return steps_; }
  void start_epoch(int epoch) override {
    own_->start_epoch(epoch);
    own_ended_ = false;
    step_ = 0;
  }
  bool ran_out() const override { return ran_out_; }
  bool per_worker() const override { return true; }
  void end_epoch(const char* method) override { own_->end_epoch(method); }

  std::optional<Batch> next() override {
    // Once this worker's pass has ended it is not asked again (a pipeline need not answer twice).
    std::optional<Batch> batch = own_ended_ ? std::nullopt : own_->next();
    own_ended_ = !batch;
    if (batch) last_shape_ = shape_without_rows(*batch);
    const StepNote mine{.has_batch = batch.has_value(),
                        .ran_out = !batch && own_->ran_out(),
                        .shape = last_shape_.empty() ? -1.0 : hash_of(last_shape_)};
    const std::array<double, StepNote::kSize> encoded = mine.encode();
    const std::vector<double> all = distribution_.gather_from_workers(encoded);
    std::vector<StepNote> notes;
    for (std::size_t w = 0; w * StepNote::kSize < all.size(); ++w) {
      notes.push_back(StepNote::decode(&all[w * StepNote::kSize]));
    }
    const auto with_batch = std::find_if(notes.begin(), notes.end(), [](const StepNote& n) { return n.has_batch; });
    if (with_batch == notes.end()) {
      ran_out_ = std::any_of(notes.begin(), notes.end(), [](const StepNote& n) { return n.ran_out; });
      return std::nullopt;
    }
    check_shapes_agree(notes, with_batch->shape);
    ++step_;
    if (batch) {
      last_ = *batch;
      return batch;
    }
    // This worker's data has ended: its last batch again, counting for nothing.
    Batch masked = *last_;
    masked.row_mask = Tensor::zeros({masked.x.batch_size()});
    return masked;
  }

 private:
  // Every worker, with a batch or filling in with its last, must have the step's shape; all
  // workers see the same notes, so all throw together.
  void check_shapes_agree(const std::vector<StepNote>& notes, double shape) const {
    const bool agree = std::all_of(notes.begin(), notes.end(), [&](const StepNote& n) { return n.shape == shape; });
    if (agree) return;
    const std::string mine = last_shape_.empty() ? "no batch at all" : last_shape_;
    const bool someone_never_had_one =
        std::any_of(notes.begin(), notes.end(), [](const StepNote& n) { return n.shape < 0; });
    // check_workers_agree names each worker's batch; it throws here, since the hashes differ.
    distribution_.check_workers_agree(
        std::string(method_) + "'s batches at step " + std::to_string(step_) +
            " (each worker reads its own input pipeline, by FILE or OFF auto-sharding: " +
            (someone_never_had_one ? "a worker's pipeline yielded no batch at all; give every worker data, or " : "") +
            "pad every batch to one fixed shape, e.g. padded_batch's padded_shapes or the tokenizer's "
            "padding = max_length, or set the dataset's auto_shard_policy to DATA)",
        mine);
    throw ValueError(std::string(method_) + ": the workers' batches at step " + std::to_string(step_) +
                     " differ in shape; pad every batch to one fixed shape or use DATA auto-sharding");
  }

  std::unique_ptr<BatchSource> own_;
  const distribute::Distribution& distribution_;
  const char* method_;
  std::int64_t steps_ = -1;
  std::int64_t step_ = 0;
  bool own_ended_ = false;
  bool ran_out_ = false;
  std::optional<Batch> last_;
  std::string last_shape_;
};

}  // namespace

std::unique_ptr<BatchSource> worker_batches(std::unique_ptr<BatchSource> own,
                                            const distribute::Distribution& distribution, const char* method) {
  return std::make_unique<WorkerBatches>(std::move(own), distribution, method);
}

}  // namespace kestrel::detail
