// Kernel benchmarks through Kestrel's public ops: matmul (square, the Transformer's shapes,
// batched attention) and the CNN's convolutions in GFLOP/s, an elementwise chain, softmax, layer
// norm and column sums (bias gradients, on 1 thread and on 2) in GB/s, each in float32 and in
// bfloat16 (whose figures add "vs_float32", its speed over float32's), beside PyTorch and NumPy measured in the same run by peers/kernels_peer.py,
// which runs right after each group of Kestrel's cases (no peer for the convolutions).
//
//   ./build/bench/kernels_bench                                   # every case, peers included
//   ./build/bench/kernels_bench --filter 'matmul.*n=1024' --json-out kernels.json
//   ./build/bench/kernels_bench --no-peer --repeats 10
//
// Rates come from the median time. GB/s counts the bytes each op reads and writes (a chain of
// four ops over n floats moves 4 x 2 x 4n bytes), so they compare with the machine's copy bandwidth.
// Before the cases, the machine's float32 FMA peak is measured (bench/fma_peak.h); each float32
// matmul row adds fma_peak_fraction, its GFLOP/s over the peak at its thread count.
//
// The GEMM's epilogue (kernels/gemm.h), on the Transformer's shapes on both cores: the product
// alone, then with a bias [n], alone and followed by relu, GELU and tanh-approximated GELU applied
// as C is stored, "vs_plain" each one's time over the plain product's. Goal: bias + GELU at most
// 1.05. Then the bias and a residual [m, n] added as C is stored (a transformer's x + Dense(h)),
// against the biased product followed by a separate add into another buffer, as an unfused
// program runs it: "vs_separate_add", the first's time over the second's. The same shapes as an
// eager Dense layer's call, its relu or GELU applied by the GEMM (what the layer does where
// nothing records the call) and as its op after the product: "vs_op", the first's time over the
// second's.
//
// Attention's heads read in place (kernels/gemm.h's two batch levels), as the jit's transpose
// folding runs them: the scores Q K^T and the context P V of BERT-tiny's (32 x 128 tokens, 2 heads
// of 64) and GPT-tiny's (16 x 128, 4 heads of 64) attention, on both cores, with Q, K and V in the
// projections' [B, T, H, D] and the context written back in it. "copies" moves the heads with
// ops::transpose before (and after) a product of contiguous matrices, as an unfolded program does;
// "in_place" gives each operand to the GEMM by strides; "vs_copies" is its time over the copies'.
#include <array>
#include <cstdint>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "bench/fma_peak.h"
#include "bench/harness.h"
#include "framework/ops/kernels/cpu_kernels.h"
#include "framework/ops/kernels/gemm.h"
#include "kestrel.h"

