// Buffer donation: outputs aliased to graph inputs (a train step's weights, optimizer slots and
// metric state) written into the donated input buffers, so a steady-state step allocates nothing.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/jit/dump.h"
#include "framework/jit/executor.h"
#include "framework/jit/passes/pipeline.h"
#include "framework/ops/ops.h"
#include "tests/framework/jit/pass_test_support.h"
#include "tests/support/error_message.h"

namespace kestrel::jit {
namespace {

using pass_testing::expect_bitwise_equal;
using pass_testing::mlp_inputs;
using pass_testing::trace_graph;
using pass_testing::TracedFn;

std::int64_t allocations() { return allocator_stats().allocations; }

Tensor copy_of(const Tensor& t) {
  Tensor out = Tensor::empty(t.shape(), t.dtype());
  std::memcpy(out.view().data, t.raw_data(), t.nbytes());
  return out;
}

std::vector<Tensor> copies_of(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> out;
  for (const Tensor& t : tensors) out.push_back(copy_of(t));
  return out;
}

void expect_all_bitwise_equal(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                              const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    expect_bitwise_equal(got[i], want[i], what + ", output " + std::to_string(i));
}

// A train step as Keras compiles it: in = x, labels, the parameters, Adam's first and second
// moments (one per parameter), then the loss tracker's total and count. out = every state's new
// value, in the same order, so output k is the new value of input 2 + k.
struct AdamStep {
  std::size_t num_params;

  std::vector<Tensor> operator()(const std::vector<Tensor>& in) const {
    const auto p = static_cast<std::ptrdiff_t>(num_params);
    std::vector<Tensor> params(in.begin() + 2, in.begin() + 2 + p);
    auto [loss, grads] = pass_testing::mlp_loss_and_gradients(in[0], in[1], params);
    std::vector<Tensor> new_params, new_m, new_v;
    for (std::size_t k = 0; k < num_params; ++k) {
      const Tensor& m = in[2 + num_params + k];
      const Tensor& v = in[2 + 2 * num_params + k];
      new_m.push_back(m * 0.9 + grads[k] * 0.1);
      new_v.push_back(v * 0.999 + grads[k] * grads[k] * 0.001);
      new_params.push_back(params[k] - new_m.back() / (ops::sqrt(new_v.back()) + 1e-7) * 0.001);
    }
    std::vector<Tensor> out = new_params;
    out.insert(out.end(), new_m.begin(), new_m.end());
    out.insert(out.end(), new_v.begin(), new_v.end());
    out.push_back(in[in.size() - 2] + loss);
    out.push_back(in[in.size() - 1] + 1.0);
    return out;
  }

  // x, labels, parameters, then zero moments and an empty loss tracker.
  static std::vector<Tensor> inputs(std::uint64_t seed) {
    std::vector<Tensor> in = mlp_inputs(32, kWidths, seed);
    const std::size_t num_params = in.size() - 2;
    for (int slot = 0; slot < 2; ++slot) {
      for (std::size_t k = 0; k < num_params; ++k) in.push_back(Tensor::zeros(in[2 + k].shape()));
    }
    in.push_back(Tensor::scalar(0.0));
    in.push_back(Tensor::scalar(0.0));
    return in;
  }

