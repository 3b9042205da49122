#include "framework/callbacks/tensorboard.h"

#include <chrono>
#include <filesystem>

#include "framework/core/error.h"
#include "framework/io/host_name.h"
#include "framework/io/protobuf_wire.h"
#include "framework/model/model.h"
#include "framework/optimizers/optimizer.h"

namespace kestrel::callbacks {
namespace {

// Field numbers of tensorflow/core/util/event.proto and framework/summary.proto.
constexpr int kEventWallTime = 1;
constexpr int kEventStep = 2;
constexpr int kEventFileVersion = 3;
constexpr int kEventSummary = 5;
constexpr int kSummaryValue = 1;
constexpr int kValueTag = 1;
constexpr int kValueSimpleValue = 2;

double wall_time() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

double steady_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// "events.out.tfevents.<unix time>.<host>", with ".1", ".2", ... when a writer in the same second
// already took the name (TensorBoard reads every file whose name holds "tfevents").
std::string new_event_file(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw IOError("TensorBoard: cannot create directory '" + dir + "': " + ec.message());
  const std::string stamp = std::to_string(static_cast<std::int64_t>(wall_time()));
  const std::string base = (fs::path(dir) / ("events.out.tfevents." + stamp + "." + io::host_name())).string();
  std::string path = base;
  for (int n = 1; fs::exists(path, ec); ++n) path = base + "." + std::to_string(n);
  return path;
}

// proto3 leaves out a zero step, as TensorFlow's writer does; the value is in a oneof, so it is
// always written.
std::string encode_event(double time, std::int64_t step, const io::ProtoWriter* summary,
                         std::string_view file_version) {
  io::ProtoWriter event;
  event.add_double(kEventWallTime, time);
  if (step != 0) event.add_int64(kEventStep, step);
  if (!file_version.empty()) event.add_string(kEventFileVersion, file_version);
  if (summary != nullptr) event.add_message(kEventSummary, *summary);
  return event.release();
}

std::int64_t parse_update_freq(const std::variant<std::string, std::int64_t>& freq) {
  if (const auto* n = std::get_if<std::int64_t>(&freq)) {
    if (*n <= 0) {
      throw ValueError("TensorBoard: update_freq must be \"epoch\", \"batch\" or a number of batches > 0, got " +
                       std::to_string(*n));
    }
    return *n;
  }
  const std::string& s = std::get<std::string>(freq);
  if (s == "epoch") return 0;
  if (s == "batch") return 1;
  throw ValueError("TensorBoard: update_freq must be \"epoch\", \"batch\" or a number of batches, got '" + s + "'");
}

}  // namespace

EventFileWriter::EventFileWriter(const std::string& dir) : writer_(new_event_file(dir)) {
  writer_.write(encode_event(wall_time(), 0, nullptr, "brain.Event:2"));
  writer_.flush();
}

void EventFileWriter::add_scalar(const std::string& tag, double value, std::int64_t step) {
  io::ProtoWriter summary_value;
  summary_value.add_string(kValueTag, tag).add_float(kValueSimpleValue, static_cast<float>(value));
  io::ProtoWriter summary;
  summary.add_message(kSummaryValue, summary_value);
  writer_.write(encode_event(wall_time(), step, &summary, {}));
}

TensorBoard::TensorBoard(TensorBoardOptions options)
    : options_(std::move(options)), batch_every_(parse_update_freq(options_.update_freq)) {}

EventFileWriter& TensorBoard::train_writer() {
  if (!train_) train_ = std::make_shared<EventFileWriter>((std::filesystem::path(options_.log_dir) / "train").string());
  return *train_;
}

EventFileWriter& TensorBoard::validation_writer() {
  if (!validation_) {
    validation_ = std::make_shared<EventFileWriter>((std::filesystem::path(options_.log_dir) / "validation").string());
  }
  return *validation_;
}

void TensorBoard::close_writers() {
  if (train_) train_->close();
  if (validation_) validation_->close();
  train_.reset();
  validation_.reset();
}

void TensorBoard::on_train_begin(const Logs& logs) {
  global_train_batch_ = 0;
  train_writer();
}

void TensorBoard::on_train_end(const Logs& logs) { close_writers(); }

void TensorBoard::on_epoch_begin(int epoch, const Logs& logs) {
  epoch_batches_ = 0;
  epoch_start_ = steady_seconds();
}

void TensorBoard::on_train_batch_end(std::int64_t batch, const Logs& logs) {
  ++global_train_batch_;
  ++epoch_batches_;
  if (batch_every_ == 0 || global_train_batch_ % batch_every_ != 0) return;
  EventFileWriter& writer = train_writer();
  for (const auto& [name, value] : logs) writer.add_scalar("batch_" + name, value, global_train_batch_);
}

void TensorBoard::on_epoch_end(int epoch, const Logs& logs) {
  EventFileWriter& train = train_writer();
  bool any_validation = false;
  for (const auto& [name, value] : logs) {
    if (name.starts_with("val_")) {
      any_validation = true;
    } else {
      train.add_scalar("epoch_" + name, value, epoch);
    }
  }
  if (logs.find("learning_rate") == logs.end()) {
    if (optimizers::Optimizer* optimizer = model().optimizer()) {
      train.add_scalar("epoch_learning_rate", optimizer->learning_rate(), epoch);
    }
  }
  if (options_.write_steps_per_second) {
    const double elapsed = steady_seconds() - epoch_start_;
    if (elapsed > 0.0) train.add_scalar("epoch_steps_per_second", static_cast<double>(epoch_batches_) / elapsed, epoch);
  }
  train.flush();
  if (!any_validation) return;
  EventFileWriter& validation = validation_writer();
  for (const auto& [name, value] : logs) {
    if (name.starts_with("val_")) validation.add_scalar("epoch_" + name.substr(4), value, epoch);
  }
  validation.flush();
}

void TensorBoard::on_test_end(const Logs& logs) {
  optimizers::Optimizer* optimizer = model().optimizer();
  if (optimizer == nullptr || logs.empty()) return;
  EventFileWriter& validation = validation_writer();
  for (const auto& [name, value] : logs) {
    validation.add_scalar("evaluation_" + name + "_vs_iterations", value, optimizer->iterations());
  }
  validation.flush();
}

}  // namespace kestrel::callbacks
