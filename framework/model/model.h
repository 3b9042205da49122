// Model: a Layer that trains — compile, fit, evaluate, predict — as keras.Model.
//
//   class Classifier : public Model {
//    public:
//     Classifier() : hidden_(add<layers::Dense>(128, layers::DenseOptions{.activation = "relu"})),
//                    out_(add<layers::Dense>(10)) {}
//     Tensor call(const Inputs& x, bool training) override { return out_(hidden_(x, training)); }
//    private:
//     layers::Dense& hidden_;
//     layers::Dense& out_;
//   };
//
//   Classifier model;
//   model.compile({.optimizer = "adam",
//                  .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
//                  .metrics = {"accuracy"}});
//   History h = model.fit(x_train, y_train, {.batch_size = 64, .epochs = 5, .validation_split = 0.1});
//   Logs test = model.evaluate(x_test, y_test);    // {"loss": ..., "accuracy": ...}
//
//   auto train = data::Dataset::from_tensor_slices({{"x", x_train}, {"labels", y_train}}).shuffle(60000, 1).batch(64);
//   model.fit(train, {.epochs = 5, .validation_data = val});   // batches from a Dataset
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "framework/data/dataset.h"
#include "framework/distribute/distribution.h"
#include "framework/layers/layer.h"
#include "framework/metrics/mean.h"
#include "framework/model/batch.h"
#include "framework/model/compile_options.h"
#include "framework/model/fit_options.h"
#include "framework/model/inputs.h"

namespace kestrel::distribute {
class DistributedDataset;
}  // namespace kestrel::distribute

namespace kestrel {

class FunctionalGraph;

namespace detail {
class BatchSource;
class CompiledLoss;
class CompiledMetrics;
class StepFunctions;
}  // namespace detail

struct LoadWeightsOptions {
  /// Match Keras 2 layers by name instead of by order; layers absent from the file are left alone.
  bool by_name = false;
  /// Skip layers whose weight shapes differ instead of failing (Keras 2 files: with by_name only).
  bool skip_mismatch = false;
};

class Model : public Layer {
 public:
  explicit Model(std::string name = "", std::string class_name = "Model");
  /// A Functional model (Keras's Model(inputs, outputs)): it replays the layer calls that lead from
  /// `inputs`, Input() tensors, to `outputs` (layers/input_layer.h). Its data is one tensor for one
  /// input, and named tensors for named inputs ({{"ids", ids}, {"mask", mask}}). Named outputs
  /// ({{"digit", digit}, {"size", size}}) make a model of several outputs, named so in its
  /// losses, metrics, targets and predictions. The layers called on Keras tensors as variables
  /// must outlive the model; temporaries are kept by it.
  Model(const Inputs& inputs, const Outputs& outputs, std::string name = "");
  /// Several inputs whose data is named by the Inputs' names.
  Model(const std::vector<Tensor>& inputs, const Outputs& outputs, std::string name = "");
  /// Several outputs in a list, named by the layers that make them (Keras's output_names).
  Model(const Inputs& inputs, const std::vector<Tensor>& outputs, std::string name = "");
  Model(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs, std::string name = "");
  ~Model() override;

  /// The forward pass, written by subclasses; a Functional model's replays its layer calls.
  virtual Tensor call(const Inputs& inputs, bool training);
  Tensor call(const Tensor& x, bool training) override { return call(Inputs(x), training); }
  /// Every output of the forward pass: call()'s one tensor, or, for a model of several outputs, a
  /// tensor per output name. A subclass with several outputs overrides this and output_names().
  virtual Outputs call_outputs(const Inputs& inputs, bool training);
  /// The names of a model of several outputs, as its losses, metrics and targets use them; empty
  /// for a model of one output.
  virtual std::vector<std::string> output_names() const;
  bool is_model() const override { return true; }
  /// Builds on first use from the inputs, then runs call(). On Keras tensors the call is recorded
  /// for a Functional model instead (a model is a layer of another). A model of several outputs
  /// is run with outputs_of.
  Tensor operator()(const Inputs& inputs, bool training = false);
  /// As operator(), for every output: one tensor, or a tensor per output name.
  Outputs outputs_of(const Inputs& inputs, bool training = false);
  /// A model in a Functional config is called on its one input or its named inputs.
  Tensor call_recorded(const functional::RecordedCall& call) override;
  /// The Functional model's layer graph; null for a subclassed or Sequential model.
  const FunctionalGraph* functional_graph() const { return functional_.get(); }

  /// A Functional model's config as Keras writes it (its layers, each with the calls that feed
  /// it, and its inputs and outputs); for a subclass, the name, trainable flag and dtype policy,
  /// which a subclass with options extends (framework/model/functional_config.cpp).
  nlohmann::json get_config() const override;
  /// The Functional model a config describes, with fresh weights. Throws ValueError naming the
  /// layer when the config's graph has a cycle or reads a layer it does not hold.
  static std::unique_ptr<Model> from_config(const nlohmann::json& config);

  /// Builds the weights by running the model once, in inference mode, on zeros of this shape.
  void build(const Shape& input_shape) override;

