// The charts of the HTML report besides heatmaps: each layer's share of the
// traced syscall time per interval (stacked, from the series layer.time_us
// {layer}), and a small line per value series (PSI, vmstat, diskstats, event
// counts). Inline SVG, no script: the report opens from a file, offline.
#pragma once

#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"

namespace iodiag {

// The colour of a layer in every chart (Okabe-Ito, colour-blind safe); grey
// for a name that is not a layer.
std::string layer_colour(const std::string& layer);

// Per-interval share of each layer in the total of `metric` ("layer.time_us" or
// "layer.slow_time_us"): one column per interval, stacked bottom-up in the
// order of the I/O stack (device at the bottom), each segment a
// <rect class="share" data-layer="...">; an interval without any time is a
// <rect class="share-none">. Above it, the total per interval. Empty string
// when the series has no such metric.
std::string render_share_chart(const Series& series, const std::string& metric, double window_s);

// Each layer's share of the whole window's total of `metric` (pct), in stack
// order; empty when absent. For the legend and the tests.
std::vector<std::pair<std::string, double>> window_layer_shares(const Series& series, const std::string& metric);

// A small line chart of one value series (x: interval, y: value from 0 or
// the minimum to the maximum), with its own <title>.
std::string render_sparkline(const Series& series, const ValueSeries& v, double width = 240, double height = 34);

}  // namespace iodiag
