// Every loss and metric, traced as a compiled train step traces them: the batch is symbolic and
// so is each metric's state (its variables hold graph inputs), so a loss or update_state that
// reads a value on the host throws JitError (rule 1) and fails here, naming it. Each traced graph
// is then run and must give what the eager call gives. Every name losses::get and metrics::get
// know is covered, plus the options that change the computation (logits, ignore_class, ...).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/jit/executor.h"
#include "framework/jit/trace.h"
#include "framework/losses/losses.h"
#include "framework/metrics/metrics.h"
#include "framework/ops/ops.h"

namespace kestrel::jit {
namespace {

constexpr std::int64_t kClasses = 6;  // more than top-k's default k = 5

/// A loss's or metric's arguments. The sample weights include 0 (a padded sample).
struct Batch {
  Tensor y_true;
  Tensor y_pred;
  Tensor sample_weight = Tensor::from_vector<float>({1.0f, 0.5f, 0.0f, 2.0f, 1.0f, 0.25f}, {6});
};

Tensor sparse_labels() { return Tensor::from_vector<std::int64_t>({0, 3, 5, 1, 2, 3}, {6}); }
Tensor class_scores() { return random::normal({6, kClasses}, random::Key(11)); }

Batch sparse_with_logits() { return {sparse_labels(), class_scores()}; }
Batch sparse_with_probabilities() { return {sparse_labels(), ops::softmax(class_scores())}; }
Batch one_hot_with_logits() { return {ops::one_hot(sparse_labels(), kClasses), class_scores()}; }
Batch one_hot_with_probabilities() { return {ops::one_hot(sparse_labels(), kClasses), ops::softmax(class_scores())}; }
Batch binary_with_logits() {
  return {Tensor::from_vector<float>({1, 0, 1, 1, 0, 0}, {6, 1}), random::normal({6, 1}, random::Key(12), 0, 2)};
}
Batch binary_with_probabilities() {
  return {Tensor::from_vector<float>({1, 0, 1, 1, 0, 0}, {6, 1}), random::uniform({6, 1}, random::Key(13))};
}
Batch exact_matches() {
  return {Tensor::from_vector<float>({1, 0, 2, 1, 0, 2}, {6, 1}),
          Tensor::from_vector<float>({1, 1, 2, 0, 0, 2}, {6, 1})};
}
Batch regression() { return {random::normal({6, 3}, random::Key(14)), random::normal({6, 3}, random::Key(15))}; }
// Tokens with padding (-1) and a [batch, time] weight: a language model's masked loss.
Batch padded_sequences() {
  return {Tensor::from_vector<std::int64_t>({0, 3, -1, 5, -1, -1}, {2, 3}),
          random::normal({2, 3, kClasses}, random::Key(16)), Tensor::from_vector<float>({1.0f, 0.5f}, {2})};
}

using MakeBatch = std::function<Batch()>;

// The batch each name that get() knows is traced with. A name missing here fails the coverage test.
const std::map<std::string, MakeBatch>& loss_batches() {
  static const std::map<std::string, MakeBatch> batches = {
      {"sparse_categorical_crossentropy", sparse_with_probabilities},
      {"categorical_crossentropy", one_hot_with_probabilities},
      {"binary_crossentropy", binary_with_probabilities},
      {"mean_squared_error", regression},
      {"mean_absolute_error", regression},
  };
  return batches;
}

const std::map<std::string, MakeBatch>& metric_batches() {
  static const std::map<std::string, MakeBatch> batches = {
      {"accuracy", exact_matches},
      {"binary_accuracy", binary_with_probabilities},
      {"categorical_accuracy", one_hot_with_logits},
      {"sparse_categorical_accuracy", sparse_with_logits},
      {"top_k_categorical_accuracy", one_hot_with_logits},
      {"sparse_top_k_categorical_accuracy", sparse_with_logits},
      {"mean_squared_error", regression},
      {"mean_absolute_error", regression},
      {"auc", binary_with_probabilities},
      {"precision", binary_with_probabilities},
      {"recall", binary_with_probabilities},
      {"mean", regression},
  };
  return batches;
}

struct LossCase {
  std::string label;
  std::function<Handle<losses::Loss>()> make;
  MakeBatch batch;
};

struct MetricCase {
  std::string label;
  std::function<Handle<metrics::Metric>()> make;
  MakeBatch batch;
};

std::vector<LossCase> loss_cases() {
  using namespace losses;
  std::vector<LossCase> cases;
  for (const std::string& name : losses::names()) {
    auto batch = loss_batches().find(name);
    if (batch == loss_batches().end()) continue;  // reported by the coverage test
    cases.push_back({name, [name] { return losses::get(name); }, batch->second});
  }
  cases.push_back({"sparse_categorical_crossentropy_from_logits",
                   [] { return Handle<Loss>(SparseCategoricalCrossentropy({.from_logits = true})); },
                   sparse_with_logits});
  cases.push_back(
      {"sparse_categorical_crossentropy_ignore_class",
       [] { return Handle<Loss>(SparseCategoricalCrossentropy({.from_logits = true, .ignore_class = -1})); },
       padded_sequences});
  cases.push_back({"sparse_categorical_crossentropy_class_axis_first",
                   [] { return Handle<Loss>(SparseCategoricalCrossentropy({.from_logits = true, .axis = 0})); },
                   [] {
                     return Batch{sparse_labels(), ops::transpose(class_scores(), {1, 0})};
                   }});
  cases.push_back({"categorical_crossentropy_from_logits_smoothed",
                   [] { return Handle<Loss>(CategoricalCrossentropy({.from_logits = true, .label_smoothing = 0.1})); },
                   one_hot_with_logits});
  cases.push_back({"binary_crossentropy_from_logits_smoothed",
                   [] { return Handle<Loss>(BinaryCrossentropy({.from_logits = true, .label_smoothing = 0.1})); },
                   binary_with_logits});
  cases.push_back({"mean_squared_error_sum",
                   [] { return Handle<Loss>(MeanSquaredError({.reduction = Reduction::sum})); }, regression});
  cases.push_back({"mean_absolute_error_none",
                   [] { return Handle<Loss>(MeanAbsoluteError({.reduction = Reduction::none})); }, regression});
  return cases;
}

std::vector<MetricCase> metric_cases() {
  using namespace metrics;
  std::vector<MetricCase> cases;
  for (const std::string& name : metrics::names()) {
    auto batch = metric_batches().find(name);
    if (batch == metric_batches().end()) continue;  // reported by the coverage test
    cases.push_back({name, [name] { return metrics::get(name); }, batch->second});
  }
  cases.push_back({"binary_accuracy_logit_threshold", [] { return Handle<Metric>(BinaryAccuracy({.threshold = 0.0})); },
                   binary_with_logits});
  cases.push_back({"top_2_categorical_accuracy", [] { return Handle<Metric>(TopKCategoricalAccuracy({.k = 2})); },
                   one_hot_with_logits});
  cases.push_back({"sparse_top_2_categorical_accuracy",
                   [] { return Handle<Metric>(SparseTopKCategoricalAccuracy({.k = 2})); }, sparse_with_logits});
  cases.push_back({"precision_three_thresholds",
                   [] {
                     return Handle<Metric>(Precision({.thresholds = {0.2, 0.5, 0.8}}));
                   },
                   binary_with_probabilities});
  cases.push_back({"recall_three_thresholds",
                   [] {
                     return Handle<Metric>(Recall({.thresholds = {0.2, 0.5, 0.8}}));
                   },
                   binary_with_probabilities});
  cases.push_back({"auc_pr_from_logits",
                   [] { return Handle<Metric>(AUC({.num_thresholds = 50, .curve = "PR", .from_logits = true})); },
                   binary_with_logits});
  // "accuracy" as compile() resolves it against each loss.
  cases.push_back({"accuracy_for_sparse_categorical_crossentropy",
                   [] { return metrics::get("accuracy", "sparse_categorical_crossentropy"); }, sparse_with_logits});
  cases.push_back({"accuracy_for_binary_crossentropy", [] { return metrics::get("accuracy", "binary_crossentropy"); },
                   binary_with_probabilities});
  return cases;
}

/// The batch's tensors in argument order, without the weights unless `weighted`.
std::vector<Tensor> arguments(const Batch& batch, bool weighted) {
  std::vector<Tensor> args{batch.y_true, batch.y_pred};
  if (weighted) args.push_back(batch.sample_weight);
  return args;
}

std::vector<Tensor> symbolic_arguments(Trace& trace, const std::vector<Tensor>& args) {
  static const char* const argument_names[] = {"y_true", "y_pred", "sample_weight"};
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < args.size(); ++i) out.push_back(trace.input(args[i].spec(), argument_names[i]));
  return out;
}

Tensor weight_of(const std::vector<Tensor>& args) { return args.size() > 2 ? args[2] : Tensor(); }

void expect_close(const Tensor& compiled, const Tensor& eager, const std::string& what) {
  ASSERT_EQ(compiled.spec(), eager.spec()) << what;
  const std::vector<double> got = compiled.to_vector<double>();
  const std::vector<double> want = eager.to_vector<double>();
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-5 * (1.0 + std::abs(want[i]))) << what << ", element " << i;
  }
}