  /// Ties weights that layers share (an output projection to the input embedding, say) with
  /// Variable::tie_to, as Hugging Face's tie_weights does. Models that tie after their layers are
  /// built override it; the default ties nothing. It runs after the first call builds the model
  /// and when a distribution strategy places the model on its replicas, so it must be idempotent.
  virtual void tie_weights() {}

  void compile(CompileOptions options);
  bool compiled() const { return optimizer_ != nullptr; }
  /// The options given to compile() (jit_compile and steps_per_execution are read by the jit).
  const CompileOptions& compile_options() const { return compile_options_; }
  /// y: the targets, named by output for a model of several outputs.
  History fit(const Inputs& x, const Outputs& y, FitOptions options = {});
  /// Loss and metrics over the data, by Keras name (return_dict form): {"loss": ..., "accuracy": ...};
  /// with several outputs also each output's loss and metrics ("digit_loss", "digit_accuracy").
  Logs evaluate(const Inputs& x, const Outputs& y, EvaluateOptions options = {});
  /// Outputs for every sample, batch by batch, concatenated (named, for several outputs).
  Outputs predict(const Inputs& x, PredictOptions options = {});

  /// Trains on a dataset of batches: "labels" (or "label", "y") are the targets, "sample_weight"
  /// the weights, the other keys the inputs ("x" alone is a single tensor). For a model of
  /// several outputs, the keys named after its outputs are their targets. batch_size, shuffle,
  /// validation_split, sample_weight and class_weight do not apply: the dataset decides those.
  /// Under a strategy of several workers, each worker reads the dataset as its auto_shard_policy
  /// says (data/auto_shard.h).
  History fit(const data::Dataset& dataset, FitOptions options = {});
  Logs evaluate(const data::Dataset& dataset, EvaluateOptions options = {});
  /// Outputs for every batch of the dataset (labels, if any, are ignored), concatenated.
  Outputs predict(const data::Dataset& dataset, PredictOptions options = {});
  /// The same over a dataset the model's strategy has distributed already
  /// (experimental_distribute_dataset, distribute_datasets_from_function): each step is its
  /// replicas' elements, joined. predict returns every worker's outputs, in worker order.
  History fit(const distribute::DistributedDataset& dataset, FitOptions options = {});
  Logs evaluate(const distribute::DistributedDataset& dataset, EvaluateOptions options = {});
  Outputs predict(const distribute::DistributedDataset& dataset, PredictOptions options = {});
  /// One optimizer step on one batch; returns the batch's loss and metrics.
  Logs train_on_batch(const Inputs& x, const Outputs& y, const Tensor& sample_weight = Tensor());
  /// Loss and metrics on one batch, without training.
  Logs test_on_batch(const Inputs& x, const Outputs& y, const Tensor& sample_weight = Tensor());

  /// The Keras summary table (layers, output shapes, parameter counts).
  void summary(std::ostream& out) const;
  void summary() const;

  /// Weight values in weights() order (copies of the data).
  std::vector<Tensor> get_weights() const;
  /// Assigns values in weights() order; shapes must match (the error names the weight).
  void set_weights(const std::vector<Tensor>& values);

  /// Saves weights and optimizer state: Keras 3 layout for ".weights.h5", Keras 2 for ".h5".
  /// The file is written to a temporary name and renamed, so a crash never leaves half a file.
  /// Under several workers it is collective: every worker calls it, the chief writes, and each
  /// returns once it has (or throws when the chief's write failed). A callback that only the
  /// chief runs writes with saving::save_weights instead, which waits for nobody.
  void save_weights(const std::string& path) const;
  /// Saves the whole model (config, weights, optimizer state) to a .keras archive, Keras 3's model
  /// file, or to a .h5 file, Keras 2's; models::load_model makes it again from either
  /// (framework/saving/model_file.h). Collective under several workers, as save_weights.
  void save(const std::string& path) const;
  /// Loads a file written by save_weights (or by Keras / h5py in either layout). Both are defined
  /// with the formats, in framework/saving/model_weights.cpp.
  void load_weights(const std::string& path, LoadWeightsOptions options = {});

  /// Compiles so far (zero unless compile() set jit_compile).
  JitStats jit_stats() const;

  /// The distribution strategy the model was compiled under (Keras's distribute_strategy), or
  /// null for the default strategy. fit, evaluate and predict run in its scope.
  const distribute::Distribution* distribution() const { return distribution_; }

  optimizers::Optimizer* optimizer() const { return optimizer_.get(); }
  /// The compiled loss of a model of one output (null without one, or with several outputs).
  losses::Loss* loss() const;
  /// The compiled metrics, then the weighted metrics (for several outputs, every output's).
  const std::vector<std::shared_ptr<metrics::Metric>>& metrics() const;
  /// The state of the loss tracker and of every compiled metric (Keras's metrics_variables):
  /// what a compiled step updates besides the weights and the optimizer.
  std::vector<Variable> metrics_variables() const;
  /// Set by callbacks (EarlyStopping, TerminateOnNaN) to end fit after the current batch.
  bool stop_training = false;
  /// Called by a callback that restores a run (BackupAndRestore) from on_train_begin: fit then
  /// continues at `epoch` (0-based), after the first `step` training steps of it. The input
  /// pipeline is replayed to there (its epochs begun, its batches read, the model not run), so
  /// the data that follows is the data an uninterrupted run would have had.
  void resume_training_at(int epoch, std::int64_t step);

