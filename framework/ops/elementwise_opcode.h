// The instructions of fused elementwise programs, expanded from KESTREL_ELEMENTWISE_OPCODES
// (op_list.h): nothing here is written per opcode.
//
//   opcode_name(ElementwiseOpcode::gelu_tanh);   // "gelu_tanh"
//   opcode_arity(ElementwiseOpcode::select);     // 3
//   opcode_op(ElementwiseOpcode::square);        // OpId::multiply
//   opcode_symbol(ElementwiseOpcode::add);       // "+"
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "framework/ops/op_list.h"

namespace kestrel {

/// What one instruction computes: an input, a constant, or one opcode of the list.
enum class ElementwiseOpcode : std::uint8_t {
  input,     ///< the value of input k (args[0] holds k)
  constant,  ///< a float32 constant (value)
#define KESTREL_OPCODE_ENUM(opcode, arity, op, symbol) opcode,
  KESTREL_ELEMENTWISE_OPCODES(KESTREL_OPCODE_ENUM)
#undef KESTREL_OPCODE_ENUM
};

#define KESTREL_OPCODE_COUNT(opcode, arity, op, symbol) +1
inline constexpr std::size_t kNumElementwiseOpcodes = 2 KESTREL_ELEMENTWISE_OPCODES(KESTREL_OPCODE_COUNT);
#undef KESTREL_OPCODE_COUNT

/// Every opcode but input and constant, in list order.
inline constexpr std::array<ElementwiseOpcode, kNumElementwiseOpcodes - 2> kComputingOpcodes = {
#define KESTREL_OPCODE_VALUE(opcode, arity, op, symbol) ElementwiseOpcode::opcode,
    KESTREL_ELEMENTWISE_OPCODES(KESTREL_OPCODE_VALUE)
#undef KESTREL_OPCODE_VALUE
};

namespace detail {

struct OpcodeInfo {
  std::string_view name;
  int arity = 0;
  std::optional<OpId> op;
  std::string_view symbol;
};

inline constexpr std::array<OpcodeInfo, kNumElementwiseOpcodes> kOpcodeInfo = {
    {{"input", 0, std::nullopt, ""},
     {"constant", 0, std::nullopt, ""},
#define KESTREL_OPCODE_INFO(opcode, arity, op, symbol) {#opcode, arity, OpId::op, symbol},
     KESTREL_ELEMENTWISE_OPCODES(KESTREL_OPCODE_INFO)
#undef KESTREL_OPCODE_INFO
    }};

constexpr const OpcodeInfo& opcode_info(ElementwiseOpcode opcode) {
  return kOpcodeInfo[static_cast<std::size_t>(opcode)];
}

}  // namespace detail

/// The opcode's name, as program text shows it ("subtract").
constexpr std::string_view opcode_name(ElementwiseOpcode opcode) { return detail::opcode_info(opcode).name; }
/// How many registers the opcode reads (0 for input and constant).
constexpr int opcode_arity(ElementwiseOpcode opcode) { return detail::opcode_info(opcode).arity; }
/// The op whose result the opcode computes; nullopt for input and constant.
constexpr std::optional<OpId> opcode_op(ElementwiseOpcode opcode) { return detail::opcode_info(opcode).op; }
/// The operator formulas write it with ("+", "-" for negative), or "" where they call it by name.
constexpr std::string_view opcode_symbol(ElementwiseOpcode opcode) { return detail::opcode_info(opcode).symbol; }

}  // namespace kestrel
