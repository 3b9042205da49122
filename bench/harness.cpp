#include "bench/harness.h"

#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string_view>
#include <thread>

namespace kestrel::bench {
namespace {

constexpr std::size_t kLabelWidth = 42;

std::string param_text(const Json& value) { return value.is_string() ? value.get<std::string>() : value.dump(); }

std::string format_number(double value) {
  char text[32];
  // Three significant figures are all the noise of a shared machine allows.
  if (std::fabs(value) >= 100) {
    std::snprintf(text, sizeof text, "%.0f", value);
  } else if (std::fabs(value) >= 10) {
    std::snprintf(text, sizeof text, "%.1f", value);
  } else {
    std::snprintf(text, sizeof text, "%.3g", value);
  }
  return text;
}

// Always leaves at least one space, so an overlong label never runs into the next column.
std::string pad_right(std::string text, std::size_t width) {
  text.append(text.size() < width ? width - text.size() : 1, ' ');
  return text;
}

std::string pad_left(const std::string& text, std::size_t width) {
  return text.size() < width ? std::string(width - text.size(), ' ') + text : text;
}

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

std::string utc_timestamp() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// The AVX extensions /proc/cpuinfo lists ("avx", "avx2", "avx512f", "avx512_bf16", ...), sorted:
// what a reader needs to place a figure, since one model name covers CPUs with and without AVX-512.
std::vector<std::string> cpu_avx_flags() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  std::vector<std::string> flags;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string word; words >> word;) {
      if (word.rfind("avx", 0) == 0) flags.push_back(word);
    }
    break;  // every core lists the same flags
  }
  std::sort(flags.begin(), flags.end());
  return flags;
}

bool cpu_has_avx512f() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

bool cpu_has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

}  // namespace

std::string case_label(const std::string& name, const Json& params) {
  std::string out = name;
  for (const auto& [key, value] : params.items()) out += " " + key + "=" + param_text(value);
  return out;
}

std::string Record::label() const { return case_label(name, params); }

std::optional<double> Record::figure(const std::string& key) const {
  for (const auto& [k, v] : figures) {
    if (k == key) return v;
  }
  return std::nullopt;
}

Json to_json(const Record& record) {
  Json figures = Json::object();
  for (const auto& [key, value] : record.figures) figures[key] = value;
  return Json{{"name", record.name},
              {"source", record.source},
              {"params", record.params},
              {"median_ms", record.timing.median_ms},
              {"min_ms", record.timing.min_ms},
              {"p90_ms", record.timing.p90_ms},
              {"repeats", record.timing.repeats},
              {"figures", figures},
              {"round_medians_ms", record.round_medians_ms}};
}

Record record_from_json(const Json& json) {
  Record record;
  record.name = json.at("name").get<std::string>();
  record.source = json.at("source").get<std::string>();
  record.params = json.value("params", Json::object());
  record.timing.median_ms = json.at("median_ms").get<double>();
  record.timing.min_ms = json.value("min_ms", record.timing.median_ms);
  record.timing.p90_ms = json.value("p90_ms", record.timing.median_ms);
  record.timing.repeats = json.value("repeats", 0);
  const Json figures = json.value("figures", Json::object());  // items() must not outlive it
  for (const auto& [key, value] : figures.items()) {
    record.figures.emplace_back(key, value.get<double>());
  }
  record.round_medians_ms = json.value("round_medians_ms", std::vector<double>{});
  return record;
}

Timing summarize(std::vector<double> times_ms) {
  Timing timing;
  timing.repeats = static_cast<int>(times_ms.size());
  if (times_ms.empty()) return timing;
  std::sort(times_ms.begin(), times_ms.end());
  const std::size_t n = times_ms.size();
  timing.median_ms = n % 2 == 1 ? times_ms[n / 2] : 0.5 * (times_ms[n / 2 - 1] + times_ms[n / 2]);
  timing.min_ms = times_ms.front();
  const auto rank = static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(n)));
  timing.p90_ms = times_ms[std::max<std::size_t>(rank, 1) - 1];
  return timing;
}

