#include "framework/ops/op_list.h"

#include <array>

namespace kestrel {
namespace {

constexpr std::array<std::string_view, kNumOps> kNames = {
#define KESTREL_OP_NAME(name, kind) #name,
    KESTREL_OPS(KESTREL_OP_NAME)
#undef KESTREL_OP_NAME
};

}  // namespace

std::string_view op_name(OpId id) { return kNames[static_cast<std::size_t>(id)]; }

}  // namespace kestrel