  /// One training step on a batch (Keras's train_step): forward, loss, gradients, optimizer
  /// update, loss tracker and metrics. It reads nothing on the host, so under jit_compile it is
  /// traced and compiled as it is; fit reads the logs from the metrics afterwards.
  ///
  /// Under a strategy of several replicas it runs on every replica, on that replica's shard of
  /// the global batch, each replica on its own thread, overridden or not. The replicas meet where
  /// shared state changes: optimizer()->apply sums their gradients and updates once, track_loss
  /// and update_metrics see every replica's values. compute_loss scales a replica's loss by its
  /// share of the global batch, so an override that calls it trains like one replica; a term an
  /// override adds on its own goes through losses::scale_loss_for_distribution. Under
  /// jit_compile the step, override or not, is traced once into the program every replica runs:
  /// the merge points become its collectives (the all-reduce of the gradients, a kernel's taken as
  /// one product over every replica's rows; the all-gather of the metrics' rows), and what they
  /// update runs once after them.
  virtual void train_step(const Batch& batch);
  /// One evaluation step: forward, loss tracker and metrics (per replica, as train_step).
  virtual void test_step(const Batch& batch);
  /// One prediction step: the outputs for a batch of inputs (per replica, as train_step).
  virtual Outputs predict_step(const Inputs& x);

 protected:
  /// The batch's loss (override to add auxiliary losses). Rows that pad a partial batch
  /// (Batch::row_mask) are left out, so the value is the real rows' loss; in a replica, it is
  /// scaled by the replica's share of the global batch (losses::scale_loss_for_distribution).
  /// With several outputs it is every output's loss, weighted by loss_weights, summed; each
  /// output's own goes to its loss tracker ("digit_loss").
  virtual Tensor compute_loss(const Batch& batch, const Outputs& y_pred);
  /// Adds a batch's loss (compute_loss's value) to the loss tracker (the epoch's "loss"),
  /// weighed by its real rows; the replicas' scaled losses add up to the global batch's.
  void track_loss(const Batch& batch, const Tensor& loss);
  /// Updates the compiled metrics with this batch's predictions (padding rows left out), once
  /// for the global batch when replicas call it.
  void update_metrics(const Batch& batch, const Outputs& y_pred);

 private:
  void require_compiled(const char* method) const;
  /// Checks that the model's variables belong to the strategy it runs under (the one current on
  /// this thread, else its own) and enters that strategy's scope for the call.
  void enter_distribution(std::optional<distribute::DistributionScope>& scope, const char* method) const;
  std::vector<Variable> distributed_variables() const;
  bool jit_enabled() const { return compile_options_.jit_compile && !compile_options_.run_eagerly; }
  /// What the progress line appends under jit_compile (the compiles so far), else null.
  std::function<std::string()> jit_note() const;
  /// The step functions of the model as compiled (made on first use; an uncompiled model predicts eagerly).
  detail::StepFunctions& steps();
  History fit_batches(detail::BatchSource& train, detail::BatchSource* validation, const FitOptions& options);
  /// The model's strategy, or the default one (one replica) when it has none.
  const distribute::Distribution& distribution_or_default() const;
  Logs evaluate_batches(detail::BatchSource& data, std::vector<Handle<Callback>> callbacks, int verbose);
  Outputs predict_batches(detail::BatchSource& data, const PredictOptions& options);
  /// The one output; throws ValueError naming the outputs of a model of several.
  Tensor single_output(const Outputs& outputs) const;
  /// Makes a Functional model's layer graph (the constructors' common part).
  void make_functional(std::vector<Tensor> inputs, std::vector<std::string> keys, std::vector<Tensor> outputs,
                       std::vector<std::string> output_keys);
  Logs metric_logs() const;
  void reset_metrics();

  CompileOptions compile_options_;
  std::shared_ptr<optimizers::Optimizer> optimizer_;
  std::unique_ptr<detail::CompiledLoss> compiled_loss_;
  std::unique_ptr<detail::CompiledMetrics> compiled_metrics_;
  // The running mean of the loss over an epoch, weighted by batch size (Keras's loss tracker).
  // It is a metric, so its state is variables that a compiled step updates like any other.
  std::shared_ptr<metrics::Mean> loss_tracker_;
  std::unique_ptr<detail::StepFunctions> steps_;  // what fit, evaluate and predict run (see steps())
  struct TrainingPosition {
    int epoch = 0;
    std::int64_t step = 0;
  };
  std::optional<TrainingPosition> resume_at_;  // set during on_train_begin by resume_training_at
  const distribute::Distribution* distribution_ = nullptr;
  std::shared_ptr<const FunctionalGraph> functional_;
  std::vector<std::shared_ptr<Layer>> layers_from_config_;  // what from_config made, kept with the model
};

}  // namespace kestrel
