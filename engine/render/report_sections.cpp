#include "engine/render/report_sections.hpp"
#include "engine/triage/judgement.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "engine/evidence/format.hpp"
#include "engine/render/cgroup_shown.hpp"
#include "engine/render/exemplar_parts.hpp"
#include "engine/render/heatmap.hpp"
#include "engine/render/heatmap_select.hpp"
#include "engine/render/render.hpp"
#include "engine/render/report_charts.hpp"
#include "engine/render/render_diff.hpp"
#include "engine/render/report_markup.hpp"

namespace iodiag::report {

namespace {

std::string e(std::string_view s) { return xml_escape(s); }

std::string pct(const std::optional<double>& v) { return v ? format_number(*v) + " %" : "–"; }

const CollectorStatus* collector(const Evidence& ev, const std::string& name) {
    for (const auto& c : ev.collectors)
        if (c.name == name) return &c;
    return nullptr;
}

// "syscall_bpf unavailable: needs root" / "syscall_bpf did not run".
std::string collector_state(const Evidence& ev, const std::string& name) {
    const CollectorStatus* c = collector(ev, name);
    if (!c) return name + " did not run";
    if (!c->available) return name + " unavailable: " + c->reason;
    return name + " ran but did not record it";
}

bool has_series(const Evidence& ev, const std::string& metric) {
    return std::any_of(ev.series.values.begin(), ev.series.values.end(),
                       [&](const ValueSeries& v) { return v.name == metric; });
}

std::string no_series_reason(const Evidence& ev) {
    if (ev.schema_version < 2)
        return "this bundle is schema version " + std::to_string(ev.schema_version) +
               ", recorded before iodiag kept per-interval series";
    return "this bundle was recorded without per-interval series (--interval 0)";
}

std::string missing(const std::string& what) { return "<p class=\"missing\">" + e(what) + "</p>\n"; }

std::string section_start(const std::string& id, const std::string& title) {
    return "<section id=\"" + e(id) + "\">\n<h2>" + e(title) + "</h2>\n";
}

std::string cited_value(const CitedValue& c) {
    return !c.formatted.empty() ? c.formatted : format_value(c.value, c.unit);
}

// Estimated time in a histogram series (bucket midpoints × counts): which
// syscall's heatmap matters most comes first.
double estimated_time(const HistogramSeries& h) {
    double t = 0;
    for (const auto& i : h.intervals) t += i.mean_estimate() * static_cast<double>(i.total());
    return t;
}

std::string heatmap_figure(const Heatmap& h, const std::string& caption) {
    HeatmapSvgOptions o;
    o.standalone = false;
    return "<figure class=\"heatmap-figure\">" + render_heatmap_svg(h, o) + "<figcaption>" + e(caption) +
           "</figcaption></figure>\n";
}

std::string heatmap_caption(const Heatmap& h) {
    return h.title() + ": " + std::to_string(h.total) + " operations; source " + h.provenance.source;
}

}  // namespace

std::string page_start(const std::string& title) {
    // The CSP: no script at all, no network load of any kind (images only
    // from data: URIs, styles only inline). A report made from a stranger's
    // bundle cannot run code or call out, even if an escape were missed.
    return R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="iodiag">
<title>)" + e(title) + R"(</title>
<style>
body { box-sizing: border-box; font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 0 auto; max-width: 1280px; padding: 0 24px 48px; color: #1a1a1a; background: #fff; line-height: 1.4; }
header { border-bottom: 2px solid #ddd; padding: 16px 0 8px; }
h1 { font-size: 1.6em; margin: 0 0 6px; }
h2 { font-size: 1.25em; border-bottom: 1px solid #e4e4e4; padding-bottom: 4px; margin-top: 32px; }
h3 { font-size: 1.05em; margin: 18px 0 6px; }
nav a { margin-right: 12px; color: #0b5394; }
.facts { color: #444; font-size: 0.95em; }
.badge { display: inline-block; padding: 2px 10px; border-radius: 4px; font-weight: bold; color: #fff; letter-spacing: 0.04em; }
.badge.ok, .badge.info { background: #2e7d32; }
.badge.warning { background: #c77700; }
.badge.critical { background: #b71c1c; }
.top-finding { font-size: 1.2em; font-weight: bold; margin: 10px 0; }
.missing { background: #fff8e1; border-left: 4px solid #c77700; padding: 8px 12px; }
.notice { background: #fff8e1; border: 1px solid #e0c060; padding: 8px 12px; border-radius: 4px; }
table { border-collapse: collapse; margin: 8px 0; font-size: 0.92em; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
td.num { text-align: right; white-space: nowrap; }
tr.changed td { background: #fff3c4; }
.state-abnormal { color: #b71c1c; font-weight: bold; }
.state-normal { color: #2e7d32; }
.state-not-observed { color: #777; font-style: italic; }
.state-not-judged { color: #8a6d00; }
article.finding { border: 1px solid #ddd; border-left: 6px solid #c77700; padding: 4px 14px 10px; margin: 12px 0; border-radius: 4px; }
article.finding.critical { border-left-color: #b71c1c; }
article.finding.info { border-left-color: #2e7d32; }
.meta { color: #555; font-size: 0.9em; }
.prio { display: inline-block; min-width: 2.2em; font-weight: bold; }
code { background: #f4f4f4; padding: 0 3px; border-radius: 3px; overflow-wrap: anywhere; }
td, p, li, figcaption { overflow-wrap: anywhere; }
figure { margin: 10px 0 18px; }
figcaption { color: #555; font-size: 0.85em; }
svg { max-width: 100%; height: auto; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 16px; align-items: start; }
.pair > div > h4 { margin: 4px 0; }
.bar { display: flex; height: 12px; min-width: 240px; background: #f2f2f2; }
.bar span { display: block; height: 12px; }
.hbar { display: inline-block; height: 10px; background: #0072b2; vertical-align: middle; }
footer { margin-top: 40px; color: #666; font-size: 0.85em; border-top: 1px solid #ddd; padding-top: 8px; }
</style>
</head>
<body>
)";
}

std::string page_end(const std::string& footer) { return "<footer>" + e(footer) + "</footer>\n</body>\n</html>\n"; }

std::string status_of(const Verdict& v) { return status_word(v); }

std::string status_badge(const std::string& status, const std::string& label) {
    return "<span class=\"badge " + e(status) + "\">" + e(upper_case(label.empty() ? status : label)) + "</span>";
}

std::string header_facts(const Evidence& ev, const std::string& source) {
    std::ostringstream o;
    o << "<p class=\"facts\">host <b>" << e(ev.host) << "</b> · kernel " << e(ev.kernel) << " · window "
      << e(format_number(ev.window.duration_s)) << " s from " << e(format_utc(ev.window.start_unix));
    if (!ev.series.empty())
        o << " · " << ev.series.count << " intervals of " << e(format_seconds(ev.series.interval_s));
    o << " · bundle schema version " << ev.schema_version;
    if (!source.empty()) o << " · <code>" << e(source) << "</code>";
    o << "</p>\n";
    return o.str();
}

std::string missing_pictures_notice(const Evidence& ev) {
    std::vector<std::string> lines;
    if (ev.series.empty()) {
        lines.push_back(no_series_reason(ev) + ": the share of each layer over time, the latency heatmaps and the "
                        "PSI / memory / device series need a newer recording (iodiag record -o NEW.json, "
                        "--interval 1 by default). The verdict, the findings and the window's distributions below "
                        "come from this bundle as it is.");
    } else {
        if (!has_series(ev, "layer.time_us"))
            lines.push_back("The share of each layer over time needs the series layer.time_us, kept by the syscall "
                            "collector (" + collector_state(ev, "syscall_bpf") + ").");
        if (ev.series.histograms.empty())
            lines.push_back("The latency heatmaps need the histogram series of the BPF collectors (" +
                            collector_state(ev, "block_bpf") + "; " + collector_state(ev, "syscall_bpf") + ").");
    }
    if (lines.empty()) return "";
    std::string out = "<div class=\"notice\" id=\"missing-pictures\"><b>Pictures this bundle cannot give</b><ul>\n";
    for (const auto& l : lines) out += "<li>" + e(l) + "</li>\n";
    return out + "</ul></div>\n";
}

std::string summary_section(const Evidence& ev, const Verdict& v) {
    std::ostringstream o;
    o << section_start("summary", "Verdict");
    o << "<p>" << status_badge(status_of(v)) << " " << v.findings.size() << " finding(s)";
    size_t observed = 0;
    std::vector<std::string> unobserved;
    for (const auto& r : v.layers) {
        if (r.state != LayerState::NotObserved)
            ++observed;
        else
            unobserved.push_back(r.layer);
    }
    o << "; latency observed in " << observed << " of " << v.layers.size() << " layers";
    if (!unobserved.empty()) {
        std::string list;
        for (const auto& l : unobserved) list += (list.empty() ? "" : ", ") + l;
        o << " (not observed, so unknown rather than healthy: " << e(list) << ")";
    }
    o << "</p>\n";
    if (!v.findings.empty()) {
        const Finding& top = v.findings.front();
        o << "<p class=\"top-finding\" id=\"top-finding\">" << e(top.title) << "</p>\n";
        o << "<p class=\"meta\">layer " << e(top.layer)
          << (top.instance.empty() ? "" : " · " + e(top.instance_key) + " " + e(named(v, top.instance)))
          << " · share " << e(top.share_pct ? format_number(*top.share_pct) + " % of " + top.share_metric : "not measured")
          << " · confidence " << e(format_number(top.confidence)) << "</p>\n";
        o << "<p>" << e(top.mechanism) << "</p>\n";
    } else {
        o << "<p class=\"top-finding\" id=\"top-finding\">No finding in the observed layers.</p>\n";
    }
    if (!v.who_suffered.empty() && !v.findings.empty()) {
        // Every field is the same process; hovering one says where it was read from.
        o << "<p><b>Who suffered most:</b> ";
        bool first = true;
        for (const auto& w : v.who_suffered) {
            o << (first ? "" : "; ") << e(w.what) << " <code title=\"" << e(w.source) << "\">"
              << e(w.what == "cgroup" ? named(v, w.value) : w.value) << "</code>";
            first = false;
        }
        o << "</p>\n";
    }
    if (!v.fixes.empty()) {
        o << "<p><b>First fixes</b> (by share of latency, then P0..P5):</p><ol>\n";
        for (size_t i = 0; i < std::min<size_t>(3, v.fixes.size()); ++i)
            o << "<li><span class=\"prio\">" << e(to_string(v.fixes[i].priority)) << "</span> " << e(v.fixes[i].action)
              << "</li>\n";
        o << "</ol>\n";
    }
    o << missing_pictures_notice(ev);
    o << "</section>\n";
    return o.str();
}

namespace {

// The part of the slow syscalls' time the verdict's layer table counts under
// block_queue beyond the syscall collector's own block_queue class: their
// own requests' time in the I/O scheduler (attr.slow.io_scheduler_pct, which
// the analysis derives and the recorded evidence does not hold).
double io_scheduler_part_pct(const Evidence& ev, const Verdict& v) {
    const Metric* own = ev.find_metric("attr.slow.block_queue_pct");
    for (const auto& row : v.layers)
        if (row.layer == "block_queue" && row.share_slow_pct)
            return std::max(0.0, *row.share_slow_pct - (own ? own->value : 0.0));
    return 0;
}

}  // namespace

std::string share_charts(const Evidence& ev, const Verdict& v) {
    std::ostringstream o;
    o << section_start("share", "Where the time goes, over time");
    if (ev.series.empty()) {
        o << missing("Not available: " + no_series_reason(ev) + ". Record again to see each layer's share per interval.");
    } else if (!has_series(ev, "layer.time_us")) {
        o << missing("Not available: the series layer.time_us is not in this bundle (" +
                     collector_state(ev, "syscall_bpf") + ").");
    } else {
        o << "<p>Each column is one interval; its height is 100 % of the traced syscall time in it, split by the "
             "layer the time was attributed to. A fault that starts mid-window shows as a colour taking over.</p>\n";
        // The series are the syscall collector's classes per interval; the
        // layer table moves the I/O scheduler's part of the device class to
        // the block queue (measured over the window only): say how much.
        if (const double moved = io_scheduler_part_pct(ev, v); moved > 0)
            o << "<p>Here <i>device</i> is the syscalls' wait for their own I/O, the time their requests spent in the "
                 "I/O scheduler included: "
              << e(format_value(moved, "pct"))
              << " of the slow syscalls' time over the window, which the layer table counts under block_queue.</p>\n";
        const std::string all = render_share_chart(ev.series, "layer.time_us", ev.window.duration_s);
        const std::string slow = render_share_chart(ev.series, "layer.slow_time_us", ev.window.duration_s);
        if (all.empty())
            o << missing("No traced syscall time in this window (layer.time_us is zero in every interval).");
        else
            o << "<figure>" << all << "<figcaption>layer.time_us: all traced syscalls</figcaption></figure>\n";
        if (!slow.empty())
            o << "<figure>" << slow << "<figcaption>layer.slow_time_us: the slow operations only</figcaption></figure>\n";
    }
    o << "</section>\n";
    return o.str();
}

std::string heatmaps_section(const Evidence& ev, size_t per_name) {
    std::ostringstream o;
    o << section_start("heatmaps", "Latency heatmaps");
    if (ev.series.empty()) {
        o << missing("Not available: " + no_series_reason(ev) + ". Record again to see latency over time.");
        o << "</section>\n";
        return o.str();
    }
    if (ev.series.histograms.empty()) {
        o << missing("Not available: no histogram series in this bundle (" + collector_state(ev, "block_bpf") + "; " +
                     collector_state(ev, "syscall_bpf") + ").");
        o << "</section>\n";
        return o.str();
    }
    o << "<p>x: time, one column per interval; y: latency in log2 buckets (slowest on top); colour: how many "
         "operations fell in that bucket in that interval (log scale; light grey: none). A band that moves up is "
         "latency growing; two bands are hits and misses.</p>\n";
    std::vector<std::string> left_out;
    auto chosen = report_heatmap_series(ev.series, per_name, &left_out);
    // Syscalls by the time they took, so the op that suffered comes first.
    std::stable_sort(chosen.begin(), chosen.end(), [](const HistogramSeries* a, const HistogramSeries* b) {
        if (a->name != b->name) return false;
        return a->name.rfind("syscall.", 0) == 0 && estimated_time(*a) > estimated_time(*b);
    });
    std::string current;
    std::vector<std::string> idle;
    for (const auto* h : chosen) {
        const Heatmap m = make_heatmap(ev.series, *h, ev.window.duration_s);
        if (m.empty()) {
            idle.push_back(m.title());
            continue;
        }
        if (h->name != current) {
            current = h->name;
            o << "<h3>" << e(current) << "</h3>\n";
        }
        o << heatmap_figure(m, heatmap_caption(m));
    }
    if (!idle.empty()) {
        std::string list;
        for (const auto& s : idle) list += (list.empty() ? "" : ", ") + s;
        o << "<p class=\"meta\">No operation in the window: " << e(list) << "</p>\n";
    }
    if (!left_out.empty()) {
        std::string list;
        for (const auto& s : left_out) list += (list.empty() ? "" : ", ") + s;
        o << "<p class=\"meta\">Not drawn here (fewer operations): " << e(list)
          << ". <code>iodiag heatmap BUNDLE --metric NAME --label KEY=VALUE</code> draws any of them.</p>\n";
    }
    o << "</section>\n";
    return o.str();
}

std::string series_section(const Evidence& ev) {
    std::ostringstream o;
    o << section_start("series", "Pressure, memory and devices over time");
    if (ev.series.empty()) {
        o << missing("Not available: " + no_series_reason(ev) + ".");
        o << "</section>\n";
        return o.str();
    }
    auto group = [](const std::string& n) {
        if (n.rfind("psi.", 0) == 0) return 0;
        if (n.rfind("disk.", 0) == 0) return 2;
        if (n.rfind("vmstat.", 0) == 0) return 3;
        return 1;   // event counts of the BPF collectors
    };
    std::vector<const ValueSeries*> rows;
    std::vector<std::string> zero;
    for (const auto& v : ev.series.values) {
        if (v.name.rfind("layer.", 0) == 0) continue;   // the share chart above
        if (std::all_of(v.intervals.begin(), v.intervals.end(), [](double x) { return x == 0; })) {
            zero.push_back(v.name + labels_suffix(v.labels));
            continue;
        }
        rows.push_back(&v);
    }
    std::stable_sort(rows.begin(), rows.end(), [&](const ValueSeries* a, const ValueSeries* b) {
        if (group(a->name) != group(b->name)) return group(a->name) < group(b->name);
        return false;
    });
    if (rows.empty()) {
        o << missing("Every value series of this bundle is zero throughout the window.");
    } else {
        o << "<table class=\"series\"><tr><th>series</th><th>per interval</th><th>min</th><th>mean</th><th>max</th>"
             "<th>source</th></tr>\n";
        for (const auto* v : rows) {
            double lo = v->intervals.front(), hi = lo, sum = 0;
            for (double x : v->intervals) lo = std::min(lo, x), hi = std::max(hi, x), sum += x;
            o << "<tr><td><code>" << e(v->name + labels_suffix(v->labels)) << "</code></td><td>"
              << render_sparkline(ev.series, *v) << "</td><td class=\"num\">" << e(format_amount(lo, v->unit))
              << "</td><td class=\"num\">" << e(format_amount(sum / static_cast<double>(v->intervals.size()), v->unit))
              << "</td><td class=\"num\">" << e(format_amount(hi, v->unit)) << "</td><td class=\"meta\">"
              << e(v->provenance.source) << "</td></tr>\n";
        }
        o << "</table>\n";
    }
    if (!zero.empty()) {
        std::string list;
        for (const auto& s : zero) list += (list.empty() ? "" : ", ") + s;
        o << "<p class=\"meta\">Zero in every interval: " << e(list) << "</p>\n";
    }
    o << "</section>\n";
    return o.str();
}

std::string layers_section(const Verdict& v, const std::string& id_prefix) {
    std::ostringstream o;
    o << section_start(id_prefix + "layers", "Layers, bottom-up");
    o << "<table><tr><th>layer</th><th>state</th><th>share of slow</th><th>share of all</th><th>figures</th>"
         "<th>observed by</th></tr>\n";
    std::set<std::string> bases;
    for (const auto& r : v.layers) {
        std::string state = to_string(r.state);
        std::string cls = state;
        std::replace(cls.begin(), cls.end(), ' ', '-');
        std::replace(cls.begin(), cls.end(), '_', '-');
        o << "<tr><td>" << e(r.layer) << "</td><td class=\"state-" << e(cls) << "\">" << e(state) << "</td><td class=\"num\">"
          << e(pct(r.share_slow_pct)) << "</td><td class=\"num\">" << e(pct(r.share_all_pct)) << "</td><td>"
          << e(r.figures) << "</td><td class=\"meta\">" << e(r.observed_by) << "</td></tr>\n";
        if (!r.share_basis.empty()) bases.insert(r.share_basis);
    }
    o << "</table>\n";
    for (const auto& b : bases) o << "<p class=\"meta\">shares " << e(b) << "</p>\n";
    o << "</section>\n";
    return o.str();
}

namespace {

void finding_article(std::ostringstream& o, const Verdict& v, size_t n, const Finding& f, const std::string& id_prefix,
                     bool note = false) {
    // A note is drawn as info whatever its rule's severity (note_tag says which).
    const std::string shown = note ? "info" : to_string(f.severity);
    o << "<article class=\"finding " << e(shown) << "\" id=\"" << id_prefix << n << "\">\n";
    o << "<h3>" << n << ". " << status_badge(shown, note ? note_tag(f) : "") << " " << e(f.title) << "</h3>\n";
    o << "<p class=\"meta\">layer " << e(f.layer);
    if (!f.instance.empty()) o << " · " << e(f.instance_key) << " " << e(named(v, f.instance));
    o << " · rule <code>" << e(f.rule_id) << "</code> (" << e(f.source) << ") · share "
      << e(f.share_pct ? format_number(*f.share_pct) + " %" + whose_share(f) + " (measured: " + f.share_metric + ")"
                       : "not measured")
      << " · confidence " << e(format_number(f.confidence)) << "</p>\n";
    o << "<p><b>Mechanism.</b> " << e(f.mechanism) << "</p>\n";
    if (!f.evidence.empty()) {
        o << "<table class=\"evidence\"><tr><th>evidence</th><th>value</th><th>test</th><th>provenance</th></tr>\n";
        for (const auto& c : f.evidence)
            o << "<tr><td><code>" << e(c.name + labels_suffix(named_labels(v, c.labels))) << "</code></td><td class=\"num\">"
              << e(cited_value(c)) << "</td><td>" << e(c.comparison) << "</td><td class=\"meta\">"
              << e(c.provenance.kind) << ": " << e(c.provenance.source) << "</td></tr>\n";
        o << "</table>\n";
    }
    if (!f.fixes.empty()) {
        o << "<p><b>Fixes</b></p><ol class=\"fixes\">\n";
        for (const auto& fx : f.fixes) {
            o << "<li><span class=\"prio\">" << e(to_string(fx.priority)) << "</span> " << e(fx.action);
            if (!fx.playbook.empty()) o << " — steps: <code>iodiag playbook " << e(fx.playbook) << "</code>";
            o << "</li>\n";
        }
        o << "</ol>\n";
    }
    for (const auto& vf : f.verify) o << "<p class=\"meta\">verify after the fix: " << e(vf) << "</p>\n";
    o << "</article>\n";
}

}  // namespace

std::string findings_section(const Verdict& v, const std::string& id_prefix) {
    std::ostringstream o;
    o << section_start(id_prefix + "findings", "Findings (ranked by latency share × confidence)");
    if (v.findings.empty()) o << "<p>None in the observed layers.</p>\n";
    for (size_t i = 0; i < v.findings.size(); ++i) finding_article(o, v, i + 1, v.findings[i], id_prefix + "finding-");
    o << "</section>\n";
    return o.str();
}

std::string fixes_section(const Verdict& v, const std::string& id_prefix) {
    std::ostringstream o;
    o << section_start(id_prefix + "fixes", "Fixes, in order (share of latency first, then P0..P5)");
    if (v.fixes.empty()) o << "<p>None.</p>\n";
    o << "<ol>\n";
    for (const auto& fx : v.fixes) {
        o << "<li><span class=\"prio\">" << e(to_string(fx.priority)) << "</span> " << e(fx.action)
          << " <span class=\"meta\">for " << e(fx.rule_id) << (fx.instance.empty() ? "" : " on " + e(named(v, fx.instance)))
          << (fx.share_pct ? " · " + e(format_number(*fx.share_pct)) + " % of latency" : "") << "</span>";
        if (!fx.playbook.empty()) o << " — <code>iodiag playbook " << e(fx.playbook) << "</code>";
        o << "</li>\n";
    }
    o << "</ol>\n</section>\n";
    return o.str();
}

std::string notes_section(const Verdict& v) {
    if (v.notes.empty()) return "";
    std::ostringstream o;
    o << section_start("notes", "Notes (info, or off the triage path)");
    for (size_t i = 0; i < v.notes.size(); ++i) finding_article(o, v, i + 1, v.notes[i], "note-", true);
    o << "</section>\n";
    return o.str();
}

std::string trail_section(const Verdict& v, const std::string& id_prefix) {
    std::ostringstream o;
    o << section_start(id_prefix + "trail", "How this was reached (decision graph, bottom-up)");
    o << "<ol class=\"trail\">\n";
    for (const auto& s : v.trail) {
        o << "<li><b>" << e(s.layer) << "</b>: " << e(to_string(s.state));
        if (!s.summary.empty()) o << " — " << e(s.summary);
        if (!s.next.empty()) o << "<br><span class=\"meta\">→ " << e(s.next) << "</span>";
        o << "</li>\n";
    }
    o << "</ol>\n";
    if (!v.not_evaluated.empty()) {
        o << "<h3>Rules not evaluated (their evidence is missing)</h3><ul>\n";
        for (const auto& n : v.not_evaluated) o << "<li>" << e(n) << "</li>\n";
        o << "</ul>\n";
    }
    o << "</section>\n";
    return o.str();
}

std::string distributions_section(const Verdict& v) {
    if (v.distributions.empty()) return "";
    std::ostringstream o;
    o << section_start("distributions", "Latency distributions of the whole window");
    for (const auto& h : v.distributions) {
        const auto& b = h.hist.buckets();
        if (b.empty()) continue;
        const uint64_t peak = *std::max_element(b.begin(), b.end());
        o << "<h3><code>" << e(h.name + labels_suffix(named_labels(v, h.labels))) << "</code></h3>\n<p class=\"meta\">n "
          << h.hist.total() << " · p50 " << e(format_amount(h.hist.percentile(50).value, h.unit)) << " · p99 "
          << e(format_amount(h.hist.percentile(99).value, h.unit)) << " · p99.9 "
          << e(format_amount(h.hist.percentile(99.9).value, h.unit)) << " (within their log2 bucket)</p>\n";
        o << "<table class=\"distribution\"><tr><th>bucket</th><th>count</th><th></th></tr>\n";
        size_t first = 0;
        while (first < b.size() && b[first] == 0) ++first;
        for (size_t i = first; i < b.size(); ++i) {
            const int k = static_cast<int>(i);
            o << "<tr><td class=\"num\">" << e(format_bound(Log2Histogram::bucket_lo(k), h.unit)) << " – "
              << e(format_bound(Log2Histogram::bucket_hi(k) + 1, h.unit)) << "</td><td class=\"num\">" << b[i]
              << "</td><td><span class=\"hbar\" style=\"width:"
              << svg_number(peak ? 240.0 * static_cast<double>(b[i]) / static_cast<double>(peak) : 0) << "px\"></span></td></tr>\n";
        }
        o << "</table>\n";
    }
    o << "</section>\n";
    return o.str();
}

std::string slowest_section(const Verdict& v) {
    std::ostringstream o;
    o << section_start("slowest", "Slowest operations (each part measured)");
    if (v.slowest.empty()) {
        o << "<p>None recorded.</p>\n</section>\n";
        return o.str();
    }
    o << "<table class=\"slowest\"><tr><th>kind</th><th>who / what</th><th>total</th><th>parts</th><th></th></tr>\n";
    for (const auto& x : v.slowest) {
        const auto [total, parts, other] = split_exemplar(x);
        std::string text;
        o << "<tr><td>" << e(x.kind) << "</td><td><code>" << e(labels_suffix(named_labels(v, x.labels))) << "</code>"
          << (other.empty() ? "" : "<br><span class=\"meta\">" + e(other) + "</span>") << "</td><td class=\"num\">"
          << e(format_amount(total, x.unit)) << "</td><td><div class=\"bar\">";
        for (const auto& [val, name] : parts) {
            o << "<span style=\"width:" << svg_number(total > 0 ? std::min(100.0, val / total * 100) : 0)
              << "%;background:" << layer_colour(name) << "\" title=\"" << e(name + " " + format_amount(val, x.unit))
              << "\"></span>";
            text += (text.empty() ? "" : " + ") + name + " " + format_amount(val, x.unit);
        }
        o << "</div></td><td class=\"meta\">" << e(text) << "</td></tr>\n";
    }
    o << "</table>\n</section>\n";
    return o.str();
}

std::string collectors_section(const Verdict& v) {
    std::ostringstream o;
    o << section_start("collectors", "Collectors");
    o << "<table><tr><th>collector</th><th>state</th><th>layers</th><th>reason or note</th></tr>\n";
    for (const auto& c : v.collectors) {
        std::string layers;
        for (const auto& l : c.layers) layers += (layers.empty() ? "" : ", ") + l;
        o << "<tr><td>" << e(c.name) << "</td><td class=\"" << (c.available ? "state-normal" : "state-abnormal") << "\">"
          << (c.available ? "available" : "UNAVAILABLE") << "</td><td>" << e(layers) << "</td><td>" << e(c.reason)
          << "</td></tr>\n";
    }
    o << "</table>\n</section>\n";
    return o.str();
}

// ---- before / after ---------------------------------------------------------

namespace {

void change_rows(std::ostringstream& o, const std::string& title, const std::vector<FindingChange>& list,
                 const std::string& kind) {
    o << "<h3>" << e(title) << " (" << list.size() << ")</h3>\n";
    if (list.empty()) {
        o << "<p class=\"meta\">none</p>\n";
        return;
    }
    for (const auto& c : list) {
        o << "<article class=\"finding " << e(to_string(c.severity)) << "\">\n<h3>" << status_badge(to_string(c.severity))
          << " " << e(c.title) << "</h3>\n<p class=\"meta\">layer " << e(c.layer) << " · rule <code>" << e(c.rule_id)
          << "</code>" << (c.instance.empty() ? "" : " on " + e(c.instance_key) + " " + e(c.instance));
        if (c.placement_before != c.placement_after)
            o << " · " << e(c.placement_before.empty() ? "absent" : c.placement_before) << " → "
              << e(c.placement_after.empty() ? "absent" : c.placement_after);
        o << "</p>\n";
        const bool unsure = c.other_side == Tri::Unknown && kind != "persisting";
        if (unsure) {
            std::string miss;
            for (const auto& m : c.missing_other_side) miss += (miss.empty() ? "" : ", ") + m;
            o << "<p class=\"missing\">"
              << e(kind == "resolved" ? "Not confirmed: gone from AFTER's verdict, but AFTER could not evaluate the rule (missing: " + miss + ")."
                                      : "BEFORE could not evaluate this rule (missing: " + miss + "): it may have been there unobserved.")
              << "</p>\n";
        }
        o << "<table><tr><th>value</th><th>before</th><th>after</th></tr>\n";
        if (c.share_before || c.share_after)
            o << "<tr" << (pct(c.share_before) != pct(c.share_after) ? " class=\"changed\"" : "") << "><td>share" << e(c.share_metric.empty() ? "" : " (" + c.share_metric + ")") << "</td><td class=\"num\">"
              << e(pct(c.share_before)) << "</td><td class=\"num\">" << e(pct(c.share_after)) << "</td></tr>\n";
        // What moved stands out; the unchanged values stay for reference.
        for (const auto& v : c.values)
            o << "<tr" << (v.before != v.after ? " class=\"changed\"" : "") << "><td><code>"
              << e(v.name + labels_suffix(v.labels)) << "</code></td><td class=\"num\">"
              << e(v.before.empty() ? "–" : v.before) << "</td><td class=\"num\">" << e(v.after.empty() ? "–" : v.after)
              << "</td></tr>\n";
        o << "</table>\n";
        for (const auto& vf : c.verify)
            o << "<p class=\"meta\">verify " << e(vf.after.empty() ? "not evaluated on AFTER; as BEFORE printed it: " + vf.before
                                                                   : verify_result(vf.outcome) + ": " + vf.after)
              << "</p>\n";
        o << "</article>\n";
    }
}

}  // namespace

std::string diff_content(const VerdictDiff& d) {
    std::ostringstream o;
    o << section_start("diff", "What the fix changed");
    o << "<p>Status " << status_badge(d.status_before) << " → " << status_badge(d.status_after) << " · "
      << (d.got_worse() ? "<b>something got worse</b>" : "nothing got worse") << ": " << d.resolved.size()
      << " resolved, " << d.persisting.size() << " persisting, " << d.appeared.size() << " new, " << d.smart.size()
      << " NVMe SMART change(s)</p>\n";
    if (!d.same_host())
        o << "<p class=\"missing\">" << e("The two bundles come from different hosts (" + d.host_before + ", " + d.host_after +
                                          "): findings are compared by rule and instance name only.")
          << "</p>\n";
    change_rows(o, "Resolved", d.resolved, "resolved");
    change_rows(o, "Persisting", d.persisting, "persisting");
    change_rows(o, "New", d.appeared, "new");
    o << "<h3>NVMe SMART (" << d.smart.size() << ")</h3>\n";
    if (d.smart.empty()) {
        o << "<p class=\"meta\">No counter grew (or no NVMe SMART log in both bundles).</p>\n";
    } else {
        o << "<table><tr><th>device</th><th>field</th><th>before</th><th>after</th><th>growth</th><th>meaning</th></tr>\n";
        for (const auto& s : d.smart)
            o << "<tr><td>" << e(s.device) << (s.serial.empty() ? "" : " (" + e(s.serial) + ")") << "</td><td>" << e(s.field)
              << "</td><td class=\"num\">" << e(s.before) << "</td><td class=\"num\">" << e(s.after) << "</td><td class=\"num\">"
              << e(s.delta) << "</td><td>" << e(s.meaning) << "</td></tr>\n";
        o << "</table>\n";
    }
    o << "</section>\n";
    return o.str();
}

std::string side_by_side(const Evidence& before, const Evidence& after, size_t per_name) {
    std::ostringstream o;
    o << section_start("pictures", "Before and after, side by side");
    auto share_cell = [](const Evidence& ev) {
        if (ev.series.empty()) return missing("Not available: " + no_series_reason(ev) + ".");
        const std::string chart = render_share_chart(ev.series, "layer.time_us", ev.window.duration_s);
        if (!chart.empty()) return "<figure>" + chart + "</figure>";
        return has_series(ev, "layer.time_us")
                   ? missing("No traced syscall time in this window.")
                   : missing("Not available: no layer.time_us series (" + collector_state(ev, "syscall_bpf") + ").");
    };
    o << "<h3>Share of each layer over time</h3>\n<div class=\"pair\"><div><h4>before</h4>" << share_cell(before)
      << "</div><div><h4>after</h4>" << share_cell(after) << "</div></div>\n";

    // Heatmaps paired by series name and labels; each pair on one scale.
    using Key = std::pair<std::string, Labels>;
    std::vector<Key> keys;
    auto add_keys = [&](const Evidence& ev) {
        for (const auto* h : report_heatmap_series(ev.series, per_name)) {
            const Key k{h->name, h->labels};
            if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
        }
    };
    add_keys(before);
    add_keys(after);
    o << "<h3>Latency heatmaps (each pair on one scale: equal colours, equal counts)</h3>\n";
    if (keys.empty()) {
        o << missing("Neither bundle has histogram series" +
                     std::string(before.series.empty() || after.series.empty() ? " (a bundle without per-interval series needs a newer recording)" : "") + ".");
    }
    for (const Key& key : keys) {
        // Named references, not a structured binding: clang before 16 (the
        // sanitizer and fuzz build) cannot capture a binding in the lambda below.
        const auto& name = key.first;
        const auto& labels = key.second;
        const HistogramSeries* hb = before.series.find_histogram(name, labels);
        const HistogramSeries* ha = after.series.find_histogram(name, labels);
        std::optional<Heatmap> mb, ma;
        // Long recordings merged into columns first, so the shared scale is
        // the scale of what is drawn.
        const size_t columns = HeatmapSvgOptions{}.max_columns;
        if (hb) mb = merge_intervals(make_heatmap(before.series, *hb, before.window.duration_s), columns);
        if (ha) ma = merge_intervals(make_heatmap(after.series, *ha, after.window.duration_s), columns);
        if (mb && ma) share_scale(*mb, *ma);
        if ((!mb || mb->empty()) && (!ma || ma->empty())) continue;   // nothing on either side
        auto cell = [&](const std::optional<Heatmap>& m, const Evidence& ev) {
            if (!m) return missing("No " + name + labels_suffix(labels) + " series in this bundle" +
                                   (ev.series.empty() ? " (" + no_series_reason(ev) + ")." : "."));
            if (m->empty()) return missing("No operation in " + m->title() + " in this window.");
            return heatmap_figure(*m, heatmap_caption(*m));
        };
        o << "<div class=\"pair\"><div><h4>before</h4>" << cell(mb, before) << "</div><div><h4>after</h4>" << cell(ma, after)
          << "</div></div>\n";
    }
    o << "</section>\n";
    return o.str();
}

}  // namespace iodiag::report
