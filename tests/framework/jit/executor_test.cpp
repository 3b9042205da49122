#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/jit/executor.h"
#include "framework/jit/trace.h"
#include "framework/ops/ops.h"
#include "tests/framework/jit/pass_test_support.h"
#include "tests/support/error_message.h"

namespace kestrel::jit {
namespace {

using pass_testing::expect_bitwise_equal;
using pass_testing::mlp_inputs;
using pass_testing::mlp_train_step;
using pass_testing::trace_graph;

using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

void expect_matches_eager(const Executor& exec, const Fn& fn, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> jit = exec.run(inputs);
  std::vector<Tensor> eager = fn(inputs);
  ASSERT_EQ(jit.size(), eager.size());
  for (std::size_t i = 0; i < jit.size(); ++i) expect_bitwise_equal(jit[i], eager[i], "output " + std::to_string(i));
}

TEST(ArenaExecutor, MlpTrainStepMatchesEagerBitForBit) {
  const std::vector<std::int64_t> widths{784, 512, 256, 10};
  std::vector<Tensor> in = mlp_inputs(64, widths, 1);
  Executor exec(trace_graph(mlp_train_step, in));
  EXPECT_GT(exec.planned_bytes(), 0);
  EXPECT_EQ(exec.planned_bytes(), exec.memory_plan().arena_bytes);
  expect_matches_eager(exec, mlp_train_step, in);
  expect_matches_eager(exec, mlp_train_step, mlp_inputs(64, widths, 2));  // the arena's old data is no input
}

TEST(ArenaExecutor, ProgramsShareOneArenaSizedForTheLargest) {
  // Two shapes of one function, as a recompile makes: one block of memory, grown for the larger
  // plan, and each program still right when they take turns.
  const std::vector<std::int64_t> widths{784, 512, 256, 10};
  std::vector<Tensor> small = mlp_inputs(16, widths, 1), large = mlp_inputs(128, widths, 2);
  auto arena = std::make_shared<Arena>();
  Executor first(trace_graph(mlp_train_step, small), arena);
  EXPECT_EQ(arena->capacity(), first.planned_bytes());
  Executor second(trace_graph(mlp_train_step, large), arena);
  ASSERT_GT(second.planned_bytes(), first.planned_bytes());
  EXPECT_EQ(arena->capacity(), second.planned_bytes());
  for (int turn = 0; turn < 2; ++turn) {
    expect_matches_eager(first, mlp_train_step, small);
    expect_matches_eager(second, mlp_train_step, large);
  }
  const std::int64_t before = allocator_stats().allocations;
  first.run(small, std::vector<bool>(small.size(), false));
  second.run(large, std::vector<bool>(large.size(), false));
  // Only the outputs: neither run grows or rebuilds the arena.
  EXPECT_EQ(allocator_stats().allocations - before,
            static_cast<std::int64_t>(first.graph().outputs().size() + second.graph().outputs().size()));
}

TEST(ArenaExecutor, InPlaceChainMatchesEager) {
  Fn chain = [](const std::vector<Tensor>& in) {
    Tensor y = ops::exp(ops::tanh(ops::sigmoid(ops::negative(ops::abs(in[0])))));
    return std::vector<Tensor>{y, ops::sum(ops::relu(ops::negative(y)) + in[0])};
  };
  std::vector<Tensor> in{random::normal({256, 1024}, random::Key(3))};
  Executor exec(trace_graph(chain, in));
  EXPECT_GE(exec.memory_plan().in_place_reuses, 3);
  expect_matches_eager(exec, chain, in);
}

TEST(ArenaExecutor, ViewsShareTheirSourcesMemory) {
  Fn fn = [](const std::vector<Tensor>& in) {
    Tensor a = ops::exp(in[0]);                              // [4,6]
    Tensor flat = ops::reshape(a, {24});                     // a view of an intermediate
    Tensor t = ops::transpose(ops::reshape(in[0], {6, 4}));  // a view of an input, then a copy
    Tensor b = ops::negative(ops::reshape(t, {4, 6}));       // in place through a view
    Tensor out_view = ops::reshape(ops::tanh(a), {2, 12});   // an output that is a view
    return std::vector<Tensor>{ops::sum(flat) + ops::sum(b), out_view, ops::reshape(in[0], {24}), in[0]};
  };
  std::vector<Tensor> in{random::normal({4, 6}, random::Key(4))};
  Executor exec(trace_graph(fn, in));
  expect_matches_eager(exec, fn, in);
  std::vector<Tensor> out = exec.run(in);
  EXPECT_EQ(out[2].buffer(), in[0].buffer());  // a view of an input shares it, as eager does
  EXPECT_TRUE(out[3].is_same(in[0]));
}

TEST(ArenaExecutor, SteadyStateAllocatesOnlyOutputs) {
  const std::vector<std::int64_t> widths{784, 256, 10};
  std::vector<Tensor> in = mlp_inputs(32, widths, 5);
  Graph graph = trace_graph(mlp_train_step, in);
  const std::int64_t before_construction = allocator_stats().allocations;
  Executor exec(std::move(graph));
  EXPECT_EQ(allocator_stats().allocations - before_construction, 1);  // the arena
  const auto num_outputs = static_cast<std::int64_t>(exec.graph().outputs().size());
  for (int run = 1; run <= 3; ++run) {
    const std::int64_t before = allocator_stats().allocations;
    const std::int64_t bytes_before = allocator_stats().bytes_in_use;
    std::vector<Tensor> out = exec.run(in);
    EXPECT_EQ(allocator_stats().allocations - before, num_outputs) << "run " << run;
    out.clear();
    EXPECT_EQ(allocator_stats().bytes_in_use, bytes_before) << "run " << run << " kept memory";
  }
}

TEST(ArenaExecutor, OutputsGivenBackAreWrittenAgainWithoutAllocating) {
  const std::vector<std::int64_t> widths{784, 256, 10};
  std::vector<Tensor> in = mlp_inputs(32, widths, 5);
  Executor exec(trace_graph(mlp_train_step, in));
  std::vector<Tensor> out = exec.run(in);
  const std::vector<Tensor> want = exec.run(in);
  std::vector<const void*> buffers;
  for (const Tensor& t : out) buffers.push_back(t.raw_data());
  for (int run = 1; run <= 2; ++run) {
    const std::int64_t before = allocator_stats().allocations;
    out = exec.run(in, {}, &out);  // last run's outputs, given back
    EXPECT_EQ(allocator_stats().allocations - before, 0) << "run " << run;
    for (std::size_t k = 0; k < out.size(); ++k) {
      EXPECT_EQ(out[k].raw_data(), buffers[k]) << "output " << k;
      expect_bitwise_equal(out[k], want[k], "output " + std::to_string(k));
    }
  }
  // A buffer someone still holds is never written: that output gets a new one.
  const Tensor held = out[0];
  std::vector<Tensor> given = out;
  out.clear();
  const std::int64_t before = allocator_stats().allocations;
  const std::vector<Tensor> again = exec.run(in, {}, &given);
  EXPECT_EQ(allocator_stats().allocations - before, 1);
  EXPECT_NE(again[0].raw_data(), held.raw_data());
  expect_bitwise_equal(held, want[0], "the held output");
}

TEST(ArenaExecutor, AReshapedOutputGivenBackIsWrittenAgain) {
  // A projection's gradient leaves as [d, heads, depth], a reshape of its product: the product is
  // written into the buffer the reshape was given back in.
  const std::vector<Tensor> in{random::normal({4, 6}, random::Key(1))};
  Executor exec(trace_graph(
      [](const std::vector<Tensor>& x) {
        return std::vector<Tensor>{ops::reshape(x[0] * 2.0, {4, 2, 3})};
      },
      in));
  std::vector<Tensor> out = exec.run(in);
  const void* buffer = out[0].raw_data();
  const std::int64_t before = allocator_stats().allocations;
  out = exec.run(in, {}, &out);
  EXPECT_EQ(allocator_stats().allocations - before, 0);
  EXPECT_EQ(out[0].raw_data(), buffer);
  EXPECT_EQ(out[0].shape(), (Shape{4, 2, 3}));
  expect_bitwise_equal(out[0], ops::reshape(in[0] * 2.0, {4, 2, 3}), "the reshaped output");
}

TEST(ArenaExecutor, OutputsOutliveTheNextRun) {
  Fn fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{ops::exp(ops::negative(in[0]))}; };
  Tensor a = random::normal({64}, random::Key(6));
  Tensor b = random::normal({64}, random::Key(7));
  Executor exec(trace_graph(fn, {a}));
  Tensor first = exec.run({a})[0];
  std::vector<float> kept = first.to_vector<float>();
  exec.run({b});
  EXPECT_EQ(first.to_vector<float>(), kept);
  expect_bitwise_equal(first, fn({a})[0], "first output");
}

TEST(ArenaExecutor, BfloatOpsWidenIntoPlannedScratch) {
  // Dropout has a float32 kernel only, so its bfloat16 input and output widen.
  const Tensor key = random::key_tensor(random::Key(1));
  Fn fn = [&](const std::vector<Tensor>& in) {
    Tensor h = ops::exp(ops::tanh(in[0]) * in[1]);
    return std::vector<Tensor>{ops::cast(ops::sum(ops::dropout(h, 0.5, key)), DType::float32), ops::softmax(h)};
  };
  std::vector<Tensor> in{ops::cast(random::normal({32, 100}, random::Key(8)), DType::bfloat16),
                         ops::cast(random::normal({100}, random::Key(9)), DType::bfloat16)};
  Executor exec(trace_graph(fn, in));
  EXPECT_GT(exec.memory_plan().scratch_bytes, 0);
  expect_matches_eager(exec, fn, in);
  const std::int64_t before = allocator_stats().allocations;
  exec.run(in);
  EXPECT_EQ(allocator_stats().allocations - before, 2);  // the outputs; the widening copies live in the arena
}

TEST(ArenaExecutor, RecoversFromAKernelError) {
  Fn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{ops::mean(ops::sparse_softmax_cross_entropy(ops::exp(in[0]), in[1]))};
  };
  Tensor logits = random::normal({4, 3}, random::Key(10));
  Tensor good = Tensor::from_vector<std::int64_t>({0, 1, 2, 1}, {4});
  Tensor bad = Tensor::from_vector<std::int64_t>({0, 1, 7, 1}, {4});
  Executor exec(trace_graph(fn, {logits, good}));
  std::string message = testing::error_message<IndexError>([&] { exec.run({logits, bad}); });
  EXPECT_TRUE(testing::contains(message, "7")) << message;
  expect_matches_eager(exec, fn, {logits, good});
}

TEST(ArenaExecutor, ConcurrentCallsTakeTurns) {
  Fn fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{ops::sum(ops::tanh(ops::exp(in[0])))}; };
  Tensor a = random::normal({4096}, random::Key(11));
  Tensor b = random::normal({4096}, random::Key(12));
  Executor exec(trace_graph(fn, {a}));
  const Tensor want_a = fn({a})[0];
  const Tensor want_b = fn({b})[0];
  auto hammer = [&](const Tensor& x, const Tensor& want, bool& ok) {
    ok = true;
    for (int i = 0; i < 200; ++i) ok &= std::memcmp(exec.run({x})[0].raw_data(), want.raw_data(), 4) == 0;
  };
  bool ok_a = false;
  bool ok_b = false;
  std::thread other([&] { hammer(b, want_b, ok_b); });
  hammer(a, want_a, ok_a);
  other.join();
  EXPECT_TRUE(ok_a);
  EXPECT_TRUE(ok_b);
}

}  // namespace
}  // namespace kestrel::jit