Timing time_calls(const std::function<void()>& fn, int warmup, int repeats) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> times_ms;
  times_ms.reserve(static_cast<std::size_t>(repeats));
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    fn();
    auto stop = std::chrono::steady_clock::now();
    times_ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
  }
  return summarize(std::move(times_ms));
}

std::string fixed(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

double gflops(double flops, double ms) { return ms > 0 ? flops / (ms * 1e6) : 0.0; }
double gb_per_s(double bytes, double ms) { return ms > 0 ? bytes / (ms * 1e6) : 0.0; }

std::string figure_unit(const std::string& key) {
  if (key.rfind("gflops", 0) == 0) return "GFLOP/s";  // "gflops", and the FMA peak's "gflops_1_thread"...
  if (key == "gb_per_s") return "GB/s";
  if (key == "samples_per_s") return "samples/s";
  if (key == "ms_per_step") return "ms/step";
  return key;
}

Harness::Harness(std::string program, std::string description)
    : program_(std::move(program)), cli_(program_, std::move(description)) {
  cli_.add_option("--repeats", options_.repeats, "timed calls per case; the median is reported").range(1, 1'000'000);
  cli_.add_option("--warmup", options_.warmup, "untimed calls before timing each case").range(0, 1'000'000);
  cli_.add_option("--json-out", options_.json_out, "write every record, the settings and notes to this JSON file");
  cli_.add_option("--filter", options_.filter, "run only cases whose label matches this regex, e.g. 'matmul.*n=1024'");
  cli_.add_flag("--no-peer", options_.no_peer, "do not run the PyTorch/NumPy peer scripts");
  cli_.add_option("--python", options_.python, "the Python interpreter for the peer scripts");
}

void Harness::offer_rounds() {
  cli_.add_option("--rounds", options_.rounds,
                  "measure each case and its peer this many times, alternating, and report each case's median "
                  "round: a burst of other work then falls on both sides")
      .range(1, 1000);
}

Harness::~Harness() = default;

std::optional<int> Harness::parse(int argc, char** argv) {
  if (auto exit_code = cli_.parse(argc, argv)) return exit_code;
  if (!options_.filter.empty()) {
    try {
      filter_.emplace(options_.filter, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      std::cerr << program_ << ": --filter '" << options_.filter << "' is not a valid regex: " << e.what() << "\n";
      return 2;
    }
  }
  return std::nullopt;
}

bool Harness::selected(const std::string& label) const { return !filter_ || std::regex_search(label, *filter_); }

std::optional<Record> Harness::measure(const std::string& name, Json params, const std::function<void()>& fn,
                                       const std::function<Figures(const Timing&)>& figures) {
  Record record;
  record.name = name;
  record.params = std::move(params);
  if (!selected(record.label())) return std::nullopt;
  try {
    record.timing = time_calls(fn, options_.warmup, options_.repeats);
  } catch (const std::exception& e) {
    // One broken case must not hide the others' figures; the exit code still reports it.
    ++failures_;
    note(record.label() + " failed: " + e.what());
    std::cout << pad_right(record.label(), kLabelWidth) << "  FAILED: " << e.what() << std::endl;
    return std::nullopt;
  }
  record.figures = figures(record.timing);
  print_row(record);
  keep(record);
  return record;
}

void Harness::add(Record record) { keep(std::move(record)); }

void Harness::keep(Record record) {
  const auto same_case = [&record](const Record& r) {
    return r.source == record.source && r.label() == record.label();
  };
  const auto kept = std::find_if(records_.begin(), records_.end(), same_case);
  if (kept == records_.end()) {
    records_.push_back(std::move(record));
    return;
  }
  auto rounds = std::find_if(rounds_.begin(), rounds_.end(),
                             [&](const std::vector<Record>& measured) { return same_case(measured.front()); });
  if (rounds == rounds_.end()) {
    rounds_.push_back({*kept});
    rounds = std::prev(rounds_.end());
  }
  rounds->push_back(std::move(record));
  // The median round (the lower of the middle two for an even count) stands for the case.
  std::vector<const Record*> by_time;
  for (const Record& r : *rounds) by_time.push_back(&r);
  std::sort(by_time.begin(), by_time.end(),
            [](const Record* a, const Record* b) { return a->timing.median_ms < b->timing.median_ms; });
  *kept = *by_time[(by_time.size() - 1) / 2];
  kept->round_medians_ms.clear();
  for (const Record& r : *rounds) kept->round_medians_ms.push_back(r.timing.median_ms);
}

void Harness::print_row(const Record& record) {
  if (!header_printed_) {
    std::cout << pad_right("case", kLabelWidth) << pad_left("median ms", 11) << pad_left("min ms", 10)
              << pad_left("p90 ms", 10) << "  figure\n";
    header_printed_ = true;
  }
  std::string figure;
  if (!record.figures.empty()) {
    figure = format_number(record.figures.front().second) + " " + figure_unit(record.figures.front().first);
  }
  if (auto share = record.figure("fma_peak_fraction")) figure += " (" + fixed(100 * *share, 0) + "% of FMA peak)";
  // Flushed per row: a long run shows progress as it goes.
  std::cout << pad_right(record.label(), kLabelWidth) << pad_left(format_number(record.timing.median_ms), 11)
            << pad_left(format_number(record.timing.min_ms), 10) << pad_left(format_number(record.timing.p90_ms), 10)
            << "  " << figure << std::endl;
}

std::vector<std::pair<std::string, std::string>> Harness::peer_environment() {
  std::vector<std::pair<std::string, std::string>> env = {
      {"OMP_NUM_THREADS", "2"}, {"OPENBLAS_NUM_THREADS", "2"}, {"OMP_WAIT_POLICY", "PASSIVE"}};
  // Debian's OpenBLAS does not recognise AVX-512 CPUs and falls back to SSE3 kernels, so its
  // SkylakeX kernels are forced there; forced elsewhere they die of an illegal instruction, and on
  // AVX2 CPUs OpenBLAS picks the right kernels by itself.
  if (cpu_has_avx512f()) env.emplace_back("OPENBLAS_CORETYPE", "SkylakeX");
  return env;
}

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string exact_labels_regex(const std::vector<std::string>& labels) {
  std::string alternatives;
  for (const std::string& label : labels) {
    if (!alternatives.empty()) alternatives += "|";
    for (char c : label) {
      if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) alternatives += '\\';
      alternatives += c;
    }
  }
  return "^(?:" + alternatives + ")$";
}

PeerRun Harness::run_peer(const std::string& script, const std::vector<std::string>& extra_args,
                          const std::string& only) {
  PeerRun run;
  if (options_.no_peer) return run;
  const std::string path = std::string(KESTREL_BENCH_PEERS_DIR) + "/" + script;
  std::string command;
  for (const auto& [key, value] : peer_environment()) command += key + "=" + shell_quote(value) + " ";
  command += shell_quote(options_.python) + " " + shell_quote(path);
  std::vector<std::string> args = {"--repeats", std::to_string(options_.repeats), "--warmup",
                                   std::to_string(options_.warmup)};
  if (!options_.filter.empty()) args.insert(args.end(), {"--filter", options_.filter});
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  for (const std::string& arg : args) command += " " + shell_quote(arg);
  peer_command_ = command;
  // The peer requires every --filter it is given to match.
  if (!only.empty()) command += " --filter " + shell_quote(only);

  std::FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    note("peer " + script + " not run: could not start " + options_.python);
    return run;
  }
  std::string output;
  char chunk[4096];
  while (std::size_t n = std::fread(chunk, 1, sizeof chunk, pipe)) output.append(chunk, n);
  const int status = pclose(pipe);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    note("peer " + script + " failed (exit " + std::to_string(code) + ")" +
         (code == 127 ? ": " + options_.python + " not found; bash .ci/setup --bench installs the peers" : "") +
         "; Kestrel's figures stand alone");
    return run;
  }
  try {
    Json reply = Json::parse(output);
    for (const Json& item : reply.value("records", Json::array())) run.records.push_back(record_from_json(item));
    run.environment = reply.value("environment", Json::object());
    for (const Json& text : reply.value("notes", Json::array())) note("peer: " + text.get<std::string>());
  } catch (const nlohmann::json::exception& e) {
    note("peer " + script + " printed no valid JSON (" + std::string(e.what()) + ")");
    return run;
  }
  run.ran = true;
  peers_[script] = run.environment;
  for (const Record& record : run.records) keep(record);
  return run;
}

