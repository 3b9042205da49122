// The one benchmark harness: every program in bench/ times its cases with it, so all of
// Kestrel's figures are taken and reported the same way.
//
//   int main(int argc, char** argv) {
//     bench::Harness harness("kernels_bench", "Kestrel's kernels beside PyTorch and NumPy");
//     if (auto exit_code = harness.parse(argc, argv)) return *exit_code;
//     harness.measure("matmul", {{"n", 1024}, {"threads", 2}}, [&] { ops::matmul(a, b); },
//                     [&](const bench::Timing& t) { return bench::Figures{{"gflops", bench::gflops(flops, t.median_ms)}}; });
//     harness.run_peer("kernels_peer.py", {"--matmul-sizes", "1024"});   // PyTorch/NumPy, same method
//     harness.print_comparison(std::cout);
//     return harness.finish();                                    // table on stdout, JSON to --json-out
//   }
//
// Method: `--warmup` untimed calls, then `--repeats` calls each timed on its own; a case
// reports the median (and min, p90) of those times, and its rates (GFLOP/s, GB/s) from the median.
// A bench that offers `--rounds N` measures each case and its peer N times, alternating, so that
// a burst of other work on the machine falls on one round of both sides rather than on one side
// only: each case is then reported by its median round, with every round's median beside it.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "programs/command_line.h"

namespace kestrel::bench {

/// Case parameters and JSON documents keep their insertion order, so tables and files read as written.
using Json = nlohmann::ordered_json;

struct Timing {
  double median_ms = 0;
  double min_ms = 0;
  double p90_ms = 0;  ///< nearest-rank 90th percentile
  int repeats = 0;
};

/// Derived rates of one case, in order; the first is the case's headline figure.
/// Keys name the unit: "gflops" (GFLOP/s), "gb_per_s" (GB/s), "samples_per_s", "ms_per_step";
/// "fma_peak_fraction" is GFLOP/s over the machine's FMA peak (bench/fma_peak.h), which rows show beside.
using Figures = std::vector<std::pair<std::string, double>>;

/// One measured case, from Kestrel or from a peer.
struct Record {
  std::string name;                ///< the case, e.g. "matmul"
  Json params = Json::object();    ///< what distinguishes it, e.g. {"n": 1024, "threads": 2}
  std::string source = "kestrel";  ///< who ran it: "kestrel", or a peer such as "torch" or "numpy"
  Timing timing;
  Figures figures;
  /// With several rounds (Harness::offer_rounds), each round's median in the order measured; the
  /// record itself is the median round's. Empty for a case measured once.
  std::vector<double> round_medians_ms;