  // Every parameter's element count is a multiple of 16, so fused programs round as the standalone
  // ops do on any thread count (fused_elementwise.h) and the optimized graph matches eager too.
  static inline const std::vector<std::int64_t> kWidths{64, 32, 16};
};

struct CompiledStep {
  Graph graph;
  std::vector<bool> donated;  // every state input
};

// The Adam step traced with every output aliased to its state input, optimized or as traced.
CompiledStep compile_adam(const AdamStep& step, const std::vector<Tensor>& in, bool optimize) {
  CompiledStep out{trace_graph(step, in), std::vector<bool>(in.size(), true)};
  out.donated[0] = out.donated[1] = false;  // the batch is only read
  for (std::size_t k = 0; k < out.graph.outputs().size(); ++k) out.graph.alias_output(k, 2 + k);
  out.graph.verify();
  if (optimize) default_pipeline().run(out.graph);
  return out;
}

// The next step's inputs: the same batch, the state from the last step's outputs.
std::vector<Tensor> next_inputs(const std::vector<Tensor>& in, const std::vector<Tensor>& out) {
  std::vector<Tensor> next{in[0], in[1]};
  next.insert(next.end(), out.begin(), out.end());
  return next;
}

// Runs `steps` train steps eagerly.
std::vector<Tensor> eager_steps(const AdamStep& step, std::vector<Tensor> in, int steps) {
  std::vector<Tensor> out;
  for (int s = 0; s < steps; ++s) {
    out = step(in);
    in = next_inputs(in, out);
  }
  return out;
}

void expect_donated_steps_allocate_nothing(bool optimize) {
  const AdamStep step{4};
  const std::vector<Tensor> start = AdamStep::inputs(1);
  CompiledStep compiled = compile_adam(step, start, optimize);
  Executor exec(std::move(compiled.graph));
  EXPECT_EQ(exec.memory_plan().num_aliases(AliasWrite::copy), 0) << exec.memory_plan().to_string();

  const std::vector<Tensor> eager_one = step(start);
  const std::int64_t before_undonated = allocations();
  const std::vector<Tensor> undonated = exec.run(start);
  const std::int64_t undonated_allocations = allocations() - before_undonated;
  EXPECT_EQ(undonated_allocations, static_cast<std::int64_t>(undonated.size()));  // a buffer per output
  expect_all_bitwise_equal(undonated, eager_one, "undonated run vs eager");

  std::vector<Tensor> in = copies_of(start);
  std::vector<Tensor> out = exec.run(in, compiled.donated);  // warm-up
  expect_all_bitwise_equal(out, eager_one, "donated run vs eager");
  for (std::size_t k = 0; k < out.size(); ++k) {
    EXPECT_EQ(out[k].buffer(), in[2 + k].buffer()) << "output " << k << " is not in its donated buffer";
  }
  for (int s = 2; s <= 4; ++s) {
    in = next_inputs(in, out);
    out.clear();
    const std::int64_t before = allocations();
    out = exec.run(in, compiled.donated);
    EXPECT_EQ(allocations() - before, 0) << "step " << s << ": " << exec.memory_plan().to_string();
  }
  expect_all_bitwise_equal(out, eager_steps(step, start, 4), "4 donated steps vs eager");
  std::cout << "[ donation ] Adam MLP step, " << (optimize ? "optimized" : "as traced") << ": " << undonated_allocations
            << " allocations undonated, 0 donated; " << exec.memory_plan().to_string() << "\n";
}

TEST(Donation, OptimizedAdamStepAllocatesNothing) { expect_donated_steps_allocate_nothing(/*optimize=*/true); }

TEST(Donation, TracedAdamStepAllocatesNothing) { expect_donated_steps_allocate_nothing(/*optimize=*/false); }

TEST(Donation, OptimizedAdamUpdatesWriteStraightIntoTheDonatedBuffers) {
  const AdamStep step{4};
  CompiledStep compiled = compile_adam(step, AdamStep::inputs(1), /*optimize=*/true);
  const MemoryPlan plan = plan_memory(compiled.graph);
  ASSERT_EQ(plan.aliases.size(), 3 * step.num_params + 2);
  // Parameters and moments: fused updates that read their state where they write it.
  for (std::size_t k = 0; k < 3 * step.num_params; ++k) {
    EXPECT_EQ(plan.aliases[k].write, AliasWrite::direct) << "alias " << k << ": " << to_string(plan.aliases[k].write);
  }
  EXPECT_NE(plan.to_string().find("aliased outputs"), std::string::npos) << plan.to_string();
}

TEST(Donation, UndonatedRunsLeaveInputsUntouched) {
  const AdamStep step{4};
  const std::vector<Tensor> start = AdamStep::inputs(2);
  CompiledStep compiled = compile_adam(step, start, /*optimize=*/true);
  Executor exec(std::move(compiled.graph));
  const std::vector<Tensor> kept = copies_of(start);
  for (const std::vector<bool>& donated : {std::vector<bool>{}, std::vector<bool>(start.size(), false)}) {
    std::vector<Tensor> out = exec.run(start, donated);
    expect_all_bitwise_equal(start, kept, "inputs after an undonated run");
    for (std::size_t k = 0; k < out.size(); ++k) EXPECT_NE(out[k].buffer(), start[2 + k].buffer()) << "output " << k;
  }
}

// A weight read after its update is made (a norm of the old weights): the update cannot go into
// the weight's buffer while that reader still needs it, so it is copied in at the end.
TEST(Donation, InputReadAfterItsUpdateIsCopiedAtTheEnd) {
  TracedFn fn = [](const std::vector<Tensor>& in) {
    Tensor updated = in[0] - in[1] * 0.1;
    Tensor old_norm = ops::sum(ops::square(in[0]));
    return std::vector<Tensor>{updated, in[2] + old_norm};
  };
  const std::vector<Tensor> start{random::normal({64, 32}, random::Key(3)), random::normal({64, 32}, random::Key(4)),
                                  Tensor::scalar(1.0)};
  Graph graph = trace_graph(fn, start);
  graph.alias_output(0, 0);
  graph.alias_output(1, 2);
  default_pipeline().run(graph);
  Executor exec(std::move(graph));
  ASSERT_EQ(exec.memory_plan().aliases.size(), 2u);
  EXPECT_EQ(exec.memory_plan().aliases[0].write, AliasWrite::at_end) << exec.memory_plan().to_string();

  const std::vector<Tensor> want = fn(start);
  const std::vector<bool> donated{true, false, true};
  std::vector<Tensor> in = copies_of(start);
  std::vector<Tensor> out = exec.run(in, donated);  // warm-up
  expect_all_bitwise_equal(out, want, "donated run vs eager");
  EXPECT_EQ(out[0].buffer(), in[0].buffer());
  expect_all_bitwise_equal(exec.run(start), want, "undonated run vs eager");

  in = {out[0], in[1], out[1]};
  out.clear();
  const std::int64_t before = allocations();
  out = exec.run(in, donated);
  EXPECT_EQ(allocations() - before, 0);
  const std::vector<Tensor> second = fn({want[0], start[1], want[1]});
  expect_all_bitwise_equal(out, second, "second donated run vs eager");
}

// New values that are not computed into their own memory: the old value itself, another input
// (two states swapped), a constant (a state reset), one value shared by a state and a plain output.
TEST(Donation, AliasesOfInputsConstantsAndSharedValuesAreCopied) {
  TracedFn fn = [](const std::vector<Tensor>& in) {
    Tensor shared = in[4] + in[5];
    return std::vector<Tensor>{
        ops::reshape(ops::reshape(in[0], {32}), {4, 8}), in[2], in[1], Tensor::zeros({4, 8}), shared, shared};
  };
  std::vector<Tensor> start;
  for (std::uint64_t k = 0; k < 6; ++k) start.push_back(random::normal({4, 8}, random::Key(10 + k)));
  Graph graph = trace_graph(fn, start);
  for (std::size_t k = 0; k < 5; ++k) graph.alias_output(k, k);
  Executor exec(std::move(graph));
  const MemoryPlan& plan = exec.memory_plan();
  ASSERT_EQ(plan.aliases.size(), 5u);
  EXPECT_EQ(plan.aliases[0].write, AliasWrite::unchanged);
  for (std::size_t k = 1; k < 5; ++k) EXPECT_EQ(plan.aliases[k].write, AliasWrite::copy) << "alias " << k;

  const std::vector<Tensor> want = fn(start);
  const std::vector<Tensor> undonated = exec.run(start);
  expect_all_bitwise_equal(undonated, want, "undonated run");
  // Each state owns its memory, so donating it later overwrites nothing else.
  for (std::size_t k = 1; k < 5; ++k) {
    for (std::size_t j = 0; j < undonated.size(); ++j) {
      if (j == k) continue;
      EXPECT_NE(undonated[k].buffer(), undonated[j].buffer()) << "outputs " << k << " and " << j;
    }
  }

  const std::vector<bool> donated{true, true, true, true, true, false};
  std::vector<Tensor> in = copies_of(start);
  std::vector<Tensor> out = exec.run(in, donated);
  expect_all_bitwise_equal(out, want, "donated run");
  for (std::size_t k = 0; k < 5; ++k) EXPECT_EQ(out[k].buffer(), in[k].buffer()) << "output " << k;

  in = {out[0], out[1], out[2], out[3], out[4], in[5]};
  const std::vector<Tensor> want_next = fn(copies_of(in));
  out.clear();
  const std::int64_t before = allocations();
  out = exec.run(in, donated);
  EXPECT_EQ(allocations() - before, 1);  // the plain output alone
  expect_all_bitwise_equal(out, want_next, "second donated run");
}

TEST(Donation, PlainOutputOfADonatedInputKeepsTheOldValue) {
  TracedFn fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{ops::exp(in[0]), in[0]}; };
  const std::vector<Tensor> start{random::normal({256}, random::Key(20))};
  Graph graph = trace_graph(fn, start);
  graph.alias_output(0, 0);
  Executor exec(std::move(graph));
  EXPECT_EQ(exec.memory_plan().aliases[0].write, AliasWrite::direct);
  std::vector<Tensor> in = copies_of(start);
  const std::vector<Tensor> out = exec.run(in, {true});
  expect_all_bitwise_equal(out, fn(start), "donated run");
  EXPECT_EQ(out[0].buffer(), in[0].buffer());
  EXPECT_NE(out[1].buffer(), in[0].buffer());
}

TEST(Donation, ViewsAndBfloat16UpdatesGoInPlace) {
  TracedFn fn = [](const std::vector<Tensor>& in) {
    Tensor flat = ops::tanh(ops::reshape(in[0], {48}));  // reads the weight through a view
    Tensor weight = ops::reshape(flat, {6, 8});          // the new value is a view
    Tensor half = ops::cast(ops::cast(in[1], DType::float32) * 0.5 + 1.0, DType::bfloat16);
    return std::vector<Tensor>{weight, half};
  };
  const std::vector<Tensor> start{random::normal({6, 8}, random::Key(21)),
                                  ops::cast(random::normal({64}, random::Key(22)), DType::bfloat16)};
  for (bool optimize : {false, true}) {
    Graph graph = trace_graph(fn, start);
    graph.alias_output(0, 0);
    graph.alias_output(1, 1);
    if (optimize) default_pipeline().run(graph);
    Executor exec(std::move(graph));
    EXPECT_EQ(exec.memory_plan().aliases[0].write, AliasWrite::direct) << exec.memory_plan().to_string();
    std::vector<Tensor> in = copies_of(start);
    std::vector<Tensor> out = exec.run(in, {true, true});
    expect_all_bitwise_equal(out, fn(start), optimize ? "optimized" : "traced");
    in = out;
    out.clear();
    const std::int64_t before = allocations();
    out = exec.run(in, {true, true});
    EXPECT_EQ(allocations() - before, 0);
  }
}

TEST(Donation, RefusesBuffersTheRunStillReads) {
  TracedFn fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + in[1], Tensor::ones({8})}; };
  const Tensor a = random::normal({8}, random::Key(23));
  Graph graph = trace_graph(fn, {a, a});
  graph.alias_output(0, 0);
  Executor exec(std::move(graph));
  std::string message = testing::error_message<ValueError>([&] { exec.run({copy_of(a), copy_of(a)}, {true}); });
  EXPECT_TRUE(testing::contains(message, "one per input")) << message;
  const Tensor shared = copy_of(a);
  message = testing::error_message<ValueError>([&] { exec.run({shared, shared}, {true, false}); });
  EXPECT_TRUE(testing::contains(message, "'in0'") && testing::contains(message, "'in1'")) << message;
  const Tensor constant = exec.run({a, a})[1];  // a plain output that is the program's constant
  message = testing::error_message<ValueError>([&] { exec.run({constant, a}, {true, false}); });
  EXPECT_TRUE(testing::contains(message, "constant")) << message;
  expect_bitwise_equal(exec.run({a, a})[1], Tensor::ones({8}), "the constant");
}

