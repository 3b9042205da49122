#include "datasets/builtin/fortunes.h"

#include <utf8proc.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "framework/core/error.h"
#include "framework/io/read_file.h"

namespace kestrel::datasets::fortunes {
namespace {

namespace fs = std::filesystem;

// Where each language's fortunes are. An entry with `files` takes exactly those (the top-level
// folder mixes English, Portuguese and Chinese); one without takes every fortune file of its folder
// (not the .dat indexes, the .u8 links or subfolders such as es/off, whose files are ROT13'd
// offensive fortunes) except `excluded`. Every file of these packages is UTF-8 (checked on Debian
// 12/13), so no transcoding is needed; a fortune that is not valid UTF-8 is skipped.
struct Source {
  const char* package;
  const char* language;
  const char* folder;  // relative to Options::directory
  std::vector<const char*> files;
  std::vector<const char*> excluded;
};

const std::vector<Source>& sources() {
  static const std::vector<Source> table = {
      {"fortunes",
       "en",
       "",
       {"art",         "computers", "cookie", "debian",     "definitions", "disclaimer",    "drugs",   "education",
        "ethnic",      "food",      "goedel", "humorists",  "kids",        "knghtbrd",      "law",     "linux",
        "linuxcookie", "love",      "magic",  "medicine",   "men-women",   "miscellaneous", "news",    "paradoxum",
        "people",      "perl",      "pets",   "platitudes", "politics",    "pratchett",     "science", "songs-poems",
        "sports",      "startrek",  "tao",    "wisdom",     "work",        "zippy"},
       {}},  // not ascii-art (drawings), not translate-me (Latin)
      {"fortunes-min", "en", "", {"fortunes", "literature", "riddles"}, {}},
      // asciiart: drawings; translations: half English; namen, vornamen, warmduscher: one template
      // repeated hundreds of times, which a classifier would learn instead of the language.
      {"fortunes-de", "de", "de", {}, {"asciiart", "translations", "namen", "vornamen", "warmduscher"}},
      {"fortunes-es", "es", "es", {}, {}},
      {"fortunes-it", "it", "it", {}, {"banner"}},  // an ASCII-art banner
      {"fortunes-ru", "ru", "ru", {}, {}},
      {"fortunes-pl", "pl", "pl", {}, {"cows", "newyear", "http"}},  // drawings, English, HTTP status lines
      {"fortunes-cs", "cs", "cs", {}, {"klasik-sk"}},                // Slovak
      {"fortunes-br", "pt", "", {"brasil"}, {}},
      {"fortunes-eo", "eo", "eo", {}, {}},
      {"fortunes-bg", "bg", "bg", {}, {}},
      {"fortunes-ga", "ga", "ga", {}, {}},
      {"fortunes-zh", "zh", "", {"chinese", "song100", "tang300"}, {}},
  };
  return table;
}

enum class Script { latin, cyrillic, han };

Script script_of(std::string_view language) {
  if (language == "ru" || language == "bg") return Script::cyrillic;
  if (language == "zh") return Script::han;
  return Script::latin;
}

bool in_script(std::int32_t cp, Script script) {
  switch (script) {
    case Script::latin: return cp < 0x2B0 || (cp >= 0x1E00 && cp < 0x1F00);
    case Script::cyrillic: return cp >= 0x400 && cp < 0x530;
    case Script::han:
      return (cp >= 0x3400 && cp < 0x4DC0) || (cp >= 0x4E00 && cp < 0xA000) || (cp >= 0xF900 && cp < 0xFB00) ||
             (cp >= 0x20000 && cp < 0x30000);
  }
  return false;
}

[[noreturn]] void missing(const Source& source, const fs::path& path) {
  throw IOError("fortunes: '" + path.string() + "' is missing; install Debian's " + source.package +
                " package (apt-get install " + source.package +
                ", or bash .ci/setup) or point fortunes::Options::directory at its files");
}

// The fortune files of one source, in a fixed order.
std::vector<fs::path> files_of(const Source& source, const fs::path& root) {
  const fs::path folder = root / source.folder;
  std::vector<fs::path> out;
  if (!source.files.empty()) {
    for (const char* name : source.files) {
      fs::path p = folder / name;
      if (!fs::is_regular_file(p)) missing(source, p);
      out.push_back(p);
    }
    return out;
  }
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) missing(source, folder);
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string ext = entry.path().extension().string();
    if (entry.is_symlink() || !entry.is_regular_file() || ext == ".dat" || ext == ".u8" || name.starts_with(".")) {
      continue;
    }
    if (std::any_of(source.excluded.begin(), source.excluded.end(), [&](const char* x) { return name == x; })) continue;
    out.push_back(entry.path());
  }
  if (ec || out.empty()) missing(source, folder);
  std::sort(out.begin(), out.end());
  return out;
}

