// Measuring cases in a fresh child process of the bench itself: each starts from a clean process, and
// the peak resident memory a child reports (VmHWM) belongs to its cases alone. A process's high-water
// mark never goes down, so a case measured after another in the same process would carry the other's
// peak.
//
//   // parent: re-runs this program with the child's flags (plus --repeats and --warmup)
//   std::optional<Record> r = measure_in_child(harness, label, {"--workload-child", "bert_tiny"});
//   // child: measures, then prints its record as one line of JSON on stdout (a child may print several,
//   // read by records_from_child)
//   print_child_record(record);
//
// The child shares the parent's stderr, so its errors and warnings show where the parent's do.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/harness.h"

namespace kestrel::bench {

/// A memory field of /proc/self/status ("VmHWM", the peak resident set; "VmRSS", the current one)
/// in MB (2^20 bytes); 0 when the field is missing.
double status_mb(const std::string& field);

/// Runs this program again with `args` followed by the harness's --repeats and --warmup, and reads
/// the records the child prints, one JSON object a line. On failure (a nonzero exit, a line that is
/// no record, no record at all) notes why under `what` and returns none. A `launcher` runs the child
/// through another program ({"mpirun", "-np", "2"}: the child is then every process it starts).
std::vector<Record> records_from_child(Harness& harness, const std::string& what, const std::vector<std::string>& args,
                                       const std::vector<std::string>& launcher = {});

/// As records_from_child, for a child that prints exactly one record.
std::optional<Record> measure_in_child(Harness& harness, const std::string& label,
                                       const std::vector<std::string>& args);

/// What a child prints: a record as one line of JSON on stdout.
void print_child_record(const Record& record);

}  // namespace kestrel::bench
