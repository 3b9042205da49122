// The fused kernel's plan: where each register lives, which instructions run per block, how
// the output is cut into blocks. The math of each instruction is the CPU level's elementwise_step
// (framework/ops/kernels/cpu/elementwise.cpp).
#include "framework/ops/kernels/fused_elementwise_kernel.h"

#include <algorithm>
#include <array>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/thread_pool.h"
#include "framework/ops/fused_elementwise.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "framework/ops/kernels/elementwise_loops.h"

namespace kestrel::kernels {
namespace {

using Op = ElementwiseOpcode;

// Where a register's value lives while the kernel runs.
struct Place {
  enum Kind : std::uint8_t { uniform, input, buffer, output };
  Kind kind = uniform;
  std::int32_t index = 0;  // the input's or the buffer's number
  float value = 0.0f;      // uniform only
};

// An instruction with at least one full-shaped operand: it runs once per block.
struct Step {
  Op opcode;
  Place destination;
  std::array<Place, 3> args;
};

struct Plan {
  std::vector<Step> steps;
  int buffers = 0;
  Place result;
};

// The CPU level's kernel that runs one instruction over a block.
using StepKernel = decltype(CpuKernels::elementwise_step);

// Element i of a float32 or bfloat16 tensor, as float32.
float element(const TensorView& view, std::int64_t i) {
  return view.dtype == DType::bfloat16 ? static_cast<float>(view.as<bfloat16>()[i]) : view.as<float>()[i];
}

// Decides where each register lives: uniform registers are computed here, once; the others get
// a block buffer, reused once its last reader has run, and the result goes straight to out.
Plan make_plan(const ElementwiseProgram& program, std::span<const TensorView> inputs, StepKernel run_step) {
  const auto& code = program.instructions();
  const auto count = code.size();
  std::vector<Place> places(count);
  auto operand = [&](std::size_t r, int k) {
    return static_cast<std::size_t>(code[r].args[static_cast<std::size_t>(k)]);
  };
  std::vector<std::size_t> last_use(count, 0);
  for (std::size_t r = 0; r < count; ++r) {
    for (int k = 0; k < opcode_arity(code[r].opcode); ++k) last_use[operand(r, k)] = r;
  }
  Plan plan;
  std::vector<std::int32_t> free_buffers;
  for (std::size_t r = 0; r < count; ++r) {
    const ElementwiseInstruction& in = code[r];
    const int arity = opcode_arity(in.opcode);
    if (in.opcode == Op::input) {
      const TensorView& view = inputs[operand(r, 0)];
      places[r] =
          view.shape.rank() == 0 ? Place{Place::uniform, 0, element(view, 0)} : Place{Place::input, in.args[0], 0.0f};
      continue;
    }
    if (in.opcode == Op::constant) {
      places[r] = Place{Place::uniform, 0, in.value};
      continue;
    }
    std::array<Place, 3> args;
    bool all_uniform = true;
    for (int k = 0; k < arity; ++k) {
      const Place& p = places[operand(r, k)];
      args[static_cast<std::size_t>(k)] = p;
      all_uniform &= p.kind == Place::uniform;
    }
    if (all_uniform) {
      // One element through the same code as a block, so it rounds as the standalone op would
      // on rank-0 tensors.
      std::array<ElementwiseOperand, 3> scalars;
      for (std::size_t k = 0; k < scalars.size(); ++k) scalars[k] = ElementwiseOperand{&args[k].value};
      float value = 0.0f;
      run_step(in.opcode, scalars, &value, 1);
      places[r] = Place{Place::uniform, 0, value};
      continue;
    }
    Place destination{Place::output, 0, 0.0f};
    if (static_cast<std::int32_t>(r) != program.result()) {
      // Taken before the operands are released, so a step never writes a buffer it reads.
      std::int32_t buffer = plan.buffers;
      if (free_buffers.empty()) {
        ++plan.buffers;
      } else {
        buffer = free_buffers.back();
        free_buffers.pop_back();
      }
      destination = Place{Place::buffer, buffer, 0.0f};
    }
    places[r] = destination;
    plan.steps.push_back(Step{in.opcode, destination, args});
    for (int k = 0; k < arity; ++k) {
      bool repeated = false;  // multiply(x, x) releases x once
      for (int j = 0; j < k; ++j) repeated |= operand(r, j) == operand(r, k);
      const Place& p = places[operand(r, k)];
      if (p.kind == Place::buffer && last_use[operand(r, k)] == r && !repeated) free_buffers.push_back(p.index);
    }
  }
  plan.result = places[static_cast<std::size_t>(program.result())];
  return plan;
}

// Where a step finds input k in the block starting at output element lo.
struct Source {
  const TensorView* input = nullptr;
  const float* data = nullptr;     // float32 read in place: the input itself, or its strip of repeated rows
  std::int64_t widened_slot = -1;  // else >= 0: a bfloat16 input widened a block at a time into this buffer
  std::int64_t period = 0;         // 0: full-shaped, read at lo; else read at lo % period
  std::int64_t repeat = 0;         // > 0: one value, element lo / repeat, for the whole block

