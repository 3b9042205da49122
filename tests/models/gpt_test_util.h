// Test support for the GPT model: a small configuration.
//
//   models::GPT model(testing::small_gpt());
#pragma once

#include "models/gpt.h"

namespace kestrel::testing {

/// Small enough for fast tests, with every part of the real model; no dropout, so calls repeat.
inline models::GPTOptions small_gpt() {
  return {.vocab_size = 32,
          .hidden_size = 16,
          .num_layers = 2,
          .num_heads = 2,
          .intermediate_size = 32,
          .max_length = 24,
          .dropout = 0.0};
}

}  // namespace kestrel::testing
