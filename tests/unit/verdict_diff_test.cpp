// `iodiag diff`: findings resolved (confirmed or not), persisting with values
// before -> after, new; verify comparisons evaluated on AFTER; NVMe SMART growth
// between two bundles from the SMART fixtures; the JSON schema.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "collectors/nvme/nvme_smart_collector.hpp"
#include "collectors/nvme/nvme_smart_diff.hpp"
#include "app/catalog.hpp"
#include "engine/render/render_diff.hpp"
#include "engine/triage/verdict_diff.hpp"

using namespace iodiag;

namespace {

MetricCatalog catalog() {
    MetricCatalog c;
    using K = MetricSpec::Kind;
    c.add({"disk.util_pct", K::Metric, "pct", "device", "device", ""});
    c.add({"vm.allocstall", K::Metric, "count", "reclaim", "", ""});
    c.add({"attr.slow.dirty_pct", K::Metric, "pct", "dirty", "", ""});
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
    verify:
      - {metric: disk.util_pct, op: "<", value: 50}
  - id: test.reclaim
    layer: reclaim
    severity: warning
    confidence: 0.9
    title: "direct reclaim"
    when: {metric: vm.allocstall, op: ">", value: 0}
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

// diskstats and the syscall collector ran; loop0 at `util` % busy (not emitted
// when nullopt), dirty throttling holding `dirty` % of slow operations' time.
Evidence bundle(std::optional<double> util, double dirty, double allocstall, double start) {
    Evidence ev;
    ev.host = "h";
    ev.window = {start, 5};
    ev.collectors.push_back({"diskstats", true, "", {"device"}});
    ev.collectors.push_back({"syscall_bpf", true, "", {"syscall", "dirty", "reclaim"}});
    if (util) ev.add_metric("disk.util_pct", {{"device", "loop0"}}, *util, "pct", {"file", "/proc/diskstats"});
    ev.add_metric("disk.util_pct", {{"device", "vda"}}, 3, "pct", {"file", "/proc/diskstats"});
    ev.add_metric("attr.slow.dirty_pct", {}, dirty, "pct", {"derived", "test"});
    ev.add_metric("vm.allocstall", {}, allocstall, "count", {"file", "/proc/vmstat"});
    return ev;
}

const FindingChange* find(const std::vector<FindingChange>& list, const std::string& id) {
    for (const auto& c : list)
        if (c.rule_id == id) return &c;
    return nullptr;
}

const ValueChange* value(const FindingChange& c, const std::string& name) {
    for (const auto& v : c.values)
        if (v.name == name) return &v;
    return nullptr;
}

}  // namespace

TEST(VerdictDiff, FixedDeviceIsResolvedAndItsVerifyHolds) {
    const RuleSet rs = rules();
    const VerdictDiff d = diff_evidence(bundle(99, 82, 0, 1000), bundle(10, 30, 0, 2000), rs);
    ASSERT_EQ(d.resolved.size(), 1u);
    const FindingChange& r = d.resolved.front();
    EXPECT_EQ(r.rule_id, "test.device_busy");
    EXPECT_EQ(r.instance, "loop0");
    EXPECT_EQ(r.placement_before, "finding");
    EXPECT_EQ(r.placement_after, "");
    EXPECT_EQ(r.other_side, Tri::False);   // evaluated on AFTER: confirmed gone
    const ValueChange* util = value(r, "disk.util_pct");
    ASSERT_TRUE(util);
    EXPECT_EQ(util->labels, (Labels{{"device", "loop0"}}));
    EXPECT_EQ(util->before, "99 %");
    EXPECT_EQ(util->after, "10 %");
    EXPECT_EQ(util->after_value, 10);
    ASSERT_EQ(r.verify.size(), 1u);
    EXPECT_EQ(r.verify[0].outcome, Tri::True);
    EXPECT_NE(r.verify[0].before.find("now 99 %"), std::string::npos) << r.verify[0].before;
    EXPECT_NE(r.verify[0].after.find("now 10 %"), std::string::npos) << r.verify[0].after;

    // Dirty throttling is still there, at a smaller share.
    const FindingChange* p = find(d.persisting, "test.dirty");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->share_metric, "attr.slow.dirty_pct");
    EXPECT_EQ(p->share_before, 82);
    EXPECT_EQ(p->share_after, 30);
    EXPECT_TRUE(d.appeared.empty());
    EXPECT_TRUE(d.same_host());
    EXPECT_EQ(d.status_before, "warning");
    EXPECT_FALSE(d.got_worse());