std::string weighting(bool weighted) { return weighted ? " with sample_weight" : " without sample_weight"; }

// The loss traced on symbolic inputs (a JitError fails the test), then compiled and run.
void check_loss(const LossCase& c, bool weighted) {
  const std::string what = c.label + weighting(weighted);
  Handle<losses::Loss> loss = c.make();
  const std::vector<Tensor> args = arguments(c.batch(), weighted);
  Graph graph;
  {
    Trace trace;
    TraceScope active(trace);
    const std::vector<Tensor> in = symbolic_arguments(trace, args);
    Tensor value;
    try {
      value = (*loss)(in[0], in[1], weight_of(in));
    } catch (const JitError& e) {
      ADD_FAILURE() << what << " reads a traced value on the host: " << e.what();
      return;
    }
    graph = trace.finish({value});
  }
  Executor executor(std::move(graph));
  expect_close(executor.run(args)[0], (*loss)(args[0], args[1], weight_of(args)), what);
}

// update_state traced with the batch and the metric's state symbolic (a JitError fails the
// test); the compiled update, run on the eager state, must leave what the eager update leaves.
void check_metric(const MetricCase& c, bool weighted) {
  const std::string what = c.label + weighting(weighted);
  Handle<metrics::Metric> metric = c.make();
  const std::vector<Tensor> args = arguments(c.batch(), weighted);
  metric->update_state(args[0], args[1], weight_of(args));  // a state that is not all zeros
  const std::vector<Variable> state = metric->variables();
  std::vector<Tensor> before;
  for (const Variable& v : state) before.push_back(v.value());

  Graph graph;
  bool traced = true;
  {
    Trace trace;
    TraceScope active(trace);
    const std::vector<Tensor> in = symbolic_arguments(trace, args);
    for (const Variable& v : state) v.assign(trace.input(v.value().spec(), v.name()));
    try {
      metric->update_state(in[0], in[1], weight_of(in));
    } catch (const JitError& e) {
      ADD_FAILURE() << what << ": update_state reads a traced value on the host: " << e.what();
      traced = false;
    }
    std::vector<Tensor> after;
    for (const Variable& v : state) after.push_back(v.value());
    if (traced) graph = trace.finish(after);
  }
  for (std::size_t i = 0; i < state.size(); ++i) state[i].assign(before[i]);
  if (!traced) return;

  Executor executor(std::move(graph));
  std::vector<Tensor> inputs = args;
  inputs.insert(inputs.end(), before.begin(), before.end());
  const std::vector<Tensor> compiled = executor.run(inputs);
  metric->update_state(args[0], args[1], weight_of(args));
  ASSERT_EQ(compiled.size(), state.size()) << what;
  for (std::size_t i = 0; i < state.size(); ++i) {
    expect_close(compiled[i], state[i].value(), what + ", " + state[i].name());
  }
}