void Harness::note(std::string text) {
  // A peer run per group of cases would otherwise repeat the same remark once per group.
  if (std::find(notes_.begin(), notes_.end(), text) == notes_.end()) notes_.push_back(std::move(text));
}

std::optional<double> Harness::ratio_to_best_peer(const std::string& label) const {
  const Record* ours = nullptr;
  for (const Record& r : records_) {
    if (r.source == "kestrel" && r.label() == label) ours = &r;
  }
  if (ours == nullptr || ours->figures.empty()) return std::nullopt;
  const auto& [key, value] = ours->figures.front();
  std::optional<double> best;
  for (const Record& r : records_) {
    if (r.source == "kestrel" || r.label() != label) continue;
    if (auto peer = r.figure(key); peer && (!best || *peer > *best)) best = peer;
  }
  if (!best || *best <= 0) return std::nullopt;
  return value / *best;
}

void Harness::print_comparison(std::ostream& out) const {
  std::vector<std::string> sources;
  for (const Record& r : records_) {
    if (r.source != "kestrel" && std::find(sources.begin(), sources.end(), r.source) == sources.end()) {
      sources.push_back(r.source);
    }
  }
  if (sources.empty()) return;
  constexpr std::size_t kColumn = 10;
  out << "\npeer, run after each group of Kestrel's cases on just those cases:\n  " << peer_command_ << "\n";
  out << "\n" << pad_right("case", kLabelWidth) << pad_right("unit", 10) << pad_left("kestrel", kColumn);
  for (const std::string& source : sources) out << pad_left(source, kColumn);
  out << pad_left("kestrel/best", 14) << "\n";
  for (const Record& ours : records_) {
    if (ours.source != "kestrel" || ours.figures.empty()) continue;
    const auto& [key, value] = ours.figures.front();
    out << pad_right(ours.label(), kLabelWidth) << pad_right(figure_unit(key), 10)
        << pad_left(format_number(value), kColumn);
    for (const std::string& source : sources) {
      std::string cell = "-";
      for (const Record& r : records_) {
        if (r.source != source || r.label() != ours.label()) continue;
        if (auto figure = r.figure(key)) cell = format_number(*figure);
      }
      out << pad_left(cell, kColumn);
    }
    auto ratio = ratio_to_best_peer(ours.label());
    char ratio_text[16] = "-";
    if (ratio) std::snprintf(ratio_text, sizeof ratio_text, "%.0f%%", 100 * *ratio);
    out << pad_left(ratio_text, 14) << "\n";
  }
  out.flush();
}

