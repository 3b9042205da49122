// PaddingStats: what padding costs a pipeline — distinct batch shapes (each one a compile under
// jit_compile) and padding efficiency (real values / values after padding).
//
//   auto ds = lines.map(tokenize).padded_batch(64, {.pad_to_multiple_of = 32});
//   for (const auto& batch : ds) { ... }
//   data::PaddingReport r = ds.padding_stats();
//   r.distinct_shapes;   // 3
//   r.efficiency();      // 0.87
#pragma once

#include <cstdint>
#include <mutex>
#include <set>
#include <string>

namespace kestrel::data {

struct PaddingReport {
  std::int64_t batches = 0;
  std::int64_t distinct_shapes = 0;
  std::int64_t real_values = 0;    ///< values that came from elements
  std::int64_t padded_values = 0;  ///< values in the padded batches (real + padding)
  /// real / padded; 1 when nothing was padded.
  double efficiency() const {
    return padded_values == 0 ? 1.0 : static_cast<double>(real_values) / static_cast<double>(padded_values);
  }
  /// "3 distinct batch shapes, padding efficiency 87.1% over 120 batches"
  std::string to_string() const;
};

/// Thread-safe tally kept by each padding transform (prefetch may run it on another thread).
class PaddingStats {
 public:
  /// One batch: its shape signature ("input_ids:[64,96] label:[64]"), and its real and padded sizes.
  void record(const std::string& shape_signature, std::int64_t real_values, std::int64_t padded_values);
  PaddingReport report() const;
  /// Adds this tally into `into` (shapes are merged as a set).
  void merge_into(std::set<std::string>& shapes, PaddingReport& into) const;
  void reset();

 private:
  mutable std::mutex mutex_;
  std::set<std::string> shapes_;
  std::int64_t batches_ = 0;
  std::int64_t real_ = 0;
  std::int64_t padded_ = 0;
};

}  // namespace kestrel::data
