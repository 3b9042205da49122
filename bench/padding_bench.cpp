// What pad_to_multiple_of costs and saves: for each multiple, the number of distinct batch shapes
// (each a compile under jit_compile), the padding efficiency (real tokens / padded tokens), and the
// time of one pipeline pass and of one training epoch of BERT-tiny on the fortunes language-ID data.
//
//   ./build/bench/padding_bench --repeats 3 --warmup 1 --json-out padding.json
//   ./build/bench/padding_bench --max-per-language 100 --repeats 1 --warmup 0     # quick
#include <cstdio>
#include <string>

#include "bench/harness.h"
#include "datasets/builtin/fortunes.h"
#include "datasets/text/data_collator.h"
#include "datasets/text/wordpiece_tokenizer.h"
#include "datasets/text/wordpiece_trainer.h"
#include "framework/core/random.h"
#include "framework/losses/losses.h"
#include "framework/optimizers/optimizers.h"
#include "models/bert_classifier.h"

namespace {

// NOLINTNEXTLINE(google-build-using-namespace): a benchmark program's own main file
using namespace kestrel;
namespace fortunes = datasets::fortunes;

data::Dataset pipeline(const fortunes::Split& split, const text::WordPieceTokenizer& tokenizer, std::int64_t batch_size,
                       std::int64_t multiple) {
  return split.to_dataset()
      .map(tokenizer.map_fn(
          {.truncation = text::Truncation::longest_first, .max_length = 128, .return_token_type_ids = false}))
      .collate(batch_size, text::DataCollatorWithPadding(tokenizer, {.pad_to_multiple_of = multiple}));
}

}  // namespace

int main(int argc, char** argv) {
  bench::Harness harness("padding_bench", "pad_to_multiple_of: distinct shapes, padding efficiency, epoch time");
  std::int64_t max_per_language = 200;
  std::int64_t batch_size = 32;
  harness.cli().add_option("--max-per-language", max_per_language, "texts per language in the corpus");
  harness.cli().add_option("--batch-size", batch_size, "texts per batch");
  if (auto exit_code = harness.parse(argc, argv)) return *exit_code;

  random::set_global_seed(0);
  fortunes::LanguageId data = fortunes::load_language_id({.max_per_language = max_per_language});
  const text::WordPieceTokenizer tokenizer(text::train_wordpiece_vocab(data.train.texts, {.vocab_size = 4096}));
  std::printf("corpus: %lld training texts in %zu languages, vocabulary %lld\n\n",
              static_cast<long long>(data.train.size()), data.languages.size(),
              static_cast<long long>(tokenizer.vocab_size()));

  for (std::int64_t multiple : {1, 8, 32, 64}) {
    const bench::Json params = {{"pad_to_multiple_of", multiple}, {"batch", batch_size}};
    data::Dataset ds = pipeline(data.train, tokenizer, batch_size, multiple);
    harness.measure(
        "pipeline_pass", params,
        [&] {
          for (const data::Element& b : ds) (void)b;
        },
        [&](const bench::Timing& t) {
          const data::PaddingReport r = ds.padding_stats();
          return bench::Figures{{"ms_per_pass", t.median_ms},
                                {"distinct_shapes", static_cast<double>(r.distinct_shapes)},
                                {"efficiency", r.efficiency()}};
        });

    char summary[128];
    const data::PaddingReport report = ds.padding_stats();
    std::snprintf(
        summary, sizeof summary, "pad_to_multiple_of=%lld: %lld distinct batch shapes, padding efficiency %.1f%%",
        static_cast<long long>(multiple), static_cast<long long>(report.distinct_shapes), 100.0 * report.efficiency());
    harness.note(summary);

    models::BertClassifier model(
        {.vocab_size = tokenizer.vocab_size(), .num_classes = static_cast<std::int64_t>(data.languages.size())});
    model.compile({.optimizer = "adamw", .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
    data::Dataset train = pipeline(data.train, tokenizer, batch_size, multiple);
    harness.measure(
        "train_epoch", params, [&] { model.fit(train, {.epochs = 1, .verbose = 0}); },
        [&](const bench::Timing& t) {
          const data::PaddingReport r = train.padding_stats();
          return bench::Figures{{"s_per_epoch", t.median_ms / 1000.0},
                                {"distinct_shapes", static_cast<double>(r.distinct_shapes)},
                                {"efficiency", r.efficiency()}};
        });
  }
  return harness.finish();
}
