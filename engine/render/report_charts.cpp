#include "engine/render/report_charts.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "engine/evidence/format.hpp"
#include "engine/evidence/layers.hpp"
#include "engine/render/report_markup.hpp"

namespace iodiag {

namespace {

struct LayerSeries {
    std::string layer;
    const ValueSeries* series;
};

// The layer series of `metric` with any time in the window, bottom-up (known
// layers in stack order, then any other name alphabetically).
std::vector<LayerSeries> layer_series(const Series& series, const std::string& metric) {
    std::vector<LayerSeries> out;
    for (const auto& v : series.values) {
        if (v.name != metric) continue;
        auto it = v.labels.find("layer");
        out.push_back({it == v.labels.end() ? std::string("?") : it->second, &v});
    }
    const auto& order = layer::all();
    auto rank = [&](const std::string& l) {
        auto it = std::find(order.begin(), order.end(), l);
        return it == order.end() ? order.size() : static_cast<size_t>(it - order.begin());
    };
    // A layer with no time in the whole window adds nothing to the picture
    // (its 0 % stays in the verdict's layer table).
    out.erase(std::remove_if(out.begin(), out.end(),
                             [](const LayerSeries& l) {
                                 return std::none_of(l.series->intervals.begin(), l.series->intervals.end(),
                                                     [](double v) { return v > 0; });
                             }),
              out.end());
    std::stable_sort(out.begin(), out.end(), [&](const LayerSeries& a, const LayerSeries& b) {
        const size_t ra = rank(a.layer), rb = rank(b.layer);
        return ra != rb ? ra < rb : a.layer < b.layer;
    });
    return out;
}

double value_at(const ValueSeries& v, size_t i) {
    return i < v.intervals.size() && v.intervals[i] > 0 ? v.intervals[i] : 0;
}

// A layer's share of the window for the legend: one decimal is what the eye
// compares; a sliver shows as "< 0.1 %" rather than as a number like 0.000254.
std::string legend_share(double pct) {
    if (pct > 0 && pct < 0.1) return "< 0.1 %";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %%", pct);
    return buf;
}

}  // namespace

std::string layer_colour(const std::string& layer) {
    static const std::map<std::string, std::string> colours{
        {layer::kDevice, "#0072b2"},   {layer::kBlockQueue, "#56b4e9"}, {layer::kFilesystem, "#009e73"},
        {layer::kJournal, "#7fc97f"},  {layer::kPageCache, "#f0e442"},  {layer::kDirty, "#d55e00"},
        {layer::kReclaim, "#cc79a7"},  {layer::kCgroup, "#e69f00"},     {layer::kLocks, "#7f3c8d"},
        {layer::kSyscall, "#999999"},  {layer::kCpu, "#4d4d4d"}};
    auto it = colours.find(layer);
    return it == colours.end() ? "#bbbbbb" : it->second;
}

std::vector<std::pair<std::string, double>> window_layer_shares(const Series& series, const std::string& metric) {
    const auto layers = layer_series(series, metric);
    double total = 0;
    std::vector<std::pair<std::string, double>> out;
    for (const auto& l : layers) {
        double sum = 0;
        for (size_t i = 0; i < l.series->intervals.size(); ++i) sum += value_at(*l.series, i);
        out.push_back({l.layer, sum});
        total += sum;
    }
    for (auto& [_, v] : out) v = total > 0 ? v / total * 100 : 0;
    return out;
}

std::string render_share_chart(const Series& series, const std::string& metric, double window_s) {
    const auto layers = layer_series(series, metric);
    if (layers.empty() || series.count == 0) return "";
    const size_t n = series.count;
    const double left = 56, right = 190, top = 16, strip_h = 44, gap = 14, plot_h = 200, bottom = 44;
    const double cw = std::clamp(720.0 / static_cast<double>(n), 2.0, 40.0);
    const double plot_w = cw * static_cast<double>(n);
    const double chart_top = top + strip_h + gap;
    const double width = left + plot_w + right;
    const double height = std::max(chart_top + plot_h + bottom, top + 24.0 + 16.0 * static_cast<double>(layers.size()));
    const std::string unit = layers.front().series->unit;
    const auto num = svg_number;

    std::vector<double> totals(n, 0);
    for (size_t i = 0; i < n; ++i)
        for (const auto& l : layers) totals[i] += value_at(*l.series, i);
    const double peak = *std::max_element(totals.begin(), totals.end());

    auto span = [&](size_t i) {
        const double a = static_cast<double>(i) * series.interval_s;
        double b = a + series.interval_s;
        if (i + 1 == n && window_s > a) b = std::min(b, window_s);
        return format_number(a) + "–" + format_number(b) + " s";
    };

    std::ostringstream o;
    o << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"share-chart\" width=\"" << num(width) << "\" height=\""
      << num(height) << "\" viewBox=\"0 0 " << num(width) << " " << num(height)
      << "\" font-family=\"sans-serif\" font-size=\"11\" role=\"img\" data-metric=\"" << xml_escape(metric)
      << "\" data-intervals=\"" << n << "\" data-layers=\"" << layers.size() << "\">\n";
    o << "<title>" << xml_escape("Share of " + metric + " per layer and interval (stacked, 100 % = all traced time of "
                                 "the interval)") << "</title>\n";

    // The total per interval: how much there was to share.
    o << "<g class=\"totals\">\n<text x=\"" << num(left) << "\" y=\"" << num(top - 4) << "\">"
      << xml_escape("total per interval (peak " + format_amount(peak, unit) + ")") << "</text>\n";
    for (size_t i = 0; i < n; ++i) {
        const double h = peak > 0 ? totals[i] / peak * strip_h : 0;
        o << "<rect class=\"total\" x=\"" << num(left + cw * static_cast<double>(i)) << "\" y=\""
          << num(top + strip_h - h) << "\" width=\"" << num(std::max(1.0, cw - 1)) << "\" height=\"" << num(h)
          << "\" fill=\"#777\"><title>" << xml_escape(span(i) + ": " + format_amount(totals[i], unit)) << "</title></rect>\n";
    }
    o << "</g>\n";

    // The stacked shares.
    o << "<g class=\"shares\">\n";
    for (size_t i = 0; i < n; ++i) {
        const double x = left + cw * static_cast<double>(i);
        if (totals[i] <= 0) {
            o << "<rect class=\"share-none\" x=\"" << num(x) << "\" y=\"" << num(chart_top) << "\" width=\"" << num(cw)
              << "\" height=\"" << num(plot_h) << "\" fill=\"#f2f2f2\"><title>" << xml_escape(span(i) + ": no traced time")
              << "</title></rect>\n";
            continue;
        }
        double y = chart_top + plot_h;
        for (const auto& l : layers) {
            const double v = value_at(*l.series, i);
            if (v <= 0) continue;
            const double h = v / totals[i] * plot_h;
            y -= h;
            o << "<rect class=\"share\" data-layer=\"" << xml_escape(l.layer) << "\" x=\"" << num(x) << "\" y=\""
              << num(y) << "\" width=\"" << num(cw) << "\" height=\"" << num(h) << "\" fill=\"" << layer_colour(l.layer)
              << "\"><title>"
              << xml_escape(span(i) + ": " + l.layer + " " + format_number(v / totals[i] * 100) + " % (" +
                            format_amount(v, unit) + ")")
              << "</title></rect>\n";
        }
    }
    o << "</g>\n";
    o << "<rect x=\"" << num(left) << "\" y=\"" << num(chart_top) << "\" width=\"" << num(plot_w) << "\" height=\""
      << num(plot_h) << "\" fill=\"none\" stroke=\"#888\"/>\n";
    // y axis: 0..100 %
    o << "<g class=\"y-axis\" text-anchor=\"end\">\n";
    for (int p = 0; p <= 100; p += 25) {
        const double y = chart_top + plot_h * (1 - p / 100.0);
        o << "<line x1=\"" << num(left - 4) << "\" y1=\"" << num(y) << "\" x2=\"" << num(left) << "\" y2=\"" << num(y)
          << "\" stroke=\"#888\"/><text x=\"" << num(left - 6) << "\" y=\"" << num(y + 4) << "\">" << p << " %</text>\n";
    }
    o << "</g>\n";
    o << svg_time_axis(left, plot_w, chart_top + plot_h, cw / series.interval_s,
                       std::max(window_s, series.interval_s * static_cast<double>(n)), series.interval_s,
                       "time since the window's start (s)");
    // Legend, top of the stack first (as drawn), with the share of the window.
    const auto shares = window_layer_shares(series, metric);
    const double lx = left + plot_w + 18;
    o << "<g class=\"legend\">\n<text x=\"" << num(lx) << "\" y=\"" << num(chart_top - 4) << "\">layer (share of window)</text>\n";
    for (size_t k = 0; k < layers.size(); ++k) {
        const size_t idx = layers.size() - 1 - k;
        const double y = chart_top + 16.0 * static_cast<double>(k);
        o << "<rect x=\"" << num(lx) << "\" y=\"" << num(y) << "\" width=\"12\" height=\"12\" fill=\""
          << layer_colour(layers[idx].layer) << "\"/><text x=\"" << num(lx + 17) << "\" y=\"" << num(y + 10) << "\">"
          << xml_escape(layers[idx].layer + " " + legend_share(shares[idx].second)) << "</text>\n";
    }
    o << "</g>\n</svg>\n";
    return o.str();
}

std::string render_sparkline(const Series& series, const ValueSeries& v, double width, double height) {
    const auto num = svg_number;
    double lo = 0, hi = 0;
    for (double x : v.intervals) lo = std::min(lo, x), hi = std::max(hi, x);
    const double range = hi - lo;
    const size_t n = v.intervals.size();
    const double pad = 2;
    std::ostringstream pts;
    for (size_t i = 0; i < n; ++i) {
        const double x = pad + (n > 1 ? (width - 2 * pad) * static_cast<double>(i) / static_cast<double>(n - 1) : (width - 2 * pad) / 2);
        const double y = height - pad - (range > 0 ? (v.intervals[i] - lo) / range * (height - 2 * pad) : 0);
        pts << (i ? " " : "") << num(x) << "," << num(y);
    }
    std::ostringstream o;
    o << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"sparkline\" width=\"" << num(width) << "\" height=\""
      << num(height) << "\" viewBox=\"0 0 " << num(width) << " " << num(height) << "\" data-metric=\""
      << xml_escape(v.name) << "\" data-intervals=\"" << n << "\">";
    o << "<title>" << xml_escape(v.name + labels_suffix(v.labels) + " per interval of " + format_seconds(series.interval_s) +
                                 ": from " + format_amount(lo, v.unit) + " to " + format_amount(hi, v.unit))
      << "</title>";
    o << "<rect x=\"0\" y=\"0\" width=\"" << num(width) << "\" height=\"" << num(height) << "\" fill=\"#fafafa\"/>";
    if (n == 1)
        o << "<circle cx=\"" << pts.str().substr(0, pts.str().find(',')) << "\" cy=\"" << num(height / 2)
          << "\" r=\"2\" fill=\"#0072b2\"/>";
    else
        o << "<polyline fill=\"none\" stroke=\"#0072b2\" stroke-width=\"1.5\" points=\"" << pts.str() << "\"/>";
    o << "</svg>";
    return o.str();
}

}  // namespace iodiag
