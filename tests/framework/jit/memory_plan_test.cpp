#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/random.h"
#include "framework/jit/memory_plan.h"
#include "framework/jit/passes/pipeline.h"
#include "framework/jit/trace.h"
#include "framework/ops/ops.h"
#include "tests/framework/jit/pass_test_support.h"
#include "tests/support/error_message.h"

namespace kestrel::jit {
namespace {

using pass_testing::mlp_train_step;
using pass_testing::trace_graph;

using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

std::vector<Tensor> mlp_backward(const std::vector<Tensor>& in) {
  GradientTape tape;
  std::vector<Tensor> params(in.begin() + 2, in.end());
  for (const Tensor& p : params) tape.watch(p);
  Tensor h = in[0];
  for (std::size_t layer = 0; layer + 1 < params.size(); layer += 2) {
    h = ops::add(ops::matmul(h, params[layer]), params[layer + 1]);
    if (layer + 2 < params.size()) h = ops::relu(h);
  }
  Tensor loss = ops::mean(ops::sparse_softmax_cross_entropy(h, in[1]));
  std::vector<Tensor> out = tape.gradient(loss, params);
  out.insert(out.begin(), loss);
  return out;
}

std::vector<TensorSpec> mlp_specs(std::int64_t batch, const std::vector<std::int64_t>& widths) {
  std::vector<TensorSpec> specs{{{batch, widths[0]}, DType::float32}, {{batch}, DType::int64}};
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    specs.push_back({{widths[i], widths[i + 1]}, DType::float32});
    specs.push_back({{widths[i + 1]}, DType::float32});
  }
  return specs;
}

const ValuePlan& at(const MemoryPlan& plan, ValueId id) { return plan.values[static_cast<std::size_t>(id)]; }

// Recomputes liveness from the graph alone (a view keeps its root alive) and checks that no two
// arena blocks live at the same time overlap — except a value and the one it overwrote in place,
// which meet at exactly one node — and that widening scratch overlaps nothing live at its node.
void expect_no_live_overlap(const Graph& g, const MemoryPlan& plan) {
  const auto n = static_cast<std::size_t>(g.size());
  ASSERT_EQ(plan.values.size(), n);
  std::vector<ValueId> root(n);
  std::vector<std::int64_t> last(n);
  for (ValueId id = 0; id < g.size(); ++id) {
    const Node& node = g.node(id);
    const bool view = node.kind == NodeKind::op && node.primitive->is_view();
    root[static_cast<std::size_t>(id)] = view ? root[static_cast<std::size_t>(node.inputs[0])] : id;
    last[static_cast<std::size_t>(id)] = id;
    for (ValueId in : node.inputs) {
      std::int64_t& l = last[static_cast<std::size_t>(root[static_cast<std::size_t>(in)])];
      l = std::max(l, id);
    }
  }
  std::vector<ValueId> arena;
  for (ValueId id = 0; id < g.size(); ++id) {
    const ValuePlan& v = at(plan, id);
    EXPECT_EQ(v.root, root[static_cast<std::size_t>(id)]) << "%" << id;
    if (v.storage != Storage::arena) {
      EXPECT_EQ(v.offset, -1) << "%" << id << " is not in the arena";
      continue;
    }
    EXPECT_EQ(v.offset % 64, 0) << "%" << id;
    EXPECT_LE(v.offset + v.bytes, plan.arena_bytes) << "%" << id;
    if (v.bytes > 0) arena.push_back(id);
  }
  auto overlaps = [](std::int64_t a, std::int64_t a_bytes, std::int64_t b, std::int64_t b_bytes) {
    return a < b + b_bytes && b < a + a_bytes;
  };
  for (std::size_t i = 0; i < arena.size(); ++i) {
    for (std::size_t j = i + 1; j < arena.size(); ++j) {
      const ValueId a = arena[i];
      const ValueId b = arena[j];                           // a < b
      if (last[static_cast<std::size_t>(a)] < b) continue;  // a is dead before b is made
      if (at(plan, b).in_place_of == a && last[static_cast<std::size_t>(a)] == b) continue;
      EXPECT_FALSE(overlaps(at(plan, a).offset, at(plan, a).bytes, at(plan, b).offset, at(plan, b).bytes))
          << "%" << a << " and %" << b << " are live together but share memory";
    }
  }
  for (ValueId s = 0; s < g.size(); ++s) {
    const ValuePlan& node = at(plan, s);
    if (node.scratch_bytes == 0) continue;
    for (ValueId a : arena) {
      if (a > s || last[static_cast<std::size_t>(a)] < s) continue;
      EXPECT_FALSE(overlaps(node.scratch_offset, node.scratch_bytes, at(plan, a).offset, at(plan, a).bytes))
          << "scratch of %" << s << " overlaps %" << a;
    }
  }
}

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

TEST(ArenaAllocator, BestFitSplitsMergesAndGrows) {
  ArenaAllocator arena;
  const std::int64_t a = arena.allocate(256);
  const std::int64_t b = arena.allocate(64);
  const std::int64_t c = arena.allocate(128);
  const std::int64_t d = arena.allocate(64);
  EXPECT_EQ((std::vector<std::int64_t>{a, b, c, d}), (std::vector<std::int64_t>{0, 256, 320, 448}));
  arena.release(a, 256);
  arena.release(c, 128);
  EXPECT_EQ(arena.allocate(128), 320);  // the exact fit, not the first block
  EXPECT_EQ(arena.allocate(64), 0);     // splits the 256-byte block
  arena.release(b, 64);                 // merges with the rest of that block: [64, 320)
  EXPECT_EQ(arena.num_free_blocks(), 1u);
  EXPECT_EQ(arena.allocate(256), 64);
  EXPECT_EQ(arena.num_free_blocks(), 0u);
  EXPECT_EQ(arena.allocate(1024), 512);  // nothing free: grows
  EXPECT_EQ(arena.size(), 1536);
  arena.release(d, 64);
  arena.release(512, 1024);              // merges with d's block into [448, 1536), the arena's end
  EXPECT_EQ(arena.allocate(2048), 448);  // extends the end block instead of leaving it stranded
  EXPECT_EQ(arena.size(), 2496);
  EXPECT_EQ(arena.allocate(0), 0);
}

TEST(MemoryPlan, InputsConstantsAndOutputsAreNotInTheArena) {
  Tensor w = random::normal({8, 8}, random::Key(1));
  Graph g = trace_graph(
      [&](const std::vector<Tensor>& in) {
        Tensor h = ops::exp(ops::matmul(in[0], w));
        return std::vector<Tensor>{ops::reshape(ops::negative(h), {4, 4}), in[0]};
      },
      {{{2, 8}, DType::float32}});
  MemoryPlan plan = plan_memory(g);
  // %0 x, %1 w, %2 matmul, %3 exp, %4 negative, %5 reshape
  EXPECT_EQ(at(plan, 0).storage, Storage::input);
  EXPECT_EQ(at(plan, 1).storage, Storage::constant);
  EXPECT_EQ(at(plan, 2).storage, Storage::arena);
  EXPECT_EQ(at(plan, 4).storage, Storage::output);  // an output view's root leaves with the caller
  EXPECT_EQ(at(plan, 5).storage, Storage::view);
  EXPECT_EQ(at(plan, 5).root, 4);
  EXPECT_EQ(plan.pinned_bytes, 64 + 256);
  EXPECT_EQ(plan.output_bytes, 64);
  expect_no_live_overlap(g, plan);
}

TEST(MemoryPlan, ElementwiseChainRunsInPlace) {
  const TensorSpec big{{1024, 1024}, DType::float32};
  auto chain = [](const Tensor& x) { return ops::exp(ops::tanh(ops::sigmoid(ops::negative(ops::abs(x))))); };
  Graph g =
      trace_graph([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{ops::sum(chain(in[0]))}; }, {big});
  MemoryPlan plan = plan_memory(g);
  EXPECT_EQ(plan.num_intermediates, 5);
  EXPECT_EQ(plan.in_place_reuses, 4);  // abs makes a block; the next four overwrite it
  EXPECT_LE(plan.arena_bytes, 2 * 4 * kMiB);
  EXPECT_EQ(plan.intermediate_bytes, 5 * 4 * kMiB);
  expect_no_live_overlap(g, plan);

  // Ending in the output: abs cannot write into the input, and the last op writes the output buffer.
  Graph to_output =
      trace_graph([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{chain(in[0])}; }, {big});
  MemoryPlan p = plan_memory(to_output);
  EXPECT_EQ(p.arena_bytes, 4 * kMiB);
  EXPECT_EQ(p.in_place_reuses, 3);
  expect_no_live_overlap(to_output, p);
}

// After fusion a chain is one fused_elementwise node; it overwrites the matmul's product, which
// dies there, as each op of the chain would have. A fused node that also reads another operand
// broadcast from a smaller shape still writes where it reads the full-sized one.
TEST(MemoryPlan, FusedChainRunsInPlaceOfTheInputThatDiesThere) {
  const std::vector<TensorSpec> specs{
      {{256, 128}, DType::float32}, {{128, 128}, DType::float32}, {{128}, DType::float32}};
  Graph g = trace_graph(
      [](const std::vector<Tensor>& in) {
        Tensor product = ops::matmul(in[0], in[1]);
        Tensor chain = ops::tanh(ops::relu(product * 2.0 + in[2]));
        return std::vector<Tensor>{ops::sum(chain)};
      },
      specs);
  default_pipeline().run(g);
  ValueId fused = -1, product = -1;
  for (ValueId id = 0; id < g.size(); ++id) {
    if (g.node(id).kind != NodeKind::op) continue;
    if (g.node(id).primitive->id() == OpId::fused_elementwise) fused = id;
    if (g.node(id).primitive->id() == OpId::matmul) product = id;
  }
  ASSERT_GE(fused, 0) << g.to_string();
  ASSERT_GE(product, 0) << g.to_string();
  MemoryPlan plan = plan_memory(g);
  EXPECT_EQ(at(plan, fused).in_place_of, product) << g.to_string();
  EXPECT_EQ(at(plan, fused).offset, at(plan, product).offset);
  EXPECT_EQ(plan.in_place_reuses, 1);
  expect_no_live_overlap(g, plan);
}

TEST(MemoryPlan, NoInPlaceWhenTheInputHasTwoConsumers) {
  Graph g = trace_graph(
      [](const std::vector<Tensor>& in) {
        Tensor a = ops::exp(in[0]);
        Tensor b = ops::negative(a);
        Tensor t = ops::tanh(a);  // a's last reader, but not its only one
        return std::vector<Tensor>{ops::sum(t), ops::sum(b)};
      },
      {{{256}, DType::float32}});
  MemoryPlan plan = plan_memory(g);
  // %1 exp, %2 negative, %3 tanh
  EXPECT_EQ(at(plan, 2).in_place_of, -1);
  EXPECT_EQ(at(plan, 3).in_place_of, -1);
  EXPECT_NE(at(plan, 1).offset, at(plan, 2).offset);
  expect_no_live_overlap(g, plan);
}

TEST(MemoryPlan, NoInPlaceIntoAnOutputOrAnInput) {
  Graph g = trace_graph(
      [](const std::vector<Tensor>& in) {
        Tensor a = ops::exp(in[0]);  // an output: its buffer leaves with the caller
        return std::vector<Tensor>{a, ops::sum(ops::negative(a)), ops::sum(ops::tanh(in[0]))};
      },
      {{{256}, DType::float32}});
  MemoryPlan plan = plan_memory(g);
  EXPECT_EQ(plan.in_place_reuses, 0);
  for (const ValuePlan& v : plan.values) EXPECT_EQ(v.in_place_of, -1);
  expect_no_live_overlap(g, plan);
}

TEST(MemoryPlan, ViewsKeepTheirSourceAlive) {
  // The reshape of a is read after negative(a): negative must not overwrite a.
  Graph alive = trace_graph(
      [](const std::vector<Tensor>& in) {
        Tensor a = ops::exp(in[0]);
        Tensor b = ops::negative(a);
        Tensor later = ops::matmul(ops::reshape(a, {6, 4}), ops::reshape(b, {4, 6}));
        return std::vector<Tensor>{ops::sum(b), ops::sum(later)};
      },
      {{{4, 6}, DType::float32}});
  MemoryPlan plan = plan_memory(alive);
  EXPECT_EQ(at(plan, 2).in_place_of, -1);  // %1 exp, %2 negative
  expect_no_live_overlap(alive, plan);

  // Through a view with no other reader, the elementwise op may still write in place.
  Graph through = trace_graph(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{ops::sum(ops::negative(ops::reshape(ops::exp(in[0]), {6, 4})))};
      },
      {{{4, 6}, DType::float32}});
  MemoryPlan p = plan_memory(through);
  EXPECT_EQ(at(p, 3).storage, Storage::arena);  // %1 exp, %2 reshape, %3 negative
  EXPECT_EQ(at(p, 3).in_place_of, 1);
  EXPECT_EQ(at(p, 3).offset, at(p, 1).offset);
  expect_no_live_overlap(through, p);
}

