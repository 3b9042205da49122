// A causal language model with tied embeddings, the TPU way: GPT-tiny learns English from Debian's
// fortunes on 8 simulated TPU cores, its output projection tied to its input embedding throughout.
//
//   ./build/tutorials/06_causal_lm_tied/causal_lm_tied
//   ./build/tutorials/06_causal_lm_tied/causal_lm_tied --epochs 1 --train-blocks 320 --vocab-size 2000   # quick
//
// Weight tying: GPT-2 predicts the next token with the transpose of its token embedding, so the
// table that turns ids into vectors also turns vectors into scores over the vocabulary. The two
// layers, token_embedding and lm_head, hold one variable: a quarter fewer parameters for GPT-tiny,
// and rare tokens learn from both uses. The tie is a property of identity, not of values, and it
// is easy to lose without a sound. Moving a model to a device can copy each weight on its own
// (two variables that start equal and train apart), and so can a checkpoint that stores each
// layer's weights separately. This program checks the tie at each of those points: after
// building, after placement on the replicas and training, and after a checkpoint round trip.
//
// The data, the TPU way: every fortune's tokens, then [SEP], in one stream cut into blocks of
// max_length tokens (as Hugging Face's run_clm groups texts). Every batch then has one static
// shape and no padding, so the step compiles once and no replica computes on padding. The last,
// shorter block of each split is dropped, and the program says how many tokens that leaves out.
//
// Perplexity, exp(mean next-token cross-entropy) on held-out fortunes, says how many tokens the
// model is as unsure as a uniform pick among. The baseline is a unigram model: every token at its
// training frequency, whatever came before. A language model that learned anything of context
// beats it by far.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "datasets/builtin/fortunes.h"
#include "datasets/text/wordpiece_tokenizer.h"
#include "framework/jit/memory_plan.h"
#include "kestrel.h"
#include "models/gpt.h"
#include "models/gpt_data.h"
#include "programs/command_line.h"
#include "strategies/tpu_strategy.h"
#include "tutorials/common/schedules.h"
#include "tutorials/common/seconds_since.h"
#include "tutorials/common/test_metrics.h"
#include "tutorials/common/training_flags.h"
#include "tutorials/common/vocab_flags.h"

