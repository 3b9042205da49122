// kestrel-records: look inside TFRecord files of tf.train.Examples, and write them from JSON lines.
//
//   kestrel-records inspect train.tfrecord.gz            # one JSON line per Example (compression detected)
//   kestrel-records inspect events.tfevents --raw        # records that are not Examples: one JSON string each
//   kestrel-records from-jsonl train.jsonl train.tfrecord --compression gzip
//
// The JSON format (datasets/tfrecord/example_json.h), one Example per line:
//   {"input_ids":{"int64_list":[101,102]},"score":{"float_list":[0.5]},"text":{"bytes_list":["hi",{"base64":"/wAB"}]}}
// Bytes are strings when they are valid UTF-8, else {"base64": "..."}; NaN and infinities are the
// strings "NaN", "Infinity", "-Infinity". from-jsonl reads exactly what inspect prints, skipping
// blank lines. On an error the tool names the file (and the line or record offset) on stderr and
// exits with status 1.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "datasets/tfrecord/example_codec.h"
#include "datasets/tfrecord/example_json.h"
#include "framework/core/error.h"
#include "framework/io/compression.h"
#include "framework/io/record_reader.h"
#include "framework/io/record_writer.h"
#include "programs/command_line.h"

namespace {

using namespace kestrel;

void inspect(const std::string& path, const std::string& compression, bool raw) {
  io::RecordReader reader(path, {.compression = io::compression_from_name_or_auto(compression)});
  std::string record;
  while (true) {
    const std::uint64_t offset = reader.offset();
    if (!reader.read(record)) break;
    if (raw) {
      std::cout << data::bytes_to_json(record) << '\n';
      continue;
    }
    try {
      std::cout << data::example_to_json(data::parse_example_proto(record)) << '\n';
    } catch (const ValueError& e) {
      throw ValueError("record file '" + path + "': record " + std::to_string(reader.records_read() - 1) +
                       " at offset " + std::to_string(offset) + ": " + e.what() +
                       " (use --raw to print records that are not Examples)");
    }
  }
}

void from_jsonl(const std::string& in_path, const std::string& out_path, const std::string& compression) {
  std::ifstream in(in_path, std::ios::binary);
  if (!in) throw IOError("file '" + in_path + "': cannot open for reading");
  io::RecordWriter writer(out_path, {.compression = io::compression_from_name(compression)});
  try {
    std::string line;
    for (std::int64_t number = 1; std::getline(in, line); ++number) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      try {
        writer.write(data::serialize_example(data::example_from_json(line)));
      } catch (const ValueError& e) {
        throw ValueError("file '" + in_path + "' line " + std::to_string(number) + ": " + e.what());
      }
    }
    if (in.bad()) throw IOError("file '" + in_path + "': read failed");
    writer.close();
  } catch (...) {
    // No half-written output is left behind to be mistaken for a complete file.
    try {
      writer.close();
    } catch (const std::exception&) {
    }
    std::remove(out_path.c_str());
    throw;
  }
}

}  // namespace

int main(int argc, char** argv) {
  programs::CommandLine cli("kestrel-records", "Inspect and write TFRecord files of tf.train.Examples");
  cli.require_subcommand();

  std::string file, compression_in = "auto";
  bool raw = false;
  programs::Command inspect_cmd = cli.add_subcommand("inspect", "Print each Example of FILE as one line of JSON");
  inspect_cmd.add_option("FILE", file, "TFRecord file (none, GZIP or ZLIB)").required();
  inspect_cmd.add_option("--compression", compression_in, "auto (detect), none, gzip or zlib");
  inspect_cmd.add_flag("--raw", raw, "Print each record as a JSON string (base64 object when not UTF-8)");

  std::string in_path, out_path, compression_out = "none";
  programs::Command write_cmd =
      cli.add_subcommand("from-jsonl", "Write the Examples of a JSON lines file as a TFRecord file");
  write_cmd.add_option("IN", in_path, "JSON lines, one Example per line, as inspect prints them").required();
  write_cmd.add_option("OUT", out_path, "TFRecord file to create").required();
  write_cmd.add_option("--compression", compression_out, "none, gzip or zlib");

  if (auto exit_code = cli.parse(argc, argv)) return *exit_code;
  try {
    if (inspect_cmd.parsed()) inspect(file, compression_in, raw);
    if (write_cmd.parsed()) from_jsonl(in_path, out_path, compression_out);
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "kestrel-records: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
