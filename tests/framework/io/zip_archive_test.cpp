#include "framework/io/zip_archive.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/error.h"
#include "tests/framework/io/io_test_support.h"
#include "tests/support/error_message.h"
#include "tests/support/python_peer.h"

namespace kestrel {
namespace {

namespace fs = std::filesystem;
using testing::contains;
using testing::error_message;
using testing::noise;
using testing::read_file;
using testing::ScratchDir;
using testing::write_file;

/// Runs a Python script (written into dir) with arguments; returns its output.
std::string run_python(const ScratchDir& dir, const std::string& script, const std::string& args) {
  const std::string script_path = dir / "script.py";
  write_file(script_path, script);
  return testing::run_python_file(script_path, args);
}

/// 300 KiB of every byte value, in the same order as the Python scripts below make them.
std::string binary_payload() {
  std::string bytes(300 * 1024, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 7 + 3) % 256);
  return bytes;
}

struct Entry {
  std::string name;
  std::string bytes;
};

/// The entries of a .keras archive, an empty one, a binary one and one in a folder.
std::vector<Entry> sample_entries() {
  return {
      {"metadata.json", R"({"keras_version": "3.5.0", "date_saved": "2024-08-30@10:00:00"})"},
      {"config.json", R"({"module": "keras", "class_name": "Sequential", "config": {"name": "sequential"}})"},
      {"empty.bin", ""},
      {"model.weights.h5", noise(300 * 1024, 7)},
      {"assets/vocab.txt", "[PAD]\n[UNK]\nthe\n"},
  };
}

void write_archive(const std::string& path, const std::vector<Entry>& entries, io::ZipWriterOptions options = {}) {
  io::ZipWriter writer(path, std::move(options));
  for (const Entry& entry : entries) writer.add(entry.name, entry.bytes);
  writer.close();
}

std::vector<std::string> names_of(const std::vector<Entry>& entries) {
  std::vector<std::string> names;
  for (const Entry& entry : entries) names.push_back(entry.name);
  return names;
}

std::uint32_t crc32_of(const std::string& bytes) {
  return static_cast<std::uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
}

/// Overwrites a little-endian 32-bit field of a file's bytes.
void put_u32(std::string& bytes, std::size_t at, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

// ---------------------------------------------------------------------------------------------
// Round trips

TEST(ZipArchive, EntriesRoundTripInOrderWithTheirBytes) {
  ScratchDir dir;
  const std::string path = dir / "model.keras";
  const std::vector<Entry> entries = sample_entries();
  write_archive(path, entries);

  io::ZipReader reader(path);
  EXPECT_EQ(reader.names(), names_of(entries));
  for (const Entry& entry : entries) {
    EXPECT_TRUE(reader.contains(entry.name)) << entry.name;
    EXPECT_EQ(reader.size(entry.name), entry.bytes.size()) << entry.name;
    EXPECT_EQ(reader.read(entry.name), entry.bytes) << entry.name;
  }
  EXPECT_FALSE(reader.contains("model.weights"));
  EXPECT_EQ(reader.read("empty.bin"), "");
}

TEST(ZipArchive, EntriesAreStoredUncompressedAsKerasWritesThem) {
  // Keras's zipfile.ZipFile(path, "w") stores (ZIP_STORED): the archive holds the payloads as is.
  ScratchDir dir;
  const std::string path = dir / "stored.keras";
  const std::string text(100000, 'a');
  write_archive(path, {{"config.json", text}});
  const std::string archive = read_file(path);
  EXPECT_GT(archive.size(), text.size());
  EXPECT_NE(archive.find(text), std::string::npos);
  EXPECT_EQ(archive[8], 0);  // the local header's compression method: 0, stored
  EXPECT_EQ(archive[9], 0);
}

TEST(ZipArchive, DeflatedEntriesAreSmallerAndReadBackTheSame) {
  ScratchDir dir;
  const std::string path = dir / "deflated.zip";
  const std::string text(100000, 'a');
  write_archive(path, {{"a.txt", text}, {"noise.bin", noise(20000, 3)}, {"empty", ""}},
                {.compression = io::ZipCompression::deflated});
  EXPECT_LT(fs::file_size(path), 30000u);
  io::ZipReader reader(path);
  EXPECT_EQ(reader.read("a.txt"), text);
  EXPECT_EQ(reader.read("noise.bin"), noise(20000, 3));
  EXPECT_EQ(reader.read("empty"), "");
}

TEST(ZipArchive, ByteSpansAndFilesAreEntriesToo) {
  ScratchDir dir;
  const std::string path = dir / "model.keras";
  const std::string weights = noise(200 * 1024, 11);
  write_file(dir / "weights.h5", weights);
  const std::vector<std::byte> raw = {std::byte{0}, std::byte{0xff}, std::byte{0x50}, std::byte{0x4b}};
  {
    io::ZipWriter writer(path);
    writer.add("raw.bin", std::span<const std::byte>(raw));
    writer.add_file("model.weights.h5", dir / "weights.h5");
    EXPECT_EQ(writer.names(), (std::vector<std::string>{"raw.bin", "model.weights.h5"}));
    writer.close();
    writer.close();  // harmless
  }
  io::ZipReader reader(path);
  EXPECT_EQ(reader.read("raw.bin"), std::string("\x00\xff\x50\x4b", 4));
  EXPECT_EQ(reader.read("model.weights.h5"), weights);

  // extract() streams an entry to a file, for readers that open a path (HDF5).
  reader.extract("model.weights.h5", dir / "extracted.h5");
  EXPECT_EQ(read_file(dir / "extracted.h5"), weights);
}

TEST(ZipArchive, AnArchiveWithoutEntriesIsAnEmptyZipArchive) {
  ScratchDir dir;
  const std::string path = dir / "empty.zip";
  io::ZipWriter(path).close();
  EXPECT_EQ(fs::file_size(path), 22u);  // the end-of-central-directory record alone
  io::ZipReader reader(path);
  EXPECT_TRUE(reader.names().empty());
  const std::string m = error_message<ValueError>([&] { reader.read("config.json"); });
  EXPECT_TRUE(contains(m, "has no entry 'config.json'; it is empty")) << m;
}

TEST(ZipArchive, AWriterNotClosedLeavesNoFile) {
  ScratchDir dir;
  const std::string path = dir / "abandoned.keras";
  {
    io::ZipWriter writer(path);
    writer.add("config.json", "{}");
    EXPECT_TRUE(fs::exists(path));  // created at once, so that an unwritable path fails early
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST(ZipArchive, AMovedWriterWritesOnce) {
  ScratchDir dir;
  const std::string path = dir / "moved.keras";
  io::ZipWriter first(path);
  first.add("config.json", "{}");
  io::ZipWriter second = std::move(first);
  second.close();
  EXPECT_EQ(io::ZipReader(path).read("config.json"), "{}");
}

// ---------------------------------------------------------------------------------------------
// Python's zipfile, the reader and writer Keras uses

TEST(ZipArchive, ReadsWhatPythonsZipfileWrites) {
  if (!testing::have_python_module("zipfile")) GTEST_SKIP() << "/usr/bin/python3 with zipfile is not installed";
  ScratchDir dir;
  const std::string path = dir / "python.keras";
  // Stored and deflated entries, an empty one, a UTF-8 name, and (through a stream without seek)
  // entries whose sizes and CRC follow their data in a data descriptor.
  const std::string script = R"(
import sys, zipfile
binary = bytes((i * 7 + 3) % 256 for i in range(300 * 1024))
with zipfile.ZipFile(sys.argv[1], "w") as zf:
    zf.writestr("metadata.json", '{"keras_version": "3.5.0"}')
    zf.writestr("empty.bin", b"")
    zf.writestr("model.weights.h5", binary)
    zf.writestr("deflated.txt", "abc" * 10000, compress_type=zipfile.ZIP_DEFLATED)
    zf.writestr("donn\u00e9es/\u00e9t\u00e9.txt", "summer")

class Unseekable:
    def __init__(self, f): self.f = f
    def write(self, b): return self.f.write(b)
    def flush(self): self.f.flush()

with open(sys.argv[2], "wb") as raw:
    with zipfile.ZipFile(Unseekable(raw), "w", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open("streamed.bin", "w") as f:
            f.write(binary)
        zf.writestr("after.txt", "after")
)";
  run_python(dir, script, path + " " + (dir / "streamed.zip"));

  io::ZipReader reader(path);
  const std::string utf8_name =
      "donn\xc3\xa9"
      "es/\xc3\xa9t\xc3\xa9.txt";
  EXPECT_EQ(reader.names(),
            (std::vector<std::string>{"metadata.json", "empty.bin", "model.weights.h5", "deflated.txt", utf8_name}));
  EXPECT_EQ(reader.read("metadata.json"), R"({"keras_version": "3.5.0"})");
  EXPECT_EQ(reader.read("empty.bin"), "");
  EXPECT_EQ(reader.size("model.weights.h5"), 300u * 1024);
  EXPECT_EQ(reader.read("model.weights.h5"), binary_payload());
  std::string abc;
  for (int i = 0; i < 10000; ++i) abc += "abc";
  EXPECT_EQ(reader.read("deflated.txt"), abc);
  EXPECT_EQ(reader.read(utf8_name), "summer");

  io::ZipReader streamed(dir / "streamed.zip");
  EXPECT_EQ(streamed.names(), (std::vector<std::string>{"streamed.bin", "after.txt"}));
  EXPECT_EQ(streamed.read("streamed.bin"), binary_payload());
  EXPECT_EQ(streamed.read("after.txt"), "after");
}

TEST(ZipArchive, PythonsZipfileReadsWhatKestrelWrites) {
  if (!testing::have_python_module("zipfile")) GTEST_SKIP() << "/usr/bin/python3 with zipfile is not installed";
  ScratchDir dir;
  const std::string path = dir / "kestrel.keras";
  const std::vector<Entry> entries = sample_entries();
  write_archive(path, entries);
  write_archive(dir / "deflated.zip", entries, {.compression = io::ZipCompression::deflated});
  io::ZipWriter(dir / "empty.zip").close();

  // testzip() checks every CRC; each entry's bytes go to <archive>.out_<index>, compared exactly.
  const std::string script = R"(
import os, sys, zipfile, zlib
for archive in sys.argv[1:]:
    with zipfile.ZipFile(archive) as zf:
        assert zf.testzip() is None, zf.testzip()
        for i, info in enumerate(zf.infolist()):
            data = zf.read(info)
            print(os.path.basename(archive), info.filename, info.compress_type, info.file_size,
                  "%08x" % zlib.crc32(data))
            with open(archive + ".out_%d" % i, "wb") as f:
                f.write(data)
)";
  const std::string out = run_python(dir, script, path + " " + (dir / "deflated.zip") + " " + (dir / "empty.zip"));

  std::string expected;
  for (const auto& [archive, method] : {std::pair{"kestrel.keras", 0}, std::pair{"deflated.zip", 8}}) {
    for (std::size_t i = 0; i < entries.size(); ++i) {
      char crc[9];
      std::snprintf(crc, sizeof crc, "%08x", crc32_of(entries[i].bytes));
      expected += std::string(archive) + " " + entries[i].name + " " + std::to_string(method) + " " +
                  std::to_string(entries[i].bytes.size()) + " " + crc + "\n";
      EXPECT_EQ(read_file(dir / (std::string(archive) + ".out_" + std::to_string(i))), entries[i].bytes)
          << archive << " " << entries[i].name;
    }
  }
  EXPECT_EQ(out, expected);
}

// ---------------------------------------------------------------------------------------------
// Bad archives

TEST(ZipArchive, AMissingFileIsNamed) {
  ScratchDir dir;
  const std::string path = dir / "missing.keras";
  const std::string m = error_message<IOError>([&] { io::ZipReader reader(path); });
  EXPECT_EQ(m, "zip archive '" + path + "': no such file; check the path");
}

TEST(ZipArchive, ADirectoryIsNotAnArchive) {
  ScratchDir dir;
  fs::create_directories(dir / "saved_model");
  const std::string m = error_message<IOError>([&] { io::ZipReader reader(dir / "saved_model"); });
  EXPECT_TRUE(contains(m, "zip archive '" + (dir / "saved_model") + "': is a directory")) << m;
}

TEST(ZipArchive, AnArchiveTruncatedAnywhereSaysSo) {
  ScratchDir dir;
  const std::string whole_path = dir / "whole.keras";
  write_archive(whole_path, {{"metadata.json", "{}"}, {"model.weights.h5", noise(5000, 1)}});
  const std::string whole = read_file(whole_path);
  const std::size_t central = whole.find("PK\x01\x02");
  ASSERT_NE(central, std::string::npos);
  // Nothing, the signature cut, inside the first local header, inside the data, just before the
  // central directory, inside it, and one byte short of the end-of-central-directory record.
  for (const std::size_t size :
       {std::size_t{0}, std::size_t{2}, std::size_t{17}, std::size_t{2000}, central, central + 30, whole.size() - 1}) {
    SCOPED_TRACE("truncated to " + std::to_string(size) + " of " + std::to_string(whole.size()) + " bytes");
    const std::string path = dir / ("cut_" + std::to_string(size) + ".keras");
    write_file(path, whole.substr(0, size));
    const std::string m = error_message<IOError>([&] { io::ZipReader reader(path); });
    EXPECT_TRUE(contains(m, "zip archive '" + path + "': is truncated")) << m;
    EXPECT_TRUE(contains(m, "save it again, or copy it again whole")) << m;
  }
}

TEST(ZipArchive, AForeignFileIsNotAZipArchive) {
  ScratchDir dir;
  const std::string path = dir / "picture.keras";
  write_file(path, "GIF89a" + std::string(200, '\x01'));
  const std::string m = error_message<IOError>([&] { io::ZipReader reader(path); });
  EXPECT_EQ(m, "zip archive '" + path +
                   "': is not a zip archive: it starts with bytes 47 49 46 38 where a zip archive starts with "
                   "'PK'; pass the zip archive itself (a .keras file)");
}

TEST(ZipArchive, AnHdf5FileIsRecognized) {
  ScratchDir dir;
  const std::string path = dir / "model.weights.h5";
  write_file(path, std::string("\x89HDF\r\n\x1a\n", 8) + std::string(600, '\0'));
  const std::string m = error_message<IOError>([&] { io::ZipReader reader(path); });
  EXPECT_TRUE(contains(m, "zip archive '" + path +
                              "': is an HDF5 file, not a zip archive; load a weights file "
                              "with load_weights()"))
      << m;
}

TEST(ZipArchive, AMissingEntryListsTheEntriesThereAre) {
  ScratchDir dir;
  const std::string path = dir / "model.keras";
  write_archive(path, {{"metadata.json", "{}"}, {"config.json", "{}"}});
  io::ZipReader reader(path);
  for (const auto& call : std::vector<std::function<void()>>{[&] { reader.read("model.weights.h5"); },
                                                             [&] { reader.size("model.weights.h5"); },
                                                             [&] { reader.extract("model.weights.h5", dir / "x"); }}) {
    const std::string m = error_message<ValueError>(call);
    EXPECT_EQ(m, "zip archive '" + path +
                     "': has no entry 'model.weights.h5'; its entries are 'metadata.json', 'config.json': check the "
                     "entry's name and that this is the right archive");
  }
  EXPECT_FALSE(fs::exists(dir / "x"));
}

TEST(ZipArchive, CorruptedEntryDataFailsItsCrcCheck) {
  ScratchDir dir;
  const std::string path = dir / "model.keras";
  const std::string weights = noise(4000, 5);
  write_archive(path, {{"config.json", "{}"}, {"model.weights.h5", weights}});
  std::string bytes = read_file(path);
  const std::size_t at = bytes.find(weights);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 1234] = static_cast<char>(bytes[at + 1234] ^ 0x10);
  write_file(path, bytes);

  io::ZipReader reader(path);  // the directory is intact: the damage shows when the entry is read
  EXPECT_EQ(reader.read("config.json"), "{}");
  const std::string expected = "zip archive '" + path +
                               "': entry 'model.weights.h5' is corrupt: its data does not match its CRC-32; the "
                               "file was damaged or cut short after it was written: save it again, or copy it "
                               "again whole";
  EXPECT_EQ(error_message<IOError>([&] { reader.read("model.weights.h5"); }), expected);
  EXPECT_EQ(error_message<IOError>([&] { reader.extract("model.weights.h5", dir / "w.h5"); }), expected);
  EXPECT_FALSE(fs::exists(dir / "w.h5"));  // no half-written file is left
}

TEST(ZipArchive, CorruptedDeflatedDataIsCaught) {
  ScratchDir dir;
  const std::string path = dir / "deflated.zip";
  write_archive(path, {{"a.txt", std::string(50000, 'a') + noise(2000, 9)}},
                {.compression = io::ZipCompression::deflated});
  std::string bytes = read_file(path);
  const std::size_t central = bytes.find("PK\x01\x02");
  for (std::size_t i = 40; i < central - 20; i += 7) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
  write_file(path, bytes);
  io::ZipReader reader(path);
  const std::string m = error_message<IOError>([&] { reader.read("a.txt"); });
  EXPECT_TRUE(contains(m, "zip archive '" + path + "': entry 'a.txt' is corrupt")) << m;
}

/// An archive of one entry, "data.bin", whose headers (local and central) declare `declared` bytes.
std::string with_declared_size(const ScratchDir& dir, const std::string& payload, std::uint32_t declared,
                               io::ZipCompression compression) {
  const std::string path = dir / "declared.zip";
  write_archive(path, {{"data.bin", payload}}, {.compression = compression});
  std::string bytes = read_file(path);
  put_u32(bytes, 22, declared);  // the local header's uncompressed size
  const std::size_t central = bytes.find("PK\x01\x02");
  put_u32(bytes, central + 24, declared);
  write_file(path, bytes);
  return path;
}

TEST(ZipArchive, AnEntryLongerThanItsHeaderDeclaresIsRejected) {
  ScratchDir dir;
  const std::string path = with_declared_size(dir, std::string(3000, 'x'), 1000, io::ZipCompression::deflated);
  io::ZipReader reader(path);
  EXPECT_EQ(reader.size("data.bin"), 1000u);
  EXPECT_EQ(error_message<IOError>([&] { reader.read("data.bin"); }),
            "zip archive '" + path +
                "': entry 'data.bin' holds more than the 1000 bytes its header declares; the file was damaged or "
                "cut short after it was written: save it again, or copy it again whole");
}

TEST(ZipArchive, AHeaderDeclaringFourGigabytesCostsOnlyWhatTheEntryHolds) {
  // A few dozen bytes (deflated) or 3000 (stored) that claim 4 GiB: reading stops where the data
  // does, having reserved what the entry can produce rather than what its header claims.
  for (const io::ZipCompression compression : {io::ZipCompression::deflated, io::ZipCompression::stored}) {
    ScratchDir dir;
    const std::string path = with_declared_size(dir, std::string(3000, 'x'), 0xfffffff0u, compression);
    io::ZipReader reader(path);
    EXPECT_EQ(reader.size("data.bin"), 0xfffffff0u);
    EXPECT_EQ(error_message<IOError>([&] { reader.read("data.bin"); }),
              "zip archive '" + path +
                  "': entry 'data.bin' ends after 3000 of the 4294967280 bytes its header declares; the file was "
                  "damaged or cut short after it was written: save it again, or copy it again whole");
  }
}

/// An archive of one stored entry, "data.bin", with a 16-bit field of both its headers (local,
/// central) set: `local_at` and `local_at + 2` are the offsets in the local and central headers.
std::string with_header_field(const ScratchDir& dir, std::size_t local_at, std::uint16_t value) {
  const std::string path = dir / "patched.zip";
  write_archive(path, {{"data.bin", "some bytes"}});
  std::string bytes = read_file(path);
  const std::size_t central = bytes.find("PK\x01\x02");
  for (const std::size_t at : {local_at, central + local_at + 2}) {
    bytes[at] = static_cast<char>(value & 0xff);
    bytes[at + 1] = static_cast<char>(value >> 8);
  }
  write_file(path, bytes);
  return path;
}

TEST(ZipArchive, OnlyStoredAndDeflatedEntriesAreRead) {
  // bzip2 (method 12) is refused: nothing bounds what it expands to.
  ScratchDir dir;
  const std::string path = with_header_field(dir, 8, 12);
  io::ZipReader reader(path);
  EXPECT_EQ(error_message<IOError>([&] { reader.read("data.bin"); }),
            "zip archive '" + path +
                "': entry 'data.bin' is compressed with zip method 12, which Kestrel does not read; store or "
                "deflate it (zip methods 0 and 8)");
}

TEST(ZipArchive, EncryptedEntriesAreRefused) {
  ScratchDir dir;
  const std::string path = with_header_field(dir, 6, 1);  // general-purpose flag bit 0: encrypted
  io::ZipReader reader(path);
  EXPECT_EQ(error_message<IOError>([&] { reader.read("data.bin"); }),
            "zip archive '" + path +
                "': entry 'data.bin' is encrypted; Kestrel reads unencrypted archives: save it without a password");
}

TEST(ZipArchive, HeadersThatDisagreeAreDamage) {
  // The central directory's CRC-32 of an entry differs from its local header's.
  ScratchDir dir;
  const std::string path = dir / "model.keras";
  write_archive(path, {{"config.json", "{}"}});
  std::string bytes = read_file(path);
  const std::size_t central = bytes.find("PK\x01\x02");
  bytes[central + 16] = static_cast<char>(bytes[central + 16] ^ 1);
  write_file(path, bytes);
  const std::string m = error_message<IOError>([&] { io::ZipReader reader(path); });
  EXPECT_TRUE(contains(m, "zip archive '" + path + "': is damaged: its central directory disagrees with its entries"))
      << m;
  EXPECT_TRUE(contains(m, "save it again, or copy it again whole")) << m;
}

TEST(ZipArchive, AnEndRecordWithoutItsCentralDirectoryIsDamage) {
  ScratchDir dir;
  const std::string path = dir / "model.keras";
  write_archive(path, {{"config.json", "{}"}});
  std::string bytes = read_file(path);
  bytes[bytes.find("PK\x01\x02") + 2] = 9;  // the central directory's signature is gone
  write_file(path, bytes);
  const std::string m = error_message<IOError>([&] { io::ZipReader reader(path); });
  EXPECT_TRUE(contains(
      m, "zip archive '" + path + "': is damaged: its end-of-central-directory record points to no central directory"))
      << m;
}

// ---------------------------------------------------------------------------------------------
// Writer errors

TEST(ZipArchive, BadEntryNamesAreRejected) {
  ScratchDir dir;
  const std::string path = dir / "names.zip";
  io::ZipWriter writer(path, {.display_name = "model.keras"});
  writer.add("config.json", "{}");
  EXPECT_EQ(error_message<ValueError>([&] { writer.add("config.json", "[]"); }),
            "zip archive 'model.keras': entry 'config.json': the archive already has an entry of this name; give "
            "each entry its own name");
  EXPECT_EQ(error_message<ValueError>([&] { writer.add("", "x"); }),
            "zip archive 'model.keras': an entry name is empty; name each entry ('config.json')");
  EXPECT_TRUE(contains(error_message<ValueError>([&] { writer.add("assets/", "x"); }), "names a directory"));
  EXPECT_EQ(error_message<ValueError>([&] { writer.add(std::string("a\0b", 3), "x"); }),
            "zip archive 'model.keras': entry 'a\\x00b': the name holds a NUL byte, which zip names cannot; remove it");
  writer.close();
  EXPECT_EQ(error_message<ValueError>([&] { writer.add("late.json", "{}"); }),
            "zip archive 'model.keras': entry 'late.json': the archive is closed; add every entry before close()");
  EXPECT_EQ(io::ZipReader(path).names(), std::vector<std::string>{"config.json"});
}

TEST(ZipArchive, AnUnwritablePathFailsAtOnceNamingIt) {
  ScratchDir dir;
  const std::string path = dir / "no_such_dir/model.keras.tmp-host-1";
  const std::string m = error_message<IOError>([&] { io::ZipWriter writer(path, {.display_name = "model.keras"}); });
  EXPECT_EQ(m, "zip archive 'model.keras': cannot create '" + path +
                   "': No such file or directory; check that its directory exists and is writable");
}

TEST(ZipArchive, AFileEntryMustExistUntilClose) {
  ScratchDir dir;
  const std::string path = dir / "model.keras";
  io::ZipWriter writer(path);
  const std::string missing = error_message<IOError>([&] { writer.add_file("model.weights.h5", dir / "none.h5"); });
  EXPECT_TRUE(contains(missing, "zip archive '" + path + "': entry 'model.weights.h5': its source '" +
                                    (dir / "none.h5") + "' is not a regular file"))
      << missing;

  write_file(dir / "w.h5", "weights");
  writer.add_file("model.weights.h5", dir / "w.h5");
  fs::remove(dir / "w.h5");
  const std::string gone = error_message<IOError>([&] { writer.close(); });
  EXPECT_EQ(gone, "zip archive '" + path + "': entry 'model.weights.h5': its source '" + (dir / "w.h5") +
                      "' is gone; keep it until close()");
  EXPECT_FALSE(fs::exists(path));  // a failed close leaves no partial archive
}

}  // namespace
}  // namespace kestrel
