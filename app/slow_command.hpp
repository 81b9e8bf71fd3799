// `iodiag slow`: a live stream of slow block I/Os with every stage measured
// (Q2G, G2I, I2D, D2C, Q2C), like biosnoop but per btt stage.
#pragma once

#include <CLI/CLI.hpp>

namespace iodiag::cli {

void add_slow_command(CLI::App& app);

}  // namespace iodiag::cli
