// Loading a bundle for a command that reads one (diff, heatmap, report): the
// reason on stderr, prefixed with the command, and exit code 3 when it cannot
// be read.
#pragma once

#include <string>

#include "engine/evidence/evidence.hpp"

namespace iodiag::cli {

// Throws ExitCode{3} after printing "iodiag COMMAND: <why>".
Evidence load_bundle_or_exit(const std::string& command, const std::string& path);

}  // namespace iodiag::cli