// Fortunes are separated by lines holding just "%" (some files add "\r" or trailing blanks).
std::vector<std::string_view> split_fortunes(std::string_view content) {
  std::vector<std::string_view> out;
  std::size_t start = 0, pos = 0;
  while (pos <= content.size()) {
    std::size_t end = content.find('\n', pos);
    if (end == std::string_view::npos) end = content.size();
    std::string_view line = content.substr(pos, end - pos);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    if (line == "%") {
      out.push_back(content.substr(start, pos - start));
      start = end + 1;
    }
    pos = end + 1;
  }
  if (start < content.size()) out.push_back(content.substr(start));
  return out;
}

// Drops terminal escape sequences (ESC [ ... final byte), which fortunes-zh uses for colours.
std::string strip_escapes(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\x1b' && i + 1 < raw.size() && raw[i + 1] == '[') {
      i += 2;
      while (i < raw.size() && !(raw[i] >= 0x40 && raw[i] <= 0x7e)) ++i;
      continue;
    }
    out.push_back(raw[i]);
  }
  return out;
}

struct Cleaned {
  std::string text;
  std::int64_t chars = 0;
  std::int64_t letters = 0;
  std::int64_t letters_in_script = 0;
};

// One line of text: attribution lines dropped, runs of blanks (any Unicode space) collapsed,
// control and format characters removed. Empty when the bytes are not valid UTF-8.
Cleaned clean(std::string_view raw, bool keep_attributions, Script script) {
  std::string text = strip_escapes(raw);
  std::string kept;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::size_t first = line.find_first_not_of(" \t\r");
    if (!keep_attributions && first != std::string::npos && line.compare(first, 2, "--") == 0) continue;
    kept += line;
    kept += '\n';
  }
  Cleaned out;
  bool pending_space = false;
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(kept.data());
  for (std::size_t i = 0; i < kept.size();) {
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t n = utf8proc_iterate(bytes + i, static_cast<utf8proc_ssize_t>(kept.size() - i), &cp);
    if (n <= 0) return {};
    const std::string_view piece(kept.data() + i, static_cast<std::size_t>(n));
    i += static_cast<std::size_t>(n);
    const utf8proc_category_t category = utf8proc_category(cp);
    if (cp == '\n' || cp == '\t' || cp == '\r' || cp == '\v' || cp == '\f' || category == UTF8PROC_CATEGORY_ZS) {
      pending_space = !out.text.empty();
      continue;
    }
    if (category == UTF8PROC_CATEGORY_CC || category == UTF8PROC_CATEGORY_CF) continue;
    if (pending_space) {
      out.text += ' ';
      ++out.chars;
      pending_space = false;
    }
    out.text += piece;
    ++out.chars;
    if (category >= UTF8PROC_CATEGORY_LU && category <= UTF8PROC_CATEGORY_LO) {
      ++out.letters;
      if (in_script(cp, script)) ++out.letters_in_script;
    }
  }
  return out;
}

// The cleaned, filtered, deduplicated fortunes of one language, in file order.
std::vector<std::string> read_language(const std::string& language, const Options& options) {
  const Script script = script_of(language);
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  for (const Source& source : sources()) {
    if (language != source.language) continue;
    for (const fs::path& path : files_of(source, options.directory)) {
      const std::string content = io::read_file(path, "fortunes:", "fortune file");
      for (std::string_view raw : split_fortunes(content)) {
        Cleaned c = clean(raw, options.keep_attributions, script);
        // Most letters must be in the language's script: drops the English notes and code
        // listings that some files carry, which would teach a classifier the wrong label.
        const bool length_ok = !c.text.empty() && c.chars >= options.min_chars && c.chars <= options.max_chars;
        if (!length_ok || 2 * c.letters_in_script <= c.letters) continue;
        if (seen.insert(c.text).second) out.push_back(std::move(c.text));
      }
    }
  }
  return out;
}

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t hash_text(std::string_view text) {  // FNV-1a, then mixed
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
  return mix(h);
}

