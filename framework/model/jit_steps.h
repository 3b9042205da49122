// JitSteps: a Model's train, test and predict steps compiled by jit_compile (internal to Model).
//
// Each step is a jit::StatefulFunction over the variables it touches: the train step over the
// weights, the optimizer's variables, the metrics' state and the loss tracker's; the test step
// over the weights and the metrics; the predict step over the weights. A batch becomes named
// arguments ("x" or "x.<input name>", "y", "sample_weight", "row_mask"), so the compile log's
// signature reads as the batch does. Every batch carries a row_mask, and the first batch of a
// fit / evaluate / predict sets the batch size that later partial batches are padded to: the
// last batch of an epoch replays the compiled program instead of compiling another.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "framework/jit/stateful_function.h"
#include "framework/model/batch.h"

namespace kestrel {
class Model;
struct JitStats;
}  // namespace kestrel

namespace kestrel::detail {

class JitSteps {
 public:
  explicit JitSteps(Model& model);
  ~JitSteps();

  void train(const Batch& batch);
  void test(const Batch& batch);
  /// The outputs for the batch's real rows.
  Tensor predict(const Batch& batch);
  /// A new fit, evaluate or predict begins: its first batch sets the compiled batch size.
  void start_run();
  JitStats stats() const;

 private:
  struct Step {
    std::unique_ptr<jit::StatefulFunction> function;
    std::int64_t rows = 0;  // the batch size this run pads to (0: not yet known)
    Tensor ones;            // the row mask of a full batch
  };
  using StepBody = std::function<std::vector<Tensor>(const Batch&)>;
  /// Makes the step's program on its first batch, after building the model so its state is whole.
  void make_function(Step& step, const Batch& batch, const char* name,
                     const std::function<std::vector<Variable>()>& state, StepBody body);
  std::vector<Tensor> run(Step& step, const Batch& batch);
  void build_model(const Batch& batch);
  std::vector<Variable> weight_state() const;
  std::vector<Variable> train_state() const;
  std::vector<Variable> test_state() const;

  Model& model_;
  Step train_;
  Step test_;
  Step predict_;
};

}  // namespace kestrel::detail
