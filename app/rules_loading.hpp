// Loading the rule set for a command that analyses evidence (diagnose, record,
// replay, diff): the rules directory found as data_dirs.hpp says, checked
// against the full metric catalog.
#pragma once

#include <string>

#include "engine/rules/rules.hpp"

namespace iodiag::cli {

// Prints the loader's diagnostics on stderr; ends the program with exit code 3
// (throws ExitCode) when the rules do not load.
RuleSet load_rules_or_exit(const std::string& explicit_dir);

}  // namespace iodiag::cli
