#include "framework/io/read_file.h"

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "framework/core/error.h"

namespace kestrel::io {

std::string read_file(const std::filesystem::path& path, std::string_view reader, std::string_view what) {
  const auto failure = [&](std::string_view verb, int error) {
    return IOError(std::string(reader) + " cannot " + std::string(verb) + " " + std::string(what) + " '" +
                   path.string() + "'" + (error != 0 ? std::string(": ") + std::strerror(error) : std::string()));
  };
  std::ifstream in(path, std::ios::binary);
  if (!in) throw failure("open", errno);
  // In blocks rather than character by character, which costs ten times as much. A read error
  // (a directory, an I/O failure) sets badbit, where copying through rdbuf() would hide it.
  std::string content;
  std::array<char, 1 << 16> block;
  while (in.read(block.data(), block.size()) || in.gcount() > 0) content.append(block.data(), in.gcount());
  if (in.bad()) throw failure("read", errno);
  return content;
}

}  // namespace kestrel::io
