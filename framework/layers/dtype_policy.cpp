#include "framework/layers/dtype_policy.h"

#include <mutex>

#include "framework/core/error.h"

namespace kestrel {
namespace {

// "\"float32\", \"mixed_bfloat16\" or \"bfloat16\"", for errors.
std::string supported_names() {
  const std::vector<std::string>& names = mixed_precision::policy_names();
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + ("\"" + names[i] + "\"");
  }
  return out;
}

struct GlobalPolicy {
  std::mutex mutex;
  DTypePolicy policy{"float32"};
};
GlobalPolicy& global() {
  static GlobalPolicy policy;
  return policy;
}

}  // namespace

DTypePolicy::DTypePolicy(std::string_view name) : name_(name) {
  if (name == "float32") {
    variable_ = compute_ = DType::float32;
  } else if (name == "bfloat16") {
    variable_ = compute_ = DType::bfloat16;
  } else if (name == "mixed_bfloat16") {
    variable_ = DType::float32;
    compute_ = DType::bfloat16;
  } else if (name == "float16" || name == "mixed_float16") {
    throw ValueError("dtype policy '" + name_ + "' is not offered: Kestrel supports " + supported_names() +
                     ". float16 needs loss scaling to keep small gradients from flushing to zero, and CPUs have "
                     "no fast float16 arithmetic; bfloat16 keeps float32's exponent range, needs no loss scaling, "
                     "and is what TPUs compute in: use \"mixed_bfloat16\"");
  } else {
    throw ValueError("unknown dtype policy '" + name_ + "'; Kestrel supports " + supported_names());
  }
}

DTypePolicy::DTypePolicy(DType dtype) {
  if (dtype != DType::float32 && dtype != DType::bfloat16) {
    throw ValueError("a dtype policy computes in float32 or bfloat16, not " + std::string(to_string(dtype)) + "; use " +
                     supported_names());
  }
  *this = DTypePolicy(to_string(dtype));
}

namespace mixed_precision {

void set_global_policy(const DTypePolicy& policy) {
  GlobalPolicy& g = global();
  const std::lock_guard<std::mutex> lock(g.mutex);
  g.policy = policy;
}

DTypePolicy global_policy() {
  GlobalPolicy& g = global();
  const std::lock_guard<std::mutex> lock(g.mutex);
  return g.policy;
}

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names = {"float32", "mixed_bfloat16", "bfloat16"};
  return names;
}

}  // namespace mixed_precision
}  // namespace kestrel
