// Compression of record files: none, GZIP or ZLIB over the whole byte stream, as TFRecord files use.
//
//   io::Compression c = io::compression_from_name("GZIP");           // Compression::gzip
//   std::optional<io::Compression> maybe = io::compression_from_name_or_auto("auto");  // nullopt: detect
//   io::Compression found = io::detect_compression(first_bytes);     // from a file's first bytes
//   io::to_string(io::Compression::zlib);                             // "ZLIB"
//
// Detection looks at the first 12 bytes: a valid TFRecord length header (its masked CRC matches)
// means an uncompressed file, since the first bytes of a plain file can look like a gzip magic or a
// zlib header (a first record of 376 bytes starts with 78 01, a valid zlib header). Otherwise the
// gzip magic 1f 8b means GZIP, a zlib header (CM = 8, (CMF * 256 + FLG) % 31 == 0) means ZLIB, and
// anything else is read as uncompressed.
#pragma once

#include <optional>
#include <string_view>

namespace kestrel::io {

enum class Compression { none, gzip, zlib };

/// "NONE", "GZIP" or "ZLIB" (TensorFlow's compression_type names, with "" shown as "NONE").
std::string_view to_string(Compression compression);

/// Parses "", "NONE", "GZIP" or "ZLIB", in any letter case; throws ValueError listing them otherwise.
Compression compression_from_name(std::string_view name);

/// As compression_from_name, and "auto" (any case) gives nullopt: detect from the file's content.
std::optional<Compression> compression_from_name_or_auto(std::string_view name);

/// The windowBits that zlib's deflateInit2 and inflateInit2 take for GZIP or ZLIB: the largest
/// window (32 KiB), with a gzip wrapper for GZIP.
int zlib_window_bits(Compression compression);

/// The compression of a stream that starts with these bytes (pass at least 12 when the stream has them).
Compression detect_compression(std::string_view first_bytes);

}  // namespace kestrel::io
