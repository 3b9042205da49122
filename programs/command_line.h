// The command line of Kestrel's own programs (tutorials, benches, tools): CLI11 behind a small
// facade compiled once, in command_line.cpp. CLI11 defines its validators as objects at namespace
// scope, which every file that includes it compiles anew (about 10 s at -O3); a program that
// includes this header instead compiles none of it.
//
//   programs::CommandLine cli("quickstart", "Kestrel quickstart: a two-layer MLP learns ...");
//   int steps = 2000;
//   cli.add_option("--steps", steps, "SGD steps").range(1, 10'000'000);  // --help shows 2000
//   bool raw = false;
//   cli.add_flag("--raw", raw, "print each record as a JSON string");
//   if (auto exit_code = cli.parse(argc, argv)) return *exit_code;  // --help: 0; a bad flag: non-zero
//
// Subcommands, as git's, each with options of its own:
//
//   programs::Command inspect = cli.add_subcommand("inspect", "print each Example of FILE");
//   inspect.add_option("FILE", file, "TFRecord file").required();  // no dashes: a positional argument
//   cli.require_subcommand();
//   if (auto exit_code = cli.parse(argc, argv)) return *exit_code;
//   if (inspect.parsed()) ...
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

// NOLINTNEXTLINE(readability-identifier-naming): CLI11's namespace, declared as CLI11 names it
namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace kestrel::programs {

/// One option or flag, to say more about it after Command::add_option or add_flag. Each call
/// returns the option again, so calls chain; a bad value makes parse() fail with its message.
class Option {
 public:
  /// The value must lie in [min, max], read as an int or as a double; --help shows the range.
  Option range(int min, int max);
  Option range(double min, double max);
  /// The value must be > 0.
  Option positive();
  /// The value must be >= 0.
  Option non_negative();
  /// The value must be one of `names` (each value, for a list); --help lists them.
  Option choices(const std::vector<std::string>& names);
  /// The value must name an existing file.
  Option existing_file();
  /// The option must be given.
  Option required();
  /// Leaves the option out of --help: for what a program passes to its own child processes.
  Option hidden();
  /// This option and `other` must not be given together; --help says so beside both.
  Option excludes(Option other);
  /// A list option also splits each value at `separator`: "--precisions float32,bfloat16".
  Option delimiter(char separator);

 private:
  friend class Command;
  explicit Option(CLI::Option* option) : option_(option) {}

  CLI::Option* option_;  // owned by its CLI::App
};

/// The options of a program, or of one of its subcommands: a handle on what CommandLine owns.
class Command {
 public:
  /// Adds an option bound to `value`, which parse() sets when the option is given; the value it
  /// holds now is the default, and --help shows it. A name without leading dashes ("FILE") is a
  /// positional argument. T is one of the types instantiated below: a std::vector takes every
  /// value given, a std::optional stays empty when the option is not.
  template <typename T>
  Option add_option(const std::string& name, T& value, const std::string& description);
  /// Adds a flag that sets `value` to true when given.
  Option add_flag(const std::string& name, bool& value, const std::string& description);
  /// Adds a subcommand ("kestrel-records inspect FILE"); the program asks parsed() which was given.
  Command add_subcommand(const std::string& name, const std::string& description);
  /// Makes parse() fail unless exactly one subcommand is given.
  void require_subcommand();
  /// True when this subcommand was given on the command line.
  bool parsed() const;

 protected:
  explicit Command(CLI::App* app) : app_(app) {}

 private:
  CLI::App* app_;
};

// The value types the programs bind, compiled once in command_line.cpp; add a type there and here.
extern template Option Command::add_option(const std::string&, int&, const std::string&);
extern template Option Command::add_option(const std::string&, std::int64_t&, const std::string&);
extern template Option Command::add_option(const std::string&, std::uint64_t&, const std::string&);
extern template Option Command::add_option(const std::string&, double&, const std::string&);
extern template Option Command::add_option(const std::string&, std::string&, const std::string&);
extern template Option Command::add_option(const std::string&, std::vector<std::string>&, const std::string&);
extern template Option Command::add_option(const std::string&, std::optional<std::int64_t>&, const std::string&);

/// A program's command line: its options (and subcommands), and parsing argv into them.
class CommandLine : public Command {
 public:
  /// `program` names the program in --help's usage line, under `description`.
  CommandLine(std::string program, std::string description);
  ~CommandLine();
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  /// Parses argv into the bound variables. Returns an exit code when the program should stop:
  /// 0 after printing --help, CLI11's non-zero code after printing what was wrong on stderr.
  /// Returns nothing when the program should go on.
  std::optional<int> parse(int argc, char** argv);

 private:
  explicit CommandLine(std::unique_ptr<CLI::App> root);

  std::unique_ptr<CLI::App> root_;  // owns the options and the subcommands
};

}  // namespace kestrel::programs
