#include "framework/callbacks/tensorboard.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "callbacks/event.pb.h"
#include "framework/core/error.h"
#include "framework/optimizers/sgd.h"
#include "tests/framework/callbacks/test_support.h"

namespace kestrel::callbacks {
namespace {

using kestrel::testing::compile_sgd;
using kestrel::testing::parse_records;
using kestrel::testing::read_file;
using kestrel::testing::ScratchDir;
using kestrel::testing::TinyModel;

// The single events file in dir.
std::string event_file(const std::filesystem::path& dir) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path().string());
  EXPECT_EQ(files.size(), 1u) << dir;
  return files.empty() ? std::string() : files.front();
}

// The file's events, framing checked by the test's own reader, messages parsed by protobuf.
std::vector<tensorboard::Event> read_events(const std::string& path) {
  std::vector<tensorboard::Event> out;
  for (const std::string& record : parse_records(read_file(path))) {
    EXPECT_TRUE(out.emplace_back().ParseFromString(record)) << "a record of " << path << " is no Event";
  }
  return out;
}

// "step tag value" per scalar, after the file_version event.
std::vector<std::string> scalars(const std::vector<tensorboard::Event>& events) {
  std::vector<std::string> out;
  for (std::size_t i = 1; i < events.size(); ++i) {
    EXPECT_TRUE(events[i].has_summary()) << "event " << i;
    for (const tensorboard::Summary::Value& value : events[i].summary().value()) {
      EXPECT_TRUE(value.has_simple_value()) << value.tag();
      char text[64];
      std::snprintf(text, sizeof(text), "%g", static_cast<double>(value.simple_value()));
      out.push_back(std::to_string(events[i].step()) + " " + value.tag() + " " + text);
    }
  }
  return out;
}

TEST(EventFileWriter, WritesFileVersionThenScalars) {
  ScratchDir dir;
  std::string path;
  {
    EventFileWriter writer(dir / "run");
    path = writer.path();
    writer.add_scalar("reward", 1.5, 10);
    writer.add_scalar("reward", -2.0, 0);
    writer.flush();
  }
  const std::string name = std::filesystem::path(path).filename().string();
  EXPECT_EQ(name.rfind("events.out.tfevents.", 0), 0u) << name;
  EXPECT_EQ(std::filesystem::path(path).parent_path(), dir.path() / "run");
  const std::vector<tensorboard::Event> events = read_events(path);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_FALSE(events[0].has_summary());
  EXPECT_GT(events[0].wall_time(), 1.5e9);  // seconds since 1970
  EXPECT_EQ(scalars(events), (std::vector<std::string>{"10 reward 1.5", "0 reward -2"}));
  // The file name carries the wall time of creation.
  const auto stamp = std::stoll(name.substr(std::string("events.out.tfevents.").size()));
  EXPECT_NEAR(static_cast<double>(stamp), events[0].wall_time(), 2.0);
}

// The bytes spelled out from TensorFlow's event.proto and summary.proto, not read with Kestrel's
// copy of them: Event{wall_time = 1 (fixed64), step = 2, file_version = 3, summary = 5},
// Summary{value = 1}, Value{tag = 1, simple_value = 2 (fixed32)}.
TEST(EventFileWriter, EventsHaveTensorFlowsFieldNumbers) {
  using namespace std::string_literals;
  ScratchDir dir;
  std::string path;
  {
    EventFileWriter writer(dir / "run");
    path = writer.path();
    writer.add_scalar("loss", 1.5, 300);
  }
  const std::vector<std::string> records = parse_records(read_file(path));
  ASSERT_EQ(records.size(), 2u);
  for (const std::string& record : records) {
    ASSERT_GT(record.size(), 9u);
    EXPECT_EQ(record[0], '\x09');  // wall_time, then its 8 bytes
    double wall_time = 0.0;
    std::memcpy(&wall_time, record.data() + 1, sizeof wall_time);
    EXPECT_GT(wall_time, 1.5e9);
  }
  EXPECT_EQ(records[0].substr(9), "\x1a\x0d"s + "brain.Event:2");
  const std::string value = "\x0a\x04"s + "loss" + "\x15\x00\x00\xc0\x3f"s;        // 1.5f
  EXPECT_EQ(records[1].substr(9), "\x10\xac\x02"s + "\x2a\x0d\x0a\x0b"s + value);  // step 300, summary
}

TEST(EventFileWriter, TwoWritersInOneDirectoryGetTwoFiles) {
  ScratchDir dir;
  EventFileWriter a(dir / "run");
  EventFileWriter b(dir / "run");
  EXPECT_NE(a.path(), b.path());
}