TEST(Donation, AliasErrorsNameTheOutputAndTheInput) {
  TracedFn fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2.0, in[0] * 3.0, in[1]}; };
  Graph graph = trace_graph(fn, std::vector<TensorSpec>{{{4, 8}, DType::float32}, {{8}, DType::float32}});
  auto expect_error = [&](std::size_t output, std::size_t input, const std::vector<std::string>& parts) {
    const std::string message = testing::error_message<JitError>([&] { graph.alias_output(output, input); });
    for (const std::string& part : parts) EXPECT_TRUE(testing::contains(message, part)) << message;
  };
  expect_error(7, 0, {"output 7", "input 0 'in0'", "no such output"});
  expect_error(0, 5, {"output 0", "input 5", "no such input"});
  expect_error(0, 1, {"output 0", "float32[4,8]", "input 1 'in1'", "float32[8]", "specs differ"});
  graph.alias_output(0, 0);
  graph.alias_output(0, 0);  // again: nothing changes
  expect_error(1, 0, {"output 1", "input 0 'in0'", "output 0", "one new value"});
  graph.alias_output(2, 1);
  EXPECT_EQ(graph.output_alias(0), std::optional<std::size_t>(0));
  EXPECT_EQ(graph.output_alias(1), std::nullopt);
  EXPECT_EQ(graph.output_alias(2), std::optional<std::size_t>(1));
  graph.verify();
  TracedFn two = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2.0}; };
  Graph g2 = trace_graph(two, std::vector<TensorSpec>{{{4}, DType::float32}, {{4}, DType::float32}});
  g2.alias_output(0, 0);
  const std::string message = testing::error_message<JitError>([&] { g2.alias_output(0, 1); });
  EXPECT_TRUE(testing::contains(message, "input 1 'in1'") && testing::contains(message, "input 0 'in0'")) << message;
}

