// LogCapture: what one Kestrel logger writes while a test runs.
//
//   LogCapture log("kestrel.jit");
//   model.fit(...);
//   EXPECT_TRUE(contains(log.text(), "compiled 'train_step'"));
#pragma once

#include <spdlog/sinks/ostream_sink.h>

#include <memory>
#include <sstream>
#include <string>
#include <string_view>

#include "framework/logging/logging.h"

namespace kestrel::testing {

class LogCapture {
 public:
  explicit LogCapture(std::string_view logger) : logger_(logging::get(logger)) {
    sink_ = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
    logger_->sinks().push_back(sink_);
  }
  ~LogCapture() { logger_->sinks().pop_back(); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::string text() {
    logger_->flush();
    return out_.str();
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> logger_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

}  // namespace kestrel::testing