TEST(TraceLossesMetricsCoverage, EveryLossAndMetricThatGetKnowsHasABatch) {
  for (const std::string& name : losses::names()) {
    EXPECT_TRUE(loss_batches().count(name)) << "loss '" << name << "' has no batch in trace_losses_metrics_test.cpp";
  }
  for (const std::string& name : metrics::names()) {
    EXPECT_TRUE(metric_batches().count(name))
        << "metric '" << name << "' has no batch in trace_losses_metrics_test.cpp";
  }
}

class TracedLoss : public ::testing::TestWithParam<std::string> {};

const LossCase& find_loss_case(const std::string& label) {
  static const std::vector<LossCase> cases = loss_cases();
  for (const LossCase& c : cases) {
    if (c.label == label) return c;
  }
  throw std::out_of_range("no loss case " + label);
}

std::vector<std::string> loss_labels() {
  std::vector<std::string> labels;
  for (const LossCase& c : loss_cases()) labels.push_back(c.label);
  return labels;
}

TEST_P(TracedLoss, TracesAndMatchesEager) {
  check_loss(find_loss_case(GetParam()), /*weighted=*/false);
  check_loss(find_loss_case(GetParam()), /*weighted=*/true);
}

INSTANTIATE_TEST_SUITE_P(Losses, TracedLoss, ::testing::ValuesIn(loss_labels()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

class TracedMetric : public ::testing::TestWithParam<std::string> {};

const MetricCase& find_metric_case(const std::string& label) {
  static const std::vector<MetricCase> cases = metric_cases();
  for (const MetricCase& c : cases) {
    if (c.label == label) return c;
  }
  throw std::out_of_range("no metric case " + label);
}

std::vector<std::string> metric_labels() {
  std::vector<std::string> labels;
  for (const MetricCase& c : metric_cases()) labels.push_back(c.label);
  return labels;
}

TEST_P(TracedMetric, UpdateStateTracesAndMatchesEager) {
  check_metric(find_metric_case(GetParam()), /*weighted=*/false);
  check_metric(find_metric_case(GetParam()), /*weighted=*/true);
}

INSTANTIATE_TEST_SUITE_P(Metrics, TracedMetric, ::testing::ValuesIn(metric_labels()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace kestrel::jit
