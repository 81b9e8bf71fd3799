// Which histogram series to draw: the one a user asks for by metric and labels
// (`iodiag heatmap --metric block.d2c_us --device vda`), and the set worth a
// picture in a report or next to a ticket.
#pragma once

#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"

namespace iodiag {

struct HeatmapQuery {
    std::string metric;   // "" = the default: block.d2c_us, else syscall.latency_us, else the busiest
    Labels labels;        // each must match; other labels of the series are free
};

struct HeatmapLookup {
    const HistogramSeries* series = nullptr;
    std::string error;   // when series is null: what is wrong and the names that exist
    std::string note;    // when a choice was made among several matches
};

// Among the series matching the query: the one whose labels equal the query's,
// else the one with the fewest labels (the aggregate before a per-op split),
// then the most operations. No match: an error naming the metrics (and for a
// known metric the label values) that exist.
HeatmapLookup find_heatmap_series(const Series& series, const HeatmapQuery& query);

// "block.d2c_us {device: loop0, vda}\nsyscall.latency_us {op: read, write}":
// one line per histogram series name with the values of each label key.
std::string describe_heatmap_series(const Series& series);

// The histogram series a report shows: for each name, the series with the
// smallest set of label keys (block.d2c_us per device, not per device and
// op; syscall.latency_us per op), those with operations first by count, at
// most `per_name` of each name; syscall.* first, then block.*, then the rest.
// `left_out` (optional) receives "name{labels}" of the ones over the limit.
std::vector<const HistogramSeries*> report_heatmap_series(const Series& series, size_t per_name,
                                                          std::vector<std::string>* left_out = nullptr);

}  // namespace iodiag
