// Zip archives (the container of .keras model files) from arbitrary bytes, through io::ZipReader:
// every entry is sized, read and extracted. The entries that read whole are then written by
// io::ZipWriter and read back, which must give the same names and bytes: a difference aborts, as
// does an entry whose bytes differ from its declared size or from what extract() wrote.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/error.h"
#include "framework/io/zip_archive.h"
#include "tests/fuzz/fuzz_input.h"

using namespace kestrel;

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The entries of reader that read without error, with their bytes, checked against extract().
std::vector<std::pair<std::string, std::string>> readable_entries(const io::ZipReader& reader,
                                                                  const std::string& extract_path) {
  std::vector<std::pair<std::string, std::string>> entries;
  for (const std::string& name : reader.names()) {
    if (!reader.contains(name)) std::abort();
    try {
      const std::uint64_t declared = reader.size(name);
      std::string bytes = reader.read(name);
      if (bytes.size() != declared) std::abort();  // read() promises the declared size or an error
      reader.extract(name, extract_path);
      if (file_bytes(extract_path) != bytes) std::abort();
      entries.emplace_back(name, std::move(bytes));
    } catch (const Error&) {
      // A damaged entry: the others are still read.
    }
  }
  return entries;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::write_input_file(fuzz::bytes(data, size), ".zip");
  const std::string extract_path = fuzz::write_input_file("", ".entry");
  const std::string copy_path = fuzz::write_input_file("", ".copy.zip");
  std::vector<std::pair<std::string, std::string>> entries;
  try {
    entries = readable_entries(io::ZipReader(path), extract_path);
  } catch (const Error&) {
    return 0;
  }

  std::vector<std::pair<std::string, std::string>> written;
  {
    io::ZipWriter writer(copy_path);
    for (const auto& [name, bytes] : entries) {
      try {
        writer.add(name, bytes);
        written.emplace_back(name, bytes);
      } catch (const ValueError&) {
        // A name the writer refuses (a directory's, one that repeats after libzip's decoding).
      }
    }
    writer.close();
  }
  const io::ZipReader copy(copy_path);
  if (copy.names().size() != written.size()) std::abort();
  for (std::size_t i = 0; i < written.size(); ++i) {
    if (copy.names()[i] != written[i].first || copy.read(written[i].first) != written[i].second) std::abort();
  }
  return 0;
}
