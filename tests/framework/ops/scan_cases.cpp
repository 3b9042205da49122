// Op table cases for scan, the loop op (framework/jit/scan.h): a small recurrent network run forward
// with its outputs stacked, run in reverse with two carries, and with a summed carry, against plain
// loops in double precision. Their gradients check the backward loop.
#include <cmath>

#include "framework/jit/scan.h"
#include "framework/ops/ops.h"
#include "tests/framework/ops/op_case.h"

namespace kestrel::testing {
namespace {

constexpr std::int64_t kSteps = 4, kBatch = 2, kFeatures = 3, kUnits = 3;

// h' = tanh(x_t @ w + h @ u): one step of the network, as ops.
Tensor rnn_step(const Tensor& x, const Tensor& h, const Tensor& w, const Tensor& u) {
  return ops::tanh(ops::add(ops::matmul(x, w), ops::matmul(h, u)));
}

// The same step in double precision: x [B,F] at step t of xs [T,B,F], h [B,H], w [F,H], u [H,H].
std::vector<double> reference_step(const std::vector<double>& xs, std::int64_t t, const std::vector<double>& h,
                                   const std::vector<double>& w, const std::vector<double>& u) {
  std::vector<double> out(static_cast<std::size_t>(kBatch * kUnits));
  for (std::int64_t b = 0; b < kBatch; ++b) {
    for (std::int64_t j = 0; j < kUnits; ++j) {
      double z = 0;
      for (std::int64_t f = 0; f < kFeatures; ++f) {
        z += xs[static_cast<std::size_t>((t * kBatch + b) * kFeatures + f)] *
             w[static_cast<std::size_t>(f * kUnits + j)];
      }
      for (std::int64_t i = 0; i < kUnits; ++i) {
        z += h[static_cast<std::size_t>(b * kUnits + i)] * u[static_cast<std::size_t>(i * kUnits + j)];
      }
      out[static_cast<std::size_t>(b * kUnits + j)] = std::tanh(z);
    }
  }
  return out;
}

Inputs rnn_inputs() {
  return {uniform_tensor({kSteps, kBatch, kFeatures}, 71), uniform_tensor({kBatch, kUnits}, 72, -0.5, 0.5),
          uniform_tensor({kFeatures, kUnits}, 73), uniform_tensor({kUnits, kUnits}, 74)};
}

std::vector<OpCase> scan_cases() {
  std::vector<OpCase> cases;

  OpCase outputs;
  outputs.op = OpId::scan;
  outputs.label = "scan_rnn_stacked_outputs";
  outputs.make_inputs = rnn_inputs;
  // inputs: xs [T,B,F], h0 [B,H], w, u -> every step's h [T,B,H]
  outputs.run = [](const Inputs& in) {
    const ops::ScanResult r = ops::scan(
        [](const std::vector<Tensor>& carry, const std::vector<Tensor>& x, const std::vector<Tensor>& consts) {
          const Tensor h = rnn_step(x[0], carry[0], consts[0], consts[1]);
          return ops::ScanStep{.carry = {h}, .ys = {h}};
        },
        {.carry = {in[1]}, .xs = {in[0]}, .consts = {in[2], in[3]}});
    return r.ys[0];
  };
  outputs.reference = [](const Inputs& in) {
    const std::vector<double> xs = in[0].to_vector<double>(), w = in[2].to_vector<double>(),
                              u = in[3].to_vector<double>();
    std::vector<double> h = in[1].to_vector<double>(), out;
    for (std::int64_t t = 0; t < kSteps; ++t) {
      h = reference_step(xs, t, h, w, u);
      out.insert(out.end(), h.begin(), h.end());
    }
    return float_tensor(out, {kSteps, kBatch, kUnits});
  };
  cases.push_back(outputs);

  OpCase reverse;
  reverse.op = OpId::scan;
  reverse.label = "scan_reverse_two_carries";
  reverse.make_inputs = rnn_inputs;
  // Two carries, the last slice first: h as above, and s, the sum of h * h over the steps. The result
  // is [final h | final s | h after the step that read xs[1]], [B, 3H], so gradients reach the
  // initial carry, the final carries and the stacked ones.
  reverse.run = [](const Inputs& in) {
    const ops::ScanResult r = ops::scan(
        [](const std::vector<Tensor>& carry, const std::vector<Tensor>& x, const std::vector<Tensor>& consts) {
          const Tensor h = rnn_step(x[0], carry[0], consts[0], consts[1]);
          return ops::ScanStep{.carry = {h, ops::add(carry[1], ops::multiply(h, h))}};
        },
        {.carry = {in[1], ops::zeros_like(in[1])}, .xs = {in[0]}, .consts = {in[2], in[3]}}, {.reverse = true});
    const Tensor second = ops::reshape(ops::slice(r.stacked_carry(0), {1, 0, 0}, {1, -1, -1}), {kBatch, kUnits});
    return ops::concat({r.carry[0], r.carry[1], second}, 1);
  };
  reverse.reference = [](const Inputs& in) {
    const std::vector<double> xs = in[0].to_vector<double>(), w = in[2].to_vector<double>(),
                              u = in[3].to_vector<double>();
    std::vector<double> h = in[1].to_vector<double>(), s(h.size(), 0.0), second;
    for (std::int64_t t = kSteps - 1; t >= 0; --t) {
      h = reference_step(xs, t, h, w, u);
      for (std::size_t i = 0; i < h.size(); ++i) s[i] += h[i] * h[i];
      if (t == 1) second = h;
    }
    std::vector<double> out;
    for (std::int64_t b = 0; b < kBatch; ++b) {
      for (const std::vector<double>* part : {&h, &s, &second}) {
        for (std::int64_t j = 0; j < kUnits; ++j) out.push_back((*part)[static_cast<std::size_t>(b * kUnits + j)]);
      }
    }
    return float_tensor(out, {kBatch, 3 * kUnits});
  };
  cases.push_back(reverse);

  OpCase summed;
  summed.op = OpId::scan;
  summed.label = "scan_summed_carry";
  summed.make_inputs = rnn_inputs;
  // The same sum of h * h as a summed carry: only its final value is kept, and the backward loop
  // recomputes each step with zeros for it. The result is [final h | final s], [B, 2H].
  summed.run = [](const Inputs& in) {
    const ops::ScanResult r = ops::scan(
        [](const std::vector<Tensor>& carry, const std::vector<Tensor>& x, const std::vector<Tensor>& consts) {
          const Tensor h = rnn_step(x[0], carry[0], consts[0], consts[1]);
          return ops::ScanStep{.carry = {h, ops::add(carry[1], ops::multiply(h, h))}};
        },
        {.carry = {in[1], ops::multiply(in[1], in[1])}, .xs = {in[0]}, .consts = {in[2], in[3]}},
        {.summed_carries = {1}});
    return ops::concat({r.carry[0], r.carry[1]}, 1);
  };
  summed.reference = [](const Inputs& in) {
    const std::vector<double> xs = in[0].to_vector<double>(), w = in[2].to_vector<double>(),
                              u = in[3].to_vector<double>();
    std::vector<double> h = in[1].to_vector<double>(), s(h.size());
    for (std::size_t i = 0; i < h.size(); ++i) s[i] = h[i] * h[i];
    for (std::int64_t t = 0; t < kSteps; ++t) {
      h = reference_step(xs, t, h, w, u);
      for (std::size_t i = 0; i < h.size(); ++i) s[i] += h[i] * h[i];
    }
    std::vector<double> out;
    for (std::int64_t b = 0; b < kBatch; ++b) {
      for (const std::vector<double>* part : {&h, &s}) {
        for (std::int64_t j = 0; j < kUnits; ++j) out.push_back((*part)[static_cast<std::size_t>(b * kUnits + j)]);
      }
    }
    return float_tensor(out, {kBatch, 2 * kUnits});
  };
  cases.push_back(summed);
  return cases;
}

KESTREL_REGISTER_OP_CASES(scan_cases);

}  // namespace
}  // namespace kestrel::testing
