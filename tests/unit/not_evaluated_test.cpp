// Rules not evaluated: the text verdict lists them only for the devices and
// cgroups that did I/O in the window (and for global rules), the rest as a
// count; -v and the JSON verdict list every one.
#include <gtest/gtest.h>

#include <algorithm>

#include <regex>

#include "engine/evidence/bundle.hpp"
#include "engine/render/render.hpp"
#include "engine/triage/analysis.hpp"
#include "engine/triage/not_evaluated.hpp"
#include "tests/unit/shipped_rules.hpp"

namespace iodiag {
namespace {

const Provenance kP{"file", "test"};

Rule rule(const std::string& id, const std::string& for_each) {
    Rule r;
    r.id = id;
    r.layer = "device";
    r.for_each = for_each;
    return r;
}

RuleResult unknown(const Rule& r, const std::string& instance, bool cited = true) {
    RuleResult res;
    res.rule = &r;
    res.instance = instance;
    if (cited) res.cited.push_back(CitedValue{.name = "disk.read_await_ms"});
    res.missing = {"device.nominal_read_latency_ms (for " + instance + ")"};
    return res;
}

TEST(NotEvaluated, DevicesAndCgroupsWithoutIoAreCountedNotListed) {
    Evidence ev;
    ev.add_metric("disk.ios_per_s", {{"device", "vda"}}, 120, "1/s", kP);
    ev.add_metric("disk.ios_per_s", {{"device", "loop0"}}, 0, "1/s", kP);   // attached, idle
    ev.add_metric("block.requests", {{"device", "vdb"}}, 5, "", kP);          // traced requests only
    ev.add_metric("cgroup.io_write_iops", {{"cgroup", "/busy"}}, 3, "1/s", kP);
    ev.add_metric("cgroup.io_write_iops", {{"cgroup", "/idle"}}, 0, "1/s", kP);
    const Rule dev = rule("device.slow_for_class", "device"), cg = rule("cgroup.io_limit_hit", "cgroup"),
               global = rule("dirty.throttled", ""), op = rule("syscall.op_slow", "op");
    const std::vector<RuleResult> results = {
        unknown(dev, "vda"),  unknown(dev, "loop0"), unknown(dev, "loop1"), unknown(dev, "vdb"),
        unknown(cg, "/busy"), unknown(cg, "/idle"),  unknown(global, ""),   unknown(op, "fsync"),
        unknown(dev, "vda", /*cited=*/false)};
    std::vector<const RuleResult*> ptrs;
    for (const auto& r : results) ptrs.push_back(&r);

    Verdict v;
    summarize_not_evaluated(v, ptrs, ev);
    // Every evaluation in the full list (JSON, -v): loop0 and loop1 among them.
    ASSERT_EQ(v.not_evaluated.size(), 5u);
    EXPECT_EQ(v.not_evaluated[0], "device.slow_for_class on 4 instance(s) (vda, loop0, loop1, ...): missing "
                                  "device.nominal_read_latency_ms");
    EXPECT_NE(v.not_evaluated.back().find("1 more rule evaluation(s) found no evidence"), std::string::npos);
    // The short list: devices and cgroups that did I/O, global and other rules.
    ASSERT_EQ(v.not_evaluated_active.size(), 4u);
    EXPECT_EQ(v.not_evaluated_active[0], "device.slow_for_class on 2 instance(s) (vda, vdb): missing "
                                         "device.nominal_read_latency_ms");
    EXPECT_NE(v.not_evaluated_active[1].find("cgroup.io_limit_hit on 1 instance(s) (/busy)"), std::string::npos);
    EXPECT_EQ(v.not_evaluated_active[2].rfind("dirty.throttled: missing", 0), 0u);
    EXPECT_NE(v.not_evaluated_active[3].find("syscall.op_slow on 1 instance(s) (fsync)"), std::string::npos);
    // loop0, loop1, /idle, and the evaluation that cited nothing.
    EXPECT_EQ(v.not_evaluated_idle, 4u);

    const std::string text = render_text(v);
    EXPECT_EQ(text.find("loop0"), std::string::npos) << text;
    EXPECT_NE(text.find("  4 more on devices and cgroups that did no I/O in the window, or with no evidence at all "
                        "(-v lists them)\n"),
              std::string::npos)
        << text;
    const std::string verbose = render_text(v, {.verbose = true});
    EXPECT_NE(verbose.find("(vda, loop0, loop1, ...)"), std::string::npos) << verbose;
    EXPECT_EQ(verbose.find("-v lists them"), std::string::npos) << verbose;
}

TEST(NotEvaluated, NothingMissingPrintsNoSection) {
    Verdict v;
    summarize_not_evaluated(v, {}, Evidence{});
    EXPECT_TRUE(v.not_evaluated.empty());
    EXPECT_EQ(v.not_evaluated_idle, 0u);
    EXPECT_EQ(render_text(v).find("RULES NOT EVALUATED"), std::string::npos);
}

// A healthy recorded window (the lab's busy_healthy: loop0, loop1 and vda
// busy; loop2..loop7 and zram0 attached but idle) fits one screen above the
// distributions, and the idle devices appear only with -v.
TEST(NotEvaluated, AHealthyWindowFitsOneScreenAndNamesNoIdleDevice) {
    const Evidence ev = load_bundle(std::string(IODIAG_FIXTURES) + "/bundles/busy_healthy.json");
    const Verdict v = analyze(ev, testing::shipped_rules());
    const std::string text = render_text(v), verbose = render_text(v, {.verbose = true});
    const size_t distributions = text.find("LATENCY DISTRIBUTIONS");
    ASSERT_NE(distributions, std::string::npos) << text;
    const auto lines = std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(distributions), '\n');
    EXPECT_LE(lines, 40) << text;

    const InstancesInPlay in_play(ev);
    size_t idle = 0, named_with_v = 0;
    for (const auto& d : ev.instances("device")) {
        if (in_play.devices.count(d)) continue;
        ++idle;
        const std::regex word("\\b" + d + "\\b");
        EXPECT_FALSE(std::regex_search(text, word)) << d << " did no I/O but is named:\n" << text;
        named_with_v += std::regex_search(verbose, word);   // -v names up to three per rule
    }
    EXPECT_GE(idle, 7u);   // the test would prove nothing without idle devices
    EXPECT_GT(named_with_v, 0u) << verbose;
}

}  // namespace
}  // namespace iodiag
