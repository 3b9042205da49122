// scan: the loop op. Its one output packs everything the loop makes, flat:
//   [length rows of R elements | the summed carries' final values]
// where row t = [carry 0 | carry 1 | ... | y 0 | y 1 | ...] after the step that read xs[t], summed
// carries left out of the rows. ops::scan slices the final carry and the stacked outputs from it, and
// the backward loop reads the carry before each step from the rows.
#include "framework/jit/scan.h"

#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/error.h"
#include "framework/jit/loop_body.h"
#include "framework/jit/trace.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/primitive.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape_ops.h"

namespace kestrel::ops {
namespace {

using jit::LoopBody;
using jit::LoopSignature;

// Where each result of a step (the carries, then the outputs) sits in the packed output.
struct PackedLayout {
  struct Part {
    bool per_step = true;     // in every row; else once, in the tail (a summed carry)
    std::int64_t offset = 0;  // in its row, or in the tail
    std::int64_t size = 0;    // elements
    Shape shape;              // one step's
  };
  std::vector<Part> parts;
  std::int64_t length = 0;
  std::int64_t row = 0;   // elements per row
  std::int64_t tail = 0;  // elements after the rows

  PackedLayout(const LoopSignature& s, const std::vector<bool>& summed, std::int64_t steps) : length(steps) {
    for (std::size_t r = 0; r < s.num_results(); ++r) {
      const TensorSpec& spec = r < s.carry.size() ? s.carry[r] : s.ys[r - s.carry.size()];
      const bool per_step = r >= summed.size() || !summed[r];
      std::int64_t& end = per_step ? row : tail;
      parts.push_back({per_step, end, spec.shape.numel(), spec.shape});
      end += spec.shape.numel();
    }
  }
  std::int64_t total() const { return length * row + tail; }
};

Shape with_leading(std::int64_t n, const Shape& shape) {
  Shape out{n};
  for (int d = 0; d < shape.rank(); ++d) out.push_back(shape[d]);
  return out;
}

// The rows of a packed tensor (or of its cotangent) as [length, R].
Tensor rows_of(const Tensor& packed, const PackedLayout& layout) {
  return reshape(slice(packed, {0}, {layout.length * layout.row}), {layout.length, layout.row});
}

// Rows [begin, begin + rows) of per-step result r, as [rows, ...].
Tensor stacked(const Tensor& packed, const PackedLayout& layout, std::size_t r, std::int64_t begin, std::int64_t rows) {
  const PackedLayout::Part& part = layout.parts[r];
  const Tensor block = slice(rows_of(packed, layout), {begin, part.offset}, {rows, part.size});
  return reshape(block, with_leading(rows, part.shape));
}

// Result r after the last step (`last` is the row the last step wrote).
Tensor final_value(const Tensor& packed, const PackedLayout& layout, std::size_t r, std::int64_t last) {
  const PackedLayout::Part& part = layout.parts[r];
  if (part.per_step) return reshape(stacked(packed, layout, r, last, 1), part.shape);
  return reshape(slice(packed, {layout.length * layout.row + part.offset}, {part.size}), part.shape);
}

// Per-step result r within one row [R] (a row of the cotangent, in a backward step).
Tensor from_row(const Tensor& row, const PackedLayout& layout, std::size_t r) {
  const PackedLayout::Part& part = layout.parts[r];
  return reshape(slice(row, {part.offset}, {part.size}), part.shape);
}

std::size_t bytes_of(const TensorSpec& spec) {
  return static_cast<std::size_t>(spec.shape.numel()) * size_of(spec.dtype);
}

void copy_bytes(void* to, const void* from, std::size_t bytes) {
  if (bytes > 0 && to != from) std::memcpy(to, from, bytes);
}

class Scan final : public PrimitiveOf<Scan, OpId::scan> {
 public:
  Scan(std::shared_ptr<const LoopBody> body, std::int64_t length, bool reverse, std::vector<bool> summed)
      : body_(std::move(body)),
        length_(length),
        reverse_(reverse),
        summed_(std::move(summed)),
        layout_(body_->signature(), summed_, length_) {}
  auto fields() const { return std::tie(body_, length_, reverse_, summed_); }

