// The per-layer table: for each layer, its state, its measured share of the
// latency (when some collector measured it) and its key figures, each read
// from the evidence.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"
#include "engine/triage/verdict.hpp"

namespace iodiag {

// Devices that did I/O in the window, busiest first (at most three).
std::vector<std::string> busy_devices(const Evidence& ev);
// A layer's share of the slow ("slow") or all ("all") traced syscalls' time:
// the syscall collector's class attr.<basis>.<layer>_pct, except that the
// part of the device class the requests spent in the I/O scheduler
// (attr.<basis>.io_scheduler_pct, derived) counts under the block queue.
std::optional<double> layer_share_pct(const Evidence& ev, const std::string& basis, const std::string& layer);
// Key figures of one layer as a short line ("" when there are none).
std::string layer_figures(const Evidence& ev, const std::string& layer);
// Who observed the layer's latency, or why nobody did.
std::string layer_observer(const Evidence& ev, const std::string& layer);
// Rows for every layer, bottom-up; states come from the caller.
std::vector<LayerRow> build_layer_table(const Evidence& ev,
                                        const std::vector<std::pair<std::string, LayerState>>& states);

}  // namespace iodiag
