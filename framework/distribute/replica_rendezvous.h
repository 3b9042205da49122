// ReplicaRendezvous: where the replicas of one step wait for each other (merge_call.h's
// mechanism). Each replica arrives at a named merge point with its values; the last to arrive
// runs the merge with every replica's values, and all go on. A failure, a replica at another
// merge point, or a replica that ends its step while others wait stops the step on every
// replica, with an error, never a hang.
//
//   ReplicaRendezvous rendezvous(8);     // one per step, shared by its replicas
//   // on replica r's thread:
//   rendezvous.merge(r, "optimizer.apply", gradients, [&](const PerReplicaValues& all) { ... });
//   rendezvous.finished(r);              // or, when replica r threw: rendezvous.cancel(r)
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/tensor.h"

namespace kestrel::distribute {

/// values[r]: what replica r brought to a merge point.
using PerReplicaValues = std::vector<std::vector<Tensor>>;

/// Thrown in the replicas of a step that another replica's failure stopped.
class ReplicaCancelledError : public Error {
 public:
  using Error::Error;
};

/// The meeting point of one step's replicas (one per step, shared by its replicas).
class ReplicaRendezvous {
 public:
  explicit ReplicaRendezvous(int replicas);
  ReplicaRendezvous(const ReplicaRendezvous&) = delete;
  ReplicaRendezvous& operator=(const ReplicaRendezvous&) = delete;

  /// Replica `replica` arrives at the merge point `what` with `values` and waits for the others;
  /// the last to arrive runs fn with every replica's values (values[r]: replica r's), with
  /// kernels parallel again, as the others wait and leave the cores free.
  void merge(int replica, std::string_view what, std::vector<Tensor> values,
             const std::function<void(const PerReplicaValues&)>& fn);
  /// Replica `replica` failed: the others stop waiting (ReplicaCancelledError).
  void cancel(int replica);
  /// Replica `replica` ended its step; an error if others wait at a merge point it never reached.
  void finished(int replica);

 private:
  /// Stops the step: replicas waiting, and any arriving later, throw ValueError(message), or
  /// ReplicaCancelledError when the message is empty. Requires mutex_.
  void stop(std::string message);
  [[noreturn]] void throw_stopped() const;

  const int replicas_;
  std::mutex mutex_;
  std::condition_variable met_;
  std::uint64_t merges_done_ = 0;
  int arrived_ = 0;
  std::string what_;         // the merge point the arrived replicas wait at
  int first_arrived_ = -1;   // the replica that arrived there first
  PerReplicaValues values_;  // what they brought
  int finished_ = -1;        // a replica that ended its step (the lowest seen), or -1
  bool stopped_ = false;
  std::string stop_message_;
};

}  // namespace kestrel::distribute
