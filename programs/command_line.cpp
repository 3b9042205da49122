#include "programs/command_line.h"

#include <CLI/CLI.hpp>

namespace kestrel::programs {

Option Option::range(int min, int max) {
  option_->check(CLI::Range(min, max));
  return *this;
}

Option Option::range(double min, double max) {
  option_->check(CLI::Range(min, max));
  return *this;
}

Option Option::positive() {
  option_->check(CLI::PositiveNumber);
  return *this;
}

Option Option::non_negative() {
  option_->check(CLI::NonNegativeNumber);
  return *this;
}

Option Option::choices(const std::vector<std::string>& names) {
  option_->check(CLI::IsMember(names));
  return *this;
}

Option Option::existing_file() {
  option_->check(CLI::ExistingFile);
  return *this;
}

Option Option::required() {
  option_->required();
  return *this;
}

Option Option::hidden() {
  option_->group("");  // CLI11 leaves the options of the unnamed group out of --help
  return *this;
}

Option Option::excludes(Option other) {
  option_->excludes(other.option_);
  return *this;
}

Option Option::delimiter(char separator) {
  option_->delimiter(separator);
  return *this;
}

template <typename T>
Option Command::add_option(const std::string& name, T& value, const std::string& description) {
  // Every option shows its default in --help: the value it is bound to holds it now.
  return Option(app_->add_option(name, value, description)->capture_default_str());
}

template Option Command::add_option(const std::string&, int&, const std::string&);
template Option Command::add_option(const std::string&, std::int64_t&, const std::string&);
template Option Command::add_option(const std::string&, std::uint64_t&, const std::string&);
template Option Command::add_option(const std::string&, double&, const std::string&);
template Option Command::add_option(const std::string&, std::string&, const std::string&);
template Option Command::add_option(const std::string&, std::vector<std::string>&, const std::string&);
template Option Command::add_option(const std::string&, std::optional<std::int64_t>&, const std::string&);

Option Command::add_flag(const std::string& name, bool& value, const std::string& description) {
  return Option(app_->add_flag(name, value, description));
}

Command Command::add_subcommand(const std::string& name, const std::string& description) {
  return Command(app_->add_subcommand(name, description));
}

void Command::require_subcommand() { app_->require_subcommand(1); }

bool Command::parsed() const { return app_->parsed(); }

CommandLine::CommandLine(std::string program, std::string description)
    : CommandLine(std::make_unique<CLI::App>(std::move(description), std::move(program))) {}

// The base holds the App's address before root_ takes it over: the App itself never moves.
CommandLine::CommandLine(std::unique_ptr<CLI::App> root) : Command(root.get()), root_(std::move(root)) {}

CommandLine::~CommandLine() = default;

std::optional<int> CommandLine::parse(int argc, char** argv) {
  try {
    root_->parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return root_->exit(e);  // prints --help, or the error, as CLI11_PARSE does
  }
  return std::nullopt;
}

}  // namespace kestrel::programs