void check_options(const Options& options) {
  auto fraction_ok = [](double f) { return f >= 0.0 && f < 1.0; };
  if (!fraction_ok(options.validation_fraction) || !fraction_ok(options.test_fraction) ||
      options.validation_fraction + options.test_fraction >= 1.0) {
    throw ValueError("fortunes: validation_fraction (" + std::to_string(options.validation_fraction) +
                     ") and test_fraction (" + std::to_string(options.test_fraction) +
                     ") must each be in [0, 1) and leave some texts for training");
  }
  if (options.min_chars < 0 || options.max_chars < options.min_chars || options.max_per_language < 0) {
    throw ValueError("fortunes: need 0 <= min_chars <= max_chars and max_per_language >= 0 (got min_chars " +
                     std::to_string(options.min_chars) + ", max_chars " + std::to_string(options.max_chars) +
                     ", max_per_language " + std::to_string(options.max_per_language) + ")");
  }
}

std::vector<std::string> chosen_languages(const Options& options) {
  if (options.languages.empty()) return {kLanguages.begin(), kLanguages.end()};
  std::unordered_set<std::string> seen;
  for (const std::string& language : options.languages) {
    if (std::find(kLanguages.begin(), kLanguages.end(), language) == kLanguages.end()) {
      std::string known;
      for (const char* l : kLanguages) known += std::string(known.empty() ? "" : ", ") + l;
      throw ValueError("fortunes: unknown language '" + language + "'; choose among " + known);
    }
    if (!seen.insert(language).second) throw ValueError("fortunes: language '" + language + "' is listed twice");
  }
  return options.languages;
}

struct Labelled {
  std::uint64_t order_key;
  std::string text;
  std::int64_t label;
};

bool by_order_key(const Labelled& a, const Labelled& b) {
  return std::tie(a.order_key, a.text) < std::tie(b.order_key, b.text);
}

Split make_split(std::vector<Labelled> items) {
  std::sort(items.begin(), items.end(), by_order_key);
  Split split;
  std::vector<std::int64_t> labels;
  for (Labelled& item : items) {
    split.texts.push_back(std::move(item.text));
    labels.push_back(item.label);
  }
  split.labels = Tensor::from_vector<std::int64_t>(labels, Shape{static_cast<std::int64_t>(labels.size())});
  return split;
}

}  // namespace

data::Dataset Split::to_dataset() const {
  return data::Dataset::from_tensor_slices(data::Element{{"text", data::Strings(texts)}, {"labels", labels}});
}

LanguageId load_language_id(const Options& options) {
  check_options(options);
  LanguageId out;
  out.languages = chosen_languages(options);

  std::vector<std::vector<std::string>> per_language;
  std::unordered_map<std::string, std::int64_t> owner;  // text -> label, -1 when two languages claim it
  for (std::size_t label = 0; label < out.languages.size(); ++label) {
    per_language.push_back(read_language(out.languages[label], options));
    for (const std::string& text : per_language.back()) {
      auto [it, inserted] = owner.emplace(text, static_cast<std::int64_t>(label));
      if (!inserted && it->second != static_cast<std::int64_t>(label)) it->second = -1;
    }
  }

  const std::uint64_t seed_key = mix(options.seed + 0x9e3779b97f4a7c15ULL);
  std::vector<Labelled> train, validation, test;
  for (std::size_t label = 0; label < per_language.size(); ++label) {
    std::vector<Labelled> items;
    for (std::string& text : per_language[label]) {
      if (owner[text] != static_cast<std::int64_t>(label)) continue;
      items.push_back({mix(hash_text(text) ^ seed_key), std::move(text), static_cast<std::int64_t>(label)});
    }
    // The cap keeps the texts with the smallest seeded keys: a uniform sample for any seed.
    if (options.max_per_language > 0 && static_cast<std::int64_t>(items.size()) > options.max_per_language) {
      std::sort(items.begin(), items.end(), by_order_key);
      items.resize(static_cast<std::size_t>(options.max_per_language));
    }
    for (Labelled& item : items) {
      // The split hashes the text alone, so no seed or cap can move a text between splits.
      const double u = static_cast<double>(hash_text(item.text) >> 11) * 0x1.0p-53;
      if (u < options.validation_fraction) {
        validation.push_back(std::move(item));
      } else if (u < options.validation_fraction + options.test_fraction) {
        test.push_back(std::move(item));
      } else {
        train.push_back(std::move(item));
      }
    }
  }
  out.train = make_split(std::move(train));
  out.validation = make_split(std::move(validation));
  out.test = make_split(std::move(test));
  return out;
}

std::vector<std::string> load_english_corpus(const Options& options) {
  check_options(options);
  return read_language("en", options);
}

}  // namespace kestrel::datasets::fortunes