TEST(Donation, AliasesSurviveThePipelineAndShowInDumps) {
  const AdamStep step{4};
  const std::vector<Tensor> start = AdamStep::inputs(3);
  Graph traced = trace_graph(step, start);
  for (std::size_t k = 0; k < traced.outputs().size(); ++k) traced.alias_output(k, 2 + k);
  Graph optimized = traced;
  default_pipeline().run(optimized);
  optimized.verify();
  EXPECT_LT(optimized.num_ops(), traced.num_ops());
  EXPECT_EQ(optimized.output_aliases(), traced.output_aliases());
  const std::string text = optimized.to_string();
  EXPECT_TRUE(testing::contains(text, "(updates input 2 'in2')")) << text;

  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kestrel_donation_dump_" + std::to_string(::getpid()));
  dump_graph(optimized, dir.string(), "adam", 1, "optimized");
  std::ifstream file(dir / "adam.1.optimized.txt");
  std::stringstream dumped;
  dumped << file.rdbuf();
  EXPECT_TRUE(testing::contains(dumped.str(), "(updates input 2 'in2')"));
  if (std::filesystem::exists("/usr/bin/protoc")) {
    const std::string command = std::string("/usr/bin/protoc --decode=kestrel.jit.GraphProto -I") + KESTREL_SOURCE_DIR +
                                "/framework/jit " + KESTREL_SOURCE_DIR + "/framework/jit/graph.proto < " +
                                (dir / "adam.1.optimized.pb").string() + " > " + (dir / "decoded.txt").string();
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    std::ifstream decoded(dir / "decoded.txt");
    std::stringstream fields;
    fields << decoded.rdbuf();
    EXPECT_TRUE(testing::contains(fields.str(), "aliases {\n  output_index: 1\n  input_index: 3\n}")) << fields.str();
  }
  std::filesystem::remove_all(dir);
}

