#include "engine/render/report_html.hpp"

#include <sstream>
#include <tuple>

#include "engine/evidence/format.hpp"
#include "engine/render/report_markup.hpp"
#include "engine/render/report_sections.hpp"

namespace iodiag {

using namespace report;

namespace {

std::string nav(const std::vector<std::pair<std::string, std::string>>& links) {
    std::string o = "<nav>";
    for (const auto& [id, text] : links) o += "<a href=\"#" + id + "\">" + xml_escape(text) + "</a>";
    return o + "</nav>\n";
}

std::string footer(const Verdict& v, const ReportOptions& opts) {
    return "fingerprint " + v.fingerprint + " · made by " + (opts.generator.empty() ? std::string("iodiag") : opts.generator) +
           " from the recorded evidence; every figure carries its source";
}

}  // namespace

std::string render_report_html(const Evidence& ev, const Verdict& v, const ReportOptions& opts) {
    std::ostringstream o;
    o << page_start("iodiag report — " + ev.host + " — " + status_of(v));
    o << "<header><h1>iodiag report: " << xml_escape(ev.host) << " " << status_badge(status_of(v)) << "</h1>\n"
      << header_facts(ev, opts.source)
      << nav({{"summary", "verdict"}, {"share", "share over time"}, {"heatmaps", "heatmaps"}, {"series", "series"},
              {"layers", "layers"}, {"findings", "findings"}, {"fixes", "fixes"}, {"trail", "decision trail"},
              {"slowest", "slowest"}, {"collectors", "collectors"}})
      << "</header>\n";
    o << summary_section(ev, v);
    o << share_charts(ev, v);
    o << heatmaps_section(ev, opts.heatmaps_per_name);
    o << series_section(ev);
    o << layers_section(v);
    o << findings_section(v);
    o << fixes_section(v);
    o << notes_section(v);
    o << trail_section(v);
    o << distributions_section(v);
    o << slowest_section(v);
    o << collectors_section(v);
    o << page_end(footer(v, opts));
    return o.str();
}

std::string render_diff_report_html(const Evidence& before, const Verdict& vb, const Evidence& after,
                                    const Verdict& va, const VerdictDiff& d, const ReportOptions& opts) {
    std::ostringstream o;
    o << page_start("iodiag before/after — " + after.host + " — " + d.status_before + " → " + d.status_after);
    o << "<header><h1>iodiag before / after: " << xml_escape(after.host) << " " << status_badge(d.status_before) << " → "
      << status_badge(d.status_after) << "</h1>\n";
    o << "<p class=\"facts\"><b>before</b></p>" << header_facts(before, "");
    o << "<p class=\"facts\"><b>after</b></p>" << header_facts(after, "");
    if (!opts.source.empty()) o << "<p class=\"facts\"><code>" << xml_escape(opts.source) << "</code></p>\n";
    o << "<p class=\"top-finding\">" << (d.got_worse() ? "Something got worse" : "Nothing got worse") << ": "
      << d.resolved.size() << " finding(s) resolved, " << d.persisting.size() << " persisting, " << d.appeared.size()
      << " new</p>\n";
    o << nav({{"pictures", "side by side"}, {"diff", "what changed"}, {"before-verdict", "before: verdict"},
              {"after-verdict", "after: verdict"}})
      << "</header>\n";
    // The pictures first: a fix that worked is seen before it is read.
    o << side_by_side(before, after, opts.heatmaps_per_name);
    o << diff_content(d);
    for (const auto& [id, ev, v] : {std::tuple{"before-verdict", &before, &vb}, std::tuple{"after-verdict", &after, &va}}) {
        o << "<section id=\"" << id << "\">\n<h2>" << (std::string(id) == "before-verdict" ? "Before" : "After")
          << ": the verdict " << status_badge(status_of(*v)) << "</h2>\n";
        if (!v->findings.empty())
            o << "<p class=\"top-finding\">" << xml_escape(v->findings.front().title) << "</p>\n";
        o << missing_pictures_notice(*ev);
        const std::string prefix = std::string(id).substr(0, std::string(id).find('-')) + "-";
        o << layers_section(*v, prefix) << findings_section(*v, prefix) << fixes_section(*v, prefix)
          << trail_section(*v, prefix);
        o << "</section>\n";
    }
    o << page_end("before: fingerprint " + vb.fingerprint + " · after: fingerprint " + va.fingerprint + " · made by " +
                  (opts.generator.empty() ? std::string("iodiag") : opts.generator));
    return o.str();
}

}  // namespace iodiag
