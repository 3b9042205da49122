#include "framework/callbacks/backup_and_restore.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/core/random.h"
#include "framework/distribute/distribution.h"
#include "framework/logging/logging.h"
#include "framework/model/model.h"
#include "framework/saving/weights_file.h"

namespace kestrel::callbacks {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr std::string_view kFormat = "kestrel.backup_and_restore";
constexpr int kVersion = 1;
constexpr std::string_view kPrefix = "backup-";
// Names the backup in force; replaced by a rename, so it always names a whole backup.
constexpr const char* kPointer = "checkpoint";
constexpr const char* kWeights = "model.weights.h5";
constexpr const char* kState = "training_state.json";

// The number of a backup directory ("backup-12" -> 12), or -1 for anything else.
std::int64_t number_of(const fs::path& entry) {
  const std::string name = entry.filename().string();
  if (name.rfind(kPrefix, 0) != 0 || name.size() == kPrefix.size()) return -1;
  std::int64_t n = 0;
  for (char c : name.substr(kPrefix.size())) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

// Puts a file's data, or a directory's entries, on the disk (fsync): a rename is in force after a
// crash of the machine only once what it names and the directory it is in have reached the disk.
void sync_to_disk(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw IOError("BackupAndRestore: cannot sync '" + path.string() + "' to disk: " + why);
  }
  ::close(fd);
}

// Replaces `path` with `text` by writing a temporary file, syncing it and renaming it over.
void write_atomically(const fs::path& path, const std::string& text) {
  const fs::path temporary = fs::path(path).concat(".tmp");
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw IOError("BackupAndRestore: cannot write '" + temporary.string() + "'");
  }
  sync_to_disk(temporary);
  std::error_code ec;
  fs::rename(temporary, path, ec);
  if (ec)
    throw IOError("BackupAndRestore: cannot rename '" + temporary.string() + "' to '" + path.string() +
                  "': " + ec.message());
}

// A tensor's bytes as hex: exact for every dtype and value (JSON numbers have no NaN or Inf, and
// no int64 beyond 2^53).
std::string hex_of(const Tensor& t) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  const auto* bytes = static_cast<const unsigned char*>(t.raw_data());
  for (std::size_t i = 0; i < t.nbytes(); ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 15];
  }
  return out;
}

// A metric variable's saved bytes as a tensor of its spec.
Tensor tensor_of(const std::string& hex, const TensorSpec& spec, const std::string& where) {
  Tensor t = Tensor::zeros(spec.shape, spec.dtype);
  if (hex.size() != 2 * t.nbytes()) {
    throw IOError("BackupAndRestore: " + where + " holds " + std::to_string(hex.size() / 2) + " bytes for " +
                  spec.to_string() + "; the backup was written for another model");
  }
  const auto digit = [&](char c) -> unsigned {
    if (c >= '0' && c <= '9') return static_cast<unsigned>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<unsigned>(c - 'a' + 10);
    throw IOError("BackupAndRestore: " + where + " is not hex");
  };
  auto* bytes = static_cast<unsigned char*>(t.buffer()->data());
  for (std::size_t i = 0; i < t.nbytes(); ++i)
    bytes[i] = static_cast<unsigned char>(digit(hex[2 * i]) << 4 | digit(hex[2 * i + 1]));
  return t;
}

}  // namespace

BackupAndRestore::BackupAndRestore(std::filesystem::path backup_dir, BackupAndRestoreOptions options)
    : dir_(std::move(backup_dir)), options_(std::move(options)), schedule_(options_.save_freq, "BackupAndRestore") {
  if (dir_.empty()) {
    throw ValueError(
        "BackupAndRestore: backup_dir is empty; give a directory every worker can read and the chief write");
  }
}

bool BackupAndRestore::writes() const {
  const distribute::Distribution* distribution = model().distribution();
  return distribution == nullptr || distribution->is_chief();
}

std::optional<fs::path> BackupAndRestore::latest_backup() const {
  std::ifstream in(dir_ / kPointer);
  std::string name;
  if (!in || !std::getline(in, name) || name.empty()) return std::nullopt;
  const fs::path backup = dir_ / name;
  if (number_of(backup) < 0 || !fs::is_directory(backup)) {
    throw IOError("BackupAndRestore: '" + (dir_ / kPointer).string() + "' names '" + name +
                  "', which is not a backup in that directory; remove the directory to start afresh");
  }
  return backup;
}

void BackupAndRestore::on_train_begin(const Logs&) {
  if (!model().built()) {
    // As Keras: the weights a backup restores need their variables before the first step.
    throw ValueError("BackupAndRestore: model '" + model().name() +
                     "' is not built; build it before fit (model.build(input_shape), or call it on a batch once) so "
                     "that a backup can be restored into its weights");
  }
  restore_metrics_in_epoch_.reset();
  const std::optional<fs::path> backup = latest_backup();
  // Every worker must restore the same backup (a backup_dir not shared, or not yet seen alike,
  // would have them train apart): they compare what they found before any restores.
  if (const distribute::Distribution* distribution = model().distribution()) {
    distribution->check_workers_agree("the backups to restore in '" + dir_.string() + "'",
                                      backup ? backup->filename().string() : std::string("none"));
  }
  backups_ = backup ? number_of(*backup) : 0;
  if (backup) restore(*backup);
}

