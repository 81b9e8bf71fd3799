#include "engine/cli/commands.hpp"

namespace iodiag::cli {

void add_diagnose_commands(CLI::App&) {}

}  // namespace iodiag::cli