TEST(MemoryPlan, FreedBlocksAreReusedByBestFit) {
  Graph g = trace_graph(
      [](const std::vector<Tensor>& in) {
        Tensor p = ops::negative(in[0]);  // 4 KiB
        Tensor s = ops::negative(in[1]);  // 1 KiB, read at the very end: separates p's block from q's
        Tensor q = ops::negative(in[1]);  // 1 KiB
        Tensor ps = ops::sum(p);          // p dies
        Tensor qs = ops::sum(q);          // q dies: free blocks of ~4 KiB and exactly 1 KiB
        Tensor r = ops::abs(in[1]);       // 1 KiB: takes q's block, the best fit
        return std::vector<Tensor>{ps + qs, s + r};
      },
      {{{1024}, DType::float32}, {{256}, DType::float32}});
  MemoryPlan plan = plan_memory(g);
  // %0 %1 inputs, %2 p, %3 s, %4 q, %5 ps, %6 qs, %7 r
  EXPECT_EQ(at(plan, 7).offset, at(plan, 4).offset);
  EXPECT_NE(at(plan, 7).offset, at(plan, 2).offset);
  expect_no_live_overlap(g, plan);
}

// pow has no bfloat16 kernel of its own (exp, add and most others do): it runs on float32 copies.
TEST(MemoryPlan, BfloatWideningScratchIsPlanned) {
  Graph g = trace_graph(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{ops::sum(ops::cast(ops::pow(ops::exp(in[0]), in[0]), DType::float32))};
      },
      {{{1000}, DType::bfloat16}});
  MemoryPlan plan = plan_memory(g);
  // %1 exp, %2 pow, %3 cast, %4 sum
  EXPECT_FALSE(needs_widening(g, g.node(1)));
  EXPECT_TRUE(needs_widening(g, g.node(2)));
  EXPECT_EQ(at(plan, 2).scratch_bytes, 3 * aligned_bytes(4000));  // float32 copies of both inputs and the output
  EXPECT_EQ(at(plan, 3).scratch_bytes, 0);                        // cast handles bfloat16 itself
  EXPECT_GT(plan.scratch_bytes, 0);
  expect_no_live_overlap(g, plan);
}

