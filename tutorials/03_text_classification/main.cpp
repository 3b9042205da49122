// Language identification on Debian's fortunes: text through the whole data layer — a WordPiece
// vocabulary trained on the corpus, a tokenizer, a collator that pads to a multiple of 32, a
// tf.data-style pipeline — into a BERT-style classifier trained with fit().
//
//   ./build/tutorials/03_text_classification/text_classification
//   ./build/tutorials/03_text_classification/text_classification --vocab runs/03_text_classification/vocab.txt
//   ./build/tutorials/03_text_classification/text_classification --max-per-language 200 --epochs 1   # quick
//
// The data: short texts ("fortunes") in 12 languages from Debian's fortunes packages, split into
// train, validation and test. The model: BERT-tiny (2 Transformer blocks of width 128) reading
// WordPiece tokens and predicting the language from the first token's vector.
//
// Why pad to a multiple of 32: texts have every length, and a batch padded to its longest text has
// a new shape almost every time. On a TPU (and under jit_compile) each new shape is a new compile.
// Rounding the length up to a multiple of 32 leaves a handful of shapes at the price of some
// padding; the table this program prints shows the trade-off.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "datasets/builtin/fortunes.h"
#include "datasets/text/data_collator.h"
#include "datasets/text/wordpiece_tokenizer.h"
#include "kestrel.h"
#include "models/bert_classifier.h"
#include "programs/command_line.h"
#include "tutorials/common/schedules.h"
#include "tutorials/common/seconds_since.h"
#include "tutorials/common/test_metrics.h"
#include "tutorials/common/text_flags.h"
#include "tutorials/common/training_flags.h"
#include "tutorials/common/vocab_flags.h"