    const auto j = render_diff_json(d);
    EXPECT_TRUE(j["resolved"][0]["confirmed"].get<bool>());
    EXPECT_EQ(j["resolved"][0]["verify"][0]["result"], "holds");
    EXPECT_EQ(j["persisting"][0]["share_before_pct"], 82);
    EXPECT_EQ(j["persisting"][0]["share_after_pct"], 30);
    const std::string text = render_diff_text(d);
    EXPECT_NE(text.find("disk.util_pct{device=loop0}: 99 % -> 10 %"), std::string::npos) << text;
    EXPECT_NE(text.find("share (attr.slow.dirty_pct): 82 % -> 30 %"), std::string::npos) << text;
    EXPECT_NE(text.find("verify holds: disk.util_pct < 50 %"), std::string::npos) << text;
}

TEST(VerdictDiff, VerifyFailsWhenTheFindingIsGoneButTheTargetIsNotMet) {
    // 70 % busy: below the rule's 90 %, above the verify target of 50 %.
    const VerdictDiff d = diff_evidence(bundle(99, 0, 0, 1000), bundle(70, 0, 0, 2000), rules());
    ASSERT_EQ(d.resolved.size(), 1u);
    ASSERT_EQ(d.resolved[0].verify.size(), 1u);
    EXPECT_EQ(d.resolved[0].verify[0].outcome, Tri::False);
    EXPECT_EQ(d.status_after, "ok");
}

TEST(VerdictDiff, GoneBecauseNotObservedIsNotConfirmed) {
    const RuleSet rs = rules();
    Evidence after = bundle(std::nullopt, 0, 0, 2000);   // loop0 not in AFTER at all
    VerdictDiff d = diff_evidence(bundle(99, 0, 0, 1000), after, rs);
    ASSERT_EQ(d.resolved.size(), 1u);
    EXPECT_EQ(d.resolved[0].other_side, Tri::Unknown);
    ASSERT_EQ(d.resolved[0].missing_other_side.size(), 1u);
    EXPECT_NE(d.resolved[0].missing_other_side[0].find("loop0"), std::string::npos);
    EXPECT_EQ(d.resolved[0].verify[0].outcome, Tri::Unknown);
    const std::string text = render_diff_text(d);
    EXPECT_NE(text.find("NOT CONFIRMED"), std::string::npos) << text;
    EXPECT_FALSE(render_diff_json(d)["resolved"][0]["confirmed"].get<bool>());

    // The device is there but its busy figure was not read: the missing metric is named.
    after.add_fact("queue.scheduler", {{"device", "loop0"}}, "none", {"file", "test"});
    d = diff_evidence(bundle(99, 0, 0, 1000), after, rs);
    ASSERT_EQ(d.resolved.size(), 1u);
    EXPECT_EQ(d.resolved[0].other_side, Tri::Unknown);
    ASSERT_FALSE(d.resolved[0].missing_other_side.empty());
    EXPECT_NE(d.resolved[0].missing_other_side[0].find("disk.util_pct"), std::string::npos);
}

TEST(VerdictDiff, NewFindingMakesItWorse) {
    const VerdictDiff d = diff_evidence(bundle(10, 0, 0, 1000), bundle(10, 0, 7, 2000), rules());
    ASSERT_EQ(d.appeared.size(), 1u);
    EXPECT_EQ(d.appeared[0].rule_id, "test.reclaim");
    EXPECT_EQ(d.appeared[0].other_side, Tri::False);   // evaluated on BEFORE: was not there
    const ValueChange* v = value(d.appeared[0], "vm.allocstall");
    ASSERT_TRUE(v);
    EXPECT_EQ(v->before_value, 0);
    EXPECT_EQ(v->after_value, 7);
    EXPECT_TRUE(d.resolved.empty());
    EXPECT_TRUE(d.got_worse());
    const auto j = render_diff_json(d);
    EXPECT_EQ(j["schema"], "iodiag-diff");
    EXPECT_EQ(j["schema_version"], 1);
    EXPECT_EQ(j["new"][0]["rule_id"], "test.reclaim");
    EXPECT_TRUE(j["got_worse"].get<bool>());
    EXPECT_EQ(j["before"]["window"]["start_unix"], 1000);
    EXPECT_EQ(j["after"]["host"], "h");
}

TEST(VerdictDiff, SameEvidenceChangesNothing) {
    const Evidence ev = bundle(99, 82, 3, 1000);
    const VerdictDiff d = diff_evidence(ev, ev, rules());
    EXPECT_TRUE(d.resolved.empty());
    EXPECT_TRUE(d.appeared.empty());
    EXPECT_EQ(d.persisting.size(), 3u);
    EXPECT_EQ(d.fingerprint_before, d.fingerprint_after);
    EXPECT_FALSE(d.got_worse());
}

TEST(VerdictDiff, DifferentHostsAreFlagged) {
    Evidence after = bundle(99, 0, 0, 2000);
    after.host = "other";
    const VerdictDiff d = diff_evidence(bundle(99, 0, 0, 1000), after, rules());
    EXPECT_FALSE(d.same_host());
    EXPECT_FALSE(render_diff_json(d)["same_host"].get<bool>());
    EXPECT_NE(render_diff_text(d).find("different hosts"), std::string::npos);
}

