#include "engine/render/heatmap.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>

#include "engine/evidence/format.hpp"
#include "engine/render/report_markup.hpp"

namespace iodiag {

namespace {

// Viridis, reversed: few operations light (yellow), many dark (purple), so the
// dense band stands out on a light page; perceptually uniform and readable by
// the colour-blind.
constexpr std::array<std::array<int, 3>, 9> kPalette{{{0xfd, 0xe7, 0x25}, {0xad, 0xdc, 0x30}, {0x5e, 0xc9, 0x62},
                                                      {0x28, 0xae, 0x80}, {0x21, 0x91, 0x8c}, {0x2c, 0x72, 0x8e},
                                                      {0x3b, 0x52, 0x8b}, {0x47, 0x2d, 0x7b}, {0x44, 0x01, 0x54}}};
const char* const kEmptyFill = "#f2f2f2";

// Position of a count on the colour scale, 0..1 (log: 1 of 1000 is ~0.1).
double scale_position(uint64_t count, uint64_t max_count) {
    if (count == 0 || max_count == 0) return 0;
    return std::clamp(std::log1p(static_cast<double>(count)) / std::log1p(static_cast<double>(max_count)), 0.0, 1.0);
}

std::array<int, 3> palette_rgb(double t) {
    const double x = std::clamp(t, 0.0, 1.0) * (kPalette.size() - 1);
    const size_t i = std::min(static_cast<size_t>(x), kPalette.size() - 2);
    const double f = x - static_cast<double>(i);
    std::array<int, 3> rgb{};
    for (int k = 0; k < 3; ++k)
        rgb[k] = static_cast<int>(std::lround(kPalette[i][k] + (kPalette[i + 1][k] - kPalette[i][k]) * f));
    return rgb;
}

std::string hex(const std::array<int, 3>& rgb) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
    return buf;
}

// The smallest count that reaches scale position t.
uint64_t count_at(double t, uint64_t max_count) {
    const double c = std::expm1(t * std::log1p(static_cast<double>(max_count)));
    return std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(c - 1e-9)));
}

// Start and end (seconds since the window's start) of an interval; the last
// one ends with the window.
std::pair<double, double> interval_span(const Heatmap& h, size_t i) {
    const double a = static_cast<double>(i) * h.interval_s;
    double b = a + h.interval_s;
    if (i + 1 == h.intervals && h.window_s > a) b = std::min(b, h.window_s);
    return {a, b};
}

std::string bucket_range(const Heatmap& h, int b) {
    return format_bound(Log2Histogram::bucket_lo(b), h.unit) + "–" + format_bound(Log2Histogram::bucket_hi(b) + 1, h.unit);
}

std::string axis_unit_title(const std::string& unit) {
    if (unit == "us" || unit == "ns" || unit == "ms") return "latency (log2 buckets, lower bound)";
    return unit + " (log2 buckets, lower bound)";
}

}  // namespace

uint64_t Heatmap::count(size_t interval, int bucket) const {
    if (interval >= counts.size() || bucket < bucket_lo || bucket > bucket_hi) return 0;
    return counts[interval][static_cast<size_t>(bucket - bucket_lo)];
}

std::string Heatmap::title() const { return metric + labels_suffix(labels); }

Heatmap make_heatmap(const Series& series, const HistogramSeries& h, double window_s) {
    Heatmap m;
    m.metric = h.name;
    m.labels = h.labels;
    m.unit = h.unit;
    m.start_unix = series.start_unix;
    m.interval_s = series.interval_s;
    m.window_s = window_s;
    m.intervals = h.intervals.size();
    m.provenance = h.provenance;
    int lo = Log2Histogram::kMaxBuckets, hi = -1;
    for (const auto& hist : h.intervals) {
        const auto& b = hist.buckets();
        for (size_t i = 0; i < b.size(); ++i) {
            if (!b[i]) continue;
            lo = std::min(lo, static_cast<int>(i));
            hi = std::max(hi, static_cast<int>(i));
            m.total += b[i];
            m.max_count = std::max(m.max_count, b[i]);
        }
    }
    if (hi < 0) return m;   // no operation at all
    m.bucket_lo = lo;
    m.bucket_hi = hi;
    m.counts.assign(m.intervals, std::vector<uint64_t>(m.rows(), 0));
    for (size_t t = 0; t < m.intervals; ++t) {
        const auto& b = h.intervals[t].buckets();
        for (int k = lo; k <= hi && static_cast<size_t>(k) < b.size(); ++k) m.counts[t][k - lo] = b[k];
    }
    return m;
}

