// AutocastScope: while alive, floating variables read on this thread come back in one dtype, as
// Keras's AutocastScope. Every layer call holds one for its policy's compute dtype (CallScope
// below), so a mixed_bfloat16 layer's float32 weights enter its math as bfloat16, and the cast is
// recorded so their gradients come back float32.
//
//   {
//     AutocastScope autocast(DType::bfloat16);
//     Tensor k = dense.kernel().value();   // bfloat16, though the variable is float32
//   }
#pragma once

#include "framework/core/variable.h"
#include "framework/jit/trace.h"
#include "framework/layers/dtype_policy.h"

namespace kestrel {

class Layer;

class AutocastScope final : public detail::ReadCast {
 public:
  explicit AutocastScope(DType dtype);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

  Tensor cast(const Tensor& stored) const override;
  /// The dtype reads are cast to.
  DType dtype() const { return dtype_; }

 private:
  DType dtype_;
  const detail::ReadCast* previous_;
};

/// What every layer call runs inside: the jit trace's layer name, and the layer's compute dtype
/// for its weights (AutocastScope) and for its inputs (input()). Layers with call signatures of
/// their own (attention) hold one too.
class CallScope {
 public:
  explicit CallScope(const Layer& layer);

  /// x in the layer's compute dtype when it is floating (Keras casts a layer's floating inputs);
  /// integer ids, masks and undefined tensors pass through.
  Tensor input(const Tensor& x) const;

 private:
  jit::LayerScope trace_scope_;
  AutocastScope autocast_;
};

}  // namespace kestrel