  std::int64_t offset(std::int64_t lo) const { return period == 0 ? lo : lo % period; }
};

// x's values as float32: x itself, or its bfloat16 values widened into storage.
const float* widened(const TensorView& x, std::vector<float>& storage) {
  if (x.dtype != DType::bfloat16) return x.as<float>();
  storage.resize(static_cast<std::size_t>(x.numel()));
  cpu().widen_bfloat16(x.as<bfloat16>(), x.numel(), storage.data());
  return storage.data();
}

// Sets count elements of out from element `at` to value (rounded once when out is bfloat16).
void fill(const TensorView& out, std::int64_t at, std::int64_t count, float value) {
  if (out.dtype == DType::bfloat16) {
    std::fill_n(out.as<bfloat16>() + at, count, bfloat16(value));
  } else {
    std::fill_n(out.as<float>() + at, count, value);
  }
}

// The program is one input: out is that input (converted), or it repeated (a suffix row at a time,
// or each element over a run).
void repeat_input(const TensorView& x, const TensorView& out) {
  if (x.shape == out.shape) return cpu().convert(x, out);
  if (const std::int64_t repeat = detail::fused_input_repeat(x.shape, out.shape).value_or(0); repeat > 0) {
    for (std::int64_t i = 0; i < x.numel(); ++i) fill(out, i * repeat, repeat, element(x, i));
    return;
  }
  std::vector<float> storage;
  const float* row = widened(x, storage);  // a suffix: a fraction of out
  const std::int64_t period = x.numel();
  for (std::int64_t lo = 0; lo < out.numel(); lo += period) {
    if (out.dtype == DType::bfloat16) {
      cpu().round_to_bfloat16(row, period, out.as<bfloat16>() + lo);
    } else {
      std::copy(row, row + period, out.as<float>() + lo);
    }
  }
}

// How the output is cut into blocks: rows of `row` elements, each split into `per_row` blocks of
// `block` elements (the last one of a row shorter).
struct Blocks {
  std::int64_t row = 0;
  std::int64_t block = 0;
  std::int64_t per_row = 0;
  std::int64_t count = 0;
};

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Blocks of kFusedBlock as long as no block may cross a row end; otherwise rows of `row`, split
// evenly in multiples of 16 so that Eigen's vector loops cover all but each row's last block.
Blocks make_blocks(std::int64_t n, std::int64_t row) {
  Blocks b;
  b.row = row;
  b.block = kFusedBlock;
  if (row != n) b.block = std::min(kFusedBlock, ceil_div(ceil_div(row, ceil_div(row, kFusedBlock)), 16) * 16);
  b.per_row = ceil_div(row, b.block);
  b.count = n / row * b.per_row;
  return b;
}

}  // namespace

void run_elementwise_program(const ElementwiseProgram& program, std::span<const TensorView> inputs,
                             const TensorView& out) {
  const std::int64_t n = out.numel();
  if (n == 0) return;
  const StepKernel run_step = cpu().elementwise_step;
  const Plan plan = make_plan(program, inputs, run_step);
  const Place& result = plan.result;
  if (result.kind == Place::uniform) return fill(out, 0, n, result.value);
  if (result.kind == Place::input) return repeat_input(inputs[static_cast<std::size_t>(result.index)], out);

  std::vector<Source> sources(inputs.size());
  std::vector<std::vector<float>> strips;
  strips.reserve(inputs.size());
  std::vector<std::size_t> narrow_inputs;  // read in place as bfloat16, each into its widened_slot
  // The shortest row no block may cross: a suffix row longer than a block (read in place), or a
  // run of one repeated element. Rows are products of trailing dimensions, so each divides the next.
  std::int64_t row = n;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const TensorView& x = inputs[k];
    const std::int64_t period = x.numel();
    if (x.shape.rank() == 0) continue;  // a uniform register of the plan
    Source& source = sources[k];
    source.input = &x;
    // Read where it lies: float32 directly, bfloat16 through a widened block (buffers after the
    // program's registers).
    auto read_in_place = [&] {
      if (x.dtype == DType::bfloat16) {
        source.widened_slot = plan.buffers + static_cast<std::int64_t>(narrow_inputs.size());
        narrow_inputs.push_back(k);
      } else {
        source.data = x.as<float>();
      }
    };
    if (period == n) {
      read_in_place();
      continue;
    }
    if (const std::int64_t repeat = detail::fused_input_repeat(x.shape, out.shape).value_or(0); repeat > 0) {
      source.repeat = repeat;  // read one element per block, where it lies
      row = std::min(row, repeat);
      continue;
    }
    source.period = period;
    if (period > kFusedBlock) {
      row = std::min(row, period);
      read_in_place();
      continue;
    }
    // Whole rows covering any offset below one row plus a block: strip + lo % period then reads
    // a block's worth contiguously wherever the block starts.
    std::vector<float> one_row;
    const float* values = widened(x, one_row);
    const std::int64_t strip_rows = ceil_div(period - 1 + kFusedBlock, period);
    std::vector<float>& strip = strips.emplace_back(static_cast<std::size_t>(strip_rows * period));
    for (std::size_t i = 0; i < strip.size(); i += static_cast<std::size_t>(period)) {
      std::copy(values, values + period, strip.begin() + static_cast<std::ptrdiff_t>(i));
    }
    source.data = strip.data();
  }
  const Blocks blocks = make_blocks(n, row);
  const bool narrow_out = out.dtype == DType::bfloat16;
  float* const y = narrow_out ? nullptr : out.as<float>();

