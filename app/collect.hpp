// Running the collectors around one observation window.
#pragma once

#include <functional>

#include "collectors/collector.hpp"
#include "engine/evidence/evidence.hpp"

namespace iodiag::cli {

// Starts every collector, waits opts.duration_s (Ctrl-C ends the window early,
// and the shorter window is what gets recorded), finishes them, and returns the
// evidence with host, kernel and the measured window. `show_progress`: the
// caller prints text (not JSON or Markdown); a terminal then shows the
// window's progress on stderr (app/progress.hpp). `before_window`, when
// given, runs once every collector has started and before the window opens
// (it waits for the caller's own preparation, overlapped with the collectors'
// start); an exception from it ends collection before anything is observed,
// and the started collectors are released.
Evidence collect_evidence(const CollectOptions& opts, bool show_progress = false,
                          const std::function<void()>& before_window = {});

}  // namespace iodiag::cli