  TensorSpec infer(std::span<const TensorSpec> in) const override {
    const LoopSignature& s = body_->signature();
    if (in.size() != s.num_operands()) {
      throw ValueError(op_message("scan", "takes " + std::to_string(s.num_operands()) +
                                              " operands (carry, xs, consts), got " + std::to_string(in.size())));
    }
    std::size_t k = 0;
    auto expect = [&](const TensorSpec& want, const char* what, std::size_t i) {
      if (in[k] != want) {
        throw ShapeError(op_message("scan", std::string(what) + " " + std::to_string(i) + " is " + in[k].to_string() +
                                                " but the loop was traced for " + want.to_string()));
      }
      ++k;
    };
    for (std::size_t i = 0; i < s.carry.size(); ++i) expect(s.carry[i], "carry", i);
    for (std::size_t i = 0; i < s.x.size(); ++i)
      expect({with_leading(length_, s.x[i].shape), s.x[i].dtype}, "sequence", i);
    for (std::size_t i = 0; i < s.consts.size(); ++i) expect(s.consts[i], "const", i);
    const DType dtype = s.carry.empty() ? s.ys.front().dtype : s.carry.front().dtype;
    return {{layout_.total()}, dtype};
  }

  // Step by step, in running order: a carry comes from the initial carry, then from where the
  // previous step wrote it (never from the body's own buffers, which the next step reuses).
  void eval_cpu(std::span<const TensorView> in, const TensorView& out) const override {
    const LoopSignature& s = body_->signature();
    const std::size_t k = s.carry.size(), m = s.x.size(), c = s.consts.size();
    const std::size_t element = size_of(out.dtype);
    auto* packed = static_cast<std::byte*>(out.data);
    auto at = [&](std::size_t r, std::int64_t t) {
      const PackedLayout::Part& part = layout_.parts[r];
      const std::int64_t index =
          part.per_step ? t * layout_.row + part.offset : layout_.length * layout_.row + part.offset;
      return packed + static_cast<std::size_t>(index) * element;
    };
    LoopBody::Lease instance = body_->acquire();
    std::vector<Tensor>& operands = instance->operands;
    operands.resize(s.num_operands());
    const bool fresh = body_->keeps_operands();
    auto operand = [&](std::size_t i, const TensorSpec& spec, bool renew) {
      if (renew || !operands[i].defined()) operands[i] = Tensor::empty(spec.shape, spec.dtype);
      return operands[i].view().data;
    };
    for (std::size_t i = 0; i < c; ++i) {
      copy_bytes(operand(k + m + i, s.consts[i], fresh), in[k + m + i].data, bytes_of(s.consts[i]));
    }
    std::int64_t previous = -1;
    for (std::int64_t step = 0; step < length_; ++step) {
      const std::int64_t t = reverse_ ? length_ - 1 - step : step;
      for (std::size_t i = 0; i < k; ++i) {
        const void* from = previous < 0 ? in[i].data : at(i, previous);
        copy_bytes(operand(i, s.carry[i], fresh), from, bytes_of(s.carry[i]));
      }
      for (std::size_t j = 0; j < m; ++j) {
        const std::size_t bytes = bytes_of(s.x[j]);
        copy_bytes(operand(k + j, s.x[j], fresh), static_cast<const std::byte*>(in[k + j].data) + t * bytes, bytes);
      }
      const std::vector<Tensor>& results = instance->run();
      for (std::size_t r = 0; r < results.size(); ++r) copy_bytes(at(r, t), results[r].raw_data(), results[r].nbytes());
      previous = t;
    }
  }

