// The pieces of the HTML reports (engine/render/report_html.hpp): the page
// frame with its style, and one function per section. Everything from a
// bundle is escaped here; the page has no script and a Content-Security-Policy
// that forbids scripts and every network load, so even a missed escape could
// not run code or call out.
#pragma once

#include <string>

#include "engine/evidence/evidence.hpp"
#include "engine/triage/verdict.hpp"
#include "engine/triage/verdict_diff.hpp"

namespace iodiag::report {

std::string page_start(const std::string& title);
std::string page_end(const std::string& footer);

// "ok" when nothing was found, else the worst severity ("warning", ...).
std::string status_of(const Verdict& v);
// label: the text shown, when not the status itself (a note's tag).
std::string status_badge(const std::string& status, const std::string& label = "");

// host, kernel, window, series, bundle schema.
std::string header_facts(const Evidence& ev, const std::string& source);
// What pictures this bundle cannot give and why ("" when it has them all).
std::string missing_pictures_notice(const Evidence& ev);

std::string summary_section(const Evidence& ev, const Verdict& v);
// The stacked share of each layer per interval ("" for the body when absent,
// then the reason is shown in place).
std::string share_charts(const Evidence& ev, const Verdict& v);
std::string heatmaps_section(const Evidence& ev, size_t per_name);
std::string series_section(const Evidence& ev);
// id_prefix keeps element ids unique when two verdicts share a page.
std::string layers_section(const Verdict& v, const std::string& id_prefix = "");
std::string findings_section(const Verdict& v, const std::string& id_prefix = "");
std::string fixes_section(const Verdict& v, const std::string& id_prefix = "");
std::string notes_section(const Verdict& v);
std::string trail_section(const Verdict& v, const std::string& id_prefix = "");
std::string distributions_section(const Verdict& v);
std::string slowest_section(const Verdict& v);
std::string collectors_section(const Verdict& v);

// The `iodiag diff` content: status, resolved / persisting / new findings
// with values before -> after and verify checks, NVMe SMART growth.
std::string diff_content(const VerdictDiff& d);
// Both recordings' share charts and heatmaps side by side, pairs drawn on
// one scale.
std::string side_by_side(const Evidence& before, const Evidence& after, size_t per_name);

}  // namespace iodiag::report