Heatmap merge_intervals(const Heatmap& h, size_t max_columns) {
    max_columns = std::max<size_t>(1, max_columns);
    if (h.intervals <= max_columns) return h;
    const size_t per = (h.intervals + max_columns - 1) / max_columns;
    Heatmap m = h;
    m.per_column = h.per_column * per;
    m.interval_s = h.interval_s * static_cast<double>(per);
    m.intervals = (h.intervals + per - 1) / per;
    m.max_count = 0;
    if (!h.empty()) {
        m.counts.assign(m.intervals, std::vector<uint64_t>(h.rows(), 0));
        for (size_t t = 0; t < h.intervals; ++t)
            for (size_t r = 0; r < h.rows(); ++r) m.max_count = std::max(m.max_count, m.counts[t / per][r] += h.counts[t][r]);
    }
    return m;
}

void share_scale(Heatmap& a, Heatmap& b) {
    const uint64_t top = std::max(a.max_count, b.max_count);
    int lo = std::min(a.empty() ? b.bucket_lo : a.bucket_lo, b.empty() ? a.bucket_lo : b.bucket_lo);
    int hi = std::max(a.bucket_hi, b.bucket_hi);
    for (Heatmap* h : {&a, &b}) {
        h->max_count = top;
        if (h->empty() || hi < lo) continue;
        std::vector<std::vector<uint64_t>> grown(h->intervals, std::vector<uint64_t>(static_cast<size_t>(hi - lo + 1), 0));
        for (size_t t = 0; t < h->intervals; ++t)
            for (int k = h->bucket_lo; k <= h->bucket_hi; ++k) grown[t][k - lo] = h->counts[t][k - h->bucket_lo];
        h->counts = std::move(grown);
        h->bucket_lo = lo;
        h->bucket_hi = hi;
    }
}

std::string heatmap_colour(uint64_t count, uint64_t max_count) {
    return count == 0 ? kEmptyFill : hex(palette_rgb(scale_position(count, max_count)));
}