  // A loop over the same steps in the other direction. Its step t recomputes forward step t from
  // the carry before it (under a tape) and pulls back the cotangents of the step's results: those of
  // its carry (from the steps after it, and from the rows) go on to the step before, the slices' are
  // stacked, the consts' are summed in summed carries. A summed carry's earlier values are not kept,
  // and need not be: no other result reads it, and its own derivative is the identity, so the
  // recomputation takes zeros for it.
  std::vector<Tensor> vjp(const VjpArgs& a) const override {
    const LoopSignature& s = body_->signature();
    const std::size_t k = s.carry.size(), m = s.x.size(), c = s.consts.size();
    const std::int64_t length = length_;
    std::vector<bool> want_x(m), want_const(c);
    for (std::size_t j = 0; j < m; ++j) want_x[j] = a.wanted[k + j] && is_floating(s.x[j].dtype);
    for (std::size_t i = 0; i < c; ++i) want_const[i] = a.wanted[k + m + i] && is_floating(s.consts[i].dtype);
    // The backward loop's carries and outputs share one dtype too: the forward's, unless a wanted
    // slice or const has another, when it works in float32.
    const DType dtype = a.output.dtype();
    DType work = dtype;
    for (std::size_t j = 0; j < m; ++j) work = want_x[j] && s.x[j].dtype != dtype ? DType::float32 : work;
    for (std::size_t i = 0; i < c; ++i) work = want_const[i] && s.consts[i].dtype != dtype ? DType::float32 : work;

    const std::int64_t last = reverse_ ? 0 : length - 1;
    ScanArgs backward;
    ScanOptions options{.length = length, .reverse = !reverse_};
    for (std::size_t i = 0; i < k; ++i) {
      // A summed carry's cotangent is its final value's, at every step.
      backward.carry.push_back(layout_.parts[i].per_step ? Tensor::zeros(s.carry[i].shape, work)
                                                         : cast(final_value(a.cotangent, layout_, i, last), work));
    }
    for (std::size_t i = 0; i < c; ++i) {
      if (!want_const[i]) continue;
      options.summed_carries.push_back(backward.carry.size());
      backward.carry.push_back(Tensor::zeros(s.consts[i].shape, work));
    }
    // The carry before each step, aligned with the xs: the initial carry, then the carry after the
    // step before it in running order.
    for (std::size_t i = 0; i < k; ++i) {
      if (!layout_.parts[i].per_step) continue;
      const Tensor initial = expand_dims(a.primals[i], 0);
      if (length == 1) {
        backward.xs.push_back(initial);
        continue;
      }
      const Tensor after = stacked(a.output, layout_, i, reverse_ ? 1 : 0, length - 1);
      backward.xs.push_back(reverse_ ? concat({after, initial}, 0) : concat({initial, after}, 0));
    }
    for (std::size_t j = 0; j < m; ++j) backward.xs.push_back(a.primals[k + j]);
    const bool rows = layout_.row > 0;
    if (rows) backward.xs.push_back(rows_of(a.cotangent, layout_));
    for (std::size_t i = 0; i < c; ++i) backward.consts.push_back(a.primals[k + m + i]);

    auto step = [forward = body_->step(), s, layout = layout_, want_x, want_const, work, rows](
                    const std::vector<Tensor>& carry, const std::vector<Tensor>& x, const std::vector<Tensor>& consts) {
      const std::size_t k = s.carry.size(), m = s.x.size();
      std::vector<Tensor> before;
      std::size_t next_x = 0;
      for (std::size_t i = 0; i < k; ++i) {
        before.push_back(layout.parts[i].per_step ? x[next_x++] : Tensor::zeros(s.carry[i].shape, s.carry[i].dtype));
      }
      const std::vector<Tensor> slices(x.begin() + static_cast<std::ptrdiff_t>(next_x),
                                       x.begin() + static_cast<std::ptrdiff_t>(next_x + m));
      const Tensor cotangent_row = rows ? x[next_x + m] : Tensor();
      GradientTape tape;
      std::vector<Tensor> sources = before;
      for (std::size_t j = 0; j < m; ++j) {
        if (want_x[j]) sources.push_back(slices[j]);
      }
      for (std::size_t i = 0; i < consts.size(); ++i) {
        if (want_const[i]) sources.push_back(consts[i]);
      }
      for (const Tensor& source : sources) tape.watch(source);
      const ScanStep out = forward(before, slices, consts);
      // sum(result * cotangent) over the step's results: its gradient is the vector-Jacobian product.
      Tensor target;
      auto accumulate = [&](const Tensor& result, const Tensor& cotangent) {
        const Tensor term = sum(multiply(result, cotangent));
        target = target.defined() ? add(target, term) : term;
      };
      for (std::size_t i = 0; i < k; ++i) {
        Tensor cotangent = cast(carry[i], s.carry[i].dtype);
        if (layout.parts[i].per_step) cotangent = add(cotangent, from_row(cotangent_row, layout, i));
        accumulate(out.carry[i], cotangent);
      }
      for (std::size_t j = 0; j < s.ys.size(); ++j) accumulate(out.ys[j], from_row(cotangent_row, layout, k + j));
      const std::vector<Tensor> grads = tape.gradient(target, sources);
      ScanStep result;
      std::size_t next = 0;
      for (std::size_t i = 0; i < k; ++i) result.carry.push_back(cast(grads[next++], work));
      for (std::size_t j = 0; j < m; ++j) {
        if (want_x[j]) result.ys.push_back(cast(grads[next++], work));
      }
      std::size_t total = k;
      for (std::size_t i = 0; i < consts.size(); ++i) {
        if (want_const[i]) result.carry.push_back(add(carry[total++], cast(grads[next++], work)));
      }
      return result;
    };
    const ScanResult pulled = scan(step, backward, options);

    std::vector<Tensor> grads(k + m + c);
    for (std::size_t i = 0; i < k; ++i) {
      if (a.wanted[i]) grads[i] = cast(pulled.carry[i], s.carry[i].dtype);
    }
    std::size_t next_y = 0;
    for (std::size_t j = 0; j < m; ++j) {
      if (want_x[j]) grads[k + j] = cast(pulled.ys[next_y++], s.x[j].dtype);
    }
    std::size_t next_sum = k;
    for (std::size_t i = 0; i < c; ++i) {
      if (want_const[i]) grads[k + m + i] = cast(pulled.carry[next_sum++], s.consts[i].dtype);
    }
    return grads;
  }

