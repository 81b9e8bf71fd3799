// analyze(): states, walk, ranking by share x confidence, fix order, fingerprint.
#include <gtest/gtest.h>

#include "engine/triage/analysis.hpp"
#include "engine/evidence/layers.hpp"

using namespace iodiag;

namespace {

MetricCatalog catalog() {
    MetricCatalog c;
    using K = MetricSpec::Kind;
    c.add({"disk.util_pct", K::Metric, "pct", "device", "device", ""});
    c.add({"vm.allocstall", K::Metric, "count", "reclaim", "", ""});
    c.add({"attr.slow.dirty_pct", K::Metric, "pct", "dirty", "", ""});
    c.add({"attr.slow.reclaim_pct", K::Metric, "pct", "reclaim", "", ""});
    return c;
}

const char* kRules = R"(
rules:
  - id: test.device_busy
    layer: device
    severity: warning
    confidence: 0.8
    for_each: device
    title: "{device} busy"
    when: {metric: disk.util_pct, op: ">=", value: 90}
    mechanism: "queueing"
    evidence: [disk.util_pct]
    fixes:
      - {priority: P0, action: "do less I/O", playbook: ""}
  - id: test.reclaim
    layer: reclaim
    severity: warning
    confidence: 0.9
    title: "direct reclaim"
    when: {metric: vm.allocstall, op: ">", value: 0}
    share_metric: attr.slow.reclaim_pct
    mechanism: "reclaim"
    evidence: [vm.allocstall]
    fixes:
      - {priority: P4, action: "raise min_free_kbytes", playbook: ""}
  - id: test.dirty
    layer: dirty
    severity: warning
    confidence: 0.9
    title: "dirty throttling"
    when: {metric: attr.slow.dirty_pct, op: ">", value: 20}
    share_metric: attr.slow.dirty_pct
    mechanism: "balance_dirty_pages"
    evidence: [attr.slow.dirty_pct]
    fixes:
      - {priority: P0, action: "write less", playbook: ""}
)";

RuleSet rules() {
    static MetricCatalog cat = catalog();
    LoadContext ctx;
    ctx.catalog = &cat;
    RuleSet rs = load_rules_from_string(kRules, "test.yaml", ctx);
    for (const auto& d : rs.diagnostics) ADD_FAILURE() << d.to_string();
    return rs;
}

Evidence base() {
    Evidence ev;
    ev.host = "h";
    ev.window = {1000, 5};
    ev.collectors.push_back({"diskstats", true, "", {"device"}});
    ev.collectors.push_back({"syscall_bpf", false, "not root", {"syscall", "dirty", "reclaim"}});
    ev.add_metric("disk.util_pct", {{"device", "loop0"}}, 99, "pct", {"file", "/proc/diskstats"});
    ev.add_metric("disk.util_pct", {{"device", "vda"}}, 3, "pct", {"file", "/proc/diskstats"});
    return ev;
}

const LayerRow& row(const Verdict& v, const std::string& layer) {
    for (const auto& r : v.layers)
        if (r.layer == layer) return r;
    throw std::runtime_error("no row " + layer);
}

}  // namespace

TEST(Analysis, AbnormalObservedAndUnobservedLayersAreToldApart) {
    const Verdict v = analyze(base(), rules());
    ASSERT_EQ(v.findings.size(), 1u);
    EXPECT_EQ(v.findings[0].rule_id, "test.device_busy");
    EXPECT_EQ(v.findings[0].instance, "loop0");
    EXPECT_EQ(v.status, Severity::Warning);
    EXPECT_EQ(row(v, layer::kDevice).state, LayerState::Abnormal);
    EXPECT_EQ(row(v, layer::kFilesystem).state, LayerState::NotObserved);
    EXPECT_NE(row(v, layer::kDirty).observed_by.find("not root"), std::string::npos);
    // Unobserved layers lower coverage; they are never called normal.
    EXPECT_LT(v.coverage, 0.2);
    for (const auto& r : v.layers)
        if (r.layer != layer::kDevice) { EXPECT_EQ(r.state, LayerState::NotObserved) << r.layer; }
    ASSERT_FALSE(v.trail.empty());
    EXPECT_EQ(v.trail.front().layer, layer::kDevice);
}

TEST(Analysis, MeasuredShareOutranksSeverityPriorAndOrdersFixes) {
    Evidence ev = base();
    ev.collectors[1].available = true;
    ev.add_metric("vm.allocstall", {}, 12, "count", {"file", "/proc/vmstat"});
    ev.add_metric("attr.slow.reclaim_pct", {}, 15, "pct", {"derived", "x"});
    ev.add_metric("attr.slow.dirty_pct", {}, 70, "pct", {"derived", "x"});
    const Verdict v = analyze(ev, rules());
    ASSERT_EQ(v.findings.size(), 3u);
    // A finding with no measured share never ranks above one with a share
    // (issue 22), whatever its severity prior.
    EXPECT_EQ(v.findings[0].rule_id, "test.dirty");     // 70 % x 0.9
    EXPECT_EQ(v.findings[1].rule_id, "test.reclaim");   // 15 % x 0.9
    EXPECT_EQ(v.findings[2].rule_id, "test.device_busy"); // no share: prior 0.3 x 0.8, last
    // Fixes: share first (dirty 70 %, reclaim 15 %), then unmeasured ones.
    ASSERT_EQ(v.fixes.size(), 3u);
    EXPECT_EQ(v.fixes[0].action, "write less");
    EXPECT_EQ(v.fixes[1].action, "raise min_free_kbytes");
    EXPECT_EQ(v.fixes[2].action, "do less I/O");
}

