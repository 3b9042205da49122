// Op table entries for matmul: plain, each transpose, batched ranks 3 and 4, the [B,T,D] x [D,O]
// flattening, a plain matrix broadcast against a batch, bfloat16, and one product large enough
// to take the blocked, multi-threaded GEMM path; each kind again with a bias added by the GEMM
// (MatmulOptions::bias); and with a bias and a residual of the product's shape
// (MatmulOptions::residual). The reference is a triple loop in double.
#include "framework/ops/elementwise.h"
#include "framework/ops/matmul.h"
#include "tests/framework/ops/op_case.h"

namespace kestrel::testing {
namespace {

// The shape of op(a) x op(b): the batch dims of the batched side, then [m, n].
Shape product_shape(const Shape& sa, const Shape& sb, bool transpose_a, bool transpose_b) {
  const Shape& batched = sa.rank() >= sb.rank() ? sa : sb;
  Shape out;
  for (int i = 0; i < batched.rank() - 2; ++i) out.push_back(batched[i]);
  out.push_back(transpose_a ? sa[-1] : sa[-2]);
  out.push_back(transpose_b ? sb[-2] : sb[-1]);
  return out;
}

// op(a) x op(b) with transposes of the last two axes; a rank-2 side is shared by every batch.
Tensor reference_matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  const std::int64_t m = transpose_a ? sa[-1] : sa[-2];
  const std::int64_t k = transpose_a ? sa[-2] : sa[-1];
  const std::int64_t n = transpose_b ? sb[-2] : sb[-1];
  const Shape out = product_shape(sa, sb, transpose_a, transpose_b);
  const std::int64_t batch = out.numel() / (m * n);
  const std::int64_t batch_a = sa.numel() / (sa[-2] * sa[-1]);
  const std::int64_t batch_b = sb.numel() / (sb[-2] * sb[-1]);

  std::vector<double> va = a.to_vector<double>();
  std::vector<double> vb = b.to_vector<double>();
  std::vector<double> result(static_cast<std::size_t>(out.numel()));
  for (std::int64_t p = 0; p < batch; ++p) {
    const double* pa = va.data() + (batch_a == 1 ? 0 : p) * m * k;
    const double* pb = vb.data() + (batch_b == 1 ? 0 : p) * k * n;
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        double total = 0;
        for (std::int64_t l = 0; l < k; ++l) {
          const double x = transpose_a ? pa[l * m + i] : pa[i * k + l];
          const double y = transpose_b ? pb[j * k + l] : pb[l * n + j];
          total += x * y;
        }
        result[static_cast<std::size_t>((p * m + i) * n + j)] = total;
      }
    }
  }
  return float_tensor(result, out);
}

OpCase matmul_case(std::string label, Shape a, Shape b, bool transpose_a = false, bool transpose_b = false) {
  OpCase c;
  c.op = OpId::matmul;
  c.label = std::move(label);
  c.make_inputs = [=] { return Inputs{uniform_tensor(a, 11), uniform_tensor(b, 12)}; };
  c.run = [=](const Inputs& in) {
    return ops::matmul(in[0], in[1], {.transpose_a = transpose_a, .transpose_b = transpose_b});
  };
  c.reference = [=](const Inputs& in) { return reference_matmul(in[0], in[1], transpose_a, transpose_b); };
  return c;
}

// The same product plus a bias [N] on every row, added by the GEMM.
OpCase matmul_bias_case(std::string label, Shape a, Shape b, bool transpose_a = false, bool transpose_b = false) {
  OpCase c = matmul_case(std::move(label), a, b, transpose_a, transpose_b);
  const std::int64_t n = transpose_b ? b[-2] : b[-1];
  c.make_inputs = [=] { return Inputs{uniform_tensor(a, 11), uniform_tensor(b, 12), uniform_tensor({n}, 17)}; };
  c.run = [=](const Inputs& in) {
    return ops::matmul(in[0], in[1], {.transpose_a = transpose_a, .transpose_b = transpose_b, .bias = in[2]});
  };
  c.reference = [=](const Inputs& in) {
    return ops::add(reference_matmul(in[0], in[1], transpose_a, transpose_b), in[2]);
  };
  return c;
}

// The same product plus a bias [N] on every row and a residual of the product's shape, both added
// by the GEMM.
OpCase matmul_residual_case(std::string label, Shape a, Shape b, bool transpose_a = false, bool transpose_b = false) {
  OpCase c = matmul_bias_case(std::move(label), a, b, transpose_a, transpose_b);
  const Shape product = product_shape(a, b, transpose_a, transpose_b);
  const std::int64_t n = product[-1];
  c.make_inputs = [=] {
    return Inputs{uniform_tensor(a, 11), uniform_tensor(b, 12), uniform_tensor({n}, 17), uniform_tensor(product, 18)};
  };
  c.run = [=](const Inputs& in) {
    return ops::matmul(in[0], in[1],
                       {.transpose_a = transpose_a, .transpose_b = transpose_b, .bias = in[2], .residual = in[3]});
  };
  c.reference = [=](const Inputs& in) {
    return ops::add(ops::add(reference_matmul(in[0], in[1], transpose_a, transpose_b), in[2]), in[3]);
  };
  return c;
}

