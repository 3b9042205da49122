// cross_replica_sum and all_gather (ops/collective.h). Their kernels are the one-replica case,
// and cross_replica_sum's also the eager step whose replicas meet: a replicated program never
// runs them as kernels, it performs them between its stages.
#include <cstring>
#include <string>
#include <tuple>

#include "framework/core/error.h"
#include "framework/distribute/distribution.h"
#include "framework/distribute/replica_context.h"
#include "framework/distribute/replica_rendezvous.h"
#include "framework/ops/collective.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/primitive.h"

namespace kestrel {
namespace {

// What running a collective as a kernel means: one replica, whose value is the result.
void run_as_one_replica(std::string_view op, int replicas, std::span<const TensorView> in, const TensorView& out) {
  if (replicas != 1) {
    throw JitError(std::string(op) + " over " + std::to_string(replicas) +
                   " replicas ran as a kernel: it combines the values of every replica of a compiled step, so it "
                   "runs only inside jit::ReplicatedFunction, between the stages of the program (trace the step "
                   "with ReplicatedFunction, run it eagerly in a step whose replicas meet (Strategy::run), or call "
                   "it with replicas = 1)");
  }
  std::memcpy(out.data, in[0].data, static_cast<std::size_t>(in[0].numel()) * size_of(in[0].dtype));
}

// Eagerly, in a step whose replicas meet (distribute::merge_call's rendezvous), the replicas sum
// here as a compiled step does between its stages: the last to arrive sums every replica's value
// with the strategy's own all-reduce, in replica order, and hands each replica the sum. False
// outside such a step. The gradient's cross_replica_sum meets the others again in the backward pass.
bool sum_over_meeting_replicas(int replicas, const TensorView& in, const TensorView& out) {
  const distribute::ReplicaContext* context = distribute::replica_context();
  if (context == nullptr || context->rendezvous == nullptr || context->distribution == nullptr) return false;
  if (context->num_replicas_in_sync() != replicas) {
    throw ValueError(op_message("cross_replica_sum", "over " + std::to_string(replicas) + " replicas in a step of " +
                                                         std::to_string(context->num_replicas_in_sync()) +
                                                         " replicas in sync; sum over num_replicas_in_sync()"));
  }
  const std::size_t bytes = static_cast<std::size_t>(in.numel()) * size_of(in.dtype);
  const Tensor mine = Tensor::empty(in.shape, in.dtype);
  std::memcpy(mine.view().data, in.data, bytes);
  const Tensor summed = Tensor::empty(out.shape, out.dtype);
  const distribute::Distribution& distribution = *context->distribution;
  context->rendezvous->merge(context->replica_id, "cross_replica_sum", {mine, summed},
                             [&](const distribute::PerReplicaValues& all) {
                               distribute::PerReplicaValues values;
                               for (const std::vector<Tensor>& replica : all) values.push_back({replica.at(0)});
                               const Tensor sum = distribution.all_reduce_sum(values).at(0);
                               for (const std::vector<Tensor>& replica : all) {
                                 std::memcpy(replica.at(1).view().data, sum.raw_data(), bytes);
                               }
                             });
  std::memcpy(out.data, summed.raw_data(), bytes);
  return true;
}

void check_replicas(std::string_view op, int replicas) {
  if (replicas < 1) throw ValueError(op_message(op, "replicas must be >= 1, got " + std::to_string(replicas)));
}

class CrossReplicaSum final : public PrimitiveOf<CrossReplicaSum, OpId::cross_replica_sum> {
 public:
  explicit CrossReplicaSum(int replicas) : replicas_(replicas) {}
  auto fields() const { return std::tie(replicas_); }
  std::string params() const override { return "replicas=" + std::to_string(replicas_); }
  bool handles_bfloat16() const override { return true; }

  TensorSpec infer(std::span<const TensorSpec> in) const override { return in[0]; }
  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    if (replicas_ > 1 && sum_over_meeting_replicas(replicas_, in[0], out)) return;
    run_as_one_replica("cross_replica_sum", replicas_, in, out);
  }
  // Every replica's loss reads the sum, so each replica's x gets every replica's cotangent.
  std::vector<Tensor> vjp(const VjpArgs& args) const override {
    return {ops::cross_replica_sum(args.cotangent, replicas_)};
  }

 private:
  int replicas_;
};

class AllGather final : public PrimitiveOf<AllGather, OpId::all_gather> {
 public:
  explicit AllGather(int replicas) : replicas_(replicas) {}
  auto fields() const { return std::tie(replicas_); }
  std::string params() const override { return "replicas=" + std::to_string(replicas_); }
  bool handles_bfloat16() const override { return true; }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    TensorSpec out = in[0];
    out.shape[0] *= replicas_;
    return out;
  }
  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    run_as_one_replica("all_gather", replicas_, in, out);
  }
  std::vector<Tensor> vjp(const VjpArgs& args) const override {
    if (replicas_ != 1) {
      throw JitError("all_gather over " + std::to_string(replicas_) +
                     " replicas has no gradient: gather after the gradients are taken (metrics do, at their merge "
                     "point), or sum with cross_replica_sum");
    }
    return {args.cotangent};
  }

 private:
  int replicas_;
};

}  // namespace

namespace ops {

Tensor cross_replica_sum(const Tensor& x, int replicas) {
  if (!x.defined()) throw ValueError(op_message("cross_replica_sum", "x is an undefined tensor"));
  check_replicas("cross_replica_sum", replicas);
  return detail::apply_new<CrossReplicaSum>({x}, replicas);
}

Tensor all_gather(const Tensor& x, int replicas) {
  if (!x.defined()) throw ValueError(op_message("all_gather", "x is an undefined tensor"));
  check_replicas("all_gather", replicas);
  if (x.rank() == 0) {
    throw ShapeError(op_message(
        "all_gather", "x is " + x.spec().to_string() + ", a scalar; it joins the replicas' values along axis 0"));
  }
  return detail::apply_new<AllGather>({x}, replicas);
}

}  // namespace ops

std::shared_ptr<const Primitive> detail::all_gather_primitive(int replicas) {
  check_replicas("all_gather", replicas);
  return std::make_shared<const AllGather>(replicas);
}

}  // namespace kestrel
