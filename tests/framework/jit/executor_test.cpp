#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/jit/executor.h"
#include "framework/jit/trace.h"
#include "framework/ops/ops.h"
#include "tests/support/error_message.h"

namespace kestrel::jit {
namespace {

using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

Graph trace_of(const Fn& fn, const std::vector<Tensor>& inputs) {
  Trace trace;
  TraceScope active(trace);
  std::vector<Tensor> symbolic;
  for (std::size_t i = 0; i < inputs.size(); ++i) symbolic.push_back(trace.input(inputs[i].spec(), "in" + std::to_string(i)));
  return trace.finish(fn(symbolic));
}

// Same bytes, not merely close: the executor runs the eager kernels on equally aligned memory.
void expect_bitwise_equal(const Tensor& jit, const Tensor& eager, const std::string& what) {
  ASSERT_TRUE(jit.defined()) << what;
  ASSERT_EQ(jit.spec(), eager.spec()) << what;
  EXPECT_EQ(std::memcmp(jit.raw_data(), eager.raw_data(), jit.nbytes()), 0) << what << " differs";
}

void expect_matches_eager(const Executor& exec, const Fn& fn, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> jit = exec.run(inputs);
  std::vector<Tensor> eager = fn(inputs);
  ASSERT_EQ(jit.size(), eager.size());
  for (std::size_t i = 0; i < jit.size(); ++i) expect_bitwise_equal(jit[i], eager[i], "output " + std::to_string(i));
}

// in: x, labels, then (kernel, bias) per layer. Out: loss, then each parameter after one SGD step.
std::vector<Tensor> mlp_train_step(const std::vector<Tensor>& in) {
  GradientTape tape;
  std::vector<Tensor> params(in.begin() + 2, in.end());
  for (const Tensor& p : params) tape.watch(p);
  Tensor h = in[0];
  for (std::size_t layer = 0; layer + 1 < params.size(); layer += 2) {
    h = ops::add(ops::matmul(h, params[layer]), params[layer + 1]);
    if (layer + 2 < params.size()) h = ops::relu(h);
  }
  Tensor loss = ops::mean(ops::sparse_softmax_cross_entropy(h, in[1]));
  std::vector<Tensor> grads = tape.gradient(loss, params);
  std::vector<Tensor> out{loss};
  for (std::size_t k = 0; k < params.size(); ++k) out.push_back(params[k] - grads[k] * 0.1);
  return out;
}

std::vector<Tensor> mlp_inputs(std::int64_t batch, const std::vector<std::int64_t>& widths, std::uint64_t seed) {
  std::vector<std::int64_t> labels(static_cast<std::size_t>(batch));
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int64_t>((i * 7 + seed) % widths.back());
  std::vector<Tensor> in{random::normal({batch, widths[0]}, random::Key(seed)), Tensor::from_vector(labels, {batch})};
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    in.push_back(random::normal({widths[i], widths[i + 1]}, random::Key(seed + 10 + i)) * 0.05);
    in.push_back(random::normal({widths[i + 1]}, random::Key(seed + 20 + i)) * 0.01);
  }
  return in;
}

std::int64_t allocations() { return allocator_stats().allocations; }

TEST(ArenaExecutor, MlpTrainStepMatchesEagerBitForBit) {
  const std::vector<std::int64_t> widths{784, 512, 256, 10};
  std::vector<Tensor> in = mlp_inputs(64, widths, 1);
  Executor exec(trace_of(mlp_train_step, in));
  EXPECT_GT(exec.planned_bytes(), 0);
  EXPECT_EQ(exec.planned_bytes(), exec.memory_plan().arena_bytes);
  expect_matches_eager(exec, mlp_train_step, in);
  expect_matches_eager(exec, mlp_train_step, mlp_inputs(64, widths, 2));  // the arena's old data is no input
}

TEST(ArenaExecutor, InPlaceChainMatchesEager) {
  Fn chain = [](const std::vector<Tensor>& in) {
    Tensor y = ops::exp(ops::tanh(ops::sigmoid(ops::negative(ops::abs(in[0])))));
    return std::vector<Tensor>{y, ops::sum(ops::relu(ops::negative(y)) + in[0])};
  };
  std::vector<Tensor> in{random::normal({256, 1024}, random::Key(3))};
  Executor exec(trace_of(chain, in));
  EXPECT_GE(exec.memory_plan().in_place_reuses, 3);
  expect_matches_eager(exec, chain, in);
}

TEST(ArenaExecutor, ViewsShareTheirSourcesMemory) {
  Fn fn = [](const std::vector<Tensor>& in) {
    Tensor a = ops::exp(in[0]);                                // [4,6]
    Tensor flat = ops::reshape(a, {24});                       // a view of an intermediate
    Tensor t = ops::transpose(ops::reshape(in[0], {6, 4}));    // a view of an input, then a copy
    Tensor b = ops::negative(ops::reshape(t, {4, 6}));         // in place through a view
    Tensor out_view = ops::reshape(ops::tanh(a), {2, 12});     // an output that is a view
    return std::vector<Tensor>{ops::sum(flat) + ops::sum(b), out_view, ops::reshape(in[0], {24}), in[0]};
  };
  std::vector<Tensor> in{random::normal({4, 6}, random::Key(4))};
  Executor exec(trace_of(fn, in));
  expect_matches_eager(exec, fn, in);
  std::vector<Tensor> out = exec.run(in);
  EXPECT_EQ(out[2].buffer(), in[0].buffer());  // a view of an input shares it, as eager does
  EXPECT_TRUE(out[3].is_same(in[0]));
}

TEST(ArenaExecutor, SteadyStateAllocatesOnlyOutputs) {
  const std::vector<std::int64_t> widths{784, 256, 10};
  std::vector<Tensor> in = mlp_inputs(32, widths, 5);
  Graph graph = trace_of(mlp_train_step, in);
  const std::int64_t before_construction = allocations();
  Executor exec(std::move(graph));
  EXPECT_EQ(allocations() - before_construction, 1);  // the arena
  const auto num_outputs = static_cast<std::int64_t>(exec.graph().outputs().size());
  for (int run = 1; run <= 3; ++run) {
    const std::int64_t before = allocations();
    const std::int64_t bytes_before = allocator_stats().bytes_in_use;
    std::vector<Tensor> out = exec.run(in);
    EXPECT_EQ(allocations() - before, num_outputs) << "run " << run;
    out.clear();
    EXPECT_EQ(allocator_stats().bytes_in_use, bytes_before) << "run " << run << " kept memory";
  }
}

TEST(ArenaExecutor, OutputsOutliveTheNextRun) {
  Fn fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{ops::exp(ops::negative(in[0]))}; };
  Tensor a = random::normal({64}, random::Key(6));
  Tensor b = random::normal({64}, random::Key(7));
  Executor exec(trace_of(fn, {a}));
  Tensor first = exec.run({a})[0];
  std::vector<float> kept = first.to_vector<float>();
  exec.run({b});
  EXPECT_EQ(first.to_vector<float>(), kept);
  expect_bitwise_equal(first, fn({a})[0], "first output");
}