  std::string params() const override {
    // Appended piece by piece: GCC 12 warns falsely on one long chain of + here.
    std::string out = "length=";
    out += std::to_string(length_);
    out += reverse_ ? ", reverse=true" : ", reverse=false";
    std::string summed;
    for (std::size_t i = 0; i < summed_.size(); ++i) {
      if (!summed_[i]) continue;
      if (!summed.empty()) summed += ',';
      summed += std::to_string(i);
    }
    if (!summed.empty()) {
      out += ", summed=[";
      out += summed;
      out += ']';
    }
    out += ", body=";
    out += body_->description();
    return out;
  }
  // The body runs in whatever dtypes it was traced for: no float32 widening around it.
  bool handles_bfloat16() const override { return true; }

 private:
  std::shared_ptr<const LoopBody> body_;
  std::int64_t length_;
  bool reverse_;
  std::vector<bool> summed_;  // per carry
  PackedLayout layout_;
};

std::string specs_of(const std::vector<TensorSpec>& specs) {
  std::string out;
  for (const TensorSpec& spec : specs) out += (out.empty() ? "" : ", ") + spec.to_string();
  return out;
}

// A summed carry's step must return add(carry, term) and read the carry nowhere else: checked on
// the traced step, before any pass rewrites it.
void check_summed(const jit::Graph& step, std::size_t carry, const std::string& where) {
  const jit::ValueId input = step.inputs()[carry];
  const jit::Node& result = step.node(step.outputs()[carry]);
  std::int64_t readers = 0;
  for (const jit::Node& node : step.nodes()) {
    for (jit::ValueId v : node.inputs) readers += v == input ? 1 : 0;
  }
  for (jit::ValueId v : step.outputs()) readers += v == input ? 1 : 0;
  const bool sums = result.kind == jit::NodeKind::op && result.primitive->id() == OpId::add &&
                    result.spec == step.node(input).spec &&
                    (result.inputs[0] == input) != (result.inputs[1] == input) && readers == 1;
  if (!sums) {
    throw ValueError(where + "carry " + std::to_string(carry) +
                     " is in summed_carries, but the step does not return carry + (a term that does not read the "
                     "carry), reading it nowhere else; keep it out of summed_carries");
  }
}

}  // namespace

Tensor ScanResult::stacked_carry(std::size_t i) const {
  if (!stacked_carry_) throw ValueError(op_message("scan", "stacked_carry() on a result that no scan made"));
  return stacked_carry_(i);
}

ScanResult scan(const ScanFunction& step, const ScanArgs& args, const ScanOptions& options) {
  if (!step) throw ValueError(op_message("scan", "the step function is empty"));
  auto check_defined = [](const std::vector<Tensor>& tensors, const char* what) {
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      if (!tensors[i].defined()) {
        throw ValueError(op_message("scan", std::string(what) + " " + std::to_string(i) +
                                                " is an undefined tensor; pass a tensor with a value"));
      }
    }
  };
  check_defined(args.carry, "carry");
  check_defined(args.xs, "sequence");
  check_defined(args.consts, "const");
  std::int64_t length = options.length;
  for (std::size_t i = 0; i < args.xs.size(); ++i) {
    const Tensor& x = args.xs[i];
    if (x.rank() == 0) {
      throw ShapeError(op_message("scan", "sequence " + std::to_string(i) + " is " + x.spec().to_string() +
                                              ", a scalar; a sequence has its steps on axis 0"));
    }
    if (length < 0) length = x.shape()[0];
    if (x.shape()[0] != length) {
      throw ShapeError(op_message("scan", "sequence " + std::to_string(i) + " is " + x.spec().to_string() +
                                              " but the loop runs " + std::to_string(length) +
                                              " steps; every sequence needs that many rows on axis 0"));
    }
  }
  if (length < 0) throw ValueError(op_message("scan", "no sequences and no length: pass {.length = steps}"));
  if (length == 0) throw ValueError(op_message("scan", "the loop would run 0 steps; a scan runs at least one"));
  std::vector<bool> summed(args.carry.size(), false);
  for (std::size_t i : options.summed_carries) {
    if (i >= summed.size()) {
      throw IndexError(op_message("scan", "summed_carries names carry " + std::to_string(i) + ", but there are " +
                                              std::to_string(summed.size())));
    }
    summed[i] = true;
  }