TEST(Analysis, TheVerdictKeepsTheEvidenceItWasJudgedOn) {
    Evidence ev = base();
    ev.add_fact("device.class", {{"device", "loop0"}}, "loop", {"file", "test"});
    ev.add_fact("device.backing_class", {{"device", "loop0"}}, "nvme", {"file", "test"});
    const Verdict v = analyze(ev, rules());
    // The collected figures and what the analysis derived from them (here the
    // loop device's reference, from its backing disk's class): renderers and
    // the diff read them there instead of deriving again.
    ASSERT_NE(v.judged_on, nullptr);
    EXPECT_NE(v.judged_on->find_metric("disk.util_pct", {{"device", "loop0"}}), nullptr);
    EXPECT_EQ(ev.find_metric("device.nominal_read_latency_ms", {{"device", "loop0"}}), nullptr);
    const Metric* nominal = v.judged_on->find_metric("device.nominal_read_latency_ms", {{"device", "loop0"}});
    ASSERT_NE(nominal, nullptr);
    EXPECT_EQ(nominal->provenance.kind, "reference");
    // The same view without a verdict (iodiag watch's references between captures).
    const Evidence judged = judged_evidence(ev);
    ASSERT_NE(judged.find_metric("device.nominal_read_latency_ms", {{"device", "loop0"}}), nullptr);
    EXPECT_EQ(judged.find_metric("device.nominal_read_latency_ms", {{"device", "loop0"}})->value, nominal->value);
}

TEST(Analysis, FingerprintFollowsCausesNotFigures) {
    Evidence a = base(), b = base();
    b.metrics[0].value = 95;
    EXPECT_EQ(analyze(a, rules()).fingerprint, analyze(b, rules()).fingerprint);
    Evidence c = base();
    c.add_metric("disk.util_pct", {{"device", "sdb"}}, 97, "pct", {"file", "/proc/diskstats"});
    EXPECT_NE(analyze(a, rules()).fingerprint, analyze(c, rules()).fingerprint);
}

TEST(Analysis, ACauseAboveAnObservedNormalSyscallIsStillDrilledInto) {
    Evidence ev = base();
    ev.collectors[1].available = true;   // syscall, dirty, reclaim observed
    ev.add_metric("vm.allocstall", {}, 12, "count", {"file", "/proc/vmstat"});   // no share measured
    const Verdict v = analyze(ev, rules());
    bool reclaim_in_findings = false;
    for (const auto& f : v.findings) reclaim_in_findings |= f.rule_id == "test.reclaim";
    EXPECT_TRUE(reclaim_in_findings);
    for (const auto& r : v.layers)
        if (r.layer == layer::kSyscall) { EXPECT_EQ(r.state, LayerState::Abnormal); }
}

TEST(Analysis, FindingOnAnUnobservedLayerLosesConfidence) {
    Evidence ev = base();
    ev.add_metric("vm.allocstall", {}, 3, "count", {"file", "/proc/vmstat"});
    const Verdict v = analyze(ev, rules());
    for (const auto& f : v.findings)
        if (f.rule_id == "test.reclaim") { EXPECT_LT(f.confidence, 0.9); }
}

// A busy device whose judging rule lacks part of its evidence (no reference
// latency for its class) is "not judged", not "normal"; an idle one is normal.
TEST(Analysis, ObservedButUnjudgeableLayerIsNotCalledNormal) {
    MetricCatalog cat = catalog();
    cat.add({"disk.ios_per_s", MetricSpec::Kind::Metric, "1/s", "device", "device", ""});
    cat.add({"disk.await_ms", MetricSpec::Kind::Metric, "ms", "device", "device", ""});
    cat.add({"device.nominal_read_latency_ms", MetricSpec::Kind::Metric, "ms", "device", "device", ""});
    LoadContext ctx;
    ctx.catalog = &cat;
    const RuleSet rs = load_rules_from_string(R"(
rules:
  - id: test.slow
    layer: device
    severity: warning
    confidence: 0.8
    for_each: device
    title: "{device} slow"
    when: {metric: disk.await_ms, ratio_of: device.nominal_read_latency_ms, op: ">", value: 10}
    mechanism: "m"
    evidence: [disk.await_ms]
    fixes: [{priority: P3, action: "a", playbook: ""}]
)", "t.yaml", ctx);
    for (const auto& d : rs.diagnostics) ADD_FAILURE() << d.to_string();
    ASSERT_TRUE(rs.ok());
    Evidence ev;
    ev.collectors.push_back({"diskstats", true, "", {"device"}});
    ev.add_metric("disk.ios_per_s", {{"device", "vda"}}, 0, "1/s", {"file", "x"});
    ev.add_metric("disk.await_ms", {{"device", "vda"}}, 30, "ms", {"file", "x"});
    auto device_state = [&](const Verdict& v) {
        for (const auto& r : v.layers)
            if (r.layer == layer::kDevice) return r.state;
        return LayerState::NotObserved;
    };
    EXPECT_EQ(device_state(analyze(ev, rs)), LayerState::Normal);   // idle: nothing to judge
    ev.metrics[0].value = 500;                                      // busy, and no reference
    const Verdict v = analyze(ev, rs);
    EXPECT_EQ(device_state(v), LayerState::Unjudged);
    EXPECT_NE(v.trail.front().summary.find("not judged: test.slow on vda lacks device.nominal_read_latency_ms"),
              std::string::npos)
        << v.trail.front().summary;
}
