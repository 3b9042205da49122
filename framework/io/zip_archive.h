// Zip archives, the container of Keras 3's .keras model files (metadata.json, config.json and
// model.weights.h5), written and read through libzip.
//
//   io::ZipWriter out(saving::temporary_path("m.keras"), {.display_name = "m.keras"});
//   out.add("metadata.json", metadata_json);
//   out.add("config.json", config_json);
//   out.add("model.weights.h5", hdf5_image);   // bytes; add_file() streams a file instead
//   out.close();                               // writes the archive; without it nothing is kept
//
//   io::ZipReader in("m.keras");
//   for (const std::string& name : in.names()) std::cout << name << " " << in.size(name) << "\n";
//   std::string config = in.read("config.json");
//   in.extract("model.weights.h5", weights_path);   // streamed to a file, with the same checks
//
// Entries are stored uncompressed by default, as Keras's zipfile.ZipFile(path, "w") stores them
// (ZIP_STORED): an HDF5 file of float weights barely compresses. Reading checks every entry
// against its header: its CRC-32 and its declared size, which also bounds what is read, so a
// damaged or hostile archive costs no more memory than the bytes it really holds. Errors are
// IOError naming the archive, the entry and what to do; a missing entry is ValueError. A writer
// or reader is used by one thread at a time.
//
// The writer writes only to the path it is given, with no temporary of its own: an atomic save
// writes to saving::temporary_path(path), syncs and renames, as a weight file's save does
// (framework/saving/weights_file.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kestrel::io {

/// How the writer stores entries: zip's method 0 (stored, Keras's default) or 8 (deflated).
enum class ZipCompression { stored, deflated };

struct ZipWriterOptions {
  /// What errors call the archive; empty: the path written. A save that writes a temporary and
  /// renames it passes the final path here, so messages name the file the user asked for.
  std::string display_name;
  ZipCompression compression = ZipCompression::stored;
};

class ZipWriter {
 public:
  /// Creates (or truncates) the file at path now, so that a path that cannot be written fails
  /// here (IOError) rather than after every entry was prepared.
  explicit ZipWriter(std::string path, ZipWriterOptions options = {});
  /// An archive not closed is abandoned: its file is removed.
  ~ZipWriter();
  ZipWriter(ZipWriter&&) noexcept;
  ZipWriter& operator=(ZipWriter&&) noexcept;

  /// Adds an entry holding a copy of bytes. ValueError for an empty name, a name with a NUL byte
  /// or ending in '/', a name already added, or a closed writer.
  void add(std::string_view name, std::string_view bytes);
  void add(std::string_view name, std::span<const std::byte> bytes);
  /// Adds an entry holding the file at source_path, read when the archive is written: the file
  /// must stay as it is until close(). IOError when it is not a readable regular file now.
  void add_file(std::string_view name, const std::string& source_path);

  /// Writes the archive and closes the file; IOError when that fails (the file is then removed).
  /// The data is not forced to the disk: a save that renames the file syncs it first. Closing
  /// twice is harmless; an archive without entries is written as an empty zip archive.
  void close();

  /// The entries added so far, in the archive's order.
  const std::vector<std::string>& names() const;
  /// What errors call the archive.
  const std::string& display_name() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class ZipReader {
 public:
  /// Opens the archive at path and reads its central directory. IOError when the file is
  /// missing or unreadable, is not a zip archive, is truncated, or its headers disagree.
  explicit ZipReader(std::string path);
  ~ZipReader();
  ZipReader(ZipReader&&) noexcept;
  ZipReader& operator=(ZipReader&&) noexcept;

  /// The entries' names, in the archive's order (directories end in '/').
  const std::vector<std::string>& names() const;
  bool contains(std::string_view name) const;
  /// The entry's uncompressed size as its header declares it; ValueError for a missing entry.
  std::uint64_t size(std::string_view name) const;

  /// The entry's bytes. IOError when its data is corrupt (CRC-32 mismatch, bad compressed data),
  /// is longer or shorter than its header declares, is encrypted, or is compressed other than
  /// stored or deflated (zip methods 0 and 8); ValueError when there is no such entry.
  std::string read(std::string_view name) const;
  /// Writes the entry to destination (created or truncated) in chunks, with read()'s checks;
  /// for entries too large to hold in memory. On failure the destination file is removed.
  void extract(std::string_view name, const std::string& destination) const;

  const std::string& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kestrel::io
