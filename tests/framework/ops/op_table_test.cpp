// Runs the op test table: forward against the reference, gradient against finite differences,
// and checks that every op in KESTREL_OPS has at least one case.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "framework/autodiff/gradcheck.h"
#include "tests/framework/ops/op_case.h"

namespace kestrel::testing {
namespace {

class OpTable : public ::testing::TestWithParam<std::string> {};

TEST_P(OpTable, ForwardMatchesReference) {
  const OpCase& c = find_op_case(GetParam());
  Inputs inputs = c.make_inputs();
  Tensor got = c.run(inputs);
  Tensor want = c.reference(inputs);
  ASSERT_EQ(got.shape(), want.shape()) << c.label;
  std::vector<double> g = got.to_vector<double>();
  std::vector<double> w = want.to_vector<double>();
  for (std::size_t i = 0; i < g.size(); ++i) {
    double error = std::fabs(g[i] - w[i]) / (1.0 + std::fabs(w[i]));
    ASSERT_LE(error, c.tolerance) << c.label << " element " << i << ": got " << g[i] << ", want " << w[i];
  }
}

TEST_P(OpTable, GradientMatchesFiniteDifferences) {
  const OpCase& c = find_op_case(GetParam());
  if (!c.no_gradient_because.empty()) GTEST_SKIP() << c.no_gradient_because;
  GradcheckResult r = gradcheck(c.run, c.make_inputs(), c.gradcheck_options);
  EXPECT_TRUE(r.ok) << c.label << ": " << r.report;
}

INSTANTIATE_TEST_SUITE_P(Ops, OpTable, ::testing::ValuesIn(op_case_labels()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(OpTableCoverage, EveryOpHasACase) {
  std::set<OpId> covered;
  for (const OpCase& c : op_case_table()) covered.insert(c.op);
  for (std::size_t i = 0; i < kNumOps; ++i) {
    EXPECT_TRUE(covered.count(static_cast<OpId>(i)))
        << "op '" << op_name(static_cast<OpId>(i)) << "' has no case in the op test table";
  }
}

TEST(OpTableCoverage, EveryDifferentiableOpHasAGradientCheck) {
  // Ops without a float-to-float path (comparisons, one_hot, argmax, random_fold_in) have nothing to differentiate numerically. cast's
  // float32<->bfloat16 gradient is exact and checked in elementwise_errors_test.cpp, since
  // finite differences cannot see through bfloat16 rounding. fused_elementwise has no gradient by
  // design: it runs after autodiff (optimizer updates, jit-fused regions) and refuses to run
  // under a tape that wants one (fused_elementwise_test.cpp). layer_norm_backprop and
  // layer_norm_gamma_backprop are layer_norm's gradients and have none of their own; layer_norm's
  // gradient check exercises them.
  const std::set<OpId> exempt = {OpId::equal,
                                 OpId::not_equal,
                                 OpId::less,
                                 OpId::less_equal,
                                 OpId::greater,
                                 OpId::greater_equal,
                                 OpId::one_hot,
                                 OpId::cast,
                                 OpId::argmax,
                                 OpId::fused_elementwise,
                                 OpId::random_fold_in,
                                 OpId::layer_norm_backprop,
                                 OpId::layer_norm_gamma_backprop};
  std::set<OpId> checked;
  for (const OpCase& c : op_case_table()) {
    if (c.no_gradient_because.empty()) checked.insert(c.op);
  }
  for (std::size_t i = 0; i < kNumOps; ++i) {
    auto op = static_cast<OpId>(i);
    if (exempt.count(op) == 0) {
      EXPECT_TRUE(checked.count(op)) << "op '" << op_name(op) << "' has no case whose gradient is checked";
    }
  }
}

TEST(OpTableCoverage, LabelsAreUnique) {
  std::set<std::string> seen;
  for (const OpCase& c : op_case_table()) EXPECT_TRUE(seen.insert(c.label).second) << "duplicate label " << c.label;
}

}  // namespace
}  // namespace kestrel::testing