std::string render_heatmap_svg(const Heatmap& recorded, const HeatmapSvgOptions& opts) {
    const Heatmap h = merge_intervals(recorded, opts.max_columns);
    const double left = 84, right = 170, top = 48, bottom = 50;
    const size_t rows = h.rows();
    // Fit ~720 px; at least 2 px per interval, and a plot of at least 400 px
    // however few the intervals.
    const double n_int = static_cast<double>(std::max<size_t>(1, h.intervals));
    const double cw = opts.cell_width > 0 ? opts.cell_width : std::max(std::clamp(720.0 / n_int, 2.0, 40.0), 400.0 / n_int);
    const double ch = opts.cell_height;
    const double plot_w = cw * static_cast<double>(std::max<size_t>(1, h.intervals));
    const double plot_h = h.empty() ? 40 : ch * static_cast<double>(rows);
    const double legend_h = std::clamp(plot_h, 60.0, 180.0);
    const double width = left + plot_w + right;
    const double height = top + std::max(plot_h, legend_h + 50) + bottom;
    const auto n = svg_number;

    std::ostringstream o;
    if (opts.standalone) o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    o << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"" << xml_escape(opts.css_class) << "\" width=\""
      << n(width) << "\" height=\"" << n(height) << "\" viewBox=\"0 0 " << n(width) << " " << n(height)
      << "\" font-family=\"sans-serif\" font-size=\"11\" role=\"img\" data-metric=\"" << xml_escape(h.metric)
      << "\" data-labels=\"" << xml_escape(labels_suffix(h.labels)) << "\" data-intervals=\""
      << recorded.intervals * recorded.per_column << "\" data-columns=\"" << h.intervals << "\" data-per-column=\""
      << h.per_column << "\" data-rows=\"" << rows << "\" data-bucket-lo=\"" << h.bucket_lo << "\" data-bucket-hi=\"" << h.bucket_hi
      << "\" data-max-count=\"" << h.max_count << "\" data-total=\"" << h.total << "\">\n";
    const std::string what = h.title();
    o << "<title>" << xml_escape("Heatmap of " + what + ": time × " + axis_unit_title(h.unit) + ", colour = count")
      << "</title>\n";
    o << "<rect x=\"0\" y=\"0\" width=\"" << n(width) << "\" height=\"" << n(height) << "\" fill=\"#ffffff\"/>\n";
    o << "<text x=\"" << n(left) << "\" y=\"18\" font-size=\"14\" font-weight=\"bold\">" << xml_escape(what) << "</text>\n";
    o << "<text x=\"" << n(left) << "\" y=\"35\" fill=\"#444\">"
      << xml_escape(std::to_string(h.total) + " operations in " + std::to_string(recorded.intervals) + " intervals of " +
                    format_seconds(recorded.interval_s) + " from " + format_utc(h.start_unix) +
                    (h.per_column > recorded.per_column ? "; " + std::to_string(h.per_column) + " intervals per column" : ""))
      << "</text>\n";

    if (h.empty()) {
        o << "<rect x=\"" << n(left) << "\" y=\"" << n(top) << "\" width=\"" << n(plot_w) << "\" height=\""
          << n(plot_h) << "\" fill=\"" << kEmptyFill << "\"/>\n";
        o << "<text x=\"" << n(left + 8) << "\" y=\"" << n(top + 24) << "\">no operation recorded in this series</text>\n";
        o << "</svg>\n";
        return o.str();
    }

    // Cells, slowest bucket on top.
    o << "<g class=\"cells\">\n";
    for (size_t t = 0; t < h.intervals; ++t) {
        const auto [a, b] = interval_span(h, t);
        for (int k = h.bucket_lo; k <= h.bucket_hi; ++k) {
            const uint64_t c = h.count(t, k);
            const double x = left + cw * static_cast<double>(t);
            const double y = top + ch * static_cast<double>(h.bucket_hi - k);
            o << "<rect class=\"cell" << (c ? "" : " empty") << "\" x=\"" << n(x) << "\" y=\"" << n(y) << "\" width=\""
              << n(cw) << "\" height=\"" << n(ch) << "\" fill=\"" << heatmap_colour(c, h.max_count) << "\">";
            o << "<title>" << xml_escape(format_number(a) + "–" + format_number(b) + " s, " + bucket_range(h, k) + ": " +
                                         std::to_string(c))
              << "</title></rect>\n";
        }
    }
    o << "</g>\n";
    o << "<rect x=\"" << n(left) << "\" y=\"" << n(top) << "\" width=\"" << n(plot_w) << "\" height=\"" << n(plot_h)
      << "\" fill=\"none\" stroke=\"#888\"/>\n";

    // y axis: bucket bounds at the row boundaries.
    const int label_every = rows > 24 ? 2 : 1;
    o << "<g class=\"y-axis\" text-anchor=\"end\">\n";
    for (int k = h.bucket_lo; k <= h.bucket_hi + 1; ++k) {
        if ((k - h.bucket_lo) % label_every) continue;
        const double y = top + ch * static_cast<double>(h.bucket_hi + 1 - k);
        const uint64_t bound = k == 0 ? 0 : Log2Histogram::bucket_lo(k);
        o << "<line x1=\"" << n(left - 4) << "\" y1=\"" << n(y) << "\" x2=\"" << n(left) << "\" y2=\"" << n(y)
          << "\" stroke=\"#888\"/><text x=\"" << n(left - 6) << "\" y=\"" << n(y + 4) << "\">"
          << xml_escape(format_bound(bound, h.unit)) << "</text>\n";
    }
    o << "</g>\n";
    o << "<text transform=\"translate(14 " << n(top + plot_h / 2) << ") rotate(-90)\" text-anchor=\"middle\">"
      << xml_escape(axis_unit_title(h.unit)) << "</text>\n";

    // x axis: seconds since the window's start.
    o << svg_time_axis(left, plot_w, top + plot_h, cw / h.interval_s,
                       std::max(h.window_s, h.interval_s * static_cast<double>(h.intervals)), h.interval_s,
                       "time since the window's start (s), " + format_seconds(h.interval_s) + " per column");

    // Legend: the colour scale (log) and the empty-cell swatch apart.
    const double lx = left + plot_w + 24, ly = top + 24;
    const int steps = 32;
    o << "<g class=\"legend\">\n<text x=\"" << n(lx) << "\" y=\"" << n(top + 2) << "\">operations per cell</text>\n<text x=\""
      << n(lx) << "\" y=\"" << n(top + 15) << "\">(log scale)</text>\n";
    for (int s = 0; s < steps; ++s) {
        const double t = (s + 0.5) / steps;
        const double y = ly + legend_h * (1 - static_cast<double>(s + 1) / steps);
        o << "<rect class=\"legend-step\" x=\"" << n(lx) << "\" y=\"" << n(y) << "\" width=\"14\" height=\""
          << n(legend_h / steps + 0.5) << "\" fill=\"" << hex(palette_rgb(t)) << "\"/>\n";
    }
    std::vector<uint64_t> ticks{1};
    for (uint64_t p = 10; p < h.max_count; p *= 10)
        if (scale_position(p, h.max_count) < 0.93) ticks.push_back(p);
    if (h.max_count > 1) ticks.push_back(h.max_count);
    for (const uint64_t c : ticks) {
        const double y = ly + legend_h * (1 - (h.max_count > 1 ? scale_position(c, h.max_count) : 1.0));
        o << "<line x1=\"" << n(lx + 14) << "\" y1=\"" << n(y) << "\" x2=\"" << n(lx + 18) << "\" y2=\"" << n(y)
          << "\" stroke=\"#444\"/><text x=\"" << n(lx + 21) << "\" y=\"" << n(y + 4) << "\">" << c << "</text>\n";
    }
    const double ey = ly + legend_h + 12;
    o << "<rect class=\"legend-empty\" x=\"" << n(lx) << "\" y=\"" << n(ey) << "\" width=\"14\" height=\"12\" fill=\""
      << kEmptyFill << "\" stroke=\"#888\"/><text x=\"" << n(lx + 21) << "\" y=\"" << n(ey + 10)
      << "\">0 (none)</text>\n</g>\n";
    o << "</svg>\n";
    return o.str();
}