// The live peak by dtype adds up to the live peak: a program of bfloat16 values (concatenations,
// which copy bfloat16 bits as they are) peaks in bfloat16 alone, a float32 one in float32.
TEST(MemoryPlan, LivePeakIsCountedByDtype) {
  for (DType dtype : {DType::bfloat16, DType::float32}) {
    Graph g = trace_graph(
        [](const std::vector<Tensor>& in) {
          const Tensor twice = ops::concat({in[0], in[0]}, 0);
          const Tensor four = ops::concat({twice, twice}, 0);
          return std::vector<Tensor>{ops::concat({four, twice}, 0)};
        },
        {{{1000}, dtype}});
    MemoryPlan plan = plan_memory(g);
    EXPECT_EQ(total_bytes(plan.live_peak_by_dtype), plan.live_peak_bytes) << plan.to_string();
    EXPECT_EQ(plan.live_peak_by_dtype[dtype], plan.live_peak_bytes) << plan.to_string();
    EXPECT_EQ(plan.live_peak_bytes, aligned_bytes(2000 * static_cast<std::int64_t>(size_of(dtype))) +
                                        aligned_bytes(4000 * static_cast<std::int64_t>(size_of(dtype))))
        << plan.to_string();
  }
  EXPECT_EQ(format_bytes(BytesByDtype{{DType::float32, 1024}, {DType::bfloat16, 4096}}),
            "4.0 KiB bfloat16 + 1.0 KiB float32");
  EXPECT_EQ(format_bytes(BytesByDtype{}), "0 B");
}

