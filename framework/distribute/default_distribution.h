// The default strategy: what runs when no strategy's scope is active (TF's default distribution
// strategy). One replica, on the calling thread; its merges and all-reduces are the replica's
// own values. fit, evaluate and predict run their step functions under it, so a model without a
// strategy takes the path a model under one does, with nothing to split or meet.
//
//   const distribute::Distribution& one = distribute::default_distribution();
//   one.num_replicas_in_sync();   // 1
#pragma once

#include "framework/distribute/distribution.h"

namespace kestrel::distribute {

/// The one default strategy. Variables created outside every scope belong to none
/// (distribution_of is null), not to it: it is the absence of a strategy.
const Distribution& default_distribution();

}  // namespace kestrel::distribute
