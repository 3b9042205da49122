// ZipWriter and ZipReader (framework/io/zip_archive.h) over libzip's C API.
#include "framework/io/zip_archive.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <new>

#include "framework/core/error.h"

namespace kestrel::io {

// libzip's handles, owned. Members of the Impls below, so not file-local: a class of the library
// holding a type of an anonymous namespace is what GCC's -Wsubobject-linkage flags in a header,
// and a unity build compiles this file as one included into its batch.

/// A zip_error_t that libzip's constructors fill in, released when it goes out of scope.
struct ZipError {
  zip_error_t error{};
  ZipError() { zip_error_init(&error); }
  ~ZipError() { zip_error_fini(&error); }
  ZipError(const ZipError&) = delete;
  ZipError& operator=(const ZipError&) = delete;
  zip_error_t* get() { return &error; }
};

/// Closes an entry opened with zip_fopen_index.
struct ZipFileCloser {
  void operator()(zip_file_t* file) const { zip_fclose(file); }
};

namespace {

void append_hex(std::string& out, unsigned char byte) {
  static constexpr char kDigits[] = "0123456789abcdef";
  out += {kDigits[byte >> 4], kDigits[byte & 15]};
}

/// text in single quotes, control bytes as \xNN: names come from archives, and a NUL byte would
/// end what().
std::string in_quotes(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      append_hex(out, byte);
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string archive_prefix(std::string_view name) { return "zip archive " + in_quotes(name) + ": "; }

/// libzip's description of an error ("Read error: No such file or directory").
std::string zip_reason(zip_error_t* error) { return zip_error_strerror(error); }

/// message, then what to do about an archive whose bytes are not what was written.
std::string damaged(std::string message) {
  message += "; the file was damaged or cut short after it was written: save it again, or copy it again whole";
  return message;
}

/// Writes all of bytes to fd; false (with errno set) when the system refuses.
bool write_all(int fd, const char* bytes, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, bytes, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// An archive without entries: only the end-of-central-directory record. libzip deletes the file
// instead, where Python's zipfile writes this.
constexpr std::array<char, 22> kEmptyArchive = {'P', 'K', 5, 6};

}  // namespace

// ---------------------------------------------------------------------------------------------
// ZipWriter

struct ZipWriter::Impl {
  std::string path;
  std::string display_name;
  zip_int32_t method = ZIP_CM_STORE;
  int fd = -1;
  zip_t* archive = nullptr;
  ZipError sink_error;  // what the output (write_to_file) reports
  std::vector<std::string> names;
  std::vector<std::pair<std::string, std::string>> files;  // entry name, source path
  bool closed = false;

  ~Impl() {
    if (!closed) abandon();
  }

  std::string prefix() const { return archive_prefix(display_name); }

  /// Drops what was prepared and removes the file, which holds no complete archive.
  void abandon() {
    closed = true;
    if (archive != nullptr) zip_discard(archive);
    archive = nullptr;
    if (fd >= 0) ::close(fd);
    fd = -1;
    ::unlink(path.c_str());
  }

  void check_entry_name(std::string_view name) const {
    const std::string where = prefix() + "entry " + in_quotes(name) + ": ";
    if (closed) throw ValueError(where + "the archive is closed; add every entry before close()");
    if (name.empty()) throw ValueError(prefix() + "an entry name is empty; name each entry ('config.json')");
    if (name.find('\0') != std::string_view::npos) {
      throw ValueError(where + "the name holds a NUL byte, which zip names cannot; remove it");
    }
    if (name.back() == '/') {
      throw ValueError(where + "a name ending in '/' names a directory; name a file ('assets/vocab.txt')");
    }
    if (name.size() > 0xffff) {
      throw ValueError(where + "the name has " + std::to_string(name.size()) +
                       " bytes, over zip's 65535; use a shorter name");
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      throw ValueError(where + "the archive already has an entry of this name; give each entry its own name");
    }
  }

  /// Adds source (owned from here on) under name.
  void add_source(std::string_view name, zip_source_t* source) {
    const std::string entry(name);
    const zip_int64_t index = zip_file_add(archive, entry.c_str(), source, ZIP_FL_ENC_UTF_8);
    if (index < 0) {
      zip_source_free(source);
      throw IOError(prefix() + "cannot add entry " + in_quotes(entry) + ": " + zip_reason(zip_get_error(archive)));
    }
    names.push_back(entry);  // from here on the archive owns the source
    if (zip_set_file_compression(archive, static_cast<zip_uint64_t>(index), method, 0) != 0) {
      throw IOError(prefix() + "cannot set the compression of entry " + in_quotes(entry) + ": " +
                    zip_reason(zip_get_error(archive)));
    }
  }

  /// libzip's output: see the definition.
  static zip_int64_t write_to_file(void* state, void* data, zip_uint64_t length, zip_source_cmd_t command);

  void write_empty_archive() {
    if (!write_all(fd, kEmptyArchive.data(), kEmptyArchive.size())) {
      throw IOError(prefix() + "cannot write it: " + std::strerror(errno));
    }
  }
};

/// libzip's output for a new archive: the file the writer opened, written in place. (libzip's own
/// file output writes a temporary beside the file and renames it; a save that wants that writes
/// to saving::temporary_path itself, and a second temporary would outlive a killed process.)
zip_int64_t ZipWriter::Impl::write_to_file(void* state, void* data, zip_uint64_t length, zip_source_cmd_t command) {
  auto& writer = *static_cast<Impl*>(state);
  const auto system_error = [&](int code) {
    zip_error_set(writer.sink_error.get(), code, errno);
    return zip_int64_t{-1};
  };
  switch (command) {
    case ZIP_SOURCE_SUPPORTS:
      return zip_source_make_command_bitmap(
          ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_SEEK, ZIP_SOURCE_TELL, ZIP_SOURCE_STAT,
          ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE, ZIP_SOURCE_BEGIN_WRITE, ZIP_SOURCE_COMMIT_WRITE, ZIP_SOURCE_ROLLBACK_WRITE,
          ZIP_SOURCE_SEEK_WRITE, ZIP_SOURCE_TELL_WRITE, ZIP_SOURCE_WRITE, ZIP_SOURCE_REMOVE, -1);
    case ZIP_SOURCE_STAT:
      // "No such file" is how a source tells libzip that the archive is new: it then reads nothing.
      zip_error_set(writer.sink_error.get(), ZIP_ER_READ, ENOENT);
      return -1;
    case ZIP_SOURCE_OPEN:  // a new archive has no old bytes to open, read or seek in
    case ZIP_SOURCE_CLOSE:
    case ZIP_SOURCE_READ:
    case ZIP_SOURCE_SEEK:
    case ZIP_SOURCE_TELL:
    case ZIP_SOURCE_COMMIT_WRITE:
    case ZIP_SOURCE_ROLLBACK_WRITE:  // close() removes the file
    case ZIP_SOURCE_REMOVE:
    case ZIP_SOURCE_FREE:  // the state is the writer's
      return 0;
    case ZIP_SOURCE_BEGIN_WRITE:
      if (::ftruncate(writer.fd, 0) != 0 || ::lseek(writer.fd, 0, SEEK_SET) < 0) return system_error(ZIP_ER_WRITE);
      return 0;
    case ZIP_SOURCE_WRITE:
      if (!write_all(writer.fd, static_cast<const char*>(data), length)) return system_error(ZIP_ER_WRITE);
      return static_cast<zip_int64_t>(length);
    case ZIP_SOURCE_SEEK_WRITE: {
      const auto* seek = ZIP_SOURCE_GET_ARGS(zip_source_args_seek_t, data, length, writer.sink_error.get());
      if (seek == nullptr) return -1;
      if (::lseek(writer.fd, seek->offset, seek->whence) < 0) return system_error(ZIP_ER_SEEK);
      return 0;
    }
    case ZIP_SOURCE_TELL_WRITE: {
      const off_t at = ::lseek(writer.fd, 0, SEEK_CUR);
      return at < 0 ? system_error(ZIP_ER_TELL) : static_cast<zip_int64_t>(at);
    }
    case ZIP_SOURCE_ERROR: return zip_error_to_data(writer.sink_error.get(), data, length);
    default: zip_error_set(writer.sink_error.get(), ZIP_ER_OPNOTSUPP, 0); return -1;
  }
}

ZipWriter::ZipWriter(std::string path, ZipWriterOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& writer = *impl_;
  writer.display_name = options.display_name.empty() ? path : std::move(options.display_name);
  writer.path = std::move(path);
  writer.method = options.compression == ZipCompression::deflated ? ZIP_CM_DEFLATE : ZIP_CM_STORE;
  writer.fd = ::open(writer.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (writer.fd < 0) {
    const int error = errno;
    writer.closed = true;  // nothing to remove
    throw IOError(writer.prefix() + "cannot create " + in_quotes(writer.path) + ": " + std::strerror(error) +
                  "; check that its directory exists and is writable");
  }
  ZipError error;
  zip_source_t* output = zip_source_function_create(Impl::write_to_file, &writer, error.get());
  if (output != nullptr) {
    writer.archive = zip_open_from_source(output, ZIP_CREATE | ZIP_TRUNCATE, error.get());
    if (writer.archive == nullptr) zip_source_free(output);
  }
  if (writer.archive == nullptr) {
    throw IOError(writer.prefix() + "cannot start writing it: " + zip_reason(error.get()));  // ~Impl removes the file
  }
}

ZipWriter::~ZipWriter() = default;
ZipWriter::ZipWriter(ZipWriter&&) noexcept = default;
ZipWriter& ZipWriter::operator=(ZipWriter&&) noexcept = default;

void ZipWriter::add(std::string_view name, std::string_view bytes) {
  impl_->check_entry_name(name);
  // libzip reads the data only at close(): the entry owns a copy, freed by libzip.
  void* copy = nullptr;
  if (!bytes.empty()) {
    copy = std::malloc(bytes.size());
    if (copy == nullptr) throw std::bad_alloc();
    std::memcpy(copy, bytes.data(), bytes.size());
  }
  ZipError error;
  zip_source_t* source = zip_source_buffer_create(copy, bytes.size(), copy != nullptr ? 1 : 0, error.get());
  if (source == nullptr) {
    std::free(copy);
    throw IOError(impl_->prefix() + "cannot add entry " + in_quotes(name) + ": " + zip_reason(error.get()));
  }
  impl_->add_source(name, source);
}

void ZipWriter::add(std::string_view name, std::span<const std::byte> bytes) {
  add(name, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

void ZipWriter::add_file(std::string_view name, const std::string& source_path) {
  impl_->check_entry_name(name);
  const std::string where = impl_->prefix() + "entry " + in_quotes(name) + ": ";
  std::error_code status_error;
  if (!std::filesystem::is_regular_file(source_path, status_error)) {
    throw IOError(where + "its source " + in_quotes(source_path) + " is not a regular file" +
                  (status_error ? " (" + status_error.message() + ")" : std::string()) + "; check the path");
  }
  ZipError error;
  zip_source_t* source = zip_source_file_create(source_path.c_str(), 0, -1, error.get());
  if (source == nullptr) {
    throw IOError(where + "cannot read its source " + in_quotes(source_path) + ": " + zip_reason(error.get()));
  }
  impl_->add_source(name, source);
  impl_->files.emplace_back(name, source_path);
}

void ZipWriter::close() {
  if (!impl_ || impl_->closed) return;  // closed, or moved from
  Impl& writer = *impl_;
  try {
    // libzip would only say "Can't open file"; name the entry whose file went away instead.
    for (const auto& [name, source_path] : writer.files) {
      std::error_code ignored;
      if (!std::filesystem::is_regular_file(source_path, ignored)) {
        throw IOError(writer.prefix() + "entry " + in_quotes(name) + ": its source " + in_quotes(source_path) +
                      " is gone; keep it until close()");
      }
    }
    if (writer.names.empty()) {
      writer.write_empty_archive();
      zip_discard(writer.archive);
    } else if (zip_close(writer.archive) != 0) {
      throw IOError(writer.prefix() + "cannot write it: " + zip_reason(zip_get_error(writer.archive)));
    }
    writer.archive = nullptr;  // freed by zip_close or zip_discard
    // Errors of delayed writes (a full disk, NFS) surface when the file is closed.
    const int fd = writer.fd;
    writer.fd = -1;
    if (::close(fd) != 0) throw IOError(writer.prefix() + "cannot write it: " + std::strerror(errno));
    writer.closed = true;
  } catch (...) {
    writer.abandon();
    throw;
  }
}

const std::vector<std::string>& ZipWriter::names() const { return impl_->names; }
const std::string& ZipWriter::display_name() const { return impl_->display_name; }

// ---------------------------------------------------------------------------------------------
// ZipReader

struct ZipReader::Impl {
  std::string path;
  zip_t* archive = nullptr;
  std::uint64_t file_size = 0;
  std::vector<std::string> names;
  std::map<std::string, zip_uint64_t, std::less<>> index_of;

  class EntryStream;

  ~Impl() {
    if (archive != nullptr) zip_discard(archive);
  }

  std::string prefix() const { return archive_prefix(path); }

  zip_uint64_t locate(std::string_view name) const {
    const auto found = index_of.find(name);
    if (found != index_of.end()) return found->second;
    std::string listing;
    constexpr std::size_t kListed = 8;
    for (std::size_t i = 0; i < names.size() && i < kListed; ++i) listing += (i > 0 ? ", " : "") + in_quotes(names[i]);
    if (names.size() > kListed) listing += ", ... (" + std::to_string(names.size()) + " in all)";
    throw ValueError(prefix() + "has no entry " + in_quotes(name) + "; " +
                     (names.empty() ? std::string("it is empty") : "its entries are " + listing) +
                     ": check the entry's name and that this is the right archive");
  }
};

namespace {

/// Whether an end-of-central-directory record is where one can be: in the last 22 bytes, or up to
/// the longest archive comment (65535 bytes) before them.
bool has_end_record(const std::string& path, std::uint64_t file_size) {
  constexpr std::uint64_t kSearched = 22 + 0xffff;
  const std::uint64_t size = std::min(file_size, kSearched);
  std::string tail(static_cast<std::size_t>(size), '\0');
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return false;
  const bool read = std::fseek(file, -static_cast<long>(size), SEEK_END) == 0 &&
                    std::fread(tail.data(), 1, tail.size(), file) == tail.size();
  std::fclose(file);
  // A whole record: its signature at least 22 bytes before the end.
  return read && tail.size() >= 22 &&
         std::string_view(tail).substr(0, tail.size() - 18).find(std::string_view("PK\x05\x06", 4)) !=
             std::string_view::npos;
}

/// Why a file that libzip found no zip directory in is not a zip archive, from its first bytes.
std::string not_a_zip_reason(const std::string& path, std::uint64_t file_size) {
  std::array<unsigned char, 8> head{};
  std::size_t got = 0;
  if (std::FILE* file = std::fopen(path.c_str(), "rb")) {
    got = std::fread(head.data(), 1, head.size(), file);
    std::fclose(file);
  }
  constexpr std::array<unsigned char, 4> kLocalHeader = {'P', 'K', 3, 4};
  constexpr std::array<unsigned char, 8> kHdf5 = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  if (std::equal(head.begin(), head.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(got, 4)),
                 kLocalHeader.begin())) {
    if (has_end_record(path, file_size)) {
      return damaged("is damaged: its end-of-central-directory record points to no central directory");
    }
    return damaged("is truncated: its " + std::to_string(file_size) +
                   " bytes end before zip's end-of-central-directory record");
  }
  if (got == kHdf5.size() && std::equal(head.begin(), head.end(), kHdf5.begin())) {
    return "is an HDF5 file, not a zip archive; load a weights file with load_weights()";
  }
  std::string hex;
  for (std::size_t i = 0; i < got && i < 4; ++i) {
    if (i > 0) hex += ' ';
    append_hex(hex, head[i]);
  }
  return "is not a zip archive: it starts with bytes " + hex +
         " where a zip archive starts with 'PK'; pass the zip archive itself (a .keras file)";
}

std::string open_failure(const std::string& path, std::uint64_t file_size, zip_error_t* error) {
  switch (zip_error_code_zip(error)) {
    case ZIP_ER_NOZIP: return not_a_zip_reason(path, file_size);
    case ZIP_ER_INCONS:
      return damaged("is damaged: its central directory disagrees with its entries (" + zip_reason(error) + ")");
    case ZIP_ER_MULTIDISK: return "is split over several files (a multi-disk archive); join them into one archive";
    default: return "cannot be opened: " + zip_reason(error);
  }
}

}  // namespace

/// One entry's bytes, in order, never past the size its header declares; at the end the CRC-32
/// and the size are checked.
class ZipReader::Impl::EntryStream {
 public:
  EntryStream(const Impl& archive, std::string_view name)
      : archive_(archive), name_(name), index_(archive.locate(name)) {
    zip_stat_t stat;
    zip_stat_init(&stat);
    if (zip_stat_index(archive.archive, index_, 0, &stat) != 0) fail(zip_get_error(archive.archive));
    declared_ = stat.size;
    if ((stat.valid & ZIP_STAT_ENCRYPTION_METHOD) != 0 && stat.encryption_method != ZIP_EM_NONE) {
      throw IOError(where() + "is encrypted; Kestrel reads unencrypted archives: save it without a password");
    }
    // Stored and deflated, what Keras (Python's zipfile) writes. Other methods (bzip2 above all)
    // can expand without the bound below.
    if (stat.comp_method != ZIP_CM_STORE && stat.comp_method != ZIP_CM_DEFLATE) {
      throw IOError(where() + "is compressed with zip method " + std::to_string(stat.comp_method) +
                    ", which Kestrel does not read; store or deflate it (zip methods 0 and 8)");
    }
    // What the entry can really produce bounds what is reserved ahead: a stored entry's bytes are
    // in the file, and deflate expands at most 1032:1. A header that declares more gets its bytes
    // as they arrive, and fails when they stop short.
    constexpr std::uint64_t kDeflateMaxExpansion = 1032;
    const std::uint64_t stored = std::min<std::uint64_t>(stat.comp_size, archive.file_size);
    reserve_ = std::min(declared_, stat.comp_method == ZIP_CM_DEFLATE ? stored * kDeflateMaxExpansion : stored);
    file_.reset(zip_fopen_index(archive.archive, index_, 0));
    if (!file_) fail(zip_get_error(archive.archive));
  }

  /// Bytes worth reserving for the whole entry.
  std::uint64_t reserve() const { return reserve_; }
  /// Bytes left of the declared size.
  std::uint64_t remaining() const { return declared_ - position_; }

  /// Up to capacity bytes; 0 once the declared size was read and the entry's end checked.
  std::size_t read(char* out, std::size_t capacity) {
    if (position_ == declared_) {
      if (!checked_end_) check_end();
      return 0;
    }
    const std::uint64_t want = std::min<std::uint64_t>(capacity, declared_ - position_);
    const zip_int64_t n = zip_fread(file_.get(), out, want);
    if (n < 0) fail(zip_file_get_error(file_.get()));
    if (n == 0) throw ends_early();
    position_ += static_cast<std::uint64_t>(n);
    return static_cast<std::size_t>(n);
  }

  std::string where() const { return archive_.prefix() + "entry " + in_quotes(name_) + " "; }

 private:
  /// libzip checks the CRC-32 when a read reaches the entry's end: reads once past the declared
  /// size.
  void check_end() {
    char extra = 0;
    const zip_int64_t n = zip_fread(file_.get(), &extra, 1);
    if (n < 0) fail(zip_file_get_error(file_.get()));
    if (n > 0) {
      throw IOError(
          damaged(where() + "holds more than the " + std::to_string(declared_) + " bytes its header declares"));
    }
    checked_end_ = true;
  }

  IOError ends_early() const {
    return IOError(damaged(where() + "ends after " + std::to_string(position_) + " of the " +
                           std::to_string(declared_) + " bytes its header declares"));
  }

  [[noreturn]] void fail(zip_error_t* error) const {
    switch (zip_error_code_zip(error)) {
      case ZIP_ER_CRC: throw IOError(damaged(where() + "is corrupt: its data does not match its CRC-32"));
      case ZIP_ER_INCONS:
        // A read that reaches the data's end short of the declared size: libzip's "inconsistent".
        if (file_ && position_ < declared_) throw ends_early();
        throw IOError(damaged(where() + "is damaged: its headers disagree (" + zip_reason(error) + ")"));
      case ZIP_ER_ZLIB:
      case ZIP_ER_COMPRESSED_DATA:
        throw IOError(
            damaged(where() + "is corrupt: its compressed data cannot be decompressed (" + zip_reason(error) + ")"));
      case ZIP_ER_NOPASSWD:
      case ZIP_ER_WRONGPASSWD:
      case ZIP_ER_ENCRNOTSUPP:
        throw IOError(where() + "is encrypted; Kestrel reads unencrypted archives: save it without a password");
      default: throw IOError(damaged(where() + "cannot be read: " + zip_reason(error)));
    }
  }

  const Impl& archive_;
  std::string name_;
  zip_uint64_t index_ = 0;
  std::uint64_t declared_ = 0;
  std::uint64_t reserve_ = 0;
  std::uint64_t position_ = 0;
  bool checked_end_ = false;
  std::unique_ptr<zip_file_t, ZipFileCloser> file_;
};

ZipReader::ZipReader(std::string path) : impl_(std::make_unique<Impl>()) {
  Impl& reader = *impl_;
  reader.path = std::move(path);
  struct stat status {};
  if (::stat(reader.path.c_str(), &status) != 0) {
    const int error = errno;
    throw IOError(reader.prefix() + (error == ENOENT ? "no such file; check the path"
                                                     : std::string("cannot open it: ") + std::strerror(error)));
  }
  if (S_ISDIR(status.st_mode)) throw IOError(reader.prefix() + "is a directory; pass the archive's file");
  reader.file_size = static_cast<std::uint64_t>(status.st_size);
  if (reader.file_size == 0) {
    throw IOError(damaged(reader.prefix() + "is truncated: it is empty (0 bytes)"));
  }

  ZipError error;
  zip_source_t* source = zip_source_file_create(reader.path.c_str(), 0, -1, error.get());
  if (source != nullptr) {
    // ZIP_CHECKCONS compares every local header with the central directory at open.
    reader.archive = zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, error.get());
    if (reader.archive == nullptr) zip_source_free(source);
  }
  if (reader.archive == nullptr)
    throw IOError(reader.prefix() + open_failure(reader.path, reader.file_size, error.get()));

  const zip_int64_t count = zip_get_num_entries(reader.archive, 0);
  for (zip_int64_t i = 0; i < count; ++i) {
    const char* name = zip_get_name(reader.archive, static_cast<zip_uint64_t>(i), 0);
    if (name == nullptr) {
      throw IOError(damaged(reader.prefix() + "entry " + std::to_string(i) + " has no readable name (" +
                            zip_reason(zip_get_error(reader.archive)) + ")"));
    }
    reader.names.emplace_back(name);
    reader.index_of.emplace(name, static_cast<zip_uint64_t>(i));
  }
}

ZipReader::~ZipReader() = default;
ZipReader::ZipReader(ZipReader&&) noexcept = default;
ZipReader& ZipReader::operator=(ZipReader&&) noexcept = default;

const std::vector<std::string>& ZipReader::names() const { return impl_->names; }
const std::string& ZipReader::path() const { return impl_->path; }

bool ZipReader::contains(std::string_view name) const { return impl_->index_of.contains(name); }

std::uint64_t ZipReader::size(std::string_view name) const {
  zip_stat_t stat;
  zip_stat_init(&stat);
  if (zip_stat_index(impl_->archive, impl_->locate(name), 0, &stat) != 0) {
    throw IOError(impl_->prefix() + "entry " + in_quotes(name) + ": " + zip_reason(zip_get_error(impl_->archive)));
  }
  return stat.size;
}

std::string ZipReader::read(std::string_view name) const {
  Impl::EntryStream entry(*impl_, name);
  std::string bytes;
  bytes.reserve(static_cast<std::size_t>(entry.reserve()));
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  for (;;) {
    // Never past the declared size, so that an honest entry fills the reservation exactly.
    const std::size_t used = bytes.size();
    const auto chunk = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, entry.remaining()));
    bytes.resize(used + chunk);
    const std::size_t n = entry.read(bytes.data() + used, chunk);
    bytes.resize(used + n);
    if (n == 0) return bytes;
  }
}

void ZipReader::extract(std::string_view name, const std::string& destination) const {
  Impl::EntryStream entry(*impl_, name);
  const int fd = ::open(destination.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) {
    throw IOError(entry.where() + "cannot be extracted: cannot create " + in_quotes(destination) + ": " +
                  std::strerror(errno) + "; check that its directory exists and is writable");
  }
  try {
    std::vector<char> buffer(std::size_t{256} << 10);
    while (const std::size_t n = entry.read(buffer.data(), buffer.size())) {
      if (!write_all(fd, buffer.data(), n)) {
        throw IOError(entry.where() + "cannot be extracted: cannot write " + in_quotes(destination) + ": " +
                      std::strerror(errno));
      }
    }
  } catch (...) {
    ::close(fd);
    ::unlink(destination.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(destination.c_str());
    throw IOError(entry.where() + "cannot be extracted: cannot write " + in_quotes(destination) + ": " +
                  std::strerror(error));
  }
}

}  // namespace kestrel::io
