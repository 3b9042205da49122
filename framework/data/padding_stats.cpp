#include "framework/data/padding_stats.h"

#include <cstdio>

namespace kestrel::data {

std::string PaddingReport::to_string() const {
  char efficiency_text[32];
  std::snprintf(efficiency_text, sizeof efficiency_text, "%.1f%%", 100.0 * efficiency());
  return std::to_string(distinct_shapes) + " distinct batch shape" + (distinct_shapes == 1 ? "" : "s") +
         ", padding efficiency " + efficiency_text + " over " + std::to_string(batches) + " batch" +
         (batches == 1 ? "" : "es");
}

void PaddingStats::record(const std::string& shape_signature, std::int64_t real_values, std::int64_t padded_values) {
  std::lock_guard lock(mutex_);
  shapes_.insert(shape_signature);
  ++batches_;
  real_ += real_values;
  padded_ += padded_values;
}

PaddingReport PaddingStats::report() const {
  std::set<std::string> shapes;
  PaddingReport out;
  merge_into(shapes, out);
  out.distinct_shapes = static_cast<std::int64_t>(shapes.size());
  return out;
}

void PaddingStats::merge_into(std::set<std::string>& shapes, PaddingReport& into) const {
  std::lock_guard lock(mutex_);
  shapes.insert(shapes_.begin(), shapes_.end());
  into.batches += batches_;
  into.real_values += real_;
  into.padded_values += padded_;
}

void PaddingStats::reset() {
  std::lock_guard lock(mutex_);
  shapes_.clear();
  batches_ = real_ = padded_ = 0;
}

}  // namespace kestrel::data
