// trace_with_state and a one-replica jit::ReplicatedFunction: variables bound to graph inputs, their
// new values aliased outputs, variables assigned beyond the given state lifted into it, and a
// steady step that updates its state in place.
#include "framework/jit/state_trace.h"

#include <gtest/gtest.h>

#include "framework/core/buffer.h"
#include "framework/core/error.h"
#include "framework/jit/replicated_function.h"
#include "framework/ops/elementwise.h"
#include "tests/support/error_message.h"

namespace kestrel::jit {
namespace {

using testing::contains;
using testing::error_message;

TEST(StateTrace, AssignedStateBecomesAliasedOutputsAndTheVariablesGetTheirValuesBack) {
  const Variable w("w", Tensor::ones({3}), /*trainable=*/false);
  const Variable untouched("untouched", Tensor::zeros({2}), /*trainable=*/false);
  const StateTrace traced = trace_with_state({w, untouched}, {{"x", Tensor::ones({3})}}, [&](const Args& args) {
    w.assign(w.value() + args.at("x"));
    return std::vector<Tensor>{};
  });
  ASSERT_EQ(traced.updated, (std::vector<std::size_t>{0}));
  EXPECT_EQ(traced.graph.output_alias(0), std::optional<std::size_t>(0));
  EXPECT_EQ(traced.state.size(), 2u);
  EXPECT_FALSE(w.value().is_symbolic());
  EXPECT_EQ(w.value().to_vector<float>(), std::vector<float>(3, 1.0f));
}

TEST(StateTrace, AVariableAssignedBeyondTheStateIsLiftedIntoIt) {
  const Variable given("given", Tensor::ones({2}), /*trainable=*/false);
  const Variable other("other", Tensor::full({2}, 5.0), /*trainable=*/false);  // a second optimizer's slot, say
  int traces = 0;
  const StateTrace traced = trace_with_state({given}, {}, [&](const Args& /*args*/) {
    ++traces;
    other.assign(other.value() * 2.0);
    given.assign(given.value() + other.value());
    return std::vector<Tensor>{};
  });
  EXPECT_EQ(traces, 2);  // once to find it, once with it bound
  ASSERT_EQ(traced.state.size(), 2u);
  EXPECT_TRUE(traced.state[1].is_same(other));
  EXPECT_EQ(traced.updated, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(other.value().to_vector<float>(), std::vector<float>(2, 5.0f));  // its value back after both traces
}

TEST(StateTrace, AVariableMadeWhileTracingIsAnErrorWithTheFix) {
  const std::string m = error_message<JitError>([] {
    trace_with_state({}, {}, [](const Args& /*args*/) {
      const Variable made("made_late", Tensor::zeros({2}), /*trainable=*/false);
      made.assign(made.value() + 1.0);
      return std::vector<Tensor>{};
    });
  });
  EXPECT_TRUE(contains(m, "assigned variable 'made_late', made while it was being traced")) << m;
  EXPECT_TRUE(contains(m, "make it before the first call")) << m;
}

TEST(OneReplica, ASteadyStepUpdatesItsStateInPlace) {
  const Variable total("total", Tensor::zeros({4}), /*trainable=*/false);
  ReplicatedFunction step(
      {total},
      [&](const Args& args) {
        total.assign(total.value() + args.at("x"));
        return std::vector<Tensor>{};
      },
      "accumulate");
  const Tensor x = Tensor::ones({4});
  step({{"x", x}});
  const void* buffer = total.value().raw_data();
  const std::int64_t before = allocator_stats().allocations;
  step({{"x", x}});
  step({{"x", x}});
  EXPECT_EQ(allocator_stats().allocations - before, 0);
  EXPECT_EQ(total.value().raw_data(), buffer);  // the donated buffer took the new values
  EXPECT_EQ(total.value().to_vector<float>(), std::vector<float>(4, 3.0f));
  EXPECT_EQ(step.compile_count(), 1);
}

}  // namespace
}  // namespace kestrel::jit
