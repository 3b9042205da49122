// programs::CommandLine parses as the programs rely on: typed values, defaults kept and shown,
// every check turning a bad value into a non-zero exit code, --help exiting 0, positionals,
// required options, subcommands and options that exclude each other.
#include "programs/command_line.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace kestrel::programs {
namespace {

struct Outcome {
  std::optional<int> exit_code;  // nothing: the program goes on
  std::string out;               // what parse printed: --help
  std::string err;               // and what was wrong
};

// Parses args as main would receive them after the program's name, capturing what parse prints.
Outcome parse(CommandLine& cli, std::vector<std::string> args) {
  args.insert(args.begin(), "program");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  Outcome run;
  run.exit_code = cli.parse(static_cast<int>(argv.size()), argv.data());
  run.out = ::testing::internal::GetCapturedStdout();
  run.err = ::testing::internal::GetCapturedStderr();
  return run;
}

// One option of each type the programs bind, with defaults that differ from any value parsed.
struct Typed {
  int count = 3;
  std::int64_t big = 7;
  std::uint64_t seed = 11;
  double rate = 0.5;
  std::string name = "kestrel";
  std::vector<std::string> names = {"a", "b"};
  std::optional<std::int64_t> limit;
  bool verbose = false;
  CommandLine cli{"program", "A program with one option of each type"};