TEST(EventFileWriter, UnwritableDirectoryIsAnIOError) {
  EXPECT_THROW(EventFileWriter("/proc/kestrel-cannot-create"), IOError);
}

// Two epochs of fit, driven by hand: two batches each, with validation logs at the epoch end.
void run_fit(TensorBoard& tb, Model& model) {
  tb.set_model(&model);
  tb.on_train_begin({});
  for (int epoch = 0; epoch < 2; ++epoch) {
    tb.on_epoch_begin(epoch, {});
    tb.on_train_batch_end(0, {{"loss", 1.0 + epoch}});
    tb.on_train_batch_end(1, {{"loss", 0.5 + epoch}});
    tb.on_test_end({{"loss", 0.25}});
    tb.on_epoch_end(epoch, {{"loss", 0.75 + epoch}, {"accuracy", 0.5}, {"val_loss", 0.25}, {"val_accuracy", 0.625}});
  }
  tb.on_train_end({});
}

TEST(TensorBoard, WritesEpochLogsToTrainAndValidation) {
  ScratchDir dir;
  TinyModel model;
  compile_sgd(model, 0.5);
  TensorBoard tb({.log_dir = dir / "logs"});
  run_fit(tb, model);
  EXPECT_EQ(scalars(read_events(event_file(dir.path() / "logs/train"))),
            (std::vector<std::string>{"0 epoch_accuracy 0.5", "0 epoch_loss 0.75", "0 epoch_learning_rate 0.5",
                                      "1 epoch_accuracy 0.5", "1 epoch_loss 1.75", "1 epoch_learning_rate 0.5"}));
  EXPECT_EQ(scalars(read_events(event_file(dir.path() / "logs/validation"))),
            (std::vector<std::string>{"0 evaluation_loss_vs_iterations 0.25", "0 epoch_accuracy 0.625",
                                      "0 epoch_loss 0.25", "0 evaluation_loss_vs_iterations 0.25",
                                      "1 epoch_accuracy 0.625", "1 epoch_loss 0.25"}));
}

TEST(TensorBoard, BatchUpdatesUseTheGlobalBatchCount) {
  ScratchDir dir;
  TinyModel model;
  compile_sgd(model, 0.5);
  TensorBoard tb({.log_dir = dir / "logs", .update_freq = "batch"});
  run_fit(tb, model);
  std::vector<std::string> batch_scalars;
  for (const std::string& s : scalars(read_events(event_file(dir.path() / "logs/train")))) {
    if (s.find("batch_") != std::string::npos) batch_scalars.push_back(s);
  }
  EXPECT_EQ(batch_scalars,
            (std::vector<std::string>{"1 batch_loss 1", "2 batch_loss 0.5", "3 batch_loss 2", "4 batch_loss 1.5"}));

  TensorBoard every_second({.log_dir = dir / "logs2", .update_freq = std::int64_t{2}});
  run_fit(every_second, model);
  batch_scalars.clear();
  for (const std::string& s : scalars(read_events(event_file(dir.path() / "logs2/train")))) {
    if (s.find("batch_") != std::string::npos) batch_scalars.push_back(s);
  }
  EXPECT_EQ(batch_scalars, (std::vector<std::string>{"2 batch_loss 0.5", "4 batch_loss 1.5"}));
}

TEST(TensorBoard, WritesStepsPerSecondWhenAsked) {
  ScratchDir dir;
  TinyModel model;
  compile_sgd(model, 0.5);
  TensorBoard tb({.log_dir = dir / "logs", .write_steps_per_second = true});
  tb.set_model(&model);
  tb.on_train_begin({});
  tb.on_epoch_begin(0, {});
  tb.on_train_batch_end(0, {{"loss", 1.0}});
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  tb.on_epoch_end(0, {{"loss", 1.0}});
  tb.on_train_end({});
  const std::vector<tensorboard::Event> events = read_events(event_file(dir.path() / "logs/train"));
  ASSERT_EQ(events.size(), 4u);  // file_version, loss, learning_rate, steps_per_second
  ASSERT_EQ(events[3].summary().value_size(), 1);
  const tensorboard::Summary::Value& steps_per_second = events[3].summary().value(0);
  EXPECT_EQ(steps_per_second.tag(), "epoch_steps_per_second");
  EXPECT_GT(steps_per_second.simple_value(), 0.0f);
  EXPECT_LT(steps_per_second.simple_value(), 500.0f);  // one batch in at least 2 ms
}

TEST(TensorBoard, RejectsUnknownUpdateFrequencies) {
  EXPECT_THROW(TensorBoard({.update_freq = "step"}), ValueError);
  EXPECT_THROW(TensorBoard({.update_freq = std::int64_t{0}}), ValueError);
}