namespace {

using namespace kestrel;  // NOLINT(google-build-using-namespace): a tutorial reads best as Keras reads
namespace fortunes = datasets::fortunes;

// Every tenth fortune is held out: a pure function of the corpus order, so reruns agree.
struct Corpus {
  std::vector<std::string> train, validation;
};
Corpus split_corpus(const std::vector<std::string>& fortunes) {
  Corpus out;
  for (std::size_t i = 0; i < fortunes.size(); ++i) (i % 10 == 9 ? out.validation : out.train).push_back(fortunes[i]);
  return out;
}

// A text's ids, without [CLS] and [SEP]: the stream adds its own separators.
std::vector<std::int64_t> ids_of(const text::WordPieceTokenizer& tokenizer, const std::string& text) {
  return tokenizer
      .encode(text, {.add_special_tokens = false, .return_token_type_ids = false, .return_attention_mask = false})
      .input_ids;
}

// The texts as blocks of `length` ids: each text's tokens then [SEP], one stream, cut in blocks.
struct Blocks {
  Tensor ids;               // int64 [blocks, length]
  std::int64_t unused = 0;  // tokens past the last whole block (or past --*-blocks)
  std::int64_t tokens = 0;  // in the stream
};
Blocks to_blocks(const std::vector<std::string>& texts, const text::WordPieceTokenizer& tokenizer, std::int64_t length,
                 std::int64_t max_blocks) {
  std::vector<std::int64_t> stream;
  const std::int64_t separator = tokenizer.sep_token_id();
  for (const std::string& text : texts) {
    const std::vector<std::int64_t> ids = ids_of(tokenizer, text);
    stream.insert(stream.end(), ids.begin(), ids.end());
    stream.push_back(separator);
  }
  Blocks out;
  out.tokens = static_cast<std::int64_t>(stream.size());
  std::int64_t blocks = out.tokens / length;
  if (max_blocks > 0) blocks = std::min(blocks, max_blocks);
  out.unused = out.tokens - blocks * length;
  stream.resize(static_cast<std::size_t>(blocks * length));
  out.ids = Tensor::from_vector<std::int64_t>(stream, {blocks, length});
  return out;
}

// {"input_ids", "labels"} per block, shuffled for training, in global batches of a static size.
data::Dataset make_pipeline(const Blocks& blocks, std::int64_t global_batch,
                            std::optional<std::uint64_t> shuffle_seed) {
  data::Dataset ds =
      data::Dataset::from_tensor_slices({{"input_ids", blocks.ids}, {"labels", models::causal_lm_labels(blocks.ids)}});
  if (shuffle_seed) ds = ds.shuffle(blocks.ids.shape()[0], *shuffle_seed);
  // drop_remainder for training: every step has the one compiled shape. Evaluation keeps the last
  // batch: the model pads it to the global batch and masks it, so every held-out token is scored.
  return ds.batch(global_batch, {.drop_remainder = shuffle_seed.has_value()}).prefetch(2);
}

// Perplexity of a unigram model fitted on the training blocks' labels (add-one smoothing), on the
// validation blocks' labels: the same positions the language model is scored on.
double unigram_perplexity(const Blocks& train, const Blocks& validation, std::int64_t vocab_size) {
  auto labels_of = [](const Blocks& blocks) { return models::causal_lm_labels(blocks.ids).to_vector<std::int64_t>(); };
  std::vector<double> counts(static_cast<std::size_t>(vocab_size), 1.0);
  double total = static_cast<double>(vocab_size);
  for (const std::int64_t id : labels_of(train)) {
    if (id == models::kIgnoredLabel) continue;
    counts[static_cast<std::size_t>(id)] += 1.0;
    total += 1.0;
  }
  double nll = 0.0;
  std::int64_t scored = 0;
  for (const std::int64_t id : labels_of(validation)) {
    if (id == models::kIgnoredLabel) continue;
    nll -= std::log(counts[static_cast<std::size_t>(id)] / total);
    ++scored;
  }
  return std::exp(nll / static_cast<double>(std::max<std::int64_t>(scored, 1)));
}

// AdamW with a linear warm-up over the first tenth of the steps, then a cosine decay; the loss
// leaves out the -100 labels (the last position of each block). Written once so the reloaded
// model gets the same optimizer.
void compile_model(models::GPT& model, double learning_rate, std::int64_t total_steps) {
  model.compile(
      {.optimizer = optimizers::AdamW(
           {.learning_rate = tutorials::warmup_cosine(learning_rate, total_steps), .weight_decay = 0.01}),
       .loss = losses::SparseCategoricalCrossentropy({.from_logits = true, .ignore_class = models::kIgnoredLabel}),
       .jit_compile = true});
}

// "token_embedding/embeddings = lm_head/kernel (one variable)", or what is wrong.
std::string describe_tie(const models::GPT& model) {
  std::string out;
  for (const layers::WeightTie& tie : layers::find_weight_ties(model))
    out += (out.empty() ? "" : "; ") + tie.to_string();
  const bool same = model.output_embeddings().is_same(model.token_embedding().embeddings());
  return (out.empty() ? std::string("no tie") : out) + (same ? " (one variable)" : " (UNTIED: two variables)");
}

bool tied(const models::GPT& model) { return model.output_embeddings().is_same(model.token_embedding().embeddings()); }

std::string generate_text(models::GPT& model, const text::WordPieceTokenizer& tokenizer, const std::string& prompt,
                          const models::GenerateOptions& options) {
  const std::vector<std::int64_t> ids = ids_of(tokenizer, prompt);
  const auto length = static_cast<std::int64_t>(ids.size());
  const Tensor out = model.generate(Tensor::from_vector<std::int64_t>(ids, {1, length}), options);
  const std::vector<std::int64_t> all = out.to_vector<std::int64_t>();
  return tokenizer.decode(all, /*skip_special_tokens=*/false);
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t global_batch = 16;
  std::int64_t max_length = 128;
  std::int64_t train_blocks = 0;
  std::int64_t validation_blocks = 0;
  double learning_rate = 2e-3;
  tutorials::VocabFlags vocab_flags;
  tutorials::TrainingFlags flags{.epochs = 3, .output_dir = "runs/06_causal_lm_tied"};
  programs::CommandLine cli(
      "causal_lm_tied",
      "Kestrel tutorial 06: GPT-tiny with tied embeddings on the English fortunes, on 8 simulated TPU cores");
  cli.add_option("--batch-size", global_batch, "blocks per global batch (a multiple of the 8 replicas)").range(8, 4096);
  cli.add_option("--max-length", max_length, "tokens per block, and the model's positions").range(8, 1024);
  cli.add_option("--train-blocks", train_blocks, "training blocks to use (0: all)").non_negative();
  cli.add_option("--validation-blocks", validation_blocks, "validation blocks to use (0: all)").non_negative();
  cli.add_option("--learning-rate", learning_rate, "AdamW's peak learning rate").positive();
  tutorials::add_vocab_flags(cli, vocab_flags);
  tutorials::add_training_flags(cli, flags);
  if (auto exit_code = cli.parse(argc, argv)) return *exit_code;
  const auto& [epochs, output_dir, json_out, seed, verbose] = flags;

  try {
    const auto start = std::chrono::steady_clock::now();
    random::set_global_seed(seed);
    std::filesystem::create_directories(output_dir);
    std::printf("Kestrel tutorial 06: a causal language model with tied embeddings on 8 simulated TPU cores\n\n");

    // 1. The TPU system: 8 cores, each running one replica of every step.
    distribute::TPUStrategy strategy(distribute::TPUClusterResolver::local());
    const int replicas = strategy.num_replicas_in_sync();
    if (global_batch % replicas != 0) {
      throw ValueError("--batch-size " + std::to_string(global_batch) + " does not divide by the " +
                       std::to_string(replicas) + " replicas; use a multiple of " + std::to_string(replicas));
    }
    std::printf("tpu      %d replicas in sync; global batch %lld = %lld blocks per replica\n", replicas,
                static_cast<long long>(global_batch), static_cast<long long>(global_batch / replicas));

    // 2. Data: the English fortunes, a vocabulary learned on the training ones, blocks of tokens.
    const Corpus corpus = split_corpus(fortunes::load_english_corpus({.directory = vocab_flags.fortunes_dir}));
    const text::WordPieceTokenizer tokenizer = tutorials::make_tokenizer(vocab_flags, corpus.train, output_dir);
    const Blocks train = to_blocks(corpus.train, tokenizer, max_length, train_blocks);
    const Blocks validation = to_blocks(corpus.validation, tokenizer, max_length, validation_blocks);
    for (const auto& [name, blocks, texts] : {std::tuple{"train", &train, corpus.train.size()},
                                              std::tuple{"valid", &validation, corpus.validation.size()}}) {
      std::printf("data     %s: %zu fortunes, %lld tokens -> %lld blocks of %lld (%lld tokens unused)\n", name, texts,
                  static_cast<long long>(blocks->tokens), static_cast<long long>(blocks->ids.shape()[0]),
                  static_cast<long long>(max_length), static_cast<long long>(blocks->unused));
    }
    const std::int64_t steps_per_epoch = train.ids.shape()[0] / global_batch;
    if (steps_per_epoch == 0) {
      throw ValueError("only " + std::to_string(train.ids.shape()[0]) + " training blocks, fewer than one batch of " +
                       std::to_string(global_batch) + "; raise --train-blocks or lower --batch-size");
    }

    // 3. The model and the pipelines, created inside the strategy's scope: their variables belong
    //    to the TPU system. One model instance; the replicas share its weights.
    auto scope = strategy.scope();
    models::GPT model({.vocab_size = tokenizer.vocab_size(), .max_length = max_length});
    model.build({1, max_length});  // builds, then GPT::tie_weights() ties lm_head to the embedding
    const std::int64_t total_steps = epochs * steps_per_epoch;
    compile_model(model, learning_rate, total_steps);
    std::printf("\nmodel    GPT-tiny: %lld parameters (%.1f MB, one copy shared by the replicas)\n",
                static_cast<long long>(model.count_params()), 4.0 * static_cast<double>(model.count_params()) / 1e6);
    std::printf("tie      built:                 %s\n", describe_tie(model).c_str());

    // 4. Train. The first step places the model on the replicas: it checks the tie holds, and
    //    the compiled step binds the tied table once, so both uses train one variable.
    data::Dataset train_ds = make_pipeline(train, global_batch, seed);
    data::Dataset validation_ds = make_pipeline(validation, global_batch, std::nullopt);
    std::printf("\ntrain    %d epoch(s) of %lld steps, AdamW peaking at %g, jit_compile\n", epochs,
                static_cast<long long>(steps_per_epoch), learning_rate);
    const auto fit_start = std::chrono::steady_clock::now();
    const History history = model.fit(train_ds, {.epochs = epochs, .verbose = verbose});
    const double fit_seconds = tutorials::seconds_since(fit_start);
    std::printf("         trained in %.1f s (%.0f ms a step); %lld compile(s), %s of compiled memory per replica\n",
                fit_seconds, 1000.0 * fit_seconds / static_cast<double>(total_steps),
                static_cast<long long>(history.jit.compiles),
                jit::format_bytes(history.jit.arena_bytes_per_replica).c_str());
    std::printf("tie      placed and trained:    %s\n", describe_tie(model).c_str());

    // 5. Perplexity on the held-out fortunes, against the unigram baseline.
    const double model_perplexity = std::exp(model.evaluate(validation_ds, {.verbose = 0}).at("loss"));
    const double baseline = unigram_perplexity(train, validation, tokenizer.vocab_size());
    std::printf("\nperplexity on held-out fortunes: GPT-tiny %.1f, unigram baseline %.1f (%.1fx lower)\n",
                model_perplexity, baseline, baseline / model_perplexity);

    // 6. Checkpoint round trip, inside the scope: the file holds the tied table once (under
    //    token_embedding), and loading it into a fresh model gives one variable again.
    const std::string weights_path = output_dir + "/gpt.weights.h5";
    model.save_weights(weights_path);
    models::GPT reloaded({.vocab_size = tokenizer.vocab_size(), .max_length = max_length});
    reloaded.build({1, max_length});
    compile_model(reloaded, learning_rate, total_steps);
    reloaded.load_weights(weights_path);
    const double reloaded_perplexity = std::exp(reloaded.evaluate(validation_ds, {.verbose = 0}).at("loss"));
    std::printf("\nsave     %s; reloaded perplexity %.1f (%s)\n", weights_path.c_str(), reloaded_perplexity,
                std::abs(reloaded_perplexity - model_perplexity) <= 1e-6 * model_perplexity ? "the same" : "DIFFERENT");
    std::printf("tie      saved and reloaded:    %s\n", describe_tie(reloaded).c_str());

    // 7. Text. Greedy decoding picks the likeliest token each time; top-k samples among the k
    //    likeliest, seeded, so a run repeats.
    std::printf("\ngenerate\n");
    for (const std::string prompt : {"the meaning of life is", "a computer", "you will"}) {
      std::printf("  greedy  %s\n", generate_text(reloaded, tokenizer, prompt, {.max_new_tokens = 20}).c_str());
      std::printf(
          "  top-40  %s\n",
          generate_text(reloaded, tokenizer, prompt, {.max_new_tokens = 20, .top_k = 40, .seed = seed}).c_str());
    }

    // The checks this program stands for: the tie held at every point, and the checkpoint is the
    // model. (How far perplexity falls depends on how long it trains, so it is reported, not checked.)
    const bool ok =
        tied(model) && tied(reloaded) && std::abs(reloaded_perplexity - model_perplexity) <= 1e-6 * model_perplexity;
    if (!json_out.empty()) {
      tutorials::write_test_metrics(json_out, {{"perplexity", model_perplexity},
                                               {"unigram_perplexity", baseline},
                                               {"reloaded_perplexity", reloaded_perplexity},
                                               {"tied", tied(model) && tied(reloaded) ? 1.0 : 0.0}});
      std::printf("\n         metrics written to %s\n", json_out.c_str());
    }
    std::printf("\ndone in %.1f s%s\n", tutorials::seconds_since(start), ok ? "" : " — but a check above FAILED");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "causal_lm_tied: %s\n", e.what());
    return 1;
  }
}