// Blocks held to the end of the run (saved inputs, at_end values) overlap nothing else live.
TEST(Donation, HeldBlocksOverlapNothingLive) {
  TracedFn fn = [](const std::vector<Tensor>& in) {
    Tensor a = in[0] - in[1] * 0.1;
    Tensor late = ops::exp(ops::tanh(in[0]) * 2.0) + ops::sum(in[0]);
    return std::vector<Tensor>{a, in[0], late * 3.0};
  };
  const std::vector<Tensor> start{random::normal({128}, random::Key(30)), random::normal({128}, random::Key(31))};
  Graph graph = trace_graph(fn, start);
  graph.alias_output(0, 0);
  graph.alias_output(1, 1);  // the other input's old value
  const MemoryPlan plan = plan_memory(graph);
  ASSERT_EQ(plan.aliases[0].write, AliasWrite::at_end);
  ASSERT_EQ(plan.aliases[1].write, AliasWrite::copy);
  struct Block {
    std::int64_t offset, bytes, from;
  };
  const std::vector<Block> held{{plan.aliases[0].offset, 512, plan.aliases[0].root}, {plan.aliases[1].offset, 512, 0}};
  for (const Block& h : held) {
    for (ValueId id = 0; id < graph.size(); ++id) {
      const ValuePlan& v = plan.values[static_cast<std::size_t>(id)];
      const bool overlaps = v.storage == Storage::arena && v.live_to >= h.from && v.offset < h.offset + h.bytes &&
                            h.offset < v.offset + v.bytes;
      EXPECT_FALSE(overlaps) << "%" << id << " overlaps a held block at " << h.offset;
    }
  }
  EXPECT_NE(held[0].offset, held[1].offset);
  Executor exec(std::move(graph));
  std::vector<Tensor> in = copies_of(start);
  expect_all_bitwise_equal(exec.run(in, {true, true}), fn(start), "donated run");
}

}  // namespace
}  // namespace kestrel::jit
