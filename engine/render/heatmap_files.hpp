// Heatmaps as SVG files next to another output (a Markdown ticket body, a
// JSON verdict): the API the Markdown renderer links or embeds them with,
// rather than drawing its own. The HTML report stays the richest form.
#pragma once

#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"

namespace iodiag {

struct HeatmapFile {
    std::string path;        // as written: dir + "/" + file_name
    std::string file_name;   // relative, for a link from a file in the same directory
    std::string title;       // "block.d2c_us{device=vda}"
    std::string alt;         // one sentence saying what the picture shows, for alt text
};

// Writes the heatmaps a report would show first (syscall latency per op by
// operations, then block D2C/Q2C per busy device; series without operations
// skipped), at most `limit`, as "<dir>/<stem>-heatmap-<n>-<series>.svg", each
// atomically. Empty when the evidence has no histogram series (a version-1
// bundle). Throws std::runtime_error naming the path when a file cannot be
// written.
std::vector<HeatmapFile> write_heatmap_files(const Evidence& ev, const std::string& dir, const std::string& stem,
                                             size_t limit = 4);

// One Markdown image line per file: "![alt](file_name)", the alt text escaped
// for Markdown (it carries label values from the bundle).
std::string markdown_heatmap_links(const std::vector<HeatmapFile>& files);

}  // namespace iodiag
