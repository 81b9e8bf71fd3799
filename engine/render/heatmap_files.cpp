#include "engine/render/heatmap_files.hpp"
#include "engine/evidence/atomic_file.hpp"

#include "engine/evidence/bundle.hpp"
#include "engine/evidence/format.hpp"
#include "engine/render/heatmap.hpp"
#include "engine/render/heatmap_select.hpp"
#include "engine/render/report_markup.hpp"

namespace iodiag {

namespace {

// A file-name piece from a series title: [A-Za-z0-9._-] only, so a label
// value from a bundle cannot climb out of the directory or break a link.
std::string slug(const std::string& s) {
    std::string out;
    for (const char c : s) {
        const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                          c == '-' || c == '_';
        out += keep ? c : '_';
        if (out.size() >= 64) break;
    }
    return out;
}

std::string markdown_escape(const std::string& s) {
    std::string out;
    for (const char c : s) {
        if (c == '\n' || c == '\r') {
            out += ' ';
            continue;
        }
        if (std::string_view("\\`*_{}[]()<>#+!|").find(c) != std::string_view::npos) out += '\\';
        out += c;
    }
    return out;
}

}  // namespace

std::vector<HeatmapFile> write_heatmap_files(const Evidence& ev, const std::string& dir, const std::string& stem,
                                             size_t limit) {
    std::vector<HeatmapFile> out;
    for (const auto* h : report_heatmap_series(ev.series, limit)) {
        if (out.size() >= limit) break;
        const Heatmap m = make_heatmap(ev.series, *h, ev.window.duration_s);
        if (m.empty()) continue;
        HeatmapFile f;
        f.file_name = slug(stem) + "-heatmap-" + std::to_string(out.size() + 1) + "-" + slug(m.title()) + ".svg";
        f.path = (dir.empty() ? std::string(".") : dir) + "/" + f.file_name;
        f.title = m.title();
        f.alt = "Latency heatmap of " + m.title() + ": " + std::to_string(m.total) + " operations over " +
                format_number(ev.window.duration_s) + " s, one column per " + format_seconds(m.interval_s) +
                ", log2 latency buckets from " + format_bound(Log2Histogram::bucket_lo(m.bucket_lo), m.unit) + " to " +
                format_bound(Log2Histogram::bucket_hi(m.bucket_hi) + 1, m.unit);
        write_file_atomically(f.path, render_heatmap_svg(m));
        out.push_back(std::move(f));
    }
    return out;
}

std::string markdown_heatmap_links(const std::vector<HeatmapFile>& files) {
    std::string out;
    for (const auto& f : files) out += "![" + markdown_escape(f.alt) + "](" + f.file_name + ")\n";
    return out;
}

}  // namespace iodiag
