// ops::scan: a loop in the program, as keras.ops.scan / jax.lax.scan / XLA's While with a static
// trip count. A step function runs `length` times, carrying state from step to step, reading one
// slice of each sequence per step, and stacking what each step outputs.
//
//   // h_t = tanh(x_t @ w + h_{t-1} @ u): xs [T, B, F], h0 [B, H], w [F, H], u [H, H]
//   ops::ScanResult r = ops::scan(
//       [](const std::vector<Tensor>& carry, const std::vector<Tensor>& x, const std::vector<Tensor>& consts) {
//         Tensor h = ops::tanh(ops::matmul(x[0], consts[0]) + ops::matmul(carry[0], consts[1]));
//         return ops::ScanStep{.carry = {h}, .ys = {h}};
//       },
//       {.carry = {h0}, .xs = {xs}, .consts = {w, u}});
//   r.carry[0];           // h after the last step, [B, H]
//   r.ys[0];              // every step's h, [T, B, H]
//
// The step sees only its arguments: what it needs besides the carry and the slices (weights) goes in
// `consts`, as a loop body on a TPU has only its operands. A traced tensor of the enclosing step, or a
// weight whose gradient is wanted, used in the step without being passed is an error naming the layer.
//
// How it runs: eagerly, the step is traced once (which checks the rules below and finds the outputs'
// shapes), then the C++ step function is called once per step (a debugger stops in it). Under
// jit_compile the step is traced once into a graph of its own, optimized by the jit's passes, and the
// compiled program runs it `length` times: the program's size does not grow with the length (compare
// unrolling, which emits the step's ops once per step). Every step must keep the carry's shapes and
// dtypes, and every step's outputs have the same shapes: the TPU rules, checked when the step is traced.
//
// Gradients: scan is one op, whose vector-Jacobian product is a scan running backwards over the steps.
// The forward op keeps the carry after every step (what the backward reads; a summed carry keeps
// only its final value); each backward step recomputes its forward step from the carry before it,
// then differentiates it, so the backward holds no other intermediate of the steps.
//
// Limits: the carries and the outputs share one dtype (the op's one output holds them all), and a
// scan runs at least one step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "framework/core/tensor.h"

namespace kestrel::ops {

/// What one step returns: the next carry (the same shapes and dtypes as the carry it was given) and
/// this step's outputs, stacked by scan.
struct ScanStep {
  std::vector<Tensor> carry;
  std::vector<Tensor> ys;
};

/// One step: the carry, the step's slice of each sequence (its first axis dropped), and the consts.
using ScanFunction = std::function<ScanStep(const std::vector<Tensor>& carry, const std::vector<Tensor>& x,
                                            const std::vector<Tensor>& consts)>;

struct ScanArgs {
  std::vector<Tensor> carry;   ///< the initial carry
  std::vector<Tensor> xs;      ///< sequences, time on axis 0: step t reads xs[i][t]
  std::vector<Tensor> consts;  ///< the same for every step (weights)
};

struct ScanOptions {
  std::int64_t length = -1;  ///< number of steps; -1: the xs' first dim (needed when there are no xs)
  bool reverse = false;      ///< run from the last slice to the first; outputs stay aligned with the xs
  /// Carries that only sum: the step returns carry[i] + (a term that does not read carry[i]) and reads
  /// carry[i] nowhere else (a running total). Only their final value is kept, not one per step, which
  /// is what makes summing a large tensor over many steps cheap (a backward loop's weight gradients).
  std::vector<std::size_t> summed_carries;
};

struct ScanResult {
  std::vector<Tensor> carry;  ///< the carry after the last step
  std::vector<Tensor> ys;     ///< each output stacked: [length, ...], row t from the step that read xs[t]
  /// Carry i after every step, stacked like ys: [length, ...] (it comes free: the op keeps it for the
  /// backward pass). ValueError for a summed carry, whose steps are not kept.
  Tensor stacked_carry(std::size_t i) const;

 private:
  friend ScanResult scan(const ScanFunction& step, const ScanArgs& args, const ScanOptions& options);
  std::function<Tensor(std::size_t)> stacked_carry_;
};

/// Runs `step` over the sequences (see the header comment). Throws ValueError / ShapeError naming
/// "[scan]" and the layer for bad arguments or a step that breaks the rules above.
ScanResult scan(const ScanFunction& step, const ScanArgs& args, const ScanOptions& options = {});

}  // namespace kestrel::ops
