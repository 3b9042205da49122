// Fused elementwise op: a small expression over several float tensors, computed in one pass
// over memory instead of one pass (and one new tensor) per op.
//
//   ElementwiseBuilder b;
//   auto m = b.input(0), g = b.input(1);
//   ElementwiseProgram p = b.build(m + (g - m) * 0.1);       // Adam's first moment
//   Tensor m_next = ops::fused_elementwise(p, {m_value, gradient});
//   p.to_string();       // "%0 = input 0; %1 = input 1; %2 = subtract %1, %0; %3 = constant 0.1; ..."
//   p.to_expression();   // "(in0 + ((in1 - in0) * 0.1))"
//
// A program is a straight-line list of instructions over virtual registers, one register per
// instruction, ending in one result. Each input has the output's shape, or a suffix of it (a
// bias [N] against [B, N], or [L, N] against [B, L, N]: repeated over the leading axes), or is a
// rank-0 scalar broadcast over it. The kernel computes in float32 (bfloat16 inputs are widened a
// block at a time; the result's dtype is FusedElementwiseOptions::dtype) with the standalone ops' own
// expressions, so it gives their bits: exactly, for arithmetic, square, abs, negative, relu,
// min/max, comparisons and select. sqrt, rsqrt, exp, log, tanh, sigmoid, erf and the two gelus
// (one instruction each, as ops::gelu is one op) use Eigen's vector functions, as the standalone
// ops do; those (sqrt and rsqrt among them, under EIGEN_FAST_MATH) round differently from
// Eigen's scalar fallback, which a standalone op takes at the unaligned start of a thread's
// chunk and which the kernel takes only for the last n % 8 elements of a block. So the two agree
// bit for bit on one thread, or when n is a multiple of 16 on two, and may differ in the last
// bit on a few elements otherwise; with a suffix input longer than a block, blocks follow its
// rows, and every row's last block has such a tail.
//
// Not differentiable: it runs after autodiff (optimizer updates, the jit's fused regions).
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/ops/elementwise_opcode.h"

namespace kestrel {

/// One instruction; it defines the register numbered by its position in the program.
struct ElementwiseInstruction {
  ElementwiseOpcode opcode = ElementwiseOpcode::constant;
  std::array<std::int32_t, 3> args = {-1, -1, -1};  ///< registers read; for input, args[0] is the input index
  float value = 0.0f;                               ///< constant only

  /// Equal opcodes, arguments and constant bits (so -0 differs from 0 and a NaN equals itself).
  friend bool operator==(const ElementwiseInstruction& a, const ElementwiseInstruction& b);
};

/// A straight-line program, built by ElementwiseBuilder: every instruction reads only earlier
/// registers, and every one contributes to the result (the builder drops dead code).
class ElementwiseProgram {
 public:
  const std::vector<ElementwiseInstruction>& instructions() const { return instructions_; }
  /// The register holding the result.
  std::int32_t result() const { return result_; }
  /// How many inputs the op takes (one past the largest index passed to input()).
  int num_inputs() const { return num_inputs_; }

  /// One line: "%0 = input 0; %1 = constant 0.5; %2 = multiply %0, %1; -> %2".
  std::string to_string() const;
  /// The program as a formula, for graph dumps: "relu((in0 + in1))". A value used more than once
  /// is named once ("t3 = exp(in0); (t3 / (t3 + 1))") rather than written out again.
  std::string to_expression() const;
  /// Agrees with ==, for compile caches and CSE.
  std::size_t hash() const;
  friend bool operator==(const ElementwiseProgram&, const ElementwiseProgram&) = default;

 private:
  friend class ElementwiseBuilder;
  ElementwiseProgram(std::vector<ElementwiseInstruction> instructions, std::int32_t result, int num_inputs)
      : instructions_(std::move(instructions)), result_(result), num_inputs_(num_inputs) {}

  std::vector<ElementwiseInstruction> instructions_;
  std::int32_t result_ = 0;
  int num_inputs_ = 0;
};

/// Builds programs that read like the math. Identical instructions are emitted once. C++ leaves
/// the order of evaluating arguments open, so `a(x) + b(y)` may number b's instructions first:
/// the program computes the same either way, but write one statement per value where its text
/// must be stable.
class ElementwiseBuilder {
 public:
  /// A register of this builder; the arithmetic operators below emit instructions.
  class Value {
   public:
    std::int32_t reg() const { return reg_; }
    ElementwiseBuilder& builder() const { return *builder_; }

   private:
    friend class ElementwiseBuilder;
    Value(ElementwiseBuilder* builder, std::int32_t reg) : builder_(builder), reg_(reg) {}
    ElementwiseBuilder* builder_;
    std::int32_t reg_;
  };

  ElementwiseBuilder() = default;
  // Values point at their builder: it must stay put.
  ElementwiseBuilder(const ElementwiseBuilder&) = delete;
  ElementwiseBuilder& operator=(const ElementwiseBuilder&) = delete;

  /// Input k (k >= 0) of the op; throws ValueError for a negative k.
  Value input(int index);
  /// A constant, rounded to float32 as ops::scalar_like rounds it.
  Value constant(double value);