std::string render_heatmap_terminal(const Heatmap& h, const HeatmapTerminalOptions& opts) {
    std::ostringstream o;
    o << h.title() << ": " << h.total << " operations in " << h.intervals << " intervals of "
      << format_seconds(h.interval_s) << " from " << format_utc(h.start_unix) << "\n";
    if (h.empty()) {
        o << "  no operation recorded in this series\n";
        return o.str();
    }
    const Heatmap m = merge_intervals(h, opts.max_columns);
    const size_t cols = m.intervals;
    const uint64_t top = m.max_count;   // when intervals are merged, the scale follows the sums
    auto col_count = [&](size_t c, int k) { return m.counts[c][static_cast<size_t>(k - m.bucket_lo)]; };
    o << "  " << (m.per_column > 1 ? std::to_string(m.per_column) + " intervals per column; " : std::string())
      << (opts.colour ? "darker colour" : "denser block") << " = more operations (log scale); blank = none\n";

    const char* const shades[] = {"░", "▒", "▓", "█"};
    const int colour_levels = 8;
    auto level = [&](uint64_t c, int levels) {
        return std::min(levels - 1, static_cast<int>(scale_position(c, top) * levels));
    };
    auto ansi = [&](int lvl) {
        const auto rgb = palette_rgb((lvl + 0.5) / colour_levels);
        auto q = [](int v) { return static_cast<int>(std::lround(v / 255.0 * 5)); };
        return "\033[38;5;" + std::to_string(16 + 36 * q(rgb[0]) + 6 * q(rgb[1]) + q(rgb[2])) + "m";
    };
    auto cell = [&](uint64_t c) -> std::string {
        if (c == 0) return " ";
        if (opts.colour) return ansi(level(c, colour_levels)) + "█\033[0m";
        return shades[level(c, 4)];
    };
    const size_t label_w = 9;
    for (int k = h.bucket_hi; k >= h.bucket_lo; --k) {
        std::string label = format_bound(Log2Histogram::bucket_lo(k), h.unit);
        if (label.size() < label_w) label.insert(0, label_w - label.size(), ' ');
        o << label << " ┤";
        for (size_t c = 0; c < cols; ++c) o << cell(col_count(c, k));
        o << "\n";
    }
    // x axis
    o << std::string(label_w + 1, ' ') << "└";
    for (size_t c = 0; c < cols; ++c) o << "─";
    o << "\n";
    const double col_s = m.interval_s;
    // Labels of up to ~5 characters: a tick every 4 columns at the most (colliding ones are left out).
    const double step = nice_step(col_s * static_cast<double>(cols), std::max<int>(2, static_cast<int>(cols / 4)), col_s);
    std::string axis(cols + 12, ' ');
    for (double t = 0; t < col_s * static_cast<double>(cols) + 1e-9; t += step) {
        const std::string s = format_seconds(t);
        const size_t at = static_cast<size_t>(std::lround(t / col_s));
        if (at + s.size() > axis.size()) break;
        if (at > 0 && axis[at - 1] != ' ') continue;   // keep a gap between labels
        axis.replace(at, s.size(), s);
    }
    while (!axis.empty() && axis.back() == ' ') axis.pop_back();
    o << std::string(label_w + 2, ' ') << axis << "\n";
    o << std::string(label_w + 2, ' ') << "time since the window's start; rows: "
      << axis_unit_title(h.unit) << "\n";
    // Legend: the count range of each shade or colour.
    const int levels = opts.colour ? colour_levels : 4;
    o << "  legend:";
    for (int l = 0; l < levels; ++l) {
        const uint64_t lo = count_at(static_cast<double>(l) / levels, top);
        const uint64_t hi = l + 1 == levels ? top : count_at(static_cast<double>(l + 1) / levels, top) - 1;
        if (hi < lo) continue;
        o << " " << (opts.colour ? ansi(l) + "█\033[0m" : std::string(shades[l])) << " " << lo
          << (hi > lo ? "-" + std::to_string(hi) : std::string());
    }
    o << "   (blank: 0)\n";
    return o.str();
}

}  // namespace iodiag
