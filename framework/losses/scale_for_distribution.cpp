#include "framework/losses/scale_for_distribution.h"

#include "framework/distribute/replica_context.h"
#include "framework/ops/elementwise.h"

namespace kestrel::losses {

Tensor scale_loss_for_distribution(const Tensor& loss) {
  const distribute::ReplicaContext* replica = distribute::replica_context();
  if (replica == nullptr || !replica->loss_scale.defined()) return loss;
  return ops::multiply(loss, ops::cast(replica->loss_scale, loss.dtype()));
}

}  // namespace kestrel::losses
