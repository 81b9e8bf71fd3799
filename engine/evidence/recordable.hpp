// What a live run records of its own evidence: the values a bundle may hold.
//
// A live diagnosis analyses what a replay of its bundle would read
// (app/command_options.hpp as_recorded), and the bundle reader refuses what
// no collector should write (value_bounds.hpp, a series twice, a label longer
// than any). Should a collector ever write such a value anyway, the run
// leaves it out and says so (a warning, and collector.lost_events {collector:
// bundle, what: unrecordable_values}) instead of ending without a verdict:
// one wrong figure must not cost the operator the rest of the window.
#pragma once

#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"

namespace iodiag {

// Removes the metrics whose value a bundle refuses and the second and later
// entries of a series (metrics, facts, histograms: each name with its labels
// once, the first kept), and cuts label values longer than any a collector
// writes. Returns what was done, one line each, for the log.
std::vector<std::string> drop_unrecordable(Evidence& ev);

}  // namespace iodiag
