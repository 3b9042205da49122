// A whole file in memory, for the readers of small files that parse all of it at once
// (vocabularies, tokenizer.json, training corpora, the fortunes).
//
//   std::string text = io::read_file(path, "[WordPieceTokenizer]", "vocab file");
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace kestrel::io {

/// The bytes of the file at `path`. A file that cannot be opened or read raises IOError
/// "<reader> cannot open <what> '<path>': <the system's reason>" (or "cannot read"), where
/// `reader` names the caller and `what` the file's role.
std::string read_file(const std::filesystem::path& path, std::string_view reader, std::string_view what);

}  // namespace kestrel::io