TEST(MemoryPlan, MlpForwardBackwardPeaksWellBelowTheSum) {
  Graph g = trace_graph(mlp_backward, mlp_specs(128, {784, 512, 256, 10}));
  MemoryPlan plan = plan_memory(g);
  expect_no_live_overlap(g, plan);
  EXPECT_LT(plan.arena_bytes * 2, plan.intermediate_bytes) << plan.to_string();
  EXPECT_GE(plan.arena_bytes, plan.live_peak_bytes);
  // Little fragmentation: best fit may leave one activation-sized gap (128 KiB here) above the live peak.
  EXPECT_LT(plan.arena_bytes, plan.live_peak_bytes * 5 / 4) << plan.to_string();
  EXPECT_EQ(plan.bytes_saved(), plan.intermediate_bytes - plan.arena_bytes);
  std::cout << "[ memory plan ] MLP 784-512-256-10, batch 128, forward+backward: " << plan.to_string() << "\n";
}

TEST(MemoryPlan, MlpTrainStep) {
  // The SGD updates come after the whole backward pass, so every weight gradient is live at once
  // at the end: that, not the allocator, bounds this graph's peak (live_peak_bytes).
  Graph g = trace_graph(mlp_train_step, mlp_specs(128, {784, 512, 256, 10}));
  MemoryPlan plan = plan_memory(g);
  expect_no_live_overlap(g, plan);
  EXPECT_LT(plan.arena_bytes, plan.intermediate_bytes);
  EXPECT_GE(plan.arena_bytes, plan.live_peak_bytes);
  const std::string text = plan.to_string();
  EXPECT_TRUE(testing::contains(text, "saved")) << text;
  std::cout << "[ memory plan ] MLP 784-512-256-10, batch 128, train step (" << g.num_ops() << " ops): " << text
            << "\n";
}

TEST(MemoryPlan, ThousandsOfNodesPlanQuickly) {
  // A long residual chain: x_{i+1} = x_i + exp(x_i), so every value has two readers.
  Graph seed = trace_graph([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + ops::exp(in[0])}; },
                           {{{64}, DType::float32}});
  auto exp_op = seed.node(1).primitive;
  auto add_op = seed.node(2).primitive;
  Graph g;
  const TensorSpec spec{{64}, DType::float32};
  ValueId x = g.add_input(spec, "x");
  for (int i = 0; i < 20000; ++i) x = g.add_op(add_op, {x, g.add_op(exp_op, {x}, spec, "")}, spec, "");
  g.add_output(x);
  const auto start = std::chrono::steady_clock::now();
  MemoryPlan plan = plan_memory(g);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0);
  EXPECT_EQ(plan.num_intermediates, 40000 - 1);
  EXPECT_LE(plan.arena_bytes, 3 * 256);  // x_i, exp(x_i) and x_{i+1} at most
}

}  // namespace
}  // namespace kestrel::jit
