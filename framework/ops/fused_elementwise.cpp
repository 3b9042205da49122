// ElementwiseProgram and its builder: text, equality, hashing, CSE and dead-code removal.
// The primitive and its public op are in primitives/fused_elementwise.cpp, the kernel in
// kernels/fused_elementwise_kernel.cpp.
#include "framework/ops/fused_elementwise.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <string>

#include "framework/core/error.h"
#include "framework/ops/primitive.h"

namespace kestrel {
namespace {

using Op = ElementwiseOpcode;
using Value = ElementwiseBuilder::Value;

std::string float_text(float value) {
  char buffer[32];
  // The shortest text that reads back as the same float, so dumps are exact and short.
  auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return error == std::errc() ? std::string(buffer, end) : std::to_string(value);
}

ElementwiseBuilder& same_builder(const char* what, Value a, Value b) {
  if (&a.builder() != &b.builder()) {
    throw ValueError(op_message("fused_elementwise", std::string("operator") + what +
                                                         " on values of two builders; build each program "
                                                         "from one ElementwiseBuilder"));
  }
  return a.builder();
}

}  // namespace

bool operator==(const ElementwiseInstruction& a, const ElementwiseInstruction& b) {
  return a.opcode == b.opcode && a.args == b.args &&
         std::bit_cast<std::uint32_t>(a.value) == std::bit_cast<std::uint32_t>(b.value);
}

std::string ElementwiseProgram::to_string() const {
  std::string out;
  auto reg = [&out](std::int32_t r) {
    out += '%';
    out += std::to_string(r);
  };
  for (std::size_t r = 0; r < instructions_.size(); ++r) {
    const ElementwiseInstruction& in = instructions_[r];
    reg(static_cast<std::int32_t>(r));
    out += " = ";
    out += opcode_name(in.opcode);
    if (in.opcode == Op::input) {
      out += ' ';
      out += std::to_string(in.args[0]);
    } else if (in.opcode == Op::constant) {
      out += ' ';
      out += float_text(in.value);
    } else {
      for (int k = 0; k < opcode_arity(in.opcode); ++k) {
        out += k == 0 ? " " : ", ";
        reg(in.args[static_cast<std::size_t>(k)]);
      }
    }
    out += "; ";
  }
  out += "-> ";
  reg(result_);
  return out;
}

std::string ElementwiseProgram::to_expression() const {
  const auto count = instructions_.size();
  std::vector<int> uses(count, 0);
  for (const ElementwiseInstruction& in : instructions_) {
    for (int k = 0; k < opcode_arity(in.opcode); ++k) ++uses[static_cast<std::size_t>(in.args[k])];
  }
  // text[r]: how an operand refers to register r (its formula, or its name when it is shared).
  std::vector<std::string> text(count);
  std::string out;
  for (std::size_t r = 0; r < count; ++r) {
    const ElementwiseInstruction& in = instructions_[r];
    auto arg = [&](int k) -> const std::string& { return text[static_cast<std::size_t>(in.args[k])]; };
    // Built by appending: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string at -O3.
    std::string formula;
    if (in.opcode == Op::input) {
      formula.append("in").append(std::to_string(in.args[0]));
    } else if (in.opcode == Op::constant) {
      formula = float_text(in.value);
    } else if (const std::string_view symbol = opcode_symbol(in.opcode); symbol.empty()) {
      formula.append(opcode_name(in.opcode)).append("(");
      for (int k = 0; k < opcode_arity(in.opcode); ++k) formula.append(k ? ", " : "").append(arg(k));
      formula.append(")");
    } else if (opcode_arity(in.opcode) == 1) {
      formula.append(symbol).append(arg(0));
    } else {
      // Infix for arithmetic and comparisons, so a formula reads as it would be written by hand.
      formula.append("(").append(arg(0)).append(" ").append(symbol).append(" ").append(arg(1)).append(")");
    }
    const bool shared = uses[r] > 1 && opcode_arity(in.opcode) > 0 && static_cast<std::int32_t>(r) != result_;
    if (shared) {
      text[r].append("t").append(std::to_string(r));
      out.append(text[r]).append(" = ").append(formula).append("; ");
    } else {
      text[r] = std::move(formula);
    }
  }
  return out.append(text[static_cast<std::size_t>(result_)]);
}

std::size_t ElementwiseProgram::hash() const {
  std::size_t h = instructions_.size();
  detail::hash_combine(h, static_cast<std::size_t>(result_));
  detail::hash_combine(h, static_cast<std::size_t>(num_inputs_));
  for (const ElementwiseInstruction& in : instructions_) {
    detail::hash_combine(h, static_cast<std::size_t>(in.opcode));
    for (std::int32_t a : in.args) detail::hash_combine(h, static_cast<std::size_t>(static_cast<std::uint32_t>(a)));
    detail::hash_combine(h, std::bit_cast<std::uint32_t>(in.value));
  }
  return h;
}

Value ElementwiseBuilder::input(int index) {
  if (index < 0) {
    throw ValueError(op_message("fused_elementwise", "input(" + std::to_string(index) + "): input indices start at 0"));
  }
  num_inputs_ = std::max(num_inputs_, index + 1);
  ElementwiseInstruction in;
  in.opcode = Op::input;
  in.args[0] = index;
  return emit(in);
}

Value ElementwiseBuilder::constant(double value) {
  ElementwiseInstruction in;
  in.opcode = Op::constant;
  in.value = static_cast<float>(value);
  return emit(in);
}

Value ElementwiseBuilder::apply(ElementwiseOpcode opcode, std::span<const Value> args) {
  if (opcode_arity(opcode) == 0 || static_cast<std::size_t>(opcode_arity(opcode)) != args.size()) {
    throw ValueError(op_message("fused_elementwise", "apply(" + std::string(opcode_name(opcode)) + ") got " +
                                                         std::to_string(args.size()) + " values; it takes " +
                                                         std::to_string(opcode_arity(opcode)) +
                                                         " (use input() and constant() for those)"));
  }
  return emit(opcode, args);
}

Value ElementwiseBuilder::emit(ElementwiseOpcode opcode, std::span<const Value> args) {
  ElementwiseInstruction in;
  in.opcode = opcode;
  int k = 0;
  for (const Value& v : args) {
    if (v.builder_ != this) {
      throw ValueError(op_message("fused_elementwise", std::string(opcode_name(opcode)) +
                                                           ": a value comes from another ElementwiseBuilder; build "
                                                           "each program from one builder"));
    }
    in.args[static_cast<std::size_t>(k++)] = v.reg_;
  }
  return emit(in);
}

Value ElementwiseBuilder::emit(const ElementwiseInstruction& instruction) {
  // Programs are a few dozen instructions: a linear search is the cheapest CSE.
  auto found = std::find(instructions_.begin(), instructions_.end(), instruction);
  if (found != instructions_.end()) return Value(this, static_cast<std::int32_t>(found - instructions_.begin()));
  instructions_.push_back(instruction);
  return Value(this, static_cast<std::int32_t>(instructions_.size() - 1));
}

ElementwiseProgram ElementwiseBuilder::build(Value result) const {
  if (result.builder_ != this) {
    throw ValueError(op_message("fused_elementwise", "build() got a value of another ElementwiseBuilder"));
  }
  // Keep what the result depends on, renumbered in order (operands always precede their users).
  const auto n = static_cast<std::size_t>(result.reg_) + 1;
  std::vector<bool> live(n, false);
  live[n - 1] = true;
  for (std::size_t r = n; r-- > 0;) {
    if (!live[r]) continue;
    const ElementwiseInstruction& in = instructions_[r];
    for (int k = 0; k < opcode_arity(in.opcode); ++k) live[static_cast<std::size_t>(in.args[k])] = true;
  }
  std::vector<std::int32_t> renumbered(n, -1);
  std::vector<ElementwiseInstruction> kept;
  for (std::size_t r = 0; r < n; ++r) {
    if (!live[r]) continue;
    ElementwiseInstruction in = instructions_[r];
    for (int k = 0; k < opcode_arity(in.opcode); ++k) in.args[k] = renumbered[static_cast<std::size_t>(in.args[k])];
    renumbered[r] = static_cast<std::int32_t>(kept.size());
    kept.push_back(in);
  }
  const auto last = static_cast<std::int32_t>(kept.size()) - 1;
  return ElementwiseProgram(std::move(kept), last, num_inputs_);
}

Value operator+(Value a, Value b) { return same_builder("+", a, b).add(a, b); }
Value operator-(Value a, Value b) { return same_builder("-", a, b).subtract(a, b); }
Value operator*(Value a, Value b) { return same_builder("*", a, b).multiply(a, b); }
Value operator/(Value a, Value b) { return same_builder("/", a, b).divide(a, b); }
Value operator-(Value x) { return x.builder().negative(x); }
Value operator+(Value a, double b) { return a + a.builder().constant(b); }
Value operator-(Value a, double b) { return a - a.builder().constant(b); }
Value operator*(Value a, double b) { return a * a.builder().constant(b); }
Value operator/(Value a, double b) { return a / a.builder().constant(b); }
Value operator+(double a, Value b) { return b.builder().constant(a) + b; }
Value operator-(double a, Value b) { return b.builder().constant(a) - b; }
Value operator*(double a, Value b) { return b.builder().constant(a) * b; }
Value operator/(double a, Value b) { return b.builder().constant(a) / b; }

}  // namespace kestrel
