// TFRecord framing, uncompressed and under GZIP and ZLIB: io::RecordReader over arbitrary bytes.
//
// The first byte picks how the rest is read: its low two bits the compression the reader is
// told (none, GZIP, ZLIB, or detected from the content); bit 2 compresses the rest first, so that
// the framing beneath a valid stream is reached, not only the stream's own checks; bit 3 a tiny
// read buffer, so records straddle refills.
#include <cstdint>
#include <optional>
#include <string>

#include "framework/core/error.h"
#include "framework/io/compressed_file.h"
#include "framework/io/record_reader.h"
#include "tests/fuzz/fuzz_input.h"

using namespace kestrel;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t mode = data[0];
  const std::string_view payload = fuzz::bytes(data + 1, size - 1);
  constexpr io::Compression kCompressions[] = {io::Compression::none, io::Compression::gzip, io::Compression::zlib};
  const std::optional<io::Compression> told =
      (mode & 3) == 3 ? std::nullopt : std::optional<io::Compression>(kCompressions[mode & 3]);

  std::string path = fuzz::write_input_file(payload, ".tfrecord");
  if ((mode & 4) != 0) {
    io::CompressedFileWriter writer(path, {.compression = told.value_or(io::Compression::gzip)});
    writer.write(payload);
    writer.close();
  }
  try {
    io::RecordReader reader(path, {.compression = told, .buffer_size = (mode & 8) != 0 ? 3u : 4096u});
    std::string record;
    while (!reader.at_end()) {
      try {
        if (!reader.read(record)) break;
      } catch (const IOError&) {
        // A corrupt record: the reader has moved past it or to the end.
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