namespace {

using namespace kestrel;  // NOLINT(google-build-using-namespace): a tutorial reads best as Keras reads
namespace fortunes = datasets::fortunes;

// What the model reads: input_ids and attention_mask (BERT-tiny has no segment embeddings, and
// each text is a single sentence, so token_type_ids are not asked for).
text::EncodeOptions encode_options(std::int64_t max_length) {
  return {.truncation = text::Truncation::longest_first, .max_length = max_length, .return_token_type_ids = false};
}

// The input pipeline: one element per text, shuffled (training only), tokenized, then grouped
// into padded batches by the collator, with the next batches prepared on a background thread
// while the model trains on the current one.
data::Dataset make_pipeline(const fortunes::Split& split, const text::WordPieceTokenizer& tokenizer,
                            std::int64_t batch_size, std::int64_t max_length, std::int64_t pad_to_multiple_of,
                            std::optional<std::uint64_t> shuffle_seed) {
  data::Dataset ds = split.to_dataset();
  if (shuffle_seed) ds = ds.shuffle(split.size(), *shuffle_seed);
  return ds.map(tokenizer.map_fn(encode_options(max_length)))
      .collate(batch_size, text::DataCollatorWithPadding(tokenizer, {.pad_to_multiple_of = pad_to_multiple_of}))
      .prefetch(2);
}

// One pass of the pipeline alone (no model) for each padding multiple: how many distinct batch
// shapes it makes, and what share of the padded batch is real tokens.
void print_padding_table(const fortunes::Split& split, const text::WordPieceTokenizer& tokenizer,
                         std::int64_t batch_size, std::int64_t max_length) {
  std::printf("\npadding  pad_to_multiple_of   distinct batch shapes   padding efficiency   pipeline pass\n");
  for (std::int64_t multiple : {1, 8, 32, 64}) {
    data::Dataset ds = make_pipeline(split, tokenizer, batch_size, max_length, multiple, std::nullopt);
    const auto start = std::chrono::steady_clock::now();
    for (const data::Element& batch : ds) (void)batch;
    const data::PaddingReport report = ds.padding_stats();
    std::printf("         %18lld   %21lld   %17.1f%%   %11.2f s\n", static_cast<long long>(multiple),
                static_cast<long long>(report.distinct_shapes), 100.0 * report.efficiency(),
                tutorials::seconds_since(start));
  }
  std::printf("         (each distinct shape is one compile under jit_compile or on a TPU)\n");
}

// AdamW with a linear warm-up over the first tenth of the steps, then a cosine decay to zero; the
// loss takes logits. Written once so the reloaded model gets the same optimizer (and its state).
void compile_model(models::BertClassifier& model, double learning_rate, std::int64_t total_steps) {
  model.compile({.optimizer = optimizers::AdamW(
                     {.learning_rate = tutorials::warmup_cosine(learning_rate, total_steps), .weight_decay = 0.01}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
}

}  // namespace

int main(int argc, char** argv) {
  tutorials::TextFlags text_flags{.batch_size = 32};
  tutorials::VocabFlags vocab_flags;
  tutorials::TrainingFlags flags{.epochs = 3, .output_dir = "runs/03_text_classification"};
  programs::CommandLine cli("text_classification",
                            "Kestrel tutorial 03: language identification on the fortunes corpus with a WordPiece "
                            "tokenizer, a padding collator and a BERT-style classifier");
  tutorials::add_text_flags(cli, text_flags, "texts per training step");
  tutorials::add_vocab_flags(cli, vocab_flags);
  tutorials::add_training_flags(cli, flags);
  if (auto exit_code = cli.parse(argc, argv)) return *exit_code;
  const auto& [epochs, output_dir, json_out, seed, verbose] = flags;
  const auto& [batch_size, max_length, pad_to_multiple_of, max_per_language, learning_rate] = text_flags;

  try {
    const auto start = std::chrono::steady_clock::now();
    random::set_global_seed(seed);
    std::filesystem::create_directories(output_dir);
    std::printf("Kestrel tutorial 03: language identification with WordPiece and a BERT-style classifier\n\n");

    // 1. Data: cleaned, deduplicated fortunes with a label per language. The split depends only on
    //    each text, so no text is ever in two splits.
    fortunes::LanguageId data = fortunes::load_language_id(
        {.directory = vocab_flags.fortunes_dir, .max_per_language = max_per_language, .seed = seed});
    const auto num_classes = static_cast<std::int64_t>(data.languages.size());
    std::string language_list;
    for (const std::string& language : data.languages) language_list += (language_list.empty() ? "" : " ") + language;
    std::printf("data     %lld train, %lld validation, %lld test texts in %lld languages: %s\n",
                static_cast<long long>(data.train.size()), static_cast<long long>(data.validation.size()),
                static_cast<long long>(data.test.size()), static_cast<long long>(num_classes), language_list.c_str());

    // 2. Tokenizer. A WordPiece vocabulary learned from the training texts (never the test texts),
    //    or one given with --vocab. Words split into pieces from the vocabulary; "##" marks a piece
    //    that continues a word.
    const text::WordPieceTokenizer tokenizer = tutorials::make_tokenizer(vocab_flags, data.train.texts, output_dir);
    const std::string& example = data.train.texts.front();
    std::string pieces;
    for (const std::string& piece : tokenizer.tokenize(example.substr(0, 60))) pieces += piece + " ";
    std::printf("         \"%s...\" -> %s...\n", example.substr(0, 60).c_str(), pieces.c_str());

    // 3. What padding costs, before training: the same pipeline with four padding multiples.
    print_padding_table(data.train, tokenizer, batch_size, max_length);

    // 4. Model and training. AdamW with a warm-up then a cosine decay; the loss takes logits.
    // The collator rounds a batch's length up to the multiple, so the model's position table must
    // reach max_length rounded up the same way.
    const std::int64_t model_length = (max_length + pad_to_multiple_of - 1) / pad_to_multiple_of * pad_to_multiple_of;
    models::BertClassifier model(
        {.vocab_size = tokenizer.vocab_size(), .max_length = model_length, .num_classes = num_classes});
    model.build({1, model_length});
    const std::int64_t steps_per_epoch = (data.train.size() + batch_size - 1) / batch_size;
    const std::int64_t total_steps = epochs * steps_per_epoch;
    compile_model(model, learning_rate, total_steps);
    std::printf("\nmodel    ");
    model.summary();

    data::Dataset train = make_pipeline(data.train, tokenizer, batch_size, max_length, pad_to_multiple_of, seed);
    data::Dataset validation =
        make_pipeline(data.validation, tokenizer, batch_size, max_length, pad_to_multiple_of, std::nullopt);
    std::printf(
        "\ntrain    %d epochs of %lld steps, batches of %lld padded to a multiple of %lld, AdamW peaking at %g\n",
        epochs, static_cast<long long>(steps_per_epoch), static_cast<long long>(batch_size),
        static_cast<long long>(pad_to_multiple_of), learning_rate);
    const auto fit_start = std::chrono::steady_clock::now();
    History history = model.fit(train, {.epochs = epochs,
                                        .verbose = verbose,
                                        .callbacks = {callbacks::CSVLogger(output_dir + "/training.csv"),
                                                      callbacks::TensorBoard({.log_dir = output_dir + "/logs"})},
                                        .validation_data = validation});
    const double fit_seconds = tutorials::seconds_since(fit_start);
    const data::PaddingReport padding = train.padding_stats();
    std::printf("         trained in %.1f s (%.1f s per epoch); final val_accuracy %.4f\n", fit_seconds,
                fit_seconds / static_cast<double>(history.epoch.size()), history.history.at("val_accuracy").back());
    std::printf("         training batches: %s\n", padding.to_string().c_str());

    // 5. Test, on texts the model and the vocabulary never saw.
    data::Dataset test = make_pipeline(data.test, tokenizer, batch_size, max_length, pad_to_multiple_of, std::nullopt);
    const Logs test_logs = model.evaluate(test, {.verbose = 0});
    std::printf("\ntest     test loss %.4f, test accuracy %.4f on %lld texts\n", test_logs.at("loss"),
                test_logs.at("accuracy"), static_cast<long long>(data.test.size()));

    // 6. Save, reload into a fresh model, and check it scores the same.
    const std::string weights_path = output_dir + "/text_classifier.weights.h5";
    model.save_weights(weights_path);
    models::BertClassifier reloaded(
        {.vocab_size = tokenizer.vocab_size(), .max_length = model_length, .num_classes = num_classes});
    reloaded.build({1, model_length});
    compile_model(reloaded, learning_rate, total_steps);  // the same optimizer, so its saved state loads too
    reloaded.load_weights(weights_path);
    const Logs reloaded_logs = reloaded.evaluate(test, {.verbose = 0});
    const bool same = reloaded_logs.at("accuracy") == test_logs.at("accuracy");
    std::printf("save     weights in %s; reloaded model's test accuracy %.4f (%s)\n", weights_path.c_str(),
                reloaded_logs.at("accuracy"), same ? "identical" : "DIFFERENT");

    if (!json_out.empty()) {
      tutorials::write_test_metrics(json_out, test_logs);
      std::printf("         test metrics written to %s\n", json_out.c_str());
    }
    std::printf("\ndone in %.1f s; logs in %s (tensorboard --logdir %s/logs)\n", tutorials::seconds_since(start),
                output_dir.c_str(), output_dir.c_str());
    return same ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "text_classification: %s\n", e.what());
    return 1;
  }
}