  Typed() {
    cli.add_option("--count", count, "an int").range(1, 10);
    cli.add_option("--big", big, "an int64");
    cli.add_option("--seed", seed, "a uint64");
    cli.add_option("--rate", rate, "a double");
    cli.add_option("--name", name, "a string");
    cli.add_option("--names", names, "a list").delimiter(',');
    cli.add_option("--limit", limit, "empty unless given");
    cli.add_flag("--verbose", verbose, "a flag");
  }
};

TEST(CommandLine, ParsesEachTypeItBinds) {
  Typed t;
  const Outcome run =
      parse(t.cli, {"--count", "4", "--big", "5000000000", "--seed", "18446744073709551615", "--rate", "0.25", "--name",
                    "other", "--names", "x,y", "--names", "z", "--limit", "9", "--verbose"});
  EXPECT_FALSE(run.exit_code.has_value()) << run.err;
  EXPECT_EQ(t.count, 4);
  EXPECT_EQ(t.big, 5'000'000'000);
  EXPECT_EQ(t.seed, std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(t.rate, 0.25);
  EXPECT_EQ(t.name, "other");
  EXPECT_EQ(t.names, (std::vector<std::string>{"x", "y", "z"})) << "split at the delimiter, and each repeat added";
  EXPECT_EQ(t.limit, 9);
  EXPECT_TRUE(t.verbose);
}

TEST(CommandLine, KeepsTheDefaultsOfOptionsNotGiven) {
  Typed t;
  const Outcome run = parse(t.cli, {});
  EXPECT_FALSE(run.exit_code.has_value()) << run.err;
  EXPECT_EQ(t.count, 3);
  EXPECT_EQ(t.big, 7);
  EXPECT_EQ(t.seed, 11u);
  EXPECT_EQ(t.rate, 0.5);
  EXPECT_EQ(t.name, "kestrel");
  EXPECT_EQ(t.names, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(t.limit.has_value());
  EXPECT_FALSE(t.verbose);
}

TEST(CommandLine, HelpPrintsEveryOptionWithItsDefaultAndExitsZero) {
  Typed t;
  const Outcome run = parse(t.cli, {"--help"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.out.find("A program with one option of each type"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("Usage: program [OPTIONS]"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("--count INT:INT in [1 - 10]=3"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("--seed UINT=11"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("--rate FLOAT=0.5"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("--name TEXT=kestrel"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("--names TEXT=[a,b]"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("--limit INT "), std::string::npos) << "no default for an empty optional:\n" << run.out;
  EXPECT_NE(run.out.find("--verbose"), std::string::npos) << run.out;
  EXPECT_EQ(t.count, 3) << "--help sets nothing";
}

TEST(CommandLine, AHiddenOptionParsesButStaysOutOfHelp) {
  std::string child;
  CommandLine cli("program", "");
  cli.add_option("--child", child, "internal").hidden();
  EXPECT_EQ(parse(cli, {"--help"}).out.find("--child"), std::string::npos);
  EXPECT_FALSE(parse(cli, {"--child", "bert_tiny"}).exit_code.has_value());
  EXPECT_EQ(child, "bert_tiny");
}

TEST(CommandLine, FailsWithANonZeroCodeOnAnUnknownOptionOrAValueOfTheWrongType) {
  Typed t;
  const Outcome unknown = parse(t.cli, {"--counts", "4"});
  ASSERT_TRUE(unknown.exit_code.has_value());
  EXPECT_NE(*unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("--counts"), std::string::npos) << unknown.err;

  const Outcome not_a_number = parse(t.cli, {"--rate", "fast"});
  ASSERT_TRUE(not_a_number.exit_code.has_value());
  EXPECT_NE(*not_a_number.exit_code, 0);
  EXPECT_NE(not_a_number.err.find("--rate"), std::string::npos) << not_a_number.err;
}

// Each check, on an option of its own: the values it accepts and the ones it rejects.
struct CheckCase {
  std::string flag;
  std::vector<std::string> accepted;
  std::vector<std::string> rejected;
};

TEST(CommandLine, EachCheckAcceptsGoodValuesAndRejectsBadOnesWithANonZeroCode) {
  const std::string existing = ::testing::TempDir() + "command_line_test_existing.txt";
  std::ofstream(existing) << "x\n";
  const std::vector<CheckCase> cases = {
      {"--int-range", {"1", "10"}, {"0", "11", "2.5"}},  {"--double-range", {"0.0", "0.95"}, {"-0.1", "0.96"}},
      {"--positive", {"1", "0.001"}, {"0", "-1"}},       {"--non-negative", {"0", "5"}, {"-1"}},
      {"--choice", {"sgd", "adam"}, {"rmsprop", "SGD"}}, {"--file", {existing}, {existing + ".missing"}},
      {"--choices", {"sgd,adam"}, {"sgd,rmsprop"}},
  };
  for (const CheckCase& c : cases) {
    for (bool accept : {true, false}) {
      for (const std::string& value : accept ? c.accepted : c.rejected) {
        SCOPED_TRACE(c.flag + " " + value);
        int int_range = 5;
        double double_range = 0.5;
        double positive = 1;
        std::int64_t non_negative = 0;
        std::string choice = "sgd";
        std::string file;
        std::vector<std::string> choices;
        CommandLine cli("program", "");
        cli.add_option("--int-range", int_range, "").range(1, 10);
        cli.add_option("--double-range", double_range, "").range(0.0, 0.95);
        cli.add_option("--positive", positive, "").positive();
        cli.add_option("--non-negative", non_negative, "").non_negative();
        cli.add_option("--choice", choice, "").choices({"sgd", "adam"});
        cli.add_option("--file", file, "").existing_file();
        cli.add_option("--choices", choices, "").delimiter(',').choices({"sgd", "adam"});
        const Outcome run = parse(cli, {c.flag, value});
        if (accept) {
          EXPECT_FALSE(run.exit_code.has_value()) << run.err;
        } else {
          ASSERT_TRUE(run.exit_code.has_value());
          EXPECT_NE(*run.exit_code, 0);
          EXPECT_NE(run.err.find(c.flag), std::string::npos) << "names the option:\n" << run.err;
        }
      }
    }
  }
}

TEST(CommandLine, PositionalsTakeTheirValuesInOrderAndRequiredOnesMustBeGiven) {
  std::string in, out, compression = "none";
  CommandLine cli("program", "");
  cli.add_option("IN", in, "read from").required();
  cli.add_option("OUT", out, "write to").required();
  cli.add_option("--compression", compression, "");

  const Outcome missing = parse(cli, {"a.jsonl"});
  ASSERT_TRUE(missing.exit_code.has_value());
  EXPECT_NE(*missing.exit_code, 0);
  EXPECT_NE(missing.err.find("OUT is required"), std::string::npos) << missing.err;

  EXPECT_FALSE(parse(cli, {"a.jsonl", "--compression", "gzip", "b.tfrecord"}).exit_code.has_value());
  EXPECT_EQ(in, "a.jsonl");
  EXPECT_EQ(out, "b.tfrecord");
  EXPECT_EQ(compression, "gzip");
}

// kestrel-records' shape: two subcommands, each with its own options of the same name.
struct Records {
  std::string file, in, out, compression_in = "auto", compression_out = "none";
  CommandLine cli{"kestrel-records", ""};
  Command inspect = cli.add_subcommand("inspect", "print each Example");
  Command write = cli.add_subcommand("from-jsonl", "write a TFRecord file");

  Records() {
    cli.require_subcommand();
    inspect.add_option("FILE", file, "").required();
    inspect.add_option("--compression", compression_in, "");
    write.add_option("IN", in, "").required();
    write.add_option("OUT", out, "").required();
    write.add_option("--compression", compression_out, "");
  }
};

TEST(CommandLine, TellsWhichSubcommandWasGivenWithItsOwnOptions) {
  Records inspect;
  EXPECT_FALSE(parse(inspect.cli, {"inspect", "train.tfrecord", "--compression", "gzip"}).exit_code.has_value());
  EXPECT_TRUE(inspect.inspect.parsed());
  EXPECT_FALSE(inspect.write.parsed());
  EXPECT_EQ(inspect.file, "train.tfrecord");
  EXPECT_EQ(inspect.compression_in, "gzip");
  EXPECT_EQ(inspect.compression_out, "none");

  Records write;
  EXPECT_FALSE(parse(write.cli, {"from-jsonl", "a.jsonl", "b.tfrecord"}).exit_code.has_value());
  EXPECT_FALSE(write.inspect.parsed());
  EXPECT_TRUE(write.write.parsed());
  EXPECT_EQ(write.in, "a.jsonl");
  EXPECT_EQ(write.out, "b.tfrecord");
}

TEST(CommandLine, FailsWithoutASubcommandOrWithoutItsRequiredPositional) {
  Records none;
  const Outcome no_subcommand = parse(none.cli, {});
  ASSERT_TRUE(no_subcommand.exit_code.has_value());
  EXPECT_NE(*no_subcommand.exit_code, 0);
  EXPECT_NE(no_subcommand.err.find("subcommand"), std::string::npos) << no_subcommand.err;

  Records no_file;
  const Outcome missing = parse(no_file.cli, {"inspect"});
  ASSERT_TRUE(missing.exit_code.has_value());
  EXPECT_NE(*missing.exit_code, 0);
  EXPECT_NE(missing.err.find("FILE is required"), std::string::npos) << missing.err;

  Records help;
  EXPECT_EQ(parse(help.cli, {"inspect", "--help"}).exit_code, 0) << "--help needs no FILE";
}

TEST(CommandLine, OptionsThatExcludeEachOtherFailTogetherAndWorkAlone) {
  std::string vocab, json;
  CommandLine cli("program", "");
  Option vocab_option = cli.add_option("--vocab", vocab, "");
  vocab_option.excludes(cli.add_option("--tokenizer-json", json, ""));

  const Outcome both = parse(cli, {"--vocab", "v.txt", "--tokenizer-json", "t.json"});
  ASSERT_TRUE(both.exit_code.has_value());
  EXPECT_NE(*both.exit_code, 0);
  EXPECT_NE(both.err.find("excludes"), std::string::npos) << both.err;

  EXPECT_FALSE(parse(cli, {"--tokenizer-json", "t.json"}).exit_code.has_value());
  EXPECT_EQ(json, "t.json");
  EXPECT_NE(parse(cli, {"--help"}).out.find("--tokenizer-json TEXT Excludes: --vocab"), std::string::npos)
      << "--help says so beside both";
}

}  // namespace
}  // namespace kestrel::programs