  // A long program does more work per element, so it is worth splitting at fewer elements.
  const auto steps = std::max<std::int64_t>(1, static_cast<std::int64_t>(plan.steps.size()) / 2);
  const std::int64_t grain = std::max<std::int64_t>(1, kElementwiseGrain / (blocks.block * steps));
  parallel_for(blocks.count, grain, [&](std::int64_t first, std::int64_t last) {
    // Block buffers, 64-byte aligned so Eigen's vector loops need no scalar prologue: the
    // program's registers, then each bfloat16 input's widened block, then a bfloat16 output's.
    const auto narrow_count = static_cast<std::int64_t>(narrow_inputs.size());
    const auto count = plan.buffers + narrow_count + (narrow_out ? 1 : 0);
    std::vector<float> storage(static_cast<std::size_t>(count * kFusedBlock + 16));
    float* buffers = storage.data();
    while (reinterpret_cast<std::uintptr_t>(buffers) % 64 != 0) ++buffers;
    auto buffer = [&](std::int64_t slot) { return buffers + slot * kFusedBlock; };
    // A bfloat16 output's block, before rounding.
    float* const out_block = narrow_out ? buffer(plan.buffers + narrow_count) : nullptr;
    // Where a step writes: a register buffer or the output.
    auto destination = [&](const Place& p, std::int64_t lo) -> float* {
      if (p.kind == Place::buffer) return buffer(p.index);
      return narrow_out ? out_block : y + lo;
    };
    // Where a step reads a full-shaped or suffix operand.
    auto source = [&](const Place& p, std::int64_t lo) -> const float* {
      if (p.kind != Place::input) return destination(p, lo);
      const Source& in = sources[static_cast<std::size_t>(p.index)];
      if (in.widened_slot >= 0) return buffer(in.widened_slot);
      return in.data + in.offset(lo);
    };
    for (std::int64_t block = first; block < last; ++block) {
      const std::int64_t within = block % blocks.per_row * blocks.block;
      const std::int64_t lo = block / blocks.per_row * blocks.row + within;
      const std::int64_t len = std::min(blocks.block, blocks.row - within);
      for (std::size_t k : narrow_inputs) {
        const Source& in = sources[k];
        cpu().widen_bfloat16(in.input->as<bfloat16>() + in.offset(lo), len, buffer(in.widened_slot));
      }
      for (const Step& step : plan.steps) {
        std::array<ElementwiseOperand, 3> args;
        for (std::size_t k = 0; k < 3; ++k) {
          const Place& p = step.args[k];
          if (p.kind == Place::uniform) {
            args[k] = ElementwiseOperand{nullptr, p.value};
          } else if (p.kind == Place::input && sources[static_cast<std::size_t>(p.index)].repeat > 0) {
            const Source& in = sources[static_cast<std::size_t>(p.index)];
            args[k] = ElementwiseOperand{nullptr, element(*in.input, lo / in.repeat)};  // one value over the block
          } else {
            args[k] = ElementwiseOperand{source(p, lo)};
          }
        }
        run_step(step.opcode, args, destination(step.destination, lo), len);
      }
      if (narrow_out) cpu().round_to_bfloat16(out_block, len, out.as<bfloat16>() + lo);
    }
  });
}

}  // namespace kestrel::kernels
