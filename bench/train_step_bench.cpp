// End-to-end training-step benchmark: the MLP and CNN workloads of the reference table (float32,
// 2 threads, the same random batch every step), one Kestrel step being model.train_on_batch(x, y)
// — forward, loss, backward and the Adam update, run eagerly — beside PyTorch eager running the
// same models with peers/train_step_peer.py in the same run.
//
//   ./build/bench/train_step_bench                              # both workloads, peer included
//   ./build/bench/train_step_bench --filter mlp --repeats 100 --json-out train_step.json
//   ./build/bench/train_step_bench --no-peer
//
// Figures: GFLOP/s (3 x the forward matmul/conv FLOPs per step over the median step time), samples/s,
// ms/step, and the peak resident memory of the process (VmHWM). Each Kestrel workload runs in a fresh
// child process of this program, and the peer in a fresh Python process per workload, so each peak
// belongs to one workload alone.
#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "bench/harness.h"
#include "kestrel.h"

namespace {

using kestrel::Sequential;
using kestrel::Tensor;
using kestrel::bench::Figures;
using kestrel::bench::Harness;
using kestrel::bench::Json;
using kestrel::bench::Record;
using kestrel::bench::Timing;
namespace layers = kestrel::layers;
namespace random = kestrel::random;

constexpr int kThreads = 2;

struct Workload {
  const char* name;            // "mlp": the --workload-child value and the "model" param
  std::int64_t batch;
  std::vector<std::int64_t> sample_shape;  // one input sample
  double training_gflop;       // per step: 3 x forward matmul/conv FLOPs (the reference table)
  std::int64_t params;         // the reference parameter count, checked against the model
};

const std::vector<Workload> kWorkloads = {
    {"mlp", 256, {784}, 0.822, 535'818},
    {"cnn", 128, {28, 28, 1}, 2.021, 225'034},
};

Json case_params(const Workload& w) { return {{"model", w.name}, {"batch", w.batch}, {"threads", kThreads}}; }

std::string label_of(const Workload& w) { return kestrel::bench::case_label("train_step", case_params(w)); }

// The reference models, with Keras's default initializers.
Sequential make_model(const Workload& w) {
  const std::string name = w.name;
  if (name == "mlp") {
    return Sequential({layers::Dense(512, {.activation = "relu"}), layers::Dense(256, {.activation = "relu"}),
                       layers::Dense(10)});
  }
  return Sequential({layers::Conv2D(32, {3, 3}, {.activation = "relu"}), layers::MaxPooling2D(),
                     layers::Conv2D(64, {3, 3}, {.activation = "relu"}), layers::MaxPooling2D(), layers::Flatten(),
                     layers::Dense(128, {.activation = "relu"}), layers::Dense(10)});
}

// Megabytes (2^20 bytes) of a "VmHWM:   123456 kB" line of /proc/self/status.
double status_mb(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;
  }
  return 0.0;
}

// Child mode: measures one workload in this (fresh) process and prints its record as JSON.
int run_child(const Harness& harness, const std::string& name) {
  const Workload* workload = nullptr;
  for (const Workload& w : kWorkloads) {
    if (name == w.name) workload = &w;
  }
  if (workload == nullptr) {
    std::cerr << "train_step_bench: unknown workload '" << name << "'\n";
    return 2;
  }
  const Workload& w = *workload;
  kestrel::set_num_threads(kThreads);
  const double base_rss_mb = status_mb("VmRSS");

  random::set_global_seed(0);
  std::vector<std::int64_t> x_shape = {w.batch};
  x_shape.insert(x_shape.end(), w.sample_shape.begin(), w.sample_shape.end());
  const Tensor x = random::normal(kestrel::Shape(x_shape), random::Key(0));
  const Tensor y = random::randint({w.batch}, random::Key(1), 0, 10);
  Sequential model = make_model(w);
  model.build(kestrel::Shape(x_shape));
  if (model.count_params() != w.params) {
    std::cerr << "train_step_bench: the " << w.name << " model has " << model.count_params()
              << " parameters, the reference " << w.params << "\n";
    return 1;
  }
  // No metrics: a step is zero-grad, forward, loss, backward and the optimizer update, as the peer's.
  model.compile({.optimizer = kestrel::optimizers::Adam({.learning_rate = 1e-3, .epsilon = 1e-8}),
                 .loss = kestrel::losses::SparseCategoricalCrossentropy({.from_logits = true})});

  Record record;
  record.name = "train_step";
  record.params = case_params(w);
  record.timing = kestrel::bench::time_calls([&] { model.train_on_batch(x, y); }, harness.options().warmup,
                                             harness.options().repeats);
  const double ms = record.timing.median_ms;
  record.figures = {{"gflops", kestrel::bench::gflops(w.training_gflop * 1e9, ms)},
                    {"samples_per_s", ms > 0 ? 1e3 * static_cast<double>(w.batch) / ms : 0.0},
                    {"ms_per_step", ms},
                    {"peak_rss_mb", status_mb("VmHWM")},
                    {"base_rss_mb", base_rss_mb}};
  std::cout << kestrel::bench::to_json(record).dump() << std::endl;
  return 0;
}

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs one workload in a child process of this program; its record, or nothing (with a note) on failure.
std::optional<Record> measure_in_child(Harness& harness, const Workload& w) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string command = shell_quote(self) + " --workload-child " + w.name + " --repeats " +
                              std::to_string(harness.options().repeats) + " --warmup " +
                              std::to_string(harness.options().warmup);
  std::FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  if (pipe != nullptr) {
    char chunk[4096];
    while (std::size_t n = std::fread(chunk, 1, sizeof chunk, pipe)) output.append(chunk, n);
  }
  const int status = pipe != nullptr ? pclose(pipe) : -1;
  if (status != 0) {
    const std::string why = status != -1 && WIFEXITED(status) ? "exited with " + std::to_string(WEXITSTATUS(status))
                                                              : "did not finish";
    harness.note(label_of(w) + " failed: its child process " + why + " (its error is above)");
    return std::nullopt;
  }
  try {
    return kestrel::bench::record_from_json(Json::parse(output));
  } catch (const nlohmann::json::exception& e) {
    harness.note(label_of(w) + " failed: the child printed no valid record (" + std::string(e.what()) + ")");
    return std::nullopt;
  }
}

const Record* find(const Harness& harness, const std::string& label, const std::string& source) {
  for (const Record& r : harness.records()) {
    if (r.source == source && r.label() == label) return &r;
  }
  return nullptr;
}

std::string fixed(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string cell(const std::string& text, std::size_t width) {
  return text.size() < width ? std::string(width - text.size(), ' ') + text : " " + text;
}

// The workloads side by side: step times, their ratio, throughput and each side's peak memory.
void print_table(const Harness& harness) {
  constexpr std::size_t kLabel = 40;
  auto row = [&](const std::vector<std::string>& cells) {
    constexpr std::size_t kWidths[] = {kLabel, 10, 10, 15, 10, 10, 10, 10};
    std::string line = cells[0] + std::string(cells[0].size() < kLabel ? kLabel - cells[0].size() : 1, ' ');
    for (std::size_t i = 1; i < cells.size(); ++i) line += cell(cells[i], kWidths[i]);
    std::cout << line << "\n";
  };
  std::cout << "\n";
  row({"", "kestrel", "torch", "kestrel/torch", "kestrel", "torch", "kestrel", "torch"});
  row({"case", "ms/step", "ms/step", "step time", "GFLOP/s", "GFLOP/s", "peak MB", "peak MB"});
  for (const Workload& w : kWorkloads) {
    const Record* ours = find(harness, label_of(w), "kestrel");
    if (ours == nullptr) continue;
    const Record* peer = find(harness, label_of(w), "torch");
    auto figure = [](const Record* r, const char* key, int decimals) {
      if (r == nullptr) return std::string("-");
      auto value = r->figure(key);
      return value ? fixed(*value, decimals) : std::string("-");
    };
    const std::string ratio = peer != nullptr && peer->timing.median_ms > 0
                                  ? fixed(ours->timing.median_ms / peer->timing.median_ms, 2) + "x"
                                  : "-";
    row({label_of(w), fixed(ours->timing.median_ms, 2), peer ? fixed(peer->timing.median_ms, 2) : "-", ratio,
         figure(ours, "gflops", 1), figure(peer, "gflops", 1), figure(ours, "peak_rss_mb", 0),
         figure(peer, "peak_rss_mb", 0)});
  }
  std::cout << "(step time below 1x: Kestrel's step is faster. Peak MB is each process's VmHWM; base_rss_mb in the\n"
               " JSON is the process before the model was made: for torch, the interpreter and PyTorch themselves.)\n";
}

// The eager-mode goal: the MLP step at least as fast as tuned PyTorch eager, judged on this run.
void report_goal(Harness& harness) {
  const std::string label = label_of(kWorkloads[0]);
  const Record* ours = find(harness, label, "kestrel");
  const Record* peer = find(harness, label, "torch");
  if (ours == nullptr || peer == nullptr) return;
  const double ratio = ours->timing.median_ms / peer->timing.median_ms;
  const std::string verdict = "eager goal (MLP step at least as fast as PyTorch eager): " +
                              std::string(ratio <= 1.0 ? "met" : "not met") + " [Kestrel " +
                              fixed(ours->timing.median_ms, 2) + " ms, PyTorch " + fixed(peer->timing.median_ms, 2) +
                              " ms: " + fixed(ratio, 2) + "x the time]";
  std::cout << "\n" << verdict << "\n";
  harness.note(verdict);
}

}  // namespace

int main(int argc, char** argv) {
  Harness harness("train_step_bench",
                  "End-to-end training steps (MLP, CNN) with Kestrel's eager train_on_batch beside PyTorch eager, "
                  "measured in the same run");
  std::string child;
  harness.cli()
      .add_option("--workload-child", child, "internal: measure this workload in this process and print its record")
      ->group("");  // hidden from --help
  if (auto exit_code = harness.parse(argc, argv)) return *exit_code;
  if (!child.empty()) {
    try {
      return run_child(harness, child);
    } catch (const std::exception& e) {
      std::cerr << "train_step_bench: " << child << ": " << e.what() << "\n";  // the parent notes the failure
      return 1;
    }
  }

  bool failed = false;
  for (const Workload& w : kWorkloads) {
    const std::string label = label_of(w);
    if (!harness.selected(label)) continue;
    auto record = measure_in_child(harness, w);
    failed = failed || !record;
    if (record) {
      std::cout << label << ": " << fixed(record->timing.median_ms, 2) << " ms/step (min "
                << fixed(record->timing.min_ms, 2) << ", p90 " << fixed(record->timing.p90_ms, 2) << "), "
                << fixed(*record->figure("gflops"), 1) << " GFLOP/s, " << fixed(*record->figure("samples_per_s"), 0)
                << " samples/s, peak RSS " << fixed(*record->figure("peak_rss_mb"), 0) << " MB" << std::endl;
      harness.add(*record);
    }
    // A fresh Python process per workload: both sides see the same machine load, and the peer's
    // peak memory is this workload's alone.
    harness.run_peer("train_step_peer.py", {"--threads", std::to_string(kThreads)},
                     kestrel::bench::exact_labels_regex({label}));
    if (const Record* peer = find(harness, label, "torch")) {
      std::cout << label << " [torch]: " << fixed(peer->timing.median_ms, 2) << " ms/step, peak RSS "
                << fixed(peer->figure("peak_rss_mb").value_or(0), 0) << " MB" << std::endl;
    }
  }

  harness.print_comparison(std::cout);
  print_table(harness);
  report_goal(harness);
  const int exit_code = harness.finish();
  return failed ? 1 : exit_code;
}
