// iodiag check's plugin output: state from the verdict, the status line's
// grammar (Nagios plugin guidelines), performance data from the evidence.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "engine/evidence/bundle.hpp"
#include "engine/render/plugin_output.hpp"
#include "engine/triage/analysis.hpp"
#include "tests/unit/shipped_rules.hpp"

using namespace iodiag;
using iodiag::testing::shipped_rules;

namespace {

const std::string kBundles = std::string(IODIAG_FIXTURES) + "/bundles/";

PluginResult result_of(const std::string& bundle) {
    const Evidence ev = load_bundle(kBundles + bundle + ".json");
    return plugin_result(analyze(ev, shipped_rules()));
}

// 'label'=value[UOM];[warn];[crit];[min];[max], value a plain decimal or U.
const std::regex kPerfDatum(R"('[^'=]+'=(-?[0-9]+(\.[0-9]+)?|U)(s|%|B|c)?(;(-?[0-9]+(\.[0-9]+)?)?){0,4})");

void expect_plugin_grammar(const std::string& line) {
    EXPECT_EQ(line.find('\n'), std::string::npos);
    const auto bar = line.find(" | ");
    ASSERT_NE(bar, std::string::npos) << line;
    EXPECT_TRUE(std::regex_match(line.substr(0, bar), std::regex(R"(IODIAG (OK|WARNING|CRITICAL|UNKNOWN) - [^|]+)")))
        << line;
    std::istringstream perf(line.substr(bar + 3));
    std::string item;
    size_t n = 0;
    while (perf >> item) {
        ++n;
        EXPECT_TRUE(std::regex_match(item, kPerfDatum)) << item;
    }
    EXPECT_GE(n, 4u);
}

const PerfDatum* find(const PluginResult& r, const std::string& label) {
    for (const auto& p : r.perfdata)
        if (p.label == label) return &p;
    return nullptr;
}

}  // namespace

TEST(PluginOutput, HealthyWindowIsOk) {
    const PluginResult r = result_of("cached_reads");
    EXPECT_EQ(r.state, PluginState::Ok);
    EXPECT_EQ(r.status_line().rfind("IODIAG OK - no findings; latency observed in ", 0), 0u) << r.status_line();
    expect_plugin_grammar(r.status_line());
}

// A nightly check of one service (--victim) says whom it judged.
TEST(PluginOutput, ACheckOfOneServiceSaysWhomItJudged) {
    Evidence ev = load_bundle(kBundles + std::string("cached_reads.json"));
    ev.add_fact("attr.victim.given", {}, "postgresql@15-main.service", {"config", "--victim"});
    ev.add_fact("attr.victim.application", {}, "(none)", {"derived", "no process matches"});
    const PluginResult r = plugin_result(analyze(ev, shipped_rules()));
    EXPECT_NE(r.status_line().find("judged for --victim postgresql@15-main.service"), std::string::npos)
        << r.status_line();
    expect_plugin_grammar(r.status_line());
}

TEST(PluginOutput, FaultIsWarningOrCriticalWithTheTopFindingsTitle) {
    for (const char* bundle : {"dirty_throttle", "slow_device", "fsync_storm", "blkio_throttle"}) {
        SCOPED_TRACE(bundle);
        const Evidence ev = load_bundle(kBundles + bundle + ".json");
        const Verdict v = analyze(ev, shipped_rules());
        const PluginResult r = plugin_result(v);
        ASSERT_FALSE(v.findings.empty());
        EXPECT_TRUE(r.state == PluginState::Warning || r.state == PluginState::Critical);
        EXPECT_EQ(static_cast<int>(r.state), v.status == Severity::Critical ? 2 : 1);
        // The headline is the best-ranked finding of the worst severity.
        const Finding* headline = nullptr;
        for (const auto& f : v.findings)
            if (!headline && f.severity == v.status) headline = &f;
        ASSERT_NE(headline, nullptr);
        std::string title = headline->title;
        for (char& c : title)
            if (c == '|') c = '/';
        EXPECT_NE(r.status_line().find(" - " + title), std::string::npos) << r.status_line();
        expect_plugin_grammar(r.status_line());
        const PerfDatum* status = find(r, "status");
        ASSERT_NE(status, nullptr);
        EXPECT_EQ(*status->value, static_cast<double>(static_cast<int>(r.state)));
        EXPECT_EQ(*find(r, "findings")->value, static_cast<double>(v.findings.size()));
    }
}

TEST(PluginOutput, PerDeviceTailsInSecondsWithTheReferenceAlertLevel) {
    const Evidence ev = load_bundle(kBundles + "slow_device.json");
    const PluginResult r = plugin_result(analyze(ev, shipped_rules()));
    const PerfDatum* d2c = find(r, "loop1_d2c_p99");
    ASSERT_NE(d2c, nullptr);
    EXPECT_EQ(d2c->uom, "s");
    EXPECT_NEAR(*d2c->value, ev.find_metric("block.d2c_p99_us", {{"device", "loop1"}})->value / 1e6, 1e-9);
    ASSERT_NE(find(r, "vda_q2c_p99"), nullptr);
    // The loop device's reference is its backing disk's measured tail: the
    // warning mark is 10x that (seed 000 §9.4).
    ASSERT_TRUE(d2c->warn.has_value());
    EXPECT_GT(*d2c->warn, 0);
    // Idle devices (no request completed) get no line: the set stays bounded.
    EXPECT_EQ(find(r, "loop0_d2c_p99"), nullptr);
    size_t devices = 0;
    for (const auto& p : r.perfdata) devices += p.label.find("_d2c_p99") != std::string::npos;
    EXPECT_LE(devices, kMaxPerfDevices);
}

TEST(PluginOutput, LayerSharesArePercentages) {
    const PluginResult r = result_of("dirty_throttle");
    const PerfDatum* dirty = find(r, "share_dirty");
    ASSERT_NE(dirty, nullptr);
    EXPECT_EQ(dirty->uom, "%");
    EXPECT_GT(*dirty->value, 50);
    EXPECT_EQ(*dirty->max, 100);
}

TEST(PluginOutput, NothingObservedIsUnknown) {
    Evidence ev;
    ev.host = "h";
    ev.collectors.push_back({"syscall_bpf", false, "not root", {"syscall"}});
    const PluginResult r = plugin_result(analyze(ev, shipped_rules()));
    EXPECT_EQ(r.state, PluginState::Unknown);
    EXPECT_NE(r.status_line().find("IODIAG UNKNOWN - nothing could be observed (syscall_bpf: not root)"),
              std::string::npos)
        << r.status_line();
}

TEST(PluginOutput, NumbersAndLabelsKeepTheGrammar) {
    EXPECT_EQ((PerfDatum{"a", 0.000123456789, "s", {}, {}, 0, {}}.to_string()), "'a'=0.000123457s;;;0");
    EXPECT_EQ((PerfDatum{"b", 1234567.0, "B", {}, {}, {}, {}}.to_string()), "'b'=1234567B");
    EXPECT_EQ((PerfDatum{"c", {}, "%", 90, {}, 0, 100}.to_string()), "'c'=U;90;;0;100");
    EXPECT_EQ((PerfDatum{"x'=y z", 1.5, "", {}, {}, {}, {}}.to_string()), "'x__y_z'=1.5");
    PluginResult r{PluginState::Warning, "a | b\nc", {}};
    EXPECT_EQ(r.status_line(), "IODIAG WARNING - a / b c");
    EXPECT_EQ(plugin_long_output("x|y"), "x\u00a6y");
}
