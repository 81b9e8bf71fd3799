// The Markdown ticket body: its sections in the order a ticket reads, tables
// that stay tables whatever the evidence says, every top finding with its
// evidence, every fix with its playbook.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "engine/evidence/bundle.hpp"
#include "engine/render/render.hpp"
#include "engine/triage/analysis.hpp"
#include "tests/unit/shipped_rules.hpp"

using namespace iodiag;
using iodiag::testing::shipped_rules;

namespace {

const std::string kBundles = std::string(IODIAG_FIXTURES) + "/bundles/";

// Cell separators of a table row: '|' not escaped as "\|".
size_t cells(const std::string& row) {
    size_t n = 0;
    for (size_t i = 0; i < row.size(); ++i)
        if (row[i] == '|' && (i == 0 || row[i - 1] != '\\')) ++n;
    return n;
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

class Markdown : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(Markdown, IsATicketBody) {
    const Verdict v = analyze(load_bundle(kBundles + GetParam() + ".json"), shipped_rules());
    const std::string md = render_markdown(v);
    const auto ls = lines(md);
    ASSERT_GE(ls.size(), 3u);
    // One-line summary first, then a blank line.
    const std::string state = v.findings.empty() ? "OK" : v.status == Severity::Critical ? "CRITICAL" : "WARNING";
    EXPECT_EQ(ls[0].rfind("**iodiag " + state + " on " + v.host + "**: ", 0), 0u) << ls[0];
    EXPECT_TRUE(ls[1].empty());
    if (!v.findings.empty()) { EXPECT_NE(ls[0].find(v.findings.front().title.substr(0, 20)), std::string::npos); }

    // Sections in the order a ticket reads.
    size_t at = 0;
    std::vector<std::string> sections{"## Who suffered", "## Where the time went", "## How this was reached",
                                      "## Findings"};
    if (!v.findings.empty()) sections.insert(sections.end(), {"## Fixes, in order", "## How to verify"});
    for (const auto& s : sections) {
        const size_t found = md.find("\n" + s, at);
        ASSERT_NE(found, std::string::npos) << s;
        at = found + 1;
    }
    EXPECT_NE(md.find(v.fingerprint), std::string::npos);

    // Every table row has as many cells as its header.
    size_t header = 0;
    for (const auto& l : ls) {
        if (l.empty() || l[0] != '|') {
            header = 0;
            continue;
        }
        if (header == 0)
            header = cells(l);
        else
            EXPECT_EQ(cells(l), header) << l;
    }
    // One layer row per layer.
    for (const auto& row : v.layers) EXPECT_NE(md.find("\n| " + row.layer + " | "), std::string::npos) << row.layer;
    // Top findings with the evidence they cite; every fix with its playbook.
    for (size_t i = 0; i < v.findings.size() && i < 5; ++i) {
        EXPECT_NE(md.find("`" + v.findings[i].rule_id + "`"), std::string::npos);
        for (const auto& c : v.findings[i].evidence) EXPECT_NE(md.find("`" + c.name), std::string::npos) << c.name;
    }
    for (const auto& fx : v.fixes)
        if (!fx.playbook.empty()) { EXPECT_NE(md.find("`iodiag playbook " + fx.playbook + "`"), std::string::npos); }
    // No raw HTML from the evidence: the only tags are the collapsed section's.
    std::string stripped = md;
    for (const char* tag : {"<details>", "<summary>", "</summary>", "</details>"})
        for (size_t p; (p = stripped.find(tag)) != std::string::npos;) stripped.erase(p, std::string(tag).size());
    EXPECT_EQ(stripped.find('<'), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(RecordedFaults, Markdown,
                         ::testing::Values("slow_device", "tiny_nr_requests", "dirty_throttle", "memcg_reader",
                                           "device_saturated", "fsync_storm", "cached_reads", "blkio_throttle",
                                           "fsync_storm_xfs", "dirty_throttle_btrfs"));

TEST(MarkdownText, EvidenceCannotBreakATableOrInjectMarkup) {
    Verdict v;
    v.host = "h|<b>";
    Finding f;
    f.rule_id = "r";
    f.layer = "device";
    f.severity = Severity::Warning;
    f.title = "a | b <script>";
    f.mechanism = "line one\nline two";
    f.evidence.push_back({"m", {}, 1, "ms", "> 2 | 3", {"file", "/x|y"}, "", "1 ms"});
    v.status = Severity::Warning;
    v.findings.push_back(f);
    const std::string md = render_markdown(v);
    EXPECT_EQ(md.find("<script>"), std::string::npos);
    EXPECT_NE(md.find("`h'<b>`"), std::string::npos);   // in a code span: shown as written, never markup
    EXPECT_NE(md.find("a \\| b &lt;script&gt;"), std::string::npos);
    EXPECT_NE(md.find("| `m` | 1 ms | &gt; 2 \\| 3 | file: /x\\|y |"), std::string::npos) << md;
    EXPECT_NE(md.find("line one line two"), std::string::npos);
}

// A rule above info kept out of the findings (unfelt by the slow syscalls)
// is listed under the notes as a note with its rule's severity, not as
// "[CRITICAL]", which read like a diagnosis the status did not carry.
// two_apps_device_one_thread: loop0's D2C tail (critical) on the writers'
// device, which no slow syscall waited on.
TEST(Notes, AreTaggedAsNotesWithTheirRulesSeverityInTextAndMarkdown) {
    const Verdict v = analyze(load_bundle(kBundles + "two_apps_device_one_thread.json"), shipped_rules());
    const auto critical_note = std::find_if(v.notes.begin(), v.notes.end(),
                                            [](const Finding& f) { return f.severity == Severity::Critical; });
    ASSERT_NE(critical_note, v.notes.end()) << "the fixture no longer has a critical rule among its notes";
    EXPECT_NE(v.status, Severity::Critical);
    const std::string text = render_text(v), md = render_markdown(v);
    const std::string notes = text.substr(text.find("\nNOTES\n"));
    EXPECT_EQ(notes.find("[CRITICAL]"), std::string::npos) << notes;
    EXPECT_NE(notes.find("[note; its rule is critical] " + critical_note->title), std::string::npos) << notes;
    EXPECT_NE(md.find("- [note; its rule is critical] "), std::string::npos) << md;
}
