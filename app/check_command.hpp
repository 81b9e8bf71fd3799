// iodiag check — app/check_command.cpp
#pragma once

#include <CLI/CLI.hpp>

namespace iodiag::cli {

void add_check_command(CLI::App& app);

}  // namespace iodiag::cli