void BackupAndRestore::restore(const fs::path& backup) {
  const fs::path state_path = backup / kState;
  Json state;
  try {
    std::ifstream in(state_path);
    if (!in) throw IOError("cannot open it");
    state = Json::parse(in);
  } catch (const std::exception& e) {
    throw IOError("BackupAndRestore: cannot read '" + state_path.string() + "': " + e.what() +
                  "; remove the backup directory to start afresh");
  }
  if (state.value("format", "") != kFormat || state.value("version", 0) != kVersion) {
    throw IOError("BackupAndRestore: '" + state_path.string() + "' is not a Kestrel backup (format " +
                  std::string(kFormat) + " version " + std::to_string(kVersion) + ")");
  }
  // Everything read before anything changes, so a damaged state file changes nothing.
  int epoch = 0;
  std::int64_t step = 0;
  random::GlobalStreamState stream;
  std::vector<Tensor> metrics;
  try {
    epoch = state.at("epoch").get<int>();
    step = state.at("step").get<std::int64_t>();
    stream = {.base = state.at("random").at("base").get<std::uint64_t>(),
              .drawn = state.at("random").at("drawn").get<std::uint64_t>()};
    if (step > 0) {
      // The epoch's metrics so far, for when fit begins that epoch again.
      const std::vector<Variable> variables = model().metrics_variables();
      const Json& saved = state.at("metrics");
      if (saved.size() != variables.size()) {
        throw IOError("BackupAndRestore: '" + state_path.string() + "' holds " + std::to_string(saved.size()) +
                      " metric variables but model '" + model().name() + "' has " + std::to_string(variables.size()) +
                      "; the backup was written for another model or compile()");
      }
      for (std::size_t i = 0; i < variables.size(); ++i) {
        metrics.push_back(tensor_of(saved[i].at("bytes").get<std::string>(), variables[i].value().spec(),
                                    state_path.string() + "'s metric " + variables[i].name()));
      }
    }
  } catch (const Json::exception& e) {
    throw IOError("BackupAndRestore: '" + state_path.string() + "' is damaged (" + e.what() +
                  "); remove the backup directory to start afresh");
  }
  model().load_weights((backup / kWeights).string());
  random::restore_global_stream(stream);
  if (step > 0) {
    restored_metrics_ = std::move(metrics);
    restore_metrics_in_epoch_ = epoch;
    schedule_.resume_at(step);
  }
  model().resume_training_at(epoch, step);
  logging::get("kestrel.callbacks")
      ->info("BackupAndRestore: restored '{}': training continues at epoch {}{}", backup.string(), epoch + 1,
             step > 0 ? ", after its first " + std::to_string(step) + " steps" : "");
}

void BackupAndRestore::on_epoch_begin(int epoch, const Logs&) {
  epoch_ = epoch;
  if (restore_metrics_in_epoch_ != epoch) return;
  const std::vector<Variable> variables = model().metrics_variables();
  for (std::size_t i = 0; i < variables.size(); ++i) variables[i].assign(restored_metrics_[i]);
  restore_metrics_in_epoch_.reset();
  restored_metrics_.clear();
}

void BackupAndRestore::on_train_batch_end(std::int64_t batch, const Logs&) {
  if (schedule_.due_after_batch(batch)) back_up(epoch_, batch + 1);
}

void BackupAndRestore::on_epoch_end(int epoch, const Logs&) {
  if (schedule_.every_epoch()) back_up(epoch + 1, 0);
}

void BackupAndRestore::on_train_end(const Logs&) {
  if (!options_.delete_checkpoint) return;
  if (writes()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    if (ec) {
      logging::get("kestrel.callbacks")
          ->warn("BackupAndRestore: could not remove '{}': {}", dir_.string(), ec.message());
    }
  }
  // No worker goes on (to another fit, which would restore) before the backup is gone.
  if (const distribute::Distribution* distribution = model().distribution()) {
    distribution->wait_for_workers("BackupAndRestore: removing '" + dir_.string() + "'");
  }
}

void BackupAndRestore::back_up(int epoch, std::int64_t step) {
  if (!writes()) return;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw IOError("BackupAndRestore: cannot create '" + dir_.string() + "': " + ec.message());
  const std::string name = std::string(kPrefix) + std::to_string(++backups_);
  const fs::path staging = dir_ / (name + ".tmp");
  fs::remove_all(staging, ec);
  fs::create_directory(staging, ec);
  if (ec) throw IOError("BackupAndRestore: cannot create '" + staging.string() + "': " + ec.message());

  // The chief alone writes: no waiting for the other workers (Model::save_weights would).
  saving::save_weights(model(), (staging / kWeights).string());
  sync_to_disk(staging / kWeights);
  const random::GlobalStreamState stream = random::global_stream_state();
  Json state = {{"format", kFormat},
                {"version", kVersion},
                {"epoch", epoch},
                {"step", step},
                {"random", {{"base", stream.base}, {"drawn", stream.drawn}}},
                {"metrics", Json::array()}};
  if (step > 0) {
    for (const Variable& v : model().metrics_variables()) {
      state["metrics"].push_back({{"name", v.name()}, {"bytes", hex_of(v.value())}});
    }
  }
  write_atomically(staging / kState, state.dump(1));
  // In force only once whole: the directory is renamed into place, then named in the pointer.
  const fs::path backup = dir_ / name;
  fs::remove_all(backup, ec);
  sync_to_disk(staging);
  fs::rename(staging, backup, ec);
  if (ec) throw IOError("BackupAndRestore: cannot rename '" + staging.string() + "': " + ec.message());
  sync_to_disk(dir_);  // the rename, before the pointer names it
  write_atomically(dir_ / kPointer, name + "\n");
  sync_to_disk(dir_);  // the pointer's rename, before the previous backup goes
  for (const fs::directory_entry& entry : fs::directory_iterator(dir_)) {
    const bool stale = entry.path() != backup && (number_of(entry.path()) >= 0 || entry.path().extension() == ".tmp");
    if (stale && entry.path().filename() != fs::path(kPointer).concat(".tmp")) fs::remove_all(entry.path(), ec);
  }
}

}  // namespace kestrel::callbacks
