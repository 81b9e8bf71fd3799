// `iodiag report BUNDLE -o report.html` and `iodiag report BEFORE AFTER -o
// diff.html`: the self-contained HTML report (engine/render/report_html.hpp).
#pragma once

#include <CLI/CLI.hpp>

namespace iodiag::cli {

void add_report_command(CLI::App& app);

}  // namespace iodiag::cli
