#include "framework/jit/loop_body.h"

#include <string>
#include <utility>

#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/jit/executor.h"
#include "framework/jit/passes/pipeline.h"
#include "framework/jit/trace.h"

namespace kestrel::jit {
namespace {

// "[scan] in layer 'lstm' (LSTM): ", the start of every error about a loop body.
std::string prefix(const std::string& layer) { return "[scan]" + (layer.empty() ? "" : " in " + layer) + ": "; }

std::string specs_to_string(const std::vector<Tensor>& tensors) {
  std::string out;
  for (const Tensor& t : tensors) out += (out.empty() ? "" : ", ") + t.spec().to_string();
  return out;
}

// The step's results against the carry it was given: same count, shapes and dtypes, all defined.
void check_step(const ops::ScanStep& step, const std::vector<TensorSpec>& carry, const std::string& layer) {
  if (step.carry.size() != carry.size()) {
    throw ValueError(prefix(layer) + "the step returned " + std::to_string(step.carry.size()) + " carry tensors (" +
                     specs_to_string(step.carry) + ") but was given " + std::to_string(carry.size()) +
                     "; return the next value of each carry, in order");
  }
  for (std::size_t i = 0; i < carry.size(); ++i) {
    if (!step.carry[i].defined()) {
      throw ValueError(prefix(layer) + "the step returned an undefined tensor as carry " + std::to_string(i));
    }
    if (step.carry[i].spec() != carry[i]) {
      throw ShapeError(prefix(layer) + "the step returned carry " + std::to_string(i) + " as " +
                       step.carry[i].spec().to_string() + " but it came in as " + carry[i].to_string() +
                       "; a loop keeps each carry's shape and dtype from step to step (static shapes): cast or "
                       "reshape it back before returning it");
    }
  }
  for (std::size_t j = 0; j < step.ys.size(); ++j) {
    if (!step.ys[j].defined()) {
      throw ValueError(prefix(layer) + "the step returned an undefined tensor as output " + std::to_string(j));
    }
  }
}

// A step runs the C++ function on fresh tensors, recording nothing: the loop is one op on the tape.
class EagerInstance final : public LoopBody::Instance {
 public:
  explicit EagerInstance(const LoopBody& body) : body_(body) {}
  const std::vector<Tensor>& run() override {
    const LoopSignature& s = body_.signature();
    const auto k = static_cast<std::ptrdiff_t>(s.carry.size());
    const auto m = static_cast<std::ptrdiff_t>(s.x.size());
    const std::vector<Tensor> carry(operands.begin(), operands.begin() + k);
    const std::vector<Tensor> x(operands.begin() + k, operands.begin() + k + m);
    const std::vector<Tensor> consts(operands.begin() + k + m, operands.end());
    ops::ScanStep step;
    {
      const autodiff::NoGradScope no_grad;
      step = body_.step()(carry, x, consts);
    }
    check_step(step, s.carry, "");
    if (step.ys.size() != s.ys.size()) {
      throw ValueError("[scan] the step returned " + std::to_string(step.ys.size()) + " outputs, but " +
                       std::to_string(s.ys.size()) + " when it was traced; every step returns the same outputs");
    }
    for (std::size_t j = 0; j < s.ys.size(); ++j) {
      if (step.ys[j].spec() != s.ys[j]) {
        throw ShapeError("[scan] the step returned output " + std::to_string(j) + " as " +
                         step.ys[j].spec().to_string() + ", but as " + s.ys[j].to_string() +
                         " when it was traced; every step's outputs keep one shape (static shapes)");
      }
    }
    results_ = std::move(step.carry);
    results_.insert(results_.end(), step.ys.begin(), step.ys.end());
    return results_;
  }

 private:
  const LoopBody& body_;
  std::vector<Tensor> results_;
};

class EagerLoopBody final : public LoopBody {
 public:
  using LoopBody::LoopBody;
  bool keeps_operands() const override { return true; }
  std::string description() const override { return "eager"; }

