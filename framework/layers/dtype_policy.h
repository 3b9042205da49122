// Precision policies, as Keras's DTypePolicy: which dtype a layer stores its variables in and
// which it computes in.
//
//   mixed_precision::set_global_policy("mixed_bfloat16");  // layers made from now on
//   layers::Dense hidden(512);                             // float32 kernel, bfloat16 matmul
//   layers::Dense head(10, {.dtype = "float32"});           // one layer kept in float32
//   hidden.dtype_policy().compute_dtype();                 // DType::bfloat16
//
// "float32": everything in float32. "mixed_bfloat16": float32 variables, computation in bfloat16
// (inputs and weights cast as the layer runs); layer normalization's statistics, softmax, the loss
// and the metrics in float32, the model's outputs back in float32. "bfloat16": the variables are
// stored in bfloat16 too (TPUs' XLA_USE_BF16), with the loss, the metrics and every logged value
// still in float32 (the downcast mode). bfloat16 keeps float32's exponent range, so no loss scaling
// is needed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "framework/core/dtype.h"

namespace kestrel {

class DTypePolicy {
 public:
  /// "float32", "mixed_bfloat16" or "bfloat16". Any other name (float16 and mixed_float16
  /// included, which CPUs do not accelerate) is a ValueError listing these.
  DTypePolicy(std::string_view name);  // NOLINT(google-explicit-constructor): {.dtype = "float32"}, as Keras
  DTypePolicy(const char* name)
      : DTypePolicy(std::string_view(name)) {}  // NOLINT(google-explicit-constructor): as above
  DTypePolicy(const std::string& name)
      : DTypePolicy(std::string_view(name)) {}  // NOLINT(google-explicit-constructor): as above
  /// The policy that stores and computes in `dtype`: float32 or bfloat16.
  DTypePolicy(DType dtype);  // NOLINT(google-explicit-constructor): {.dtype = DType::bfloat16}

  const std::string& name() const { return name_; }
  /// The dtype a layer's weights are created in.
  DType variable_dtype() const { return variable_; }
  /// The dtype a layer casts its floating inputs and weights to as it runs.
  DType compute_dtype() const { return compute_; }
  /// True when the two differ (mixed_bfloat16).
  bool is_mixed() const { return variable_ != compute_; }

  friend bool operator==(const DTypePolicy& a, const DTypePolicy& b) { return a.name_ == b.name_; }

 private:
  std::string name_;
  DType variable_;
  DType compute_;
};

namespace mixed_precision {

/// Keras's name for the policy type.
using Policy = DTypePolicy;

/// The policy layers made from now on take when they are given none ("float32" at start).
void set_global_policy(const DTypePolicy& policy);
DTypePolicy global_policy();

/// The names DTypePolicy accepts, for flags and option checks: float32, mixed_bfloat16, bfloat16.
const std::vector<std::string>& policy_names();

/// Sets the global policy while it lives and restores the one before it (for tests and programs
/// that build one model under a policy without changing the caller's).
class PolicyScope {
 public:
  explicit PolicyScope(const DTypePolicy& policy) : previous_(global_policy()) { set_global_policy(policy); }
  ~PolicyScope() { set_global_policy(previous_); }
  PolicyScope(const PolicyScope&) = delete;
  PolicyScope& operator=(const PolicyScope&) = delete;

 private:
  DTypePolicy previous_;
};

}  // namespace mixed_precision

}  // namespace kestrel
