#include "bench/child_process.h"

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace kestrel::bench {

double status_mb(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  // Lines read "VmHWM:   123456 kB".
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;
  }
  return 0.0;
}

std::vector<Record> records_from_child(Harness& harness, const std::string& what, const std::vector<std::string>& args,
                                       const std::vector<std::string>& launcher) {
  std::string command;
  for (const std::string& part : launcher) command += shell_quote(part) + " ";
  command += shell_quote(std::filesystem::read_symlink("/proc/self/exe").string());
  for (const std::string& arg : args) command.append(" ").append(shell_quote(arg));
  command += " --repeats " + std::to_string(harness.options().repeats) + " --warmup " +
             std::to_string(harness.options().warmup);
  std::FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  if (pipe != nullptr) {
    char chunk[4096];
    while (std::size_t n = std::fread(chunk, 1, sizeof chunk, pipe)) output.append(chunk, n);
  }
  const int status = pipe != nullptr ? pclose(pipe) : -1;
  if (status != 0) {
    const std::string why =
        status != -1 && WIFEXITED(status) ? "exited with " + std::to_string(WEXITSTATUS(status)) : "did not finish";
    harness.note(what + " failed: its child process " + why + " (its error is above)");
    return {};
  }
  std::vector<Record> records;
  std::istringstream lines(output);
  std::string line;
  try {
    while (std::getline(lines, line)) {
      if (!line.empty()) records.push_back(record_from_json(Json::parse(line)));
    }
  } catch (const nlohmann::json::exception& e) {
    harness.note(what + " failed: the child printed something other than records (" + std::string(e.what()) + ")");
    return {};
  }
  if (records.empty()) harness.note(what + " failed: the child printed no record");
  return records;
}

std::optional<Record> measure_in_child(Harness& harness, const std::string& label,
                                       const std::vector<std::string>& args) {
  std::vector<Record> records = records_from_child(harness, label, args);
  if (records.size() > 1) {
    harness.note(label + " failed: the child printed " + std::to_string(records.size()) + " records, not one");
  }
  if (records.size() != 1) return std::nullopt;
  return records.front();
}

void print_child_record(const Record& record) { std::cout << to_json(record).dump() << std::endl; }

}  // namespace kestrel::bench