  LoopSignature signature;
  for (const Tensor& t : args.carry) signature.carry.push_back(t.spec());
  for (const Tensor& t : args.xs) {
    Shape step_shape;
    for (int d = 1; d < t.rank(); ++d) step_shape.push_back(t.shape()[d]);
    signature.x.push_back({step_shape, t.dtype()});
  }
  for (const Tensor& t : args.consts) signature.consts.push_back(t.spec());

  // Traced under a jit trace to become the compiled body; eagerly, traced too, which checks the
  // step against the rules and gives its outputs' specs without computing anything.
  const jit::Trace* enclosing = jit::active_trace();
  jit::TracedLoopBody traced = jit::trace_loop_body(step, std::move(signature), enclosing);
  const LoopSignature& s = traced.signature;
  const std::string where = "[scan]" + (traced.layer.empty() ? "" : " in " + traced.layer) + ": ";
  if (s.num_results() == 0) {
    throw ValueError(where + "the loop carries nothing and its step outputs nothing; give it a carry or an output");
  }
  const DType dtype = s.carry.empty() ? s.ys.front().dtype : s.carry.front().dtype;
  for (const auto* specs : {&s.carry, &s.ys}) {
    for (const TensorSpec& spec : *specs) {
      if (spec.dtype != dtype) {
        throw TypeError(where + "the carries and the step's outputs must share one dtype (they are " +
                        specs_of(s.carry) + " and " + specs_of(s.ys) + "); cast them to one, e.g. " +
                        std::string(to_string(dtype)));
      }
    }
  }
  for (std::size_t i = 0; i < summed.size(); ++i) {
    if (summed[i]) check_summed(traced.graph, i, where);
  }
  std::shared_ptr<const LoopBody> body =
      enclosing != nullptr ? jit::compiled_loop_body(step, s, std::move(traced.graph)) : jit::eager_loop_body(step, s);

  std::vector<Tensor> operands = args.carry;
  operands.insert(operands.end(), args.xs.begin(), args.xs.end());
  operands.insert(operands.end(), args.consts.begin(), args.consts.end());
  const Tensor packed =
      detail::apply(std::make_shared<const Scan>(body, length, options.reverse, summed), std::move(operands));
  const PackedLayout layout(s, summed, length);
  ScanResult result;
  const std::int64_t last = options.reverse ? 0 : length - 1;
  for (std::size_t i = 0; i < s.carry.size(); ++i) result.carry.push_back(final_value(packed, layout, i, last));
  for (std::size_t j = 0; j < s.ys.size(); ++j) {
    result.ys.push_back(stacked(packed, layout, s.carry.size() + j, 0, length));
  }
  result.stacked_carry_ = [packed, layout, carries = s.carry.size()](std::size_t i) {
    if (i >= carries || !layout.parts[i].per_step) {
      throw ValueError(op_message("scan", "stacked_carry(" + std::to_string(i) +
                                              "): not a carry kept at every step (a summed carry, or out of range)"));
    }
    return stacked(packed, layout, i, 0, layout.length);
  };
  return result;
}

}  // namespace kestrel::ops
