// Each subcommand lives in its own file and registers itself on the CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

namespace iodiag::cli {

// A subcommand's callback ends the program with this exit code by throwing it
// (CLI11 callbacks return void). main() catches it.
struct ExitCode {
    int code = 0;
};

// diagnose (default), record, replay — app/diagnose_command.cpp
void add_diagnose_commands(CLI::App& app);
// watch, the flight recorder — app/watch_command.cpp
void add_watch_command(CLI::App& app);

}  // namespace iodiag::cli