Json Harness::document() const {
  Json records = Json::array();
  for (const Record& r : records_) records.push_back(to_json(r));
  return Json{{"program", program_},
              {"kestrel_version", KESTREL_VERSION},
              {"timestamp", utc_timestamp()},
              {"machine",
               {{"cpu", cpu_model()},
                {"logical_cores", std::thread::hardware_concurrency()},
                {"avx2", cpu_has_avx2()},
                {"avx512f", cpu_has_avx512f()},
                {"avx_flags", cpu_avx_flags()}}},
              {"settings",
               {{"repeats", options_.repeats},
                {"warmup", options_.warmup},
                {"rounds", options_.rounds},
                {"filter", options_.filter}}},
              {"records", records},
              {"peers", peers_},
              {"peer_command", peer_command_},
              {"notes", notes_}};
}

int Harness::finish() {
  if (!notes_.empty()) {
    std::cout << "\nnotes:\n";
    for (const std::string& text : notes_) std::cout << "  - " << text << "\n";
  }
  if (!options_.json_out.empty()) {
    std::ofstream file(options_.json_out);
    file << document().dump(2) << "\n";
    if (!file) {
      std::cerr << program_ << ": cannot write " << options_.json_out << "\n";
      return 1;
    }
    std::cout << "\nwrote " << options_.json_out << "\n";
  }
  std::cout.flush();
  return failures_ > 0 ? 1 : 0;
}

}  // namespace kestrel::bench
