// Every output names a cgroup first and keeps its path as evidence: the text
// verdict, JSON, Markdown, the HTML report, the Prometheus textfile (names as
// labels, never paths) and `iodiag check`'s status line; a bundle recorded
// before cgroups were named still shows their paths.
//
// The recording: a throttled fio in a blkio group, relabelled as if it ran in
// a Docker container (systemd driver), then named as collection names it,
// with the fixture host state (the container is called "web").
#include <gtest/gtest.h>

#include "collectors/cgroup/cgroup_names.hpp"
#include "engine/evidence/bundle.hpp"
#include "engine/render/plugin_output.hpp"
#include "engine/render/render.hpp"
#include "engine/render/render_prometheus.hpp"
#include "engine/render/report_html.hpp"
#include "engine/triage/analysis.hpp"
#include "tests/unit/shipped_rules.hpp"

using namespace iodiag;
using iodiag::testing::shipped_rules;

namespace {

const std::string kBundle = std::string(IODIAG_FIXTURES) + "/bundles/blkio_throttle.json";
const std::string kId = "f31f384749f9115acf01fcf82f5a966b59dcc0a4cbd7c9740888c0bf32aa2bbb";
const std::string kScope = "/system.slice/docker-" + kId + ".scope";
const std::string kName = "docker container web f31f384749f9";

void replace_all(std::string& s, const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

// The recording's groups moved into the container's scope (the fio's blkio
// group and its memory group both).
Evidence in_a_container(bool named) {
    Evidence ev = load_bundle(kBundle);
    auto move = [](std::string& s) {
        replace_all(s, "/iodiag-lab-12263", kScope);
        replace_all(s, "/process_api/9de9a6f106d8c7ddafff969eaf0b88e4", kScope);
    };
    auto move_labels = [&](Labels& l) {
        if (auto it = l.find("cgroup"); it != l.end()) move(it->second);
    };
    for (auto& m : ev.metrics) move_labels(m.labels);
    for (auto& f : ev.facts) move_labels(f.labels), move(f.value);
    for (auto& h : ev.histograms) move_labels(h.labels);
    for (auto& e : ev.exemplars) move_labels(e.labels);
    ev.metric_index = {}, ev.fact_index = {}, ev.histogram_index = {};
    if (named) add_cgroup_names(ev, std::string(IODIAG_FIXTURES) + "/cgroup/hoststate");
    return ev;
}

const std::string kV1Label = "memory:" + kScope + ",blkio:" + kScope;

}  // namespace

TEST(CgroupNamesRender, TheVerdictKnowsTheNamesOfTheCgroupsItCites) {
    const Verdict v = analyze(in_a_container(true), shipped_rules());
    ASSERT_FALSE(v.findings.empty());
    ASSERT_TRUE(v.cgroup_names.count(kV1Label)) << "who suffered's cgroup";
    EXPECT_EQ(v.cgroup_names.at(kV1Label).name, kName);
    EXPECT_EQ(v.cgroup_names.at(kV1Label).kind, "docker-container");
    EXPECT_EQ(v.cgroup_names.at(kV1Label).provenance.kind, "file");
    // The finding on the container's blkio group (the cgroup collector's label).
    ASSERT_TRUE(v.cgroup_names.count(kScope));
}

TEST(CgroupNamesRender, TextNamesFirstPathAsEvidence) {
    const Verdict v = analyze(in_a_container(true), shipped_rules());
    const std::string text = render_text(v);
    const std::string shown = kName + " (" + kV1Label + ")";
    const size_t who = text.find("  Who:");
    ASSERT_NE(who, std::string::npos) << text;
    EXPECT_NE(text.substr(who, text.find('\n', who) - who).find("cgroup " + shown), std::string::npos) << text;
    // The findings' titles and evidence name it too.
    EXPECT_NE(text.find(kName + " (" + kScope + ")"), std::string::npos) << text;
    EXPECT_NE(text.find("cgroup=" + shown), std::string::npos) << text;
    // Never the path alone where a name is known: every occurrence of the
    // scope follows its name, but in what analyze() writes as text itself (a
    // folded finding's sentence in the mechanism, the rules not evaluated).
    const std::string shown_part = text.substr(0, text.find("RULES NOT EVALUATED"));
    for (size_t at = shown_part.find(kScope); at != std::string::npos; at = shown_part.find(kScope, at + 1)) {
        const size_t line = shown_part.rfind('\n', at);
        const std::string before = shown_part.substr(line + 1, at - line - 1);
        if (before.find("(Same cause as") != std::string::npos) continue;
        EXPECT_NE(before.find(kName), std::string::npos)
            << shown_part.substr(line + 1, shown_part.find('\n', at) - line - 1);
    }
}

TEST(CgroupNamesRender, JsonAddsNamesBesideTheLabels) {
    const Verdict v = analyze(in_a_container(true), shipped_rules());
    const auto j = render_json(v);
    EXPECT_EQ(j["who_suffered"]["cgroup"], kV1Label);   // the label keeps its meaning
    EXPECT_EQ(j["who_suffered"]["cgroup_name"], kName);
    EXPECT_EQ(j["who_suffered"]["cgroup_kind"], "docker-container");
    EXPECT_EQ(j["cgroup_names"][kScope]["name"], kName);
    EXPECT_EQ(j["cgroup_names"][kScope]["kind"], "docker-container");
    EXPECT_NE(j["cgroup_names"][kScope]["provenance"]["source"].get<std::string>().find("config.v2.json"),
              std::string::npos);
    // The group's own finding (cgroup.io_limit_reached) is folded into the
    // syscall rule's here: its instance is named in the text it left.
    ASSERT_FALSE(j["findings"].empty());
    EXPECT_NE(j["findings"][0]["title"].get<std::string>().find(kName + " (" + kV1Label + ")"), std::string::npos);
}

TEST(CgroupNamesRender, AFindingOnACgroupIsNamedInEveryOutput) {
    // A finding per cgroup (for_each: cgroup) on the triage path.
    Verdict v;
    v.host = "h";
    v.fingerprint = "0123456789abcdef";
    v.status = Severity::Warning;
    Finding f;
    f.rule_id = "cgroup.io_limit_reached";
    f.layer = "cgroup";
    f.severity = Severity::Warning;
    f.instance_key = "cgroup";
    f.instance = kScope;
    f.title = "cgroup runs at its I/O limit";
    f.share_pct = 40;
    f.fixes.push_back({Priority::P1, "Raise the limit", "cgroup-io-limit"});
    v.findings.push_back(f);
    v.fixes.push_back({Priority::P1, "Raise the limit", "cgroup-io-limit", f.rule_id, kScope, 40.0});
    v.cgroup_names[kScope] = {kName, "docker-container", {"file", "test"}};
    const auto j = render_json(v);
    EXPECT_EQ(j["findings"][0]["instance"], kScope);
    EXPECT_EQ(j["findings"][0]["instance_name"], kName);
    EXPECT_NE(render_text(v).find("on " + kName + " (" + kScope + ")"), std::string::npos) << render_text(v);
    EXPECT_NE(render_markdown(v).find("cgroup " + kName + " (`" + kScope + "`)"), std::string::npos)
        << render_markdown(v);
    EXPECT_NE(render_report_html(Evidence{}, v).find("cgroup " + kName + " (" + kScope + ")"), std::string::npos);
    const std::string prom = render_prometheus(v, Evidence{}, {"check", 1, 1, "x"});
    EXPECT_NE(prom.find("iodiag_finding_cgroup{cgroup_kind=\"docker-container\",cgroup_name=\"" + kName +
                        "\",layer=\"cgroup\",mode=\"check\",rule_id=\"cgroup.io_limit_reached\",severity=\"warning\"} 1"),
              std::string::npos)
        << prom;
    EXPECT_EQ(prom.find(kScope), std::string::npos) << prom;
}

TEST(CgroupNamesRender, MarkdownNamesFirstPathAsCode) {
    const Verdict v = analyze(in_a_container(true), shipped_rules());
    const std::string md = render_markdown(v);
    EXPECT_NE(md.find("| cgroup | " + kName + " (`" + kV1Label + "`) |"), std::string::npos) << md;
    EXPECT_NE(md.find(kName + " (" + kScope + ")"), std::string::npos) << md;   // a title
}

TEST(CgroupNamesRender, HtmlReportNamesFirst) {
    const Evidence ev = in_a_container(true);
    const Verdict v = analyze(ev, shipped_rules());
    const std::string html = render_report_html(ev, v);
    EXPECT_NE(html.find(kName + " (" + kV1Label + ")"), std::string::npos);   // who suffered
    EXPECT_NE(html.find(kName + " (" + kScope + ")"), std::string::npos);     // a finding
}

TEST(CgroupNamesRender, PrometheusLabelsCarryNamesNeverPaths) {
    const Evidence ev = in_a_container(true);
    const Verdict v = analyze(ev, shipped_rules());
    const std::string prom = render_prometheus(v, ev, {"check", 1, 1, "x"});
    EXPECT_EQ(prom.find(kId.substr(12)), std::string::npos) << "a cgroup path leaked into a label:\n" << prom;
    EXPECT_NE(prom.find("iodiag_sufferer_info{app=\"fio\",cgroup_kind=\"docker-container\",cgroup_name=\"" + kName +
                        "\",mode=\"check\"} 1"),
              std::string::npos)
        << prom;
    EXPECT_NE(prom.find("cgroup_name=\"" + kName + "\""), std::string::npos) << prom;
}

TEST(CgroupNamesRender, CheckStatusLineNamesTheCgroupWithoutItsPath) {
    const Evidence ev = in_a_container(true);
    const Verdict v = analyze(ev, shipped_rules());
    const std::string line = plugin_result(v).status_line();
    EXPECT_NE(line.find(kName), std::string::npos) << line;
    EXPECT_EQ(line.find(kScope), std::string::npos) << line;
    EXPECT_NE(line.find("; who: fio pid "), std::string::npos) << line;
    EXPECT_NE(line.find(" in " + kName), std::string::npos) << line;
}

TEST(CgroupNamesRender, ABundleRecordedBeforeNamesShowsPaths) {
    const Evidence ev = in_a_container(false);
    const Verdict v = analyze(ev, shipped_rules());
    EXPECT_TRUE(v.cgroup_names.empty());
    EXPECT_EQ(render_text(v).find(kName), std::string::npos);
    EXPECT_NE(render_text(v).find(kScope), std::string::npos);
    const auto j = render_json(v);
    EXPECT_TRUE(j["cgroup_names"].empty());
    EXPECT_FALSE(j["who_suffered"].contains("cgroup_name"));
    EXPECT_NE(plugin_result(v).status_line().find(kScope), std::string::npos);
    EXPECT_EQ(render_prometheus(v, ev, {"check", 1, 1, "x"}).find("cgroup_name"), std::string::npos);
}