// Decodes the event files with Python's protobuf runtime, from a descriptor of TensorFlow's
// Event/Summary messages built in the script, and checks the CRCs with a pure-Python CRC-32C.
// The script prints "<dir> <step> <tag> <value>" per scalar, and fails on any mismatch —
// including bytes that protobuf would serialize differently.
constexpr const char* kPythonCheck = R"PY(
import os, struct, sys
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF

def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF

F = descriptor_pb2.FieldDescriptorProto
fdp = descriptor_pb2.FileDescriptorProto(name="kestrel_event_check.proto", package="check", syntax="proto3")
def field(msg, name, number, ftype, label=F.LABEL_OPTIONAL, type_name=None, oneof=None):
    f = msg.field.add(name=name, number=number, type=ftype, label=label)
    if type_name: f.type_name = type_name
    if oneof is not None: f.oneof_index = oneof
value = fdp.message_type.add(name="Value")
value.oneof_decl.add(name="value")
field(value, "tag", 1, F.TYPE_STRING)
field(value, "simple_value", 2, F.TYPE_FLOAT, oneof=0)
summary = fdp.message_type.add(name="Summary")
field(summary, "value", 1, F.TYPE_MESSAGE, F.LABEL_REPEATED, ".check.Value")
event = fdp.message_type.add(name="Event")
event.oneof_decl.add(name="what")
field(event, "wall_time", 1, F.TYPE_DOUBLE)
field(event, "step", 2, F.TYPE_INT64)
field(event, "file_version", 3, F.TYPE_STRING, oneof=0)
field(event, "summary", 5, F.TYPE_MESSAGE, type_name=".check.Summary", oneof=0)
pool = descriptor_pool.DescriptorPool()
pool.Add(fdp)
desc = pool.FindMessageTypeByName("check.Event")
if hasattr(message_factory, "GetMessageClass"):
    Event = message_factory.GetMessageClass(desc)
else:
    Event = message_factory.MessageFactory(pool).GetPrototype(desc)

for path in sys.argv[1:]:
    data = open(path, "rb").read()
    at, events = 0, []
    while at < len(data):
        (n,) = struct.unpack_from("<Q", data, at)
        assert struct.unpack_from("<I", data, at + 8)[0] == masked(data[at:at + 8]), "length crc"
        payload = data[at + 12:at + 12 + n]
        assert struct.unpack_from("<I", data, at + 12 + n)[0] == masked(payload), "data crc"
        ev = Event()
        ev.ParseFromString(payload)
        assert ev.SerializeToString() == payload, "bytes differ from protobuf's serialization"
        assert ev.wall_time > 1.5e9
        events.append(ev)
        at += 16 + n
    assert events[0].file_version == "brain.Event:2"
    run = os.path.basename(os.path.dirname(path))
    for ev in events[1:]:
        assert ev.WhichOneof("what") == "summary"
        for v in ev.summary.value:
            print(run, ev.step, v.tag, "%g" % v.simple_value)
)PY";

bool python_has_protobuf() { return std::system("/usr/bin/python3 -c 'import google.protobuf' >/dev/null 2>&1") == 0; }

TEST(TensorBoard, PythonProtobufReadsTheEvents) {
  if (!python_has_protobuf()) GTEST_SKIP() << "/usr/bin/python3 without google.protobuf (python3-protobuf)";
  ScratchDir dir;
  TinyModel model;
  compile_sgd(model, 0.5);
  TensorBoard tb({.log_dir = dir / "logs"});
  run_fit(tb, model);
  const std::string script = dir / "check.py";
  std::ofstream(script) << kPythonCheck;
  const std::string command = "/usr/bin/python3 " + script + " " + event_file(dir.path() / "logs/train") + " " +
                              event_file(dir.path() / "logs/validation") + " 2>&1";
  std::FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[256];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  ASSERT_EQ(status, 0) << output;
  EXPECT_EQ(output,
            "train 0 epoch_accuracy 0.5\ntrain 0 epoch_loss 0.75\ntrain 0 epoch_learning_rate 0.5\n"
            "train 1 epoch_accuracy 0.5\ntrain 1 epoch_loss 1.75\ntrain 1 epoch_learning_rate 0.5\n"
            "validation 0 evaluation_loss_vs_iterations 0.25\nvalidation 0 epoch_accuracy 0.625\n"
            "validation 0 epoch_loss 0.25\nvalidation 0 evaluation_loss_vs_iterations 0.25\n"
            "validation 1 epoch_accuracy 0.625\nvalidation 1 epoch_loss 0.25\n");
}

}  // namespace
}  // namespace kestrel::callbacks
