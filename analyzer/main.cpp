#include <iostream>
#include <string>
#include <vector>

#include "analyzer/commands/cli.h"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  return perftracker::analyzer::RunCli(args, std::cout, std::cerr);
}
