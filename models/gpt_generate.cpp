// GPT::generate: greedy decoding and top-k sampling, one token per step, on the host.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <sstream>
#include <utility>
#include <vector>

#include "framework/autodiff/recording.h"
#include "framework/core/error.h"
#include "framework/ops/ops.h"
#include "models/gpt.h"

namespace kestrel::models {
namespace {

/// The index of the largest logit, the first one on ties (as ops::argmax).
std::int64_t greedy_pick(const float* logits, std::int64_t vocab) {
  return std::max_element(logits, logits + vocab) - logits;
}

/// A uniform double in [0, 1) from 53 random bits: the same on every standard library, unlike
/// std::uniform_real_distribution, so a seed gives the same tokens everywhere.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

/// Samples among the top_k largest logits, each scaled by 1/temperature, with softmax weights.
std::int64_t top_k_pick(const float* logits, std::int64_t vocab, int top_k, double temperature, std::mt19937_64& rng) {
  const auto k = static_cast<std::size_t>(std::min<std::int64_t>(top_k, vocab));
  std::vector<std::int64_t> order(static_cast<std::size_t>(vocab));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  // Ties go to the lower id, so top_k = 1 picks what greedy picks.
  const auto likelier = [&](std::int64_t a, std::int64_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(), likelier);
  std::vector<double> weights(k);
  const double top = logits[order[0]];
  double total = 0.0;
  for (std::size_t i = 0; i < k; ++i) {
    weights[i] = std::exp((logits[order[i]] - top) / temperature);  // shifted by the max: no overflow
    total += weights[i];
  }
  double u = uniform01(rng) * total;
  for (std::size_t i = 0; i < k; ++i) {
    if (u < weights[i]) return order[i];
    u -= weights[i];
  }
  return order[k - 1];  // rounding left u just past the last weight
}

}  // namespace

void GPT::check_generate(const Tensor& prompt_ids, const GenerateOptions& options) const {
  if (!prompt_ids.defined() || !is_integer(prompt_ids.dtype()) || prompt_ids.rank() != 2 ||
      prompt_ids.shape()[0] == 0 || prompt_ids.shape()[1] == 0) {
    throw ShapeError(error_prefix() + "generate() got prompt_ids " +
                     (prompt_ids.defined() ? prompt_ids.spec().to_string() : std::string("undefined")) +
                     "; pass integer token ids [batch, length] with batch and length >= 1 "
                     "(one prompt as [1, length])");
  }
  if (prompt_ids.shape()[1] > options_.max_length) {
    throw ShapeError(error_prefix() + "generate() got a prompt of " + std::to_string(prompt_ids.shape()[1]) +
                     " tokens but max_length is " + std::to_string(options_.max_length) + "; keep the last " +
                     std::to_string(options_.max_length) + " tokens of the prompt");
  }
  if (options.max_new_tokens < 0) {
    throw ValueError(error_prefix() + "generate() got max_new_tokens " + std::to_string(options.max_new_tokens) +
                     "; it must be >= 0");
  }
  if (options.top_k < 0) {
    throw ValueError(error_prefix() + "generate() got top_k " + std::to_string(options.top_k) +
                     "; use top_k = 0 for greedy decoding or top_k = k >= 1 to sample among the k likeliest tokens");
  }
  if (options.top_k > 0 && !(options.temperature > 0.0 && std::isfinite(options.temperature))) {
    std::ostringstream t;
    t << options.temperature;
    throw ValueError(error_prefix() + "generate() got temperature " + t.str() +
                     "; it must be positive and finite (for the likeliest token every time, use top_k = 0)");
  }
}

Tensor GPT::generate(const Tensor& prompt_ids, GenerateOptions options) {
  check_generate(prompt_ids, options);
  autodiff::NoGradScope no_grad;
  const std::int64_t batch = prompt_ids.shape()[0];
  const std::int64_t prompt_length = prompt_ids.shape()[1];
  const std::int64_t final_length = std::min(prompt_length + options.max_new_tokens, options_.max_length);
  const std::int64_t vocab = options_.vocab_size;

  // Row-major [batch, length] ids on the host, grown by one column per step.
  std::vector<std::int64_t> ids = ops::cast(prompt_ids, DType::int64).to_vector<std::int64_t>();
  std::mt19937_64 rng(options.seed);
  for (std::int64_t length = prompt_length; length < final_length; ++length) {
    Tensor hidden = sequence_output(Inputs{{"input_ids", Tensor::from_vector<std::int64_t>(ids, {batch, length})}});
    // Only the last position predicts the next token: project it alone, not all `length`.
    Tensor last = ops::slice(hidden, {0, length - 1, 0}, {batch, 1, options_.hidden_size});
    const std::vector<float> next_logits = logits(ops::reshape(last, {batch, options_.hidden_size})).to_vector<float>();

    std::vector<std::int64_t> grown;
    grown.reserve(static_cast<std::size_t>(batch * (length + 1)));
    for (std::int64_t b = 0; b < batch; ++b) {
      const float* row = next_logits.data() + b * vocab;
      const std::int64_t next = options.top_k == 0 ? greedy_pick(row, vocab)
                                                   : top_k_pick(row, vocab, options.top_k, options.temperature, rng);
      grown.insert(grown.end(), ids.begin() + b * length, ids.begin() + (b + 1) * length);
      grown.push_back(next);
    }
    ids = std::move(grown);
  }
  return ops::cast(Tensor::from_vector<std::int64_t>(ids, {batch, final_length}), prompt_ids.dtype());
}

}  // namespace kestrel::models
