// kernels::CpuKernels::elementwise_bfloat16 against widening to float32, elementwise_float32 and
// rounding (what the dispatcher would otherwise do): the same bits, for every opcode, at the CPU
// level the process runs at (framework_ops_test runs once per level the machine has), over sizes that split over threads and end in a partial block, the
// broadcast layouts (for the opcodes of ops that broadcast), and values with infinities, NaN, zeros and rounding ties.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/ops/elementwise_opcode.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "tests/support/thread_count_guard.h"

namespace kestrel::kernels {
namespace {

using kestrel::testing::ThreadCountGuard;

// Normal values, scaled so that exp and tanh saturate for some, with special values sprinkled in.
Tensor bf16_with_specials(const Shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            1.0f,
                            -1.0f,
                            100.0f};
  std::vector<float> values(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = i % 97 == 5 ? specials[(i / 97) % std::size(specials)] : normal(rng);
  }
  const Tensor wide = Tensor::from_vector<float>(values, shape);
  Tensor out = Tensor::empty(shape, DType::bfloat16);
  cpu().convert(wide.view(), out.view());
  return out;
}

Tensor random_mask(const Shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> values(static_cast<std::size_t>(shape.numel()));
  for (float& v : values) v = static_cast<float>(rng() % 2);
  const Tensor wide = Tensor::from_vector<float>(values, shape);
  Tensor out = Tensor::empty(shape, DType::bool_);
  cpu().convert(wide.view(), out.view());
  return out;
}

Tensor converted(const CpuKernels& k, const Tensor& t, DType dtype) {
  if (t.dtype() != DType::bfloat16 && dtype != DType::bfloat16) return t;
  Tensor out = Tensor::empty(t.shape(), dtype);
  k.convert(t.view(), out.view());
  return out;
}

bool is_comparison(ElementwiseOpcode opcode) {
  switch (*opcode_op(opcode)) {
    case OpId::greater:
    case OpId::greater_equal:
    case OpId::less:
    case OpId::less_equal:
    case OpId::equal:
    case OpId::not_equal: return true;
    default: return false;
  }
}

// Runs `opcode` on bfloat16 `inputs` both ways at one level and compares the bytes.
void expect_same_bits(const CpuKernels& k, ElementwiseOpcode opcode, const std::vector<Tensor>& inputs,
                      const Shape& out_shape) {
  const DType out_dtype = is_comparison(opcode) ? DType::bool_ : DType::bfloat16;
  std::vector<TensorView> narrow, wide;
  std::vector<Tensor> widened;
  for (const Tensor& t : inputs) {
    narrow.push_back(t.view());
    widened.push_back(converted(k, t, DType::float32));
    wide.push_back(widened.back().view());
  }
  Tensor got = Tensor::empty(out_shape, out_dtype);
  k.elementwise_bfloat16(opcode, narrow, got.view());
  Tensor wide_out = Tensor::empty(out_shape, out_dtype == DType::bool_ ? DType::bool_ : DType::float32);
  k.elementwise_float32(opcode, wide, wide_out.view());
  const Tensor want = converted(k, wide_out, out_dtype);
  const std::size_t bytes = static_cast<std::size_t>(out_shape.numel()) * (out_dtype == DType::bool_ ? 1 : 2);
  EXPECT_EQ(std::memcmp(got.view().data, want.view().data, bytes), 0)
      << opcode_name(opcode) << " on " << inputs[0].shape().to_string();
}

TEST(ElementwiseBf16, TheBitsOfWideningComputingAndRounding) {
  // Two threads split the long tensor; 100003 elements end in a partial block and packet.
  ThreadCountGuard guard(2);
  const Shape flat = {100003}, rows = {37, 129}, row = {129}, column = {37, 1}, scalar = {};
  const CpuKernels& k = cpu();
  for (const ElementwiseOpcode opcode : kComputingOpcodes) {
    switch (opcode_arity(opcode)) {
      case 1:
        expect_same_bits(k, opcode, {bf16_with_specials(flat, 1)}, flat);
        expect_same_bits(k, opcode, {bf16_with_specials(rows, 2)}, rows);
        break;
      case 2:
        expect_same_bits(k, opcode, {bf16_with_specials(flat, 3), bf16_with_specials(flat, 4)}, flat);
        if (op_kind(*opcode_op(opcode)) != OpKind::broadcast) break;  // gelu's gradient: one shape
        expect_same_bits(k, opcode, {bf16_with_specials(flat, 5), bf16_with_specials(scalar, 6)}, flat);
        expect_same_bits(k, opcode, {bf16_with_specials(scalar, 7), bf16_with_specials(rows, 8)}, rows);
        expect_same_bits(k, opcode, {bf16_with_specials(rows, 9), bf16_with_specials(row, 10)}, rows);
        expect_same_bits(k, opcode, {bf16_with_specials(column, 11), bf16_with_specials(row, 12)}, rows);
        break;
      default:
        expect_same_bits(k, opcode, {random_mask(flat, 13), bf16_with_specials(flat, 14), bf16_with_specials(flat, 15)},
                         flat);
        expect_same_bits(k, opcode,
                         {random_mask(rows, 16), bf16_with_specials(row, 17), bf16_with_specials(scalar, 18)}, rows);
        break;
    }
  }
}

}  // namespace
}  // namespace kestrel::kernels
