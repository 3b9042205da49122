#include "framework/callbacks/tensorboard.h"

#include <chrono>
#include <filesystem>

#include "callbacks/event.pb.h"
#include "framework/core/error.h"
#include "framework/io/host_name.h"
#include "framework/model/model.h"
#include "framework/optimizers/optimizer.h"

namespace kestrel::callbacks {
namespace {

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
  tensorboard::Event event;
  event.set_wall_time(wall_time());
  event.set_file_version("brain.Event:2");
  writer_.write(event.SerializeAsString());
  writer_.flush();
}

void EventFileWriter::add_scalar(const std::string& tag, double value, std::int64_t step) {
  tensorboard::Event event;
  event.set_wall_time(wall_time());
  event.set_step(step);
  tensorboard::Summary::Value& scalar = *event.mutable_summary()->add_value();
  scalar.set_tag(tag);
  scalar.set_simple_value(static_cast<float>(value));
  writer_.write(event.SerializeAsString());
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