TEST(ArenaExecutor, BfloatOpsWidenIntoPlannedScratch) {
  Fn fn = [](const std::vector<Tensor>& in) {
    Tensor h = ops::exp(ops::tanh(in[0]) * in[1]);
    return std::vector<Tensor>{ops::cast(ops::sum(h), DType::float32), ops::softmax(h)};
  };
  std::vector<Tensor> in{ops::cast(random::normal({32, 100}, random::Key(8)), DType::bfloat16),
                         ops::cast(random::normal({100}, random::Key(9)), DType::bfloat16)};
  Executor exec(trace_of(fn, in));
  EXPECT_GT(exec.memory_plan().scratch_bytes, 0);
  expect_matches_eager(exec, fn, in);
  const std::int64_t before = allocations();
  exec.run(in);
  EXPECT_EQ(allocations() - before, 2);  // the outputs; the widening copies live in the arena
}

TEST(ArenaExecutor, RecoversFromAKernelError) {
  Fn fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{ops::mean(ops::sparse_softmax_cross_entropy(ops::exp(in[0]), in[1]))};
  };
  Tensor logits = random::normal({4, 3}, random::Key(10));
  Tensor good = Tensor::from_vector<std::int64_t>({0, 1, 2, 1}, {4});
  Tensor bad = Tensor::from_vector<std::int64_t>({0, 1, 7, 1}, {4});
  Executor exec(trace_of(fn, {logits, good}));
  std::string message = testing::error_message<IndexError>([&] { exec.run({logits, bad}); });
  EXPECT_TRUE(testing::contains(message, "7")) << message;
  expect_matches_eager(exec, fn, {logits, good});
}

TEST(ArenaExecutor, ConcurrentCallsTakeTurns) {
  Fn fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{ops::sum(ops::tanh(ops::exp(in[0])))}; };
  Tensor a = random::normal({4096}, random::Key(11));
  Tensor b = random::normal({4096}, random::Key(12));
  Executor exec(trace_of(fn, {a}));
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
