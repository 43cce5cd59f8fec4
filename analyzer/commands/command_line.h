// One command's options and arguments, parsed with CLI11: `--opt value` and `--opt=value`,
// `COMMAND --help` (the options with their defaults, on stdout, exit 0), and one line on stderr
// with exit 2 for an unknown option or a bad value. CLI11 stays inside command_line.cpp: its
// headers are large, and each command file would compile them again.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace perftracker::analyzer {

class CommandLine {
 public:
  // `command`: "analyze"; `about`: one line for --help.
  CommandLine(const std::string& command, const std::string& about);
  ~CommandLine();
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  // Positional arguments, in order; each is required.
  void Argument(const std::string& name, std::string* value, const std::string& help);
  // The remaining positional arguments, at least `at_least` of them.
  void Arguments(const std::string& name, std::vector<std::string>* values, int at_least,
                 const std::string& help);

  // `names`: "--json", or "-o,--output". The value's current content is the default shown;
  // a string option is a PATH.
  void Option(const std::string& names, std::string* value, const std::string& help);
  void Option(const std::string& names, int* value, const std::string& help);
  void Option(const std::string& names, size_t* value, const std::string& help);
  void Option(const std::string& names, double* value, const std::string& help);
  void Flag(const std::string& names, bool* value, const std::string& help);

  // An option whose value `parse` checks and stores: it returns "" when the value is good, else
  // the one-line reason (shown as is). `shown_default` is what --help prints as the default.
  using Parser = std::function<std::string(const std::string& value)>;
  void Option(const std::string& names, const std::string& value_name, Parser parse,
              const std::string& help, const std::string& shown_default = "");

  // The option named (one of its names, as given) must be given / must be a number above 0 / at
  // least 0.
  void Require(const std::string& name);
  void Positive(const std::string& name);
  void NonNegative(const std::string& name);

  // nullopt: parsed, go on. Otherwise the command's exit code: kExitOk after printing --help on
  // `out`, kExitUsage after one line "perftracker COMMAND: why" on `err`.
  std::optional<int> Parse(std::span<const std::string> args, std::ostream& out,
                           std::ostream& err);

 private:
  std::string command_;
  std::unique_ptr<CLI::App> app_;
};

struct WindowSelection;

// --last N, --since DURATION and --iterations A:B, into *selection (analyze, reduce).
void AddSelectionOptions(CommandLine& cl, WindowSelection* selection);

}  // namespace perftracker::analyzer
