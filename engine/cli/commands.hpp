// Each subcommand lives in its own file and registers itself on the CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

namespace iodiag::cli {

// diagnose (default), record, replay — engine/cli/diagnose_command.cpp
void add_diagnose_commands(CLI::App& app);

}  // namespace iodiag::cli
