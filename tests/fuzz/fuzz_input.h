// Support for Kestrel's fuzz targets: the fuzzer's input as bytes and as a file.
//
//   extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
//     const std::string path = kestrel::fuzz::write_input_file(kestrel::fuzz::bytes(data, size), ".idx");
//     try { datasets::read_idx(path, DType::float32); } catch (const kestrel::Error&) {}
//     return 0;
//   }
//
// A target catches kestrel::Error, the errors Kestrel promises for bad input; anything else that
// escapes (a std:: exception, a crash, a sanitizer report) is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kestrel::fuzz {

/// The input as a string_view.
inline std::string_view bytes(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Writes content to this process's input file (the same path for every input with this suffix,
/// in /dev/shm when it exists) and returns its path, for readers that take a path.
std::string write_input_file(std::string_view content, const std::string& suffix);

}  // namespace kestrel::fuzz
