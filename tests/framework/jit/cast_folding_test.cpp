// CastFolding: a loss on bfloat16 logits widened to float32 reads the logits themselves, and
// its gradient is written in bfloat16 in place of the cast after it, with the same bits; casts
// that another op needs, or ops that do not widen exactly, stay.
#include "framework/jit/passes/cast_folding.h"

#include <gtest/gtest.h>

#include <vector>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/random.h"
#include "framework/jit/passes/dead_code_elimination.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/matmul.h"
#include "framework/ops/nn.h"
#include "framework/ops/reduce.h"
#include "tests/framework/jit/pass_test_support.h"

namespace kestrel::jit {
namespace {

using pass_testing::count_ops;
using pass_testing::run_pass;
using pass_testing::trace_graph;

// bfloat16 logits [rows, classes] and int64 labels, a few of them ignored (-100).
std::vector<Tensor> logits_and_labels(std::int64_t rows, std::int64_t classes) {
  const Tensor logits = ops::cast(random::normal({rows, classes}, random::Key(1), 0.0, 3.0), DType::bfloat16);
  std::vector<std::int64_t> labels = random::randint({rows}, random::Key(2), 0, classes).to_vector<std::int64_t>();
  labels[1] = -100;
  return {logits, Tensor::from_vector<std::int64_t>(labels, {rows})};
}

// The mean loss of the logits taken to float32, as a mixed_bfloat16 model's loss reads them,
// and its gradient in the bfloat16 logits.
std::vector<Tensor> loss_and_gradient(const std::vector<Tensor>& in) {
  GradientTape tape;
  tape.watch(in[0]);
  const Tensor loss = ops::mean(ops::sparse_softmax_cross_entropy(ops::cast(in[0], DType::float32), in[1]));
  return {loss, tape.gradient(loss, {in[0]})[0]};
}

Graph folded(const Graph& graph) {
  Graph out = graph;
  EXPECT_TRUE(run_pass(CastFolding(), out)) << out.to_string();
  run_pass(DeadCodeElimination(), out);
  return out;
}

TEST(CastFolding, TheLossAndItsGradientReadTheBfloat16LogitsWithTheSameBits) {
  // Short rows (many to a block) and rows longer than a block.
  for (const auto& [rows, classes] : {std::pair<std::int64_t, std::int64_t>{300, 7}, {6, 5000}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(classes));
    const std::vector<Tensor> inputs = logits_and_labels(rows, classes);
    const Graph before = trace_graph(loss_and_gradient, inputs);
    ASSERT_EQ(count_ops(before, OpId::cast), 2) << before.to_string();
    const Graph after = folded(before);
    EXPECT_EQ(count_ops(after, OpId::cast), 0) << after.to_string();
    pass_testing::expect_same_outputs(before, after, inputs);
  }
}

TEST(CastFolding, CastsOthersNeedStay) {
  const std::vector<Tensor> inputs = logits_and_labels(8, 5);
  // The widened logits are an output as well: the loss reads past the cast, which stays.
  Graph shared = trace_graph(
      [](const std::vector<Tensor>& x) {
        const Tensor wide = ops::cast(x[0], DType::float32);
        return std::vector<Tensor>{wide, ops::sparse_softmax_cross_entropy(wide, x[1])};
      },
      inputs);
  const Graph shared_before = shared;
  shared = folded(shared);
  EXPECT_EQ(count_ops(shared, OpId::cast), 1) << shared.to_string();
  pass_testing::expect_same_outputs(shared_before, shared, inputs);

  // A bfloat16 product is not the float32 product of the same values rounded (the GEMMs sum in
  // their own orders): matmul keeps its float32 operands.
  Graph product = trace_graph(
      [](const std::vector<Tensor>& x) {
        const Tensor wide = ops::cast(x[0], DType::float32);
        return std::vector<Tensor>{ops::cast(ops::matmul(wide, wide, {.transpose_b = true}), DType::bfloat16)};
      },
      inputs);
  EXPECT_FALSE(run_pass(CastFolding(), product)) << product.to_string();
}

}  // namespace
}  // namespace kestrel::jit