  // One method per opcode of KESTREL_ELEMENTWISE_OPCODES (op_list.h), named after it and taking
  // as many values as it reads: b.exp(x), b.maximum(x, y), b.select(mask, a, b).
#define KESTREL_BUILDER_METHOD(opcode, arity, op, symbol) \
  template <std::same_as<Value>... Args>                  \
  requires(sizeof...(Args) == (arity)) Value opcode(Args... args) { return emit(ElementwiseOpcode::opcode, {args...}); }
  KESTREL_ELEMENTWISE_OPCODES(KESTREL_BUILDER_METHOD)
#undef KESTREL_BUILDER_METHOD

  /// Any computing opcode on as many values as it reads (for code that maps other programs or
  /// graphs onto a builder). Throws ValueError for input, constant, or a wrong argument count.
  Value apply(ElementwiseOpcode opcode, std::span<const Value> args);

  /// The program computing `result`, without the instructions it does not need. The builder
  /// can go on to build more programs. Throws ValueError for a Value of another builder.
  ElementwiseProgram build(Value result) const;

 private:
  Value emit(ElementwiseOpcode opcode, std::initializer_list<Value> args) {
    return emit(opcode, std::span<const Value>(args.begin(), args.size()));
  }
  Value emit(ElementwiseOpcode opcode, std::span<const Value> args);
  Value emit(const ElementwiseInstruction& instruction);

  std::vector<ElementwiseInstruction> instructions_;
  int num_inputs_ = 0;
};

// Arithmetic on Values emits instructions; a number becomes a constant.
ElementwiseBuilder::Value operator+(ElementwiseBuilder::Value a, ElementwiseBuilder::Value b);
ElementwiseBuilder::Value operator-(ElementwiseBuilder::Value a, ElementwiseBuilder::Value b);
ElementwiseBuilder::Value operator*(ElementwiseBuilder::Value a, ElementwiseBuilder::Value b);
ElementwiseBuilder::Value operator/(ElementwiseBuilder::Value a, ElementwiseBuilder::Value b);
ElementwiseBuilder::Value operator-(ElementwiseBuilder::Value x);
ElementwiseBuilder::Value operator+(ElementwiseBuilder::Value a, double b);
ElementwiseBuilder::Value operator-(ElementwiseBuilder::Value a, double b);
ElementwiseBuilder::Value operator*(ElementwiseBuilder::Value a, double b);
ElementwiseBuilder::Value operator/(ElementwiseBuilder::Value a, double b);
ElementwiseBuilder::Value operator+(double a, ElementwiseBuilder::Value b);
ElementwiseBuilder::Value operator-(double a, ElementwiseBuilder::Value b);
ElementwiseBuilder::Value operator*(double a, ElementwiseBuilder::Value b);
ElementwiseBuilder::Value operator/(double a, ElementwiseBuilder::Value b);

struct FusedElementwiseOptions {
  /// The output's shape. By default it is the shape of the largest input of the highest rank; give
  /// it when no input has it (every input a scalar or a shorter suffix).
  std::optional<Shape> shape = std::nullopt;
  /// The output's dtype, float32 or bfloat16. By default bfloat16 when every non-scalar input is
  /// (every input, when all are scalars), else float32.
  std::optional<DType> dtype = std::nullopt;
};

namespace ops {

/// Runs program over inputs (float32 or bfloat16; each of the output's shape, a suffix of it, or
/// rank-0) in one pass. Throws ValueError for a wrong input count or a recording tape that wants
/// gradients, TypeError for other dtypes and ShapeError for other shapes.
Tensor fused_elementwise(const ElementwiseProgram& program, const std::vector<Tensor>& inputs,
                         FusedElementwiseOptions options = {});

}  // namespace ops

class Primitive;

namespace detail {

/// The primitive ops::fused_elementwise applies, for the jit's fusion pass, which adds graph
/// nodes directly instead of tracing the op.
std::shared_ptr<const Primitive> fused_elementwise_primitive(ElementwiseProgram program,
                                                             FusedElementwiseOptions options = {});
/// The program a fused_elementwise primitive runs; null for any other primitive.
const ElementwiseProgram* fused_program_of(const Primitive& primitive);
/// Fewest output elements one element of a row-broadcast input may stand for: the kernel reads
/// such an input one value per run of elements, so shorter runs would make tiny blocks.
inline constexpr std::int64_t kFusedMinRepeat = 16;
/// How the kernel reads an input of this shape against an output shape, or nullopt when it
/// cannot. 0: element by element — the same shape, rank 0, or the output's last dimensions (a
/// suffix, as a bias) repeated over the rest. n > 0: each element stands for n consecutive output
/// elements — the output's leading dimensions then 1s (a keepdims reduction's [B,T,1] against
/// [B,T,C], n = C), with n >= kFusedMinRepeat.
std::optional<std::int64_t> fused_input_repeat(const Shape& input, const Shape& output);
/// True when the kernel reads an input of this shape against an output shape (fused_input_repeat).
bool fused_input_fits(const Shape& input, const Shape& output);

}  // namespace detail
}  // namespace kestrel

template <>
struct std::hash<kestrel::ElementwiseProgram> {
  std::size_t operator()(const kestrel::ElementwiseProgram& p) const { return p.hash(); }
};