// `c` past the GEMM's cache blocks and threading threshold: a looser tolerance, and no gradient check.
OpCase large(OpCase c, std::string why_no_gradient) {
  c.tolerance = 1e-4;
  c.no_gradient_because = std::move(why_no_gradient);
  return c;
}

// `c` on its inputs rounded to bfloat16, its bfloat16 result widened for the reference's comparison.
OpCase in_bfloat16(OpCase c) {
  c.make_inputs = [make = c.make_inputs] {
    Inputs in = make();
    for (Tensor& t : in) t = ops::cast(t, DType::bfloat16);
    return in;
  };
  c.run = [run = c.run](const Inputs& in) { return ops::cast(run(in), DType::float32); };
  c.tolerance = 1e-2;  // the product is rounded to bfloat16's 8-bit mantissa
  c.no_gradient_because = "bfloat16 inputs: too coarse for finite differences";
  return c;
}

std::vector<OpCase> matmul_cases() {
  std::vector<OpCase> cases;
  cases.push_back(matmul_case("matmul_plain", {3, 4}, {4, 5}));
  cases.push_back(matmul_case("matmul_transpose_a", {4, 3}, {4, 5}, true, false));
  cases.push_back(matmul_case("matmul_transpose_b", {3, 4}, {5, 4}, false, true));
  cases.push_back(matmul_case("matmul_transpose_both", {4, 3}, {5, 4}, true, true));
  cases.push_back(matmul_case("matmul_batched_rank3", {2, 3, 4}, {2, 4, 5}));
  // Attention scores: [B,H,T,D] x [B,H,T,D]^T.
  cases.push_back(matmul_case("matmul_batched_rank4_transpose_b", {2, 2, 3, 4}, {2, 2, 5, 4}, false, true));
  // A Dense layer on a sequence: flattened to one product; the weight gradient must stay 2-D.
  cases.push_back(matmul_case("matmul_sequence_times_matrix", {2, 3, 4}, {4, 5}));
  cases.push_back(matmul_case("matmul_batch_transpose_a_times_matrix", {2, 4, 3}, {4, 5}, true, false));
  cases.push_back(matmul_case("matmul_matrix_times_batch", {3, 4}, {2, 4, 5}));

  // Past the GEMM's cache blocks (k > 256) and its threading threshold, with ragged edges.
  cases.push_back(large(matmul_case("matmul_large_blocked", {150, 300}, {170, 300}, false, true),
                        "size: exercises the blocked, threaded kernel; gradients are checked on the small cases"));

  // bfloat16: the product is rounded to bfloat16's 8-bit mantissa (once, after any bias and residual).
  cases.push_back(in_bfloat16(matmul_case("matmul_bfloat16", {3, 8}, {8, 4})));

  cases.push_back(matmul_bias_case("matmul_bias", {3, 4}, {4, 5}));
  cases.push_back(matmul_bias_case("matmul_bias_sequence_times_matrix", {2, 3, 4}, {4, 5}));
  cases.push_back(matmul_bias_case("matmul_bias_batched_transpose_b", {2, 3, 4}, {2, 5, 4}, false, true));
  // Wider than tall: the threads' tiles split the columns, each with its part of the bias; k > 256
  // takes the packed kernel below AVX-512, which adds the bias after its product.
  cases.push_back(large(matmul_bias_case("matmul_bias_large_column_tiles", {150, 300}, {300, 170}),
                        "size: the small bias cases check the gradients"));
  cases.push_back(in_bfloat16(matmul_bias_case("matmul_bias_bfloat16", {3, 8}, {8, 4})));

  cases.push_back(matmul_residual_case("matmul_residual", {3, 4}, {4, 5}));
  // A Dense layer on a sequence: the residual [2, 3, 5] is flattened with the product.
  cases.push_back(matmul_residual_case("matmul_residual_sequence_times_matrix", {2, 3, 4}, {4, 5}));
  cases.push_back(matmul_residual_case("matmul_residual_batched_transpose_a", {2, 4, 3}, {2, 4, 5}, true, false));
  cases.push_back(matmul_residual_case("matmul_residual_matrix_times_batch", {3, 4}, {2, 4, 5}));
  cases.push_back(large(matmul_residual_case("matmul_residual_large_column_tiles", {150, 300}, {300, 170}),
                        "size: the small residual cases check the gradients"));
  cases.push_back(in_bfloat16(matmul_residual_case("matmul_residual_bfloat16", {3, 8}, {8, 4})));

  // float32 with bfloat16 computes in float32, like the elementwise ops.
  OpCase mixed = matmul_case("matmul_float32_with_bfloat16", {3, 8}, {8, 4});
  mixed.make_inputs = [] {
    return Inputs{uniform_tensor({3, 8}, 15), ops::cast(uniform_tensor({8, 4}, 16), DType::bfloat16)};
  };
  mixed.no_gradient_because = "bfloat16 input: too coarse for finite differences";
  cases.push_back(std::move(mixed));
  return cases;
}

}  // namespace

KESTREL_REGISTER_OP_CASES(matmul_cases);

}  // namespace kestrel::testing