// ---- NVMe SMART growth between two bundles, from the collector's fixtures ----

namespace {

const std::string kSmartDir = std::string(IODIAG_FIXTURES) + "/nvme_smart";

// nvme0n1's evidence as the nvme_smart collector emits it from a SMART page.
Evidence smart_bundle(const std::string& page) {
    NvmeSmartCollector c([page](const std::string&) {
        struct FilePage : nvme::AdminSource {
            std::string page;
            std::vector<uint8_t> smart_log(const std::string&) override { return read(page); }
            std::vector<uint8_t> identify_controller(const std::string&) override { return read("identify_ctrl.bin"); }
            std::string describe(const std::string&, const std::string& w) const override { return "file " + w; }
            static std::vector<uint8_t> read(const std::string& f) {
                std::ifstream in(kSmartDir + "/" + f, std::ios::binary);
                return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
            }
        };
        auto s = std::make_unique<FilePage>();
        s->page = page;
        return s;
    });
    CollectOptions o;
    o.root = kSmartDir + "/sysroot";
    o.devices = {"nvme0n1"};
    Evidence ev;
    ev.host = "h";
    ev.collectors.push_back(c.start(o));
    c.finish(ev);
    ev.add_fact("device.class", {{"device", "nvme0n1"}}, "nvme", {"file", "test"});
    return ev;
}

RuleSet shipped_nvme_rules() {
    static MetricCatalog cat = full_catalog();
    LoadContext ctx{&cat, {}};
    RuleSet rs = load_rules({std::string(IODIAG_SOURCE_DIR) + "/rules/nvme.yaml"}, ctx);
    for (const auto& d : rs.diagnostics) ADD_FAILURE() << d.to_string();
    return rs;
}

// What `iodiag diff` does: the verdicts' diff plus compare_smart's changes.
VerdictDiff diff_with_smart(const Evidence& before, const Evidence& after) {
    VerdictDiff d = diff_evidence(before, after, shipped_nvme_rules());
    for (const auto& c : nvme::compare_smart(before, after))
        d.smart.push_back({c.device, c.serial, c.field, c.before, c.after, c.delta, c.meaning});
    return d;
}

}  // namespace

TEST(VerdictDiffSmart, MediaErrorsGrowingBetweenBundlesMakeItWorse) {
    const Evidence before = smart_bundle("healthy.bin");
    const Evidence after = smart_bundle("worn95.bin");   // media_errors 0 -> 2, spare 100 -> 60
    ASSERT_TRUE(before.collectors[0].available) << before.collectors[0].reason;
    const VerdictDiff d = diff_with_smart(before, after);
    ASSERT_EQ(d.smart.size(), 2u);
    EXPECT_EQ(d.smart[0].field, "media_errors");
    EXPECT_EQ(d.smart[0].device, "nvme0n1");
    EXPECT_EQ(d.smart[0].before, "0");
    EXPECT_EQ(d.smart[0].after, "2");
    EXPECT_EQ(d.smart[0].delta, "2");
    EXPECT_FALSE(d.smart[0].serial.empty());
    EXPECT_EQ(d.smart[1].field, "avail_spare");
    EXPECT_TRUE(d.got_worse());
    // The worn drive's info finding is new; info alone would not make it worse.
    const FindingChange* worn = find(d.appeared, "nvme.wear_near_end_of_life");
    ASSERT_TRUE(worn);
    EXPECT_EQ(worn->other_side, Tri::False);
    const auto j = render_diff_json(d);
    EXPECT_EQ(j["smart"][0]["field"], "media_errors");
    EXPECT_EQ(j["smart"][0]["delta"], "2");
    EXPECT_NE(render_diff_text(d).find("media_errors 0 -> 2 (+2)"), std::string::npos) << render_diff_text(d);
}

TEST(VerdictDiffSmart, UnsafeShutdownGrowthIsReportedAndNoGrowthIsNot) {
    const Evidence before = smart_bundle("healthy.bin");
    Evidence after = before;
    for (auto& f : after.facts)
        if (f.name == "nvme.unsafe_shutdowns.exact") f.value = "33";   // 31 in the fixture
    const VerdictDiff d = diff_with_smart(before, after);
    ASSERT_EQ(d.smart.size(), 1u);
    EXPECT_EQ(d.smart[0].field, "unsafe_shutdowns");
    EXPECT_EQ(d.smart[0].delta, "2");
    EXPECT_TRUE(d.got_worse());
    EXPECT_TRUE(d.appeared.empty());

    const VerdictDiff same = diff_with_smart(before, before);
    EXPECT_TRUE(same.smart.empty());
    EXPECT_FALSE(same.got_worse());
}