 protected:
  std::unique_ptr<Instance> make_instance() const override { return std::make_unique<EagerInstance>(*this); }
};

// A step runs the compiled body; its outputs' buffers go back to the executor for the next step,
// and its operands' buffers are filled again, so a steady loop allocates nothing.
class ProgramInstance final : public LoopBody::Instance {
 public:
  explicit ProgramInstance(const Graph& graph) : executor_(graph) {}
  const std::vector<Tensor>& run() override {
    results_ = executor_.run(operands, {}, &results_);
    return results_;
  }

 private:
  Executor executor_;
  std::vector<Tensor> results_;
};

class CompiledLoopBody final : public LoopBody {
 public:
  CompiledLoopBody(ops::ScanFunction step, LoopSignature signature, Graph graph)
      : LoopBody(std::move(step), std::move(signature)), graph_(std::move(graph)) {}
  bool keeps_operands() const override { return false; }
  std::string description() const override { return "a program of " + std::to_string(graph_.num_ops()) + " ops"; }

 protected:
  std::unique_ptr<Instance> make_instance() const override { return std::make_unique<ProgramInstance>(graph_); }

 private:
  Graph graph_;
};

}  // namespace

LoopBody::LoopBody(ops::ScanFunction step, LoopSignature signature)
    : step_(std::move(step)), signature_(std::move(signature)) {}

LoopBody::Lease LoopBody::acquire() const {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<Instance> instance = std::move(idle_.back());
      idle_.pop_back();
      return Lease(*this, std::move(instance));
    }
  }
  // Made outside the lock: a program's executor plans its memory first.
  return Lease(*this, make_instance());
}

LoopBody::Lease::~Lease() {
  if (instance_ == nullptr) return;  // moved from
  const std::lock_guard<std::mutex> lock(body_->mutex_);
  body_->idle_.push_back(std::move(instance_));
}

TracedLoopBody trace_loop_body(const ops::ScanFunction& step, LoopSignature signature, const Trace* enclosing) {
  Trace body("scan", enclosing);  // first: it notes whether a tape records, which the scope below pauses
  const std::string layer = body.layer_description();
  std::vector<Tensor> results;
  {
    const TraceScope active(body);
    const autodiff::NoGradScope no_grad;  // the loop is one op on the tape; its step records nothing
    std::vector<Tensor> carry, x, consts;
    for (std::size_t i = 0; i < signature.carry.size(); ++i)
      carry.push_back(body.input(signature.carry[i], "carry_" + std::to_string(i)));
    for (std::size_t i = 0; i < signature.x.size(); ++i)
      x.push_back(body.input(signature.x[i], "x_" + std::to_string(i)));
    for (std::size_t i = 0; i < signature.consts.size(); ++i)
      consts.push_back(body.input(signature.consts[i], "const_" + std::to_string(i)));
    ops::ScanStep out = step(carry, x, consts);
    check_step(out, signature.carry, layer);
    signature.ys.clear();
    for (const Tensor& y : out.ys) signature.ys.push_back(y.spec());
    results = std::move(out.carry);
    results.insert(results.end(), out.ys.begin(), out.ys.end());
  }
  Graph graph = body.finish(results);
  for (const Node& node : graph.nodes()) {
    if (node.kind != NodeKind::op) continue;
    const OpId op = node.primitive->id();
    if (op == OpId::cross_replica_sum || op == OpId::all_gather) {
      throw JitError(prefix(layer) + "the step runs " + std::string(op_name(op)) +
                     ", a collective; replicas meet between a compiled step's stages, never inside a loop. Reduce "
                     "across replicas before or after the scan");
    }
  }
  return {std::move(graph), std::move(signature), layer};
}

std::shared_ptr<const LoopBody> eager_loop_body(ops::ScanFunction step, LoopSignature signature) {
  return std::make_shared<const EagerLoopBody>(std::move(step), std::move(signature));
}

std::shared_ptr<const LoopBody> compiled_loop_body(ops::ScanFunction step, LoopSignature signature, Graph graph) {
  graph.verify();
  default_pipeline().run(graph);
  return std::make_shared<const CompiledLoopBody>(std::move(step), std::move(signature), std::move(graph));
}

}  // namespace kestrel::jit