  /// "matmul n=1024 threads=2": what --filter matches and the tables show.
  std::string label() const;
  std::optional<double> figure(const std::string& key) const;
};

/// "matmul n=1024 threads=2" for name "matmul" and params {"n": 1024, "threads": 2}.
std::string case_label(const std::string& name, const Json& params);

Json to_json(const Record& record);
/// Reads a record as to_json writes it (peers print the same layout); throws Json's exceptions.
Record record_from_json(const Json& json);

/// Calls fn `warmup` times untimed, then `repeats` times, timing each call.
Timing time_calls(const std::function<void()>& fn, int warmup, int repeats);
/// Median, min and nearest-rank p90 of per-call times in milliseconds.
Timing summarize(std::vector<double> times_ms);

/// value with `decimals` digits after the point ("12.35" for 12.3456, 2): the tables' numbers.
std::string fixed(double value, int decimals);
/// flops / time, in GFLOP/s.
double gflops(double flops, double ms);
/// bytes / time, in GB/s (1e9 bytes).
double gb_per_s(double bytes, double ms);
/// "GFLOP/s" for "gflops" and keys that start with it ("gflops_1_thread"), "GB/s" for "gb_per_s"; other
/// keys unchanged.
std::string figure_unit(const std::string& key);
/// text as one word for the shell: in single quotes, which keep the shell from reading anything
/// inside, with a quote itself written '\''.
std::string shell_quote(const std::string& text);
/// A regex matching exactly these labels, for Harness::run_peer's `only`.
std::string exact_labels_regex(const std::vector<std::string>& labels);

struct HarnessOptions {
  int repeats = 30;
  int warmup = 5;
  std::string json_out;                     ///< empty: no JSON file
  std::string filter;                       ///< ECMAScript regex searched in each case's label
  bool no_peer = false;                     ///< skip the peer scripts
  std::string python = "/usr/bin/python3";  ///< the interpreter that has Debian's python3-torch
  int rounds = 1;                           ///< see Harness::offer_rounds
};

/// What a peer script reported.
struct PeerRun {
  bool ran = false;  ///< the script ran and printed valid JSON
  std::vector<Record> records;
  Json environment = Json::object();  ///< versions, BLAS library, threads, as the peer saw them
};

class Harness {
 public:
  Harness(std::string program, std::string description);
  ~Harness();
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  /// The command line, for a program to add its own flags before parse().
  programs::CommandLine& cli() { return cli_; }
  /// Parses the flags; returns an exit code when the program should stop (--help, a bad flag).
  std::optional<int> parse(int argc, char** argv);
  const HarnessOptions& options() const { return options_; }
  /// Adds `--rounds` to the flags, for a bench that measures each case and its peer rounds() times,
  /// alternating. Call before parse().
  void offer_rounds();
  int rounds() const { return options_.rounds; }

  /// True when --filter is empty or matches label.
  bool selected(const std::string& label) const;
  /// Times fn and records it with figures(timing), unless --filter excludes the case. Prints the
  /// case's row as soon as it is measured. Returns the record; nothing when excluded or when fn
  /// threw (the error becomes a note and finish() returns 1).
  std::optional<Record> measure(const std::string& name, Json params, const std::function<void()>& fn,
                                const std::function<Figures(const Timing&)>& figures);
  /// Adds a record measured elsewhere (a peer's, a child process's). A record of a case that
  /// already has one from the same source is another round of it (see Record::round_medians_ms).
  void add(Record record);
  const std::vector<Record>& records() const { return records_; }

  /// Runs peers/<script> under the tuned peer environment with the harness's --repeats, --warmup
  /// and --filter plus extra_args, and adds the records it prints as JSON on stdout. `only`, a
  /// regex, narrows the peer further, so a bench can run it right after each group of its own
  /// cases and both sides see the same machine load. Failures become notes, never errors:
  /// Kestrel's figures are reported regardless.
  PeerRun run_peer(const std::string& script, const std::vector<std::string>& extra_args = {},
                   const std::string& only = "");
  /// The environment variables that put the peer in its best configuration on this machine.
  static std::vector<std::pair<std::string, std::string>> peer_environment();

  /// A remark printed after the tables and kept in the JSON ("notes").
  void note(std::string text);
  /// Each Kestrel case beside the same case from every peer source, on the headline figure, with
  /// Kestrel / best peer. Prints nothing when no peer reported.
  void print_comparison(std::ostream& out) const;
  /// Kestrel's figure divided by the best peer's for the case labelled `label`, if both exist.
  std::optional<double> ratio_to_best_peer(const std::string& label) const;

  /// Prints the notes, writes --json-out, returns the program's exit code.
  int finish();

 private:
  void print_row(const Record& record);
  Json document() const;
  // Every record enters here: a case measured again by the same source becomes a round of it.
  void keep(Record record);

  std::string program_;
  programs::CommandLine cli_;
  HarnessOptions options_;
  std::vector<Record> records_;              // one per case and source; the median round of several
  std::vector<std::vector<Record>> rounds_;  // every round of the cases measured more than once
  std::vector<std::string> notes_;
  std::optional<std::regex> filter_;
  int failures_ = 0;
  Json peers_ = Json::object();  // script name -> environment it reported
  bool header_printed_ = false;
  std::string peer_command_;  // the last peer command, without the per-group narrowing
};

}  // namespace kestrel::bench
