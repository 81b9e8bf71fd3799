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
// window's progress on stderr (app/progress.hpp). `during_window`, when
// given, runs on a thread of its own from the moment the window opens (the
// caller's own preparation, moved off the collectors' start, which keeps
// every core busy, into the window, which keeps none); the window waits for
// it at its end. An exception from it cuts the window short as soon as it is
// thrown: collection ends, the started collectors are released and the
// exception propagates, with nothing observed returned.
Evidence collect_evidence(const CollectOptions& opts, bool show_progress = false,
                          const std::function<void()>& during_window = {});

}  // namespace iodiag::cli