namespace {

using kestrel::Tensor;
using kestrel::bench::Figures;
using kestrel::bench::FmaPeak;
using kestrel::bench::Harness;
using kestrel::bench::Json;
using kestrel::bench::Timing;
namespace ops = kestrel::ops;
namespace random = kestrel::random;

const std::vector<std::int64_t> kMatmulSizes = {256, 512, 1024, 2048};
const std::vector<int> kMatmulThreads = {1, 2};
// [batch x] [m, k] x [k, n] products of the reference Transformers (shared/BENCH.md): a Dense layer
// over 4096 tokens of 128 (BERT-tiny's Q/K/V/O and FFN-in), GPT-tiny's fused QKV over 2048 tokens
// of 256, attention over 64 heads of 128 tokens and 64 dims, and GPT-tiny's LM-head input gradient
// (dlogits [2048, 8192] times the tied [8192, 256] embedding), whose depth runs in slices.
struct MatmulShape {
  std::int64_t batch, m, k, n;
  bool dense_layer = true;  ///< a Dense layer's product, which a bias and activation may follow
};
const std::vector<MatmulShape> kMatmulShapes = {
    {1, 4096, 128, 128}, {1, 4096, 128, 512}, {1, 2048, 256, 768}, {64, 128, 64, 128}, {1, 2048, 8192, 256, false}};
// The CNN workload's convolutions (train_step_bench): NHWC input, 3x3 filter, valid padding.
struct ConvBenchShape {
  std::int64_t batch, size, in, out;
};
const std::vector<ConvBenchShape> kConvShapes = {{128, 28, 1, 32}, {128, 13, 32, 64}};
constexpr std::int64_t kElementwiseSize = std::int64_t{1} << 24;  // 16M floats, 64 MB: far beyond the caches
constexpr std::int64_t kRows = 4096;
constexpr std::int64_t kCols = 1024;
// Bias gradients, [kRows, n] summed over the rows: BERT-tiny's projections (128) and its FFN (512).
constexpr std::array<std::int64_t, 2> kColumnSumCols = {128, 512};
constexpr int kThreads = 2;  // the memory-bound cases run on both cores, the reference setting
constexpr double kFloatBytes = 4.0;
// The goal: at sizes where the kernel, not overhead, decides, matmul keeps pace with the best peer.
constexpr std::int64_t kGoalMinSize = 1024;
constexpr double kGoalRatio = 0.85;
// The epilogue goal: a fused bias + GELU costs at most 5% over the plain product.
constexpr double kEpilogueGoal = 1.05;

std::string join(const auto& values) {
  std::string out;
  for (const auto& v : values) out.append(out.empty() ? "" : ",").append(std::to_string(v));
  return out;
}

// "BxMxKxN,..." for the peer.
std::string join_shapes(const std::vector<MatmulShape>& shapes) {
  std::string out;
  for (const MatmulShape& s : shapes) {
    out.append(out.empty() ? "" : ",")
        .append(std::to_string(s.batch) + "x" + std::to_string(s.m) + "x" + std::to_string(s.k) + "x" +
                std::to_string(s.n));
  }
  return out;
}

// Runs the peer on the cases just measured (those --filter kept), so both sides see the same
// machine load; on a shared machine, load drifts within seconds.
void run_peer_on(Harness& harness, const std::vector<std::string>& labels) {
  std::vector<std::string> selected;
  for (const std::string& label : labels) {
    if (harness.selected(label)) selected.push_back(label);
  }
  if (selected.empty()) return;
  harness.run_peer("kernels_peer.py",
                   {"--matmul-sizes", join(kMatmulSizes), "--matmul-shapes", join_shapes(kMatmulShapes),
                    "--matmul-threads", join(kMatmulThreads), "--elementwise-size", std::to_string(kElementwiseSize),
                    "--rows", std::to_string(kRows), "--cols", std::to_string(kCols), "--column-sum-cols",
                    join(kColumnSumCols), "--threads", std::to_string(kThreads)},
                   kestrel::bench::exact_labels_regex(selected));
}

// A case measured on float32 operands, then on bfloat16 ones (params + dtype=bfloat16), as
// `body(dtype)` builds it; `figures(timing, dtype)` gives each record's rates, and bfloat16's adds
// "vs_float32", its speed over float32's (float32's time over its own). Appends both labels.
void measure_both_dtypes(Harness& harness, const std::string& op, const Json& params,
                         const std::function<std::function<void()>(kestrel::DType)>& body,
                         const std::function<Figures(const Timing&, kestrel::DType)>& figures,
                         std::vector<std::string>& labels) {
  labels.push_back(kestrel::bench::case_label(op, params));
  const std::optional<kestrel::bench::Record> float32 = harness.measure(
      op, params, body(kestrel::DType::float32), [&](const Timing& t) { return figures(t, kestrel::DType::float32); });
  Json bf16_params = params;
  bf16_params["dtype"] = "bfloat16";
  labels.push_back(kestrel::bench::case_label(op, bf16_params));
  harness.measure(op, bf16_params, body(kestrel::DType::bfloat16), [&](const Timing& t) {
    Figures out = figures(t, kestrel::DType::bfloat16);
    if (float32) out.emplace_back("vs_float32", float32->timing.median_ms / t.median_ms);
    return out;
  });
}

// Bytes of one element of `dtype`, for the GB/s of the memory-bound cases.
double element_bytes(kestrel::DType dtype) { return static_cast<double>(kestrel::size_of(dtype)); }

// a x b in float32, with its share of the FMA peak when there is one, then in bfloat16, whose
// GFLOP/s gets no share of the peak: the peak is float32's, and bfloat16's dot products run at
// twice its rate.
void measure_matmul_pair(Harness& harness, const Tensor& a, const Tensor& b, double flops, const Json& params,
                         const std::optional<FmaPeak>& peak, std::vector<std::string>& labels) {
  measure_both_dtypes(
      harness, "matmul", params,
      [&](kestrel::DType dtype) {
        return [a = ops::cast(a, dtype), b = ops::cast(b, dtype)] { Tensor c = ops::matmul(a, b); };
      },
      [&](const Timing& t, kestrel::DType dtype) {
        const double rate = kestrel::bench::gflops(flops, t.median_ms);
        Figures figures = {{"gflops", rate}};
        if (peak && dtype == kestrel::DType::float32) {
          figures.emplace_back("fma_peak_fraction",
                               kestrel::bench::fma_peak_fraction(*peak, rate, params.at("threads").get<int>()));
        }
        return figures;
      },
      labels);
}

void bench_matmul(Harness& harness, const std::optional<FmaPeak>& peak) {
  for (std::int64_t n : kMatmulSizes) {
    Tensor a = random::normal({n, n}, random::Key(0));
    Tensor b = random::normal({n, n}, random::Key(1));
    const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
    std::vector<std::string> labels;
    for (int threads : kMatmulThreads) {
      kestrel::set_num_threads(threads);
      measure_matmul_pair(harness, a, b, flops, {{"n", n}, {"threads", threads}}, peak, labels);
    }
    run_peer_on(harness, labels);
  }
}

// The params of a non-square product, its batch first when there is one: "matmul batch=64 m=128 k=64 ...".
Json matmul_params(const MatmulShape& s, int threads) {
  Json params = s.batch > 1 ? Json{{"batch", s.batch}} : Json::object();
  for (const auto& [key, value] : {std::pair{"m", s.m}, {"k", s.k}, {"n", s.n}}) params[key] = value;
  params["threads"] = threads;
  return params;
}

void bench_matmul_shapes(Harness& harness, const std::optional<FmaPeak>& peak) {
  for (const MatmulShape& s : kMatmulShapes) {
    const kestrel::Shape batch = s.batch > 1 ? kestrel::Shape{s.batch} : kestrel::Shape{};
    kestrel::Shape a_shape = batch, b_shape = batch;
    a_shape.push_back(s.m);
    a_shape.push_back(s.k);
    b_shape.push_back(s.k);
    b_shape.push_back(s.n);
    Tensor a = random::normal(a_shape, random::Key(7));
    Tensor b = random::normal(b_shape, random::Key(8));
    const double flops = 2.0 * static_cast<double>(s.batch * s.m * s.k * s.n);
    std::vector<std::string> labels;
    for (int threads : kMatmulThreads) {
      kestrel::set_num_threads(threads);
      measure_matmul_pair(harness, a, b, flops, matmul_params(s, threads), peak, labels);
    }
    run_peer_on(harness, labels);
  }
}

// conv2d and its two gradients on the CNN's layers, in float32 and bfloat16; the first layer's
// input gradient is never needed in training, so it is left out.
void bench_conv(Harness& harness) {
  std::vector<std::string> labels;  // no peer measures convolutions
  for (const ConvBenchShape& s : kConvShapes) {
    const std::int64_t out = s.size - 2;
    const Tensor x = random::normal({s.batch, s.size, s.size, s.in}, random::Key(9));
    const Tensor w = random::normal({3, 3, s.in, s.out}, random::Key(10));
    const Tensor dy = random::normal({s.batch, out, out, s.out}, random::Key(11));
    const double flops = 2.0 * static_cast<double>(s.batch * out * out * s.out * 9 * s.in);
    const auto figures = [&](const Timing& t, kestrel::DType) {
      return Figures{{"gflops", kestrel::bench::gflops(flops, t.median_ms)}};
    };
    for (int threads : kMatmulThreads) {
      kestrel::set_num_threads(threads);
      const Json params = {{"batch", s.batch}, {"size", s.size}, {"in", s.in}, {"out", s.out}, {"threads", threads}};
      measure_both_dtypes(
          harness, "conv2d", params,
          [&](kestrel::DType dtype) {
            return [x = ops::cast(x, dtype), w = ops::cast(w, dtype)] { Tensor y = ops::conv2d(x, w); };
          },
          figures, labels);
      if (s.in > 1) {
        measure_both_dtypes(
            harness, "conv2d_backprop_input", params,
            [&](kestrel::DType dtype) {
              return [dy = ops::cast(dy, dtype), w = ops::cast(w, dtype), shape = x.shape()] {
                Tensor dx = ops::conv2d_backprop_input(dy, w, shape);
              };
            },
            figures, labels);
      }
      measure_both_dtypes(
          harness, "conv2d_backprop_filter", params,
          [&](kestrel::DType dtype) {
            return [x = ops::cast(x, dtype), dy = ops::cast(dy, dtype), shape = w.shape()] {
              Tensor dw = ops::conv2d_backprop_filter(x, dy, shape);
            };
          },
          figures, labels);
    }
  }
}

// The memory-bound cases run in float32 and in bfloat16, whose GB/s count its 2-byte elements.
void bench_relu_chain(Harness& harness) {
  kestrel::set_num_threads(kThreads);
  const Tensor x = random::normal({kElementwiseSize}, random::Key(2));
  const Json params = {{"n", kElementwiseSize}, {"threads", kThreads}};
  std::vector<std::string> labels;
  measure_both_dtypes(
      harness, "relu_chain", params,
      [&](kestrel::DType dtype) {
        return [x = ops::cast(x, dtype), a = Tensor::scalar(1.5, dtype), b = Tensor::scalar(-0.25, dtype),
                c = Tensor::scalar(0.5, dtype)] {
          Tensor y = ops::multiply(ops::relu(ops::add(ops::multiply(x, a), b)), c);
        };
      },
      [&](const Timing& t, kestrel::DType dtype) {
        // multiply, add, relu, multiply: each reads n elements and writes n elements.
        const double bytes = 4 * 2 * element_bytes(dtype) * static_cast<double>(kElementwiseSize);
        return Figures{{"gb_per_s", kestrel::bench::gb_per_s(bytes, t.median_ms)}};
      },
      labels);
  run_peer_on(harness, labels);
}

void bench_softmax(Harness& harness) {
  kestrel::set_num_threads(kThreads);
  const Tensor x = random::normal({kRows, kCols}, random::Key(3));
  const Json params = {{"rows", kRows}, {"cols", kCols}, {"threads", kThreads}};
  std::vector<std::string> labels;
  measure_both_dtypes(
      harness, "softmax", params,
      [&](kestrel::DType dtype) { return [x = ops::cast(x, dtype)] { Tensor y = ops::softmax(x); }; },
      [&](const Timing& t, kestrel::DType dtype) {
        const double bytes = 2 * element_bytes(dtype) * static_cast<double>(kRows * kCols);
        return Figures{{"gb_per_s", kestrel::bench::gb_per_s(bytes, t.median_ms)}};
      },
      labels);
  run_peer_on(harness, labels);
}

// A bias gradient, [rows, n] summed over its rows, on 1 thread and on 2: the kernel shares it
// among the threads by blocks of columns (kernels/cpu/reduce.cpp).
void bench_column_sum(Harness& harness) {
  std::vector<std::string> labels;
  for (const std::int64_t cols : kColumnSumCols) {
    const Tensor x = random::normal({kRows, cols}, random::Key(7));
    for (const int threads : {1, kThreads}) {
      kestrel::set_num_threads(threads);
      measure_both_dtypes(
          harness, "column_sum", {{"rows", kRows}, {"cols", cols}, {"threads", threads}},
          [&](kestrel::DType dtype) { return [x = ops::cast(x, dtype)] { Tensor y = ops::sum(x, {.axes = {0}}); }; },
          [&](const Timing& t, kestrel::DType dtype) {
            const double bytes = element_bytes(dtype) * static_cast<double>((kRows + 1) * cols);
            return Figures{{"gb_per_s", kestrel::bench::gb_per_s(bytes, t.median_ms)}};
          },
          labels);
    }
  }
  run_peer_on(harness, labels);
}

// bfloat16 rows with float32 gamma and beta, as a mixed_bfloat16 LayerNormalization runs.
void bench_layer_norm(Harness& harness) {
  kestrel::set_num_threads(kThreads);
  const Tensor x = random::normal({kRows, kCols}, random::Key(4));
  const Tensor gamma = random::normal({kCols}, random::Key(5), 1.0, 0.1);
  const Tensor beta = random::normal({kCols}, random::Key(6), 0.0, 0.1);
  const Json params = {{"rows", kRows}, {"cols", kCols}, {"threads", kThreads}};
  std::vector<std::string> labels;
  measure_both_dtypes(
      harness, "layer_norm", params,
      [&](kestrel::DType dtype) {
        return
            [x = ops::cast(x, dtype), &gamma, &beta] { Tensor y = ops::layer_norm(x, gamma, beta, {.epsilon = 1e-5}); };
      },
      [&](const Timing& t, kestrel::DType dtype) {
        const double bytes = 2 * element_bytes(dtype) * static_cast<double>(kRows * kCols) + 2 * kFloatBytes * kCols;
        return Figures{{"gb_per_s", kestrel::bench::gb_per_s(bytes, t.median_ms)}};
      },
      labels);
  run_peer_on(harness, labels);
}

// The biased product with a residual added by the GEMM (`product(residual)`), then the biased
// product alone (`product(nullptr)`, into c) followed by the add of c and the residual into `sum`.
template <class Product>
void bench_residual_epilogue(Harness& harness, Json params, const std::optional<kestrel::bench::Record>& plain,
                             const Product& product, const Tensor& residual, const Tensor& c, const Tensor& sum) {
  const auto vs_plain = [&](const Timing& t) {
    return plain ? Figures{{"vs_plain", t.median_ms / plain->timing.median_ms}} : Figures{};
  };
  params["epilogue"] = "bias_then_add";
  const std::array<kestrel::TensorView, 2> addends{c.view(), residual.view()};
  const std::optional<kestrel::bench::Record> separate = harness.measure(
      "matmul_epilogue", params,
      [&] {
        product(nullptr);
        kestrel::kernels::cpu().elementwise_float32(kestrel::ElementwiseOpcode::add, addends, sum.view());
      },
      vs_plain);
  params["epilogue"] = "bias_residual";
  harness.measure(
      "matmul_epilogue", params, [&] { product(residual.data<float>()); },
      [&](const Timing& t) {
        Figures figures = vs_plain(t);
        if (separate) figures.emplace_back("vs_separate_add", t.median_ms / separate->timing.median_ms);
        return figures;
      });
}

// kernels::gemm on each non-batched Transformer shape (2 threads), plain and with the bias + GELU
// epilogue, into one C allocated up front, so both time the product and its stores alone. States
// the epilogue goal's verdict.
void bench_matmul_epilogue(Harness& harness) {
  kestrel::set_num_threads(kThreads);
  std::string detail;
  bool met = true, measured = false;
  for (const MatmulShape& s : kMatmulShapes) {
    if (s.batch != 1 || !s.dense_layer) continue;
    const Tensor a = random::normal({s.m, s.k}, random::Key(9)), b = random::normal({s.k, s.n}, random::Key(10));
    const Tensor bias = random::normal({s.n}, random::Key(11));
    const Tensor residual = random::normal({s.m, s.n}, random::Key(12));
    Tensor c = Tensor::empty({s.m, s.n}, kestrel::DType::float32);
    Tensor sum = Tensor::empty({s.m, s.n}, kestrel::DType::float32);
    auto* out = static_cast<float*>(c.view().data);
    const auto gemm = [&](const float* with_bias, kestrel::kernels::GemmActivation activation,
                          const float* with_residual = nullptr) {
      kestrel::kernels::gemm({.m = s.m,
                              .n = s.n,
                              .k = s.k,
                              .a = a.data<float>(),
                              .b = b.data<float>(),
                              .c = out,
                              .bias = with_bias,
                              .residual = with_residual,
                              .activation = activation});
    };
    Json params = matmul_params(s, kThreads);
    params["epilogue"] = "none";
    const std::optional<kestrel::bench::Record> plain = harness.measure(
        "matmul_epilogue", params, [&] { gemm(nullptr, kestrel::kernels::GemmActivation::none); },
        [](const Timing&) { return Figures{}; });
    // The bias alone and with each activation; the goal is judged on bias + exact GELU.
    std::optional<kestrel::bench::Record> fused;
    for (const auto& epilogue : {std::pair{"bias", kestrel::kernels::GemmActivation::none},
                                 {"bias_relu", kestrel::kernels::GemmActivation::relu},
                                 {"bias_gelu", kestrel::kernels::GemmActivation::gelu_erf},
                                 {"bias_gelu_tanh", kestrel::kernels::GemmActivation::gelu_tanh}}) {
      const kestrel::kernels::GemmActivation activation = epilogue.second;
      params["epilogue"] = epilogue.first;
      const std::optional<kestrel::bench::Record> record = harness.measure(
          "matmul_epilogue", params, [&] { gemm(bias.data<float>(), activation); },
          [&](const Timing& t) {
            return plain ? Figures{{"vs_plain", t.median_ms / plain->timing.median_ms}} : Figures{};
          });
      if (activation == kestrel::kernels::GemmActivation::gelu_erf) fused = record;
    }
    bench_residual_epilogue(
        harness, params, plain,
        [&](const float* with_residual) {
          gemm(bias.data<float>(), kestrel::kernels::GemmActivation::none, with_residual);
        },
        residual, c, sum);
    if (!plain || !fused) continue;
    const double ratio = fused->timing.median_ms / plain->timing.median_ms;
    measured = true;
    met = met && ratio <= kEpilogueGoal;
    detail += (detail.empty() ? "" : ", ") + std::to_string(s.m) + "x" + std::to_string(s.k) + "x" +
              std::to_string(s.n) + " " + std::to_string(ratio).substr(0, 4) + "x";
  }
  if (!measured) return;
  const std::string verdict = std::string("epilogue goal (bias + GELU in the GEMM at most ") +
                              std::to_string(kEpilogueGoal).substr(0, 4) +
                              "x the plain product's time): " + (met ? "met" : "not met") + " [" + detail + "]";
  std::cout << "\n" << verdict << "\n";
  harness.note(verdict);
}

// An eager Dense call on each non-batched Transformer shape (2 threads), a new output each call as
// the layer allocates it: the built-in relu or GELU, which the GEMM applies as it stores the biased
// product (ops::MatmulOptions::activation), against the same function wrapped in an ActivationFn of
// its own, which the layer runs as its op after the product.
void bench_dense_activation(Harness& harness) {
  kestrel::set_num_threads(kThreads);
  for (const MatmulShape& s : kMatmulShapes) {
    if (s.batch != 1 || !s.dense_layer) continue;
    const Tensor x = random::normal({s.m, s.k}, random::Key(12));
    for (const std::string activation : {"relu", "gelu"}) {
      const kestrel::ActivationFn builtin(activation);
      kestrel::layers::Dense in_gemm(s.n, {.activation = builtin});
      kestrel::layers::Dense as_op(
          s.n, {.activation = kestrel::ActivationFn(activation + " as its op",
                                                    [builtin](const Tensor& z) { return builtin(z); })});
      in_gemm(x);  // built before the timing
      as_op(x);
      Json params = matmul_params(s, kThreads);
      params["activation"] = activation;
      params["placement"] = "op";
      const std::optional<kestrel::bench::Record> apart = harness.measure(
          "dense_activation", params, [&] { as_op(x); }, [](const Timing&) { return Figures{}; });
      params["placement"] = "gemm";
      harness.measure(
          "dense_activation", params, [&] { in_gemm(x); },
          [&](const Timing& t) {
            return apart ? Figures{{"vs_op", t.median_ms / apart->timing.median_ms}} : Figures{};
          });
    }
  }
}

// Attention's two products with the heads moved by copies, then read and written in place.
void bench_attention_heads(Harness& harness) {
  kestrel::set_num_threads(kThreads);
  struct Attention {
    const char* model;
    std::int64_t batch, tokens, heads, depth;
  };
  for (const Attention& s : {Attention{"bert_tiny", 32, 128, 2, 64}, Attention{"gpt_tiny", 16, 128, 4, 64}}) {
    const std::int64_t b = s.batch, t = s.tokens, h = s.heads, d = s.depth;
    const Tensor q = random::normal({b, t, h, d}, random::Key(12)), k = random::normal({b, t, h, d}, random::Key(13));
    const Tensor v = random::normal({b, t, h, d}, random::Key(15));
    const Tensor p = random::normal({b, h, t, t}, random::Key(14));
    Tensor scores = Tensor::empty({b, h, t, t}, kestrel::DType::float32);
    Tensor context = Tensor::empty({b, t, h, d}, kestrel::DType::float32);
    auto* scores_out = static_cast<float*>(scores.view().data);
    // Q K^T over [B, H] and P V into [B, T, H, D]; `strided` reads and writes [B, T, H, D] in place.
    const auto products = [&](const float* q_data, const float* k_data, const float* v_data, float* context_out,
                              bool strided) {
      const std::int64_t ld = strided ? h * d : d, head = strided ? d : t * d, row = t * h * d;
      kestrel::kernels::gemm({.m = t,
                              .n = t,
                              .k = d,
                              .a = q_data,
                              .lda = ld,
                              .b = k_data,
                              .ldb = ld,
                              .transpose_b = true,
                              .c = scores_out,
                              .batch = h,
                              .stride_a = head,
                              .stride_b = head,
                              .stride_c = t * t,
                              .batch_outer = b,
                              .outer_stride_a = row,
                              .outer_stride_b = row,
                              .outer_stride_c = h * t * t});
      kestrel::kernels::gemm({.m = t,
                              .n = d,
                              .k = t,
                              .a = p.data<float>(),
                              .b = v_data,
                              .ldb = ld,
                              .c = context_out,
                              .ldc = ld,
                              .batch = h,
                              .stride_a = t * t,
                              .stride_b = head,
                              .stride_c = head,
                              .batch_outer = b,
                              .outer_stride_a = h * t * t,
                              .outer_stride_b = row,
                              .outer_stride_c = row});
    };
    const double flops = 2.0 * 2.0 * static_cast<double>(b * h * t * t * d);
    Json params = {{"model", s.model}, {"batch", b}, {"tokens", t}, {"heads", h}, {"depth", d}, {"threads", kThreads}};
    const auto rate = [flops](const Timing& timing) { return Figures{{"gflops", flops / timing.median_ms / 1e6}}; };
    params["heads_layout"] = "copies";
    const std::optional<kestrel::bench::Record> copies = harness.measure(
        "attention_heads", params,
        [&] {
          const Tensor q_heads = ops::transpose(q, {0, 2, 1, 3}), k_heads = ops::transpose(k, {0, 2, 1, 3});
          const Tensor v_heads = ops::transpose(v, {0, 2, 1, 3});
          Tensor context_heads = Tensor::empty({b, h, t, d}, kestrel::DType::float32);
          products(q_heads.data<float>(), k_heads.data<float>(), v_heads.data<float>(),
                   static_cast<float*>(context_heads.view().data), false);
          context = ops::transpose(context_heads, {0, 2, 1, 3});
        },
        rate);
    params["heads_layout"] = "in_place";
    harness.measure(
        "attention_heads", params,
        [&] {
          products(q.data<float>(), k.data<float>(), v.data<float>(), static_cast<float*>(context.view().data), true);
        },
        [&](const Timing& timing) {
          Figures figures = rate(timing);
          if (copies) figures.push_back({"vs_copies", timing.median_ms / copies->timing.median_ms});
          return figures;
        });
  }
}

// States the matmul goal's verdict from the ratios of this run, and keeps it in the JSON notes.
void report_matmul_goal(Harness& harness) {
  std::vector<double> ratios;
  std::string detail;
  for (std::int64_t n : kMatmulSizes) {
    if (n < kGoalMinSize) continue;
    for (int threads : kMatmulThreads) {
      const std::string label = kestrel::bench::case_label("matmul", {{"n", n}, {"threads", threads}});
      if (auto ratio = harness.ratio_to_best_peer(label)) {
        ratios.push_back(*ratio);
        detail += (detail.empty() ? "" : ", ") + ("n=" + std::to_string(n) + "/" + std::to_string(threads) + "t ") +
                  std::to_string(static_cast<int>(100 * *ratio + 0.5)) + "%";
      }
    }
  }
  if (ratios.empty()) return;
  bool met = true;
  for (double r : ratios) met = met && r >= kGoalRatio;
  std::string verdict = std::string("matmul goal (n >= ") + std::to_string(kGoalMinSize) +
                        ": Kestrel >= " + std::to_string(static_cast<int>(100 * kGoalRatio)) +
                        "% of the best peer's GFLOP/s): " + (met ? "met" : "not met") + " [" + detail + "]";
  std::cout << "\n" << verdict << "\n";
  harness.note(verdict);
}

}  // namespace

int main(int argc, char** argv) {
  Harness harness("kernels_bench",
                  "Kestrel's kernels (matmul, elementwise chain, softmax, layer norm, column sums) beside "
                  "PyTorch and NumPy, measured in the same run");
  if (auto exit_code = harness.parse(argc, argv)) return *exit_code;

  const std::optional<FmaPeak> peak = kestrel::bench::add_fma_peak(harness);
  bench_matmul(harness, peak);
  bench_matmul_shapes(harness, peak);
  bench_matmul_epilogue(harness);
  bench_dense_activation(harness);
  bench_attention_heads(harness);
  bench_conv(harness);
  bench_relu_chain(harness);
  bench_softmax(harness);
  bench_layer_norm(harness);
  bench_column_sum(harness);

  harness.print_comparison(std::cout);
  report_matmul_goal(harness);
  return harness.finish();
}
