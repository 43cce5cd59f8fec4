#include "analyzer/commands/command_line.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <tuple>

#include "analyzer/commands/cli.h"
#include "analyzer/ingest/select.h"

namespace perftracker::analyzer {

CommandLine::CommandLine(const std::string& command, const std::string& about)
    : command_(command), app_(std::make_unique<CLI::App>(about, "perftracker " + command)) {
  // Scripts repeat an option to override an earlier one (a wrapper's default, then the user's).
  app_->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app_->get_formatter()->column_width(26);
}

CommandLine::~CommandLine() = default;

void CommandLine::Argument(const std::string& name, std::string* value, const std::string& help) {
  app_->add_option(name, *value, help)->required()->type_name("");
}

void CommandLine::Arguments(const std::string& name, std::vector<std::string>* values,
                            int at_least, const std::string& help) {
  app_->add_option(name, *values, help)
      ->required()
      ->expected(at_least, CLI::detail::expected_max_vector_size)
      ->type_name("");
}

void CommandLine::Option(const std::string& names, std::string* value, const std::string& help) {
  app_->add_option(names, *value, help)->capture_default_str()->type_name("PATH");
}

void CommandLine::Option(const std::string& names, int* value, const std::string& help) {
  app_->add_option(names, *value, help)->capture_default_str()->type_name("INT");
}

void CommandLine::Option(const std::string& names, size_t* value, const std::string& help) {
  app_->add_option(names, *value, help)->capture_default_str()->type_name("UINT");
}

void CommandLine::Option(const std::string& names, double* value, const std::string& help) {
  app_->add_option(names, *value, help)->capture_default_str()->type_name("FLOAT");
}

void CommandLine::Flag(const std::string& names, bool* value, const std::string& help) {
  app_->add_flag(names, *value, help);
}

void CommandLine::Option(const std::string& names, const std::string& value_name, Parser parse,
                         const std::string& help, const std::string& shown_default) {
  CLI::Option* o = app_->add_option_function<std::string>(
      names,
      [parse = std::move(parse)](const std::string& v) {
        const std::string why = parse(v);
        if (!why.empty()) throw CLI::ValidationError(why);
      },
      help);
  o->type_name(value_name);
  if (!shown_default.empty()) o->default_str(shown_default);
}

void CommandLine::Require(const std::string& name) { app_->get_option(name)->required(); }

void CommandLine::Positive(const std::string& name) {
  app_->get_option(name)->check(CLI::PositiveNumber);
}

void CommandLine::NonNegative(const std::string& name) {
  app_->get_option(name)->check(CLI::NonNegativeNumber);
}

std::optional<int> CommandLine::Parse(std::span<const std::string> args, std::ostream& out,
                                      std::ostream& err) {
  // CLI11 consumes its argument vector from the back.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app_->parse(reversed);
    return std::nullopt;
  } catch (const CLI::CallForHelp&) {
    out << app_->help();
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    std::string why = e.what();
    // CLI11 checks required arguments before it reports arguments it does not know; a misspelt
    // option is the more useful thing to say.
    const std::vector<std::string> extra = app_->remaining();
    if (!extra.empty() && extra[0].starts_with("-")) why = "unknown option " + extra[0];
    std::replace(why.begin(), why.end(), '\n', ' ');
    err << "perftracker " << command_ << ": " << why << " (see perftracker " << command_
        << " --help)\n";
    return kExitUsage;
  }
}

void AddSelectionOptions(CommandLine& cl, WindowSelection* selection) {
  for (const auto& [flag, value, help] :
       {std::tuple{"--last", "N", "each rank's newest N windows"},
        std::tuple{"--since", "DURATION",
                   "windows that ended that long before each rank's newest (90s, 15m, 2h)"},
        std::tuple{"--iterations", "A:B", "windows starting at iterations A to B-1 (A: or :B)"}}) {
    cl.Option(
        flag, value,
        [flag = std::string(flag), selection](const std::string& v) {
          std::string error;
          ParseSelectionFlag(flag, v, selection, &error);
          return error;
        },
        help);
  }
}

}  // namespace perftracker::analyzer
