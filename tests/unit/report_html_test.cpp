// The HTML report: self-contained (no script, nothing fetched), every picture
// the series allow, the verdict's text, escaping of everything a bundle holds,
// and a version-1 bundle that says which pictures need a newer recording.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>

#include "engine/evidence/bundle.hpp"
#include "engine/render/report_charts.hpp"
#include "engine/render/report_html.hpp"
#include "engine/render/report_markup.hpp"
#include "engine/rules/rules.hpp"
#include "engine/triage/analysis.hpp"
#include "engine/triage/verdict_diff.hpp"
#include "tests/unit/series_evidence.hpp"
#include "tests/unit/shipped_rules.hpp"

using namespace iodiag;
using iodiag::testing::count_of;
using iodiag::testing::series_evidence;
using iodiag::testing::shipped_rules;

namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

// Nothing that runs or calls out: no script, no event handler, no URL but the
// SVG namespace and in-page anchors.
void expect_self_contained(const std::string& html) {
    const std::string l = lower(html);
    EXPECT_EQ(l.find("<script"), std::string::npos);
    EXPECT_EQ(l.find("javascript:"), std::string::npos);
    // Attribute values hold escaped text only (no raw quote): with them
    // emptied, what is left of each tag is its markup.
    const std::string tags_only = std::regex_replace(l, std::regex(R"(="[^"]*")"), "=\"\"");
    EXPECT_FALSE(std::regex_search(tags_only, std::regex(R"(<[^>]*\son[a-z]+\s*=)"))) << "an event handler attribute";
    EXPECT_FALSE(std::regex_search(tags_only, std::regex(R"(<[^>]*\s(src|href|xlink:href)\s*=\s*[^"\s>])")))
        << "an unquoted reference";
    EXPECT_FALSE(std::regex_search(l, std::regex(R"(<[^>]*\s(src|href|xlink:href)\s*=\s*"(?!#))")))
        << "a reference out of the page";
    std::string no_ns = l;
    for (size_t at; (at = no_ns.find("http://www.w3.org/2000/svg")) != std::string::npos;) no_ns.erase(at, 26);
    EXPECT_EQ(no_ns.find("http:"), std::string::npos);
    EXPECT_EQ(no_ns.find("https:"), std::string::npos);
    EXPECT_EQ(no_ns.find("@import"), std::string::npos);
    EXPECT_EQ(no_ns.find("url("), std::string::npos);
    EXPECT_NE(html.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
}

Verdict hand_verdict(const std::string& title) {
    Verdict v;
    v.host = "testhost";
    v.status = Severity::Critical;
    Finding f;
    f.rule_id = "dirty.throttled";
    f.layer = "dirty";
    f.severity = Severity::Critical;
    f.title = title;
    f.mechanism = "Writers sleep in balance_dirty_pages <because> the dirty limit is tiny";
    f.share_pct = 91;
    f.share_metric = "attr.slow_share_pct";
    f.evidence.push_back({"dirty.pause_us", {{"cgroup", "/a\"b<c>"}}, 9000, "us", ">= 1000", {"tracepoint", "writeback"}, "", ""});
    f.fixes.push_back({Priority::P4, "Raise vm.dirty_bytes", "dirty-limits"});
    v.findings.push_back(f);
    v.fixes.push_back({Priority::P4, "Raise vm.dirty_bytes", "dirty-limits", f.rule_id, "", 91});
    v.trail.push_back({"device", LayerState::Normal, "vda fine", "normal -> look higher"});
    v.layers.push_back({"dirty", LayerState::Abnormal, 91, 50, "of slow syscall time", "pause 9 ms", "syscall_bpf"});
    v.slowest.push_back({"syscall", {{"comm", "<img src=x onerror=alert(1)>"}}, {{"total_us", 12000}, {"dirty_us", 11000}, {"cpu_us", 500}}, "us", {}});
    return v;
}

}  // namespace

TEST(ReportHtml, HasEveryPictureTheSeriesAllow) {
    const Evidence ev = series_evidence();
    const Verdict v = hand_verdict("Writers throttled by a tiny dirty limit");
    const std::string html = render_report_html(ev, v, {"bundle.json", "iodiag test", 6});
    expect_self_contained(html);
    // Heatmaps: syscall write and read, block.d2c_us of vda; not the idle sdz or the per-op split.
    EXPECT_EQ(count_of(html, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"heatmap\""), 3u);
    EXPECT_EQ(count_of(html, "<rect class=\"cell"), 10u * 12 /* write 3..14 */ + 10u * 1 /* read */ + 10u * 7 /* d2c */);
    EXPECT_NE(html.find("No operation in the window: block.d2c_us{device=sdz}"), std::string::npos);
    // The share chart: one segment per layer with time in each interval.
    EXPECT_EQ(count_of(html, "class=\"share-chart\""), 1u);
    EXPECT_EQ(count_of(html, "<rect class=\"share\""), 20u);
    EXPECT_EQ(count_of(html, "class=\"sparkline\""), 1u);   // psi; allocstall is all zero
    EXPECT_NE(html.find("Zero in every interval: vmstat.allocstall"), std::string::npos);
    EXPECT_NE(html.find("id=\"top-finding\">Writers throttled by a tiny dirty limit<"), std::string::npos);
    EXPECT_NE(html.find("&lt;because&gt;"), std::string::npos);
    EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
    EXPECT_NE(html.find("cgroup=/a&quot;b&lt;c&gt;"), std::string::npos);
    EXPECT_EQ(html.find("id=\"missing-pictures\""), std::string::npos);
}

TEST(ReportHtml, WindowSharesFollowTheLayerSeries) {
    const Evidence ev = series_evidence();
    const auto shares = window_layer_shares(ev.series, "layer.time_us");
    ASSERT_EQ(shares.size(), 2u);
    EXPECT_EQ(shares[0].first, "dirty");   // bottom-up: dirty below cpu
    EXPECT_EQ(shares[1].first, "cpu");
    const double dirty = 5 * 10'000 + 5 * 900'000, cpu = 5 * 90'000 + 5 * 100'000;
    EXPECT_NEAR(shares[0].second, dirty / (dirty + cpu) * 100, 1e-9);
}

TEST(ReportHtml, HostileBundleStringsAreTextNotMarkup) {
    Evidence ev = series_evidence("<script>alert(1)</script>");
    ev.host = "h\"><script>alert(2)</script>";
    ev.series.values[0].labels["layer"] = "dirty\"><svg onload=alert(3)>";
    const Verdict v = hand_verdict("</p><script>alert(4)</script>");
    const std::string html = render_report_html(ev, v);
    expect_self_contained(html);
    EXPECT_NE(html.find("&lt;script&gt;alert(4)&lt;/script&gt;"), std::string::npos);
}

TEST(ReportHtml, VersionOneBundleSaysWhichPicturesNeedANewerRecording) {
    ASSERT_TRUE(shipped_rules().ok());
    const Evidence ev = load_bundle(std::string(IODIAG_FIXTURES) + "/bundles/dirty_throttle.json");
    ASSERT_EQ(ev.schema_version, 1);
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty());
    const std::string html = render_report_html(ev, v, {"dirty_throttle.json", "", 6});
    expect_self_contained(html);
    EXPECT_NE(html.find("id=\"missing-pictures\""), std::string::npos);
    EXPECT_NE(html.find("schema version 1"), std::string::npos);
    EXPECT_NE(html.find("need a newer recording"), std::string::npos);
    EXPECT_EQ(count_of(html, "class=\"cell"), 0u);
    EXPECT_GE(count_of(html, "class=\"missing\""), 3u);   // share, heatmaps, series: each says why in place
    EXPECT_NE(html.find(xml_escape(v.findings.front().title)), std::string::npos);
    // What a version-1 bundle does hold is all there.
    for (const char* id : {"id=\"findings\"", "id=\"fixes\"", "id=\"trail\"", "id=\"distributions\"", "id=\"slowest\"",
                           "id=\"collectors\"", "id=\"layers\""})
        EXPECT_NE(html.find(id), std::string::npos) << id;
}

TEST(ReportHtml, BeforeAfterPairsHeatmapsOnOneScale) {
    ASSERT_TRUE(shipped_rules().ok());
    Evidence before = series_evidence(), after = series_evidence();
    for (auto& i : after.series.histograms[0].intervals) i = iodiag::testing::hist_at(7, 2000);
    const VerdictDiff d = diff_evidence(before, after, shipped_rules());
    const std::string html = render_diff_report_html(before, analyze(before, shipped_rules()), after,
                                                     analyze(after, shipped_rules()), d, {"a · b", "", 6});
    expect_self_contained(html);
    EXPECT_NE(html.find("id=\"diff\""), std::string::npos);
    EXPECT_EQ(count_of(html, "class=\"share-chart\""), 2u);
    EXPECT_EQ(count_of(html, "class=\"pair\""), 1u + 3u);   // share charts, then 3 heatmap pairs
    // The d2c pair shares rows and colour scale: 7..13 and 2000 on both sides.
    EXPECT_EQ(count_of(html, "data-metric=\"block.d2c_us\" data-labels=\"{device=vda}\" data-intervals=\"10\" "
                             "data-columns=\"10\" data-per-column=\"1\" data-rows=\"7\" data-bucket-lo=\"7\" data-bucket-hi=\"13\" data-max-count=\"2000\""),
              2u);
    // Unique ids although two verdicts share the page.
    std::regex id_re("id=\"([^\"]+)\"");
    std::set<std::string> ids;
    for (auto it = std::sregex_iterator(html.begin(), html.end(), id_re); it != std::sregex_iterator(); ++it)
        EXPECT_TRUE(ids.insert((*it)[1]).second) << "duplicate id " << (*it)[1];
}

// A real recording (tests/fixtures/series/README.md): vm.dirty_bytes cut to
// 2 MiB at 5.1 s of a 10 s window under a buffered writer.
TEST(ReportHtml, RecordedMidWindowFaultShowsInTheShareChart) {
    ASSERT_TRUE(shipped_rules().ok());
    const Evidence ev = load_bundle(std::string(IODIAG_FIXTURES) + "/series/dirty_midwindow.json");
    ASSERT_EQ(ev.series.count, 10u);
    auto dirty_share = [&](size_t i) {
        double dirty = 0, all = 0;
        for (const auto& v : ev.series.values)
            if (v.name == "layer.time_us") {
                all += v.intervals[i];
                if (v.labels.at("layer") == "dirty") dirty += v.intervals[i];
            }
        return all > 0 ? dirty / all : 0;
    };
    for (size_t i = 0; i < 5; ++i) EXPECT_LT(dirty_share(i), 0.05) << "interval " << i;
    for (size_t i = 6; i < 10; ++i) EXPECT_GT(dirty_share(i), 0.5) << "interval " << i;
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty());
    EXPECT_EQ(v.findings.front().layer, "dirty");
    const std::string html = render_report_html(ev, v);
    expect_self_contained(html);
    // Dirty segments only from the cut on: the colour takes over at 5 s.
    EXPECT_EQ(count_of(html, "<rect class=\"share\" data-layer=\"dirty\""), 2u * 5);   // all and slow-only charts
    EXPECT_NE(html.find("syscall.latency_us{op=write}"), std::string::npos);
    EXPECT_EQ(html.find("id=\"missing-pictures\""), std::string::npos);
}

// The share chart's series are the syscall collector's classes; where the
// layer table counts the I/O scheduler's part of the device class under the
// block queue, the chart says how much of its "device" that is.
TEST(ReportHtml, ShareChartSaysHowMuchOfDeviceTheLayerTableCountsUnderTheBlockQueue) {
    Evidence ev = series_evidence();
    Verdict v = hand_verdict("bfq holds the requests back");
    const std::string note = "the time their requests spent in the I/O scheduler included";
    EXPECT_EQ(render_report_html(ev, v, {"bundle.json", "iodiag test", 6}).find(note), std::string::npos);
    ev.add_metric("attr.slow.block_queue_pct", {}, 5, "pct", {"tracepoint", "x"});
    v.layers.push_back({"block_queue", LayerState::Abnormal, 53, 20, "of slow syscall time", "", "block_bpf"});
    const std::string html = render_report_html(ev, v, {"bundle.json", "iodiag test", 6});
    EXPECT_NE(html.find(note + ": 48 % of the slow syscalls' time"), std::string::npos);
}
