// Fusion coverage, driven by the op test table: every elementwise or broadcast op of the op list
// is fusible (its primitive names the instruction computing it) or is listed below with the
// reason it is not; and every case of a fusible op gives the same bits as its one-instruction
// fused program, on its inputs repeated over many blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "framework/jit/trace.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/fused_elementwise.h"
#include "framework/ops/shape_ops.h"
#include "tests/framework/ops/fused_elementwise_reference.h"
#include "tests/framework/ops/op_case.h"

namespace kestrel::testing {
namespace {

// Elementwise and broadcast ops without an instruction of their own, and why.
const std::map<OpId, std::string> kWithoutInstruction = {
    {OpId::pow, "barrier: std::pow has no vector form for the fused kernel and the op to share"},
    {OpId::cast,
     "carried: the fusion pass fuses the casts between the floats and bool, which relabel a value (a float -> "
     "bool is not_equal(x, 0)) or round it (round_bfloat16); casts to and from integers change the dtype a "
     "program computes in"},
    {OpId::broadcast_to, "carried: the fused kernel repeats scalars and suffixes itself; other broadcasts stop fusion"},
    {OpId::fused_elementwise, "carried: its program is inlined into the region around it"},
};

// Opcodes no op's primitive reports, and why they exist.
const std::map<ElementwiseOpcode, std::string> kWithoutOp = {
    {ElementwiseOpcode::square, "for programs written by hand (optimizer updates); ops::square is multiply(x, x)"},
    {ElementwiseOpcode::round_bfloat16,
     "the fusion pass emits it for each bfloat16 value of a region; ops::cast has no single opcode, as it also "
     "converts integers"},
};

bool fusion_kind(OpId op) { return op_kind(op) == OpKind::elementwise || op_kind(op) == OpKind::broadcast; }

// An op of a case, as the case runs it: its primitive and the tensors it reads.
struct AppliedOp {
  std::shared_ptr<const Primitive> primitive;
  Inputs inputs;
};

// The ops a case runs that are its own op and read only the case's inputs or constants.
std::vector<AppliedOp> ops_of(const OpCase& c) {
  const Inputs inputs = c.make_inputs();
  jit::Trace trace;
  jit::Graph graph;
  {
    jit::TraceScope active(trace);
    Inputs symbolic;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      symbolic.push_back(trace.input(inputs[i].spec(), "in" + std::to_string(i)));
    }
    graph = trace.finish({c.run(symbolic)});
  }
  std::vector<AppliedOp> out;
  for (const jit::Node& node : graph.nodes()) {
    if (node.kind != jit::NodeKind::op || node.primitive->id() != c.op) continue;
    AppliedOp applied{node.primitive, {}};
    for (jit::ValueId in : node.inputs) {
      const jit::Node& source = graph.node(in);
      if (source.kind == jit::NodeKind::constant) {
        applied.inputs.push_back(source.constant);
      } else if (source.kind == jit::NodeKind::input) {
        const auto position = std::find(graph.inputs().begin(), graph.inputs().end(), in) - graph.inputs().begin();
        applied.inputs.push_back(inputs[static_cast<std::size_t>(position)]);
      }
    }
    if (applied.inputs.size() == node.inputs.size()) out.push_back(std::move(applied));
  }
  return out;
}

bool is_fusion_case(const OpCase& c) { return fusion_kind(c.op) && c.op != OpId::fused_elementwise; }

TEST(FusionCoverage, EveryElementwiseOpIsFusibleOrListedWithItsReason) {
  std::set<OpId> fusible;
  std::set<ElementwiseOpcode> reported;
  for (const OpCase& c : op_case_table()) {
    if (!is_fusion_case(c)) continue;
    for (const AppliedOp& applied : ops_of(c)) {
      const std::optional<ElementwiseOpcode> opcode = applied.primitive->fusion_opcode();
      if (!opcode) continue;
      fusible.insert(c.op);
      reported.insert(*opcode);
      EXPECT_EQ(opcode_op(*opcode), c.op) << c.label << ": opcode " << opcode_name(*opcode) << " computes another op";
    }
  }
  for (std::size_t i = 0; i < kNumOps; ++i) {
    const auto op = static_cast<OpId>(i);
    if (!fusion_kind(op)) continue;
    const bool listed = kWithoutInstruction.count(op) > 0;
    EXPECT_TRUE(fusible.count(op) > 0 || listed)
        << "op '" << op_name(op) << "' is " << (op_kind(op) == OpKind::elementwise ? "elementwise" : "broadcast")
        << " but neither fusible (an opcode in KESTREL_ELEMENTWISE_OPCODES, a functor, its primitive's "
           "fusion_opcode()) nor listed in kWithoutInstruction with the reason";
    EXPECT_FALSE(fusible.count(op) > 0 && listed) << "op '" << op_name(op) << "' is fusible: drop it from the list";
  }
  for (ElementwiseOpcode opcode : kComputingOpcodes) {
    EXPECT_TRUE(reported.count(opcode) > 0 || kWithoutOp.count(opcode) > 0)
        << "no op case reaches opcode " << opcode_name(opcode) << " through its primitive's fusion_opcode()";
  }
}

// The case's inputs, each of the output's shape repeated k times over a new leading axis (others,
// suffixes and scalars, as they are), so that the op and the fused kernel run many vector blocks
// and a tail.
Inputs repeated(const Inputs& inputs, const Shape& out, std::int64_t k) {
  std::vector<std::int64_t> dims{k};
  for (int d = 0; d < out.rank(); ++d) dims.push_back(out[d]);
  const Shape big(dims);
  Inputs result;
  for (const Tensor& x : inputs) result.push_back(x.shape() == out ? ops::broadcast_to(x, big) : x);
  return result;
}

TEST(FusionCoverage, EveryFusibleCaseEqualsItsInstructionBitForBit) {
  std::set<ElementwiseOpcode> checked;
  for (const OpCase& c : op_case_table()) {
    if (!is_fusion_case(c)) continue;
    for (const AppliedOp& applied : ops_of(c)) {
      const std::optional<ElementwiseOpcode> opcode = applied.primitive->fusion_opcode();
      // Fused programs compute in float32: where's bool condition is the one other dtype they carry.
      const std::size_t first_value = applied.primitive->id() == OpId::where ? 1 : 0;
      const bool float32_values = std::all_of(applied.inputs.begin() + first_value, applied.inputs.end(),
                                              [](const Tensor& t) { return t.dtype() == DType::float32; });
      if (!opcode || !float32_values) continue;
      const Shape shape = detail::apply(applied.primitive, applied.inputs).shape();
      const Inputs inputs = repeated(applied.inputs, shape, 4099 / std::max<std::int64_t>(1, shape.numel()) + 1);
      const Tensor eager = detail::apply(applied.primitive, inputs);
      std::vector<Tensor> operands;  // a bool condition as 1 or 0, as fused regions carry it
      for (const Tensor& x : inputs) operands.push_back(ops::cast(x, DType::float32));
      const bool readable = std::all_of(operands.begin(), operands.end(), [&](const Tensor& t) {
        return t.rank() == 0 || detail::fused_input_fits(t.shape(), eager.shape());
      });
      if (!readable) continue;  // a broadcast the fused kernel does not read (the fusion pass leaves it)
      ElementwiseBuilder b;
      std::vector<ElementwiseBuilder::Value> registers;
      for (std::size_t k = 0; k < operands.size(); ++k) registers.push_back(b.input(static_cast<int>(k)));
      const Tensor fused =
          ops::fused_elementwise(b.build(b.apply(*opcode, registers)), operands, {.shape = eager.shape()});
      EXPECT_EQ(float_bits(fused), float_bits(ops::cast(eager, DType::float32)))
          << c.label << " (opcode " << opcode_name(*opcode) << ", " << eager.numel() << " elements)";
      checked.insert(*opcode);
    }
  }
  for (ElementwiseOpcode opcode : kComputingOpcodes) {
    EXPECT_TRUE(checked.count(opcode) > 0 || kWithoutOp.count(opcode) > 0)
        << "no float32 op case checks opcode " << opcode_name(opcode) << " against its op";
  }
}

}  // namespace
}  // namespace kestrel::testing
