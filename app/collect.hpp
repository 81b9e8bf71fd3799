// Running the collectors around one observation window.
#pragma once

#include "collectors/collector.hpp"
#include "engine/evidence/evidence.hpp"

namespace iodiag::cli {

// Starts every collector, waits opts.duration_s (Ctrl-C ends the window early,
// and the shorter window is what gets recorded), finishes them, and returns the
// evidence with host, kernel and the measured window. `show_progress`: the
// caller prints text (not JSON or Markdown); a terminal then shows the
// window's progress on stderr (app/progress.hpp).
Evidence collect_evidence(const CollectOptions& opts, bool show_progress = false);

}  // namespace iodiag::cli
