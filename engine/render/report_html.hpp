// `iodiag report`: one self-contained HTML file (inline SVG and CSS; no script,
// no font, nothing fetched) that a person can open from a post-mortem ticket:
// the verdict, each layer's share over time, latency heatmaps per syscall and
// per busy device, the findings with their evidence, mechanism and ordered
// fixes, the decision trail, the collectors and the slowest operations.
// A bundle without series (schema version 1) still gives a report, saying
// which pictures need a newer recording.
#pragma once

#include <string>

#include "engine/evidence/evidence.hpp"
#include "engine/triage/verdict.hpp"
#include "engine/triage/verdict_diff.hpp"

namespace iodiag {

struct ReportOptions {
    std::string source;          // the bundle path(s), shown in the header
    std::string generator;       // e.g. "iodiag 0.1.0", in the footer
    size_t heatmaps_per_name = 6;   // heatmaps drawn per series name (busiest first)
};

// `v` is analyze(ev, rules).
std::string render_report_html(const Evidence& ev, const Verdict& v, const ReportOptions& opts = {});

// Before / after a fix: the `iodiag diff` content (d = diff_evidence(...),
// SMART growth included) and both recordings' pictures side by side.
// opts.source names both bundles.
std::string render_diff_report_html(const Evidence& before, const Verdict& vb, const Evidence& after,
                                    const Verdict& va, const VerdictDiff& d, const ReportOptions& opts = {});

}  // namespace iodiag
