// Latency heatmaps (seed 000 §5): x = time (one column per interval of the
// recording's series), y = log2 latency bucket, colour = how many operations
// fell in that bucket in that interval. Where a window histogram hides a burst,
// a bimodal hit/miss pattern or a stall that starts at second 40, a heatmap
// shows it at a glance.
//
// Rendered as a self-contained SVG (no script, no external reference) or as
// Unicode blocks for a terminal. Colour follows the logarithm of the count
// (one slow I/O and a thousand fast ones both stay visible); an empty cell is
// drawn apart from the lowest count.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"

namespace iodiag {

struct Heatmap {
    std::string metric;        // series name, e.g. "block.d2c_us"
    Labels labels;             // e.g. {device: vda}
    std::string unit;          // of the bucket bounds, e.g. "us"
    double start_unix = 0;     // of interval 0
    double interval_s = 0;     // of one column (per_column recorded intervals)
    size_t per_column = 1;     // recorded intervals summed into each column (merge_intervals)
    double window_s = 0;       // the window's length (the last interval may be shorter)
    size_t intervals = 0;      // columns
    // Rows shown: buckets bucket_lo..bucket_hi (bucket_hi < bucket_lo: no
    // operation at all, nothing to draw).
    int bucket_lo = 0;
    int bucket_hi = -1;
    std::vector<std::vector<uint64_t>> counts;   // [interval][bucket - bucket_lo]
    uint64_t max_count = 0;                      // the colour scale's top
    uint64_t total = 0;
    Provenance provenance;

    size_t rows() const { return bucket_hi >= bucket_lo ? static_cast<size_t>(bucket_hi - bucket_lo + 1) : 0; }
    bool empty() const { return total == 0; }
    uint64_t count(size_t interval, int bucket) const;
    // "block.d2c_us{device=vda}"
    std::string title() const;
};

// The heatmap of one histogram series of `series`: rows from the lowest to
// the highest bucket any interval uses. `window_s` is the recording's window
// (Evidence::window.duration_s): the last interval ends there.
Heatmap make_heatmap(const Series& series, const HistogramSeries& h, double window_s);

// A long recording drawn in at most `max_columns` columns: neighbouring
// intervals summed, per_column of them each (the last column may hold fewer).
// Unchanged when it already fits.
Heatmap merge_intervals(const Heatmap& h, size_t max_columns);

// Same rows and same colour scale for two heatmaps shown side by side (before
// / after a fix), so that equal colours mean equal counts.
void share_scale(Heatmap& a, Heatmap& b);

struct HeatmapSvgOptions {
    double cell_width = 0;   // 0: fit the plot into ~720 px (at least 2 px per interval)
    double cell_height = 14;
    std::string css_class = "heatmap";   // on the <svg> element
    bool standalone = true;   // XML declaration and xmlns (a file); false: inline in HTML
    size_t max_columns = 600; // longer recordings: intervals merged (merge_intervals)
};

// One <rect class="cell"> per column × bucket row (rows() × intervals of
// them, empty cells included, with class "cell empty"; data-columns,
// data-per-column and data-rows on the <svg> say the grid), each with a <title>
// (interval, bucket, count); axes with units, a colour legend (log scale,
// the empty-cell swatch apart). An empty heatmap is an SVG that says so.
std::string render_heatmap_svg(const Heatmap& h, const HeatmapSvgOptions& opts = {});

struct HeatmapTerminalOptions {
    bool colour = false;      // ANSI 256 colours (only on a tty)
    size_t max_columns = 100; // more intervals than this: neighbouring intervals are summed per column
};

// Rows of Unicode blocks, slowest bucket on top; without colour the shade
// (░ ▒ ▓ █) carries the count, with colour the colour does; an empty cell is a
// blank. Axis labels with units and a legend line.
std::string render_heatmap_terminal(const Heatmap& h, const HeatmapTerminalOptions& opts = {});

// The colour of a count on the scale (log); "#f2f2f2" for 0. Exposed for the
// legend of other charts and for tests.
std::string heatmap_colour(uint64_t count, uint64_t max_count);

}  // namespace iodiag
