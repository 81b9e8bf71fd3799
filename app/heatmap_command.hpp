// `iodiag heatmap`: a latency heatmap (time × log2 latency bucket, colour =
// count) of one histogram series, from a recorded bundle or from a live
// window, as a self-contained SVG file or in the terminal.
#pragma once

#include <CLI/CLI.hpp>

namespace iodiag::cli {

void add_heatmap_command(CLI::App& app);

}  // namespace iodiag::cli
