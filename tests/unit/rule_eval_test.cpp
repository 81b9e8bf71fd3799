// The evaluator: three-valued logic, instances, ratios, percentiles, facts,
// citations, placeholders.
#include <gtest/gtest.h>

#include "engine/rules/rules.hpp"
#include "rule_test_catalog.hpp"

using namespace iodiag;

namespace {

class RuleEvalTest : public ::testing::Test {
protected:
    void SetUp() override {
        catalog_ = iodiag::testing::rule_test_catalog();
        ctx_.catalog = &catalog_;
    }
    RuleSet load(const std::string& yaml) {
        RuleSet s = load_rules_from_string(yaml, "t.yaml", ctx_);
        std::string diags;
        for (const auto& d : s.diagnostics) diags += d.to_string() + "\n";
        EXPECT_TRUE(s.ok()) << diags;
        return s;
    }
    MetricCatalog catalog_;
    LoadContext ctx_;
};

Provenance file(const std::string& src) { return {"file", src}; }

// A global rule whose condition is `when`.
std::string global_rule(const std::string& when) {
    return "rules:\n  - id: r\n    layer: device\n    severity: warning\n    title: t\n    when: " + when +
           "\n    mechanism: m\n";
}


// t.x / t.y > 0.5 is True for 1, False for 0; absent is Unknown.
void set(Evidence& ev, const std::string& name, Tri v) {
    if (v == Tri::Unknown) return;
    ev.add_metric(name, {}, v == Tri::True ? 1 : 0, "count", file("/proc/test"));
}

const char* kX = "{metric: t.x, op: \">\", value: 0.5}";
const char* kY = "{metric: t.y, op: \">\", value: 0.5}";

TEST_F(RuleEvalTest, ThreeValuedTruthTables) {
    const Tri vals[] = {Tri::False, Tri::True, Tri::Unknown};
    auto run = [&](const std::string& when, Tri x, Tri y) {
        Evidence ev;
        set(ev, "t.x", x);
        set(ev, "t.y", y);
        const RuleSet s = load(global_rule(when));
        const auto r = evaluate_rules(s, ev);
        EXPECT_EQ(r.size(), 1u);
        return r.empty() ? Tri::Unknown : r[0].outcome;
    };
    const std::string all = std::string("{all: [") + kX + ", " + kY + "]}";
    const std::string any = std::string("{any: [") + kX + ", " + kY + "]}";
    const std::string neg = std::string("{not: ") + kX + "}";
    for (Tri x : vals)
        for (Tri y : vals) {
            Tri want_all = (x == Tri::False || y == Tri::False)       ? Tri::False
                           : (x == Tri::Unknown || y == Tri::Unknown) ? Tri::Unknown
                                                                      : Tri::True;
            Tri want_any = (x == Tri::True || y == Tri::True)         ? Tri::True
                           : (x == Tri::Unknown || y == Tri::Unknown) ? Tri::Unknown
                                                                      : Tri::False;
            EXPECT_EQ(run(all, x, y), want_all) << int(x) << "," << int(y);
            EXPECT_EQ(run(any, x, y), want_any) << int(x) << "," << int(y);
        }
    EXPECT_EQ(run(neg, Tri::True, Tri::Unknown), Tri::False);
    EXPECT_EQ(run(neg, Tri::False, Tri::Unknown), Tri::True);
    EXPECT_EQ(run(neg, Tri::Unknown, Tri::Unknown), Tri::Unknown);
}

TEST_F(RuleEvalTest, UnknownNamesWhatIsMissing) {
    Evidence ev;
    const auto r = evaluate_rules(load(global_rule(std::string("{all: [") + kX + ", " + kY + "]}")), ev);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].outcome, Tri::Unknown);
    EXPECT_EQ(r[0].missing, (std::vector<std::string>{"t.x", "t.y"}));
    EXPECT_TRUE(r[0].cited.empty());
}

const char* kDeviceRule = R"(rules:
  - id: dev.busy
    layer: device
    severity: warning
    for_each: device
    title: "{device} busy {disk.util_pct}, {vm.allocstall} stalls, scheduler {queue.scheduler}, {disk.aqu_sz}"
    when:
      all:
        - {metric: disk.util_pct, op: ">=", value: 90}
        - {metric: vm.allocstall, op: ">=", value: 0}
    share_metric: block.d2c_share_pct
    mechanism: "Little's law on {device}"
    evidence: [disk.util_pct, queue.scheduler]
    fixes:
      - {priority: P1, action: "echo 32 > /sys/block/{device}/queue/nr_requests", playbook: x}
    verify:
      - {metric: disk.util_pct, op: "<", value: 90}
      - {fact: queue.scheduler, in: [mq-deadline, bfq]}
)";

Evidence two_devices() {
    Evidence ev;
    ev.add_metric("disk.util_pct", {{"device", "sda"}}, 97.5, "pct", file("/proc/diskstats"));
    ev.add_metric("disk.util_pct", {{"device", "vda"}}, 12, "pct", file("/proc/diskstats"));
    ev.add_metric("block.d2c_share_pct", {{"device", "sda"}}, 64, "pct", {"tracepoint", "block:block_rq_complete"});
    ev.add_fact("queue.scheduler", {{"device", "sda"}}, "none", file("/sys/block/sda/queue/scheduler"));
    ev.add_metric("vm.allocstall", {}, 3, "count", file("/proc/vmstat"));
    ev.add_metric("disk.aqu_sz", {{"device", "loop0"}}, 1, "requests", file("/proc/diskstats"));
    return ev;
}

TEST_F(RuleEvalTest, EvaluatesEachInstanceWithGlobalMetricsShared) {
    const RuleSet s = load(kDeviceRule);
    const auto results = evaluate_rules(s, two_devices());
    ASSERT_EQ(results.size(), 3u);   // loop0, sda, vda
    EXPECT_EQ(results[0].instance, "loop0");
    EXPECT_EQ(results[0].outcome, Tri::Unknown);
    EXPECT_EQ(results[0].missing, (std::vector<std::string>{"disk.util_pct (device=loop0)"}));
    const RuleResult& sda = results[1];
    EXPECT_EQ(sda.instance, "sda");
    EXPECT_EQ(sda.outcome, Tri::True);
    EXPECT_EQ(sda.title, "sda busy 97.5 %, 3 stalls, scheduler none, (disk.aqu_sz not measured)");
    EXPECT_EQ(sda.mechanism, "Little's law on sda");
    ASSERT_TRUE(sda.share_pct.has_value());
    EXPECT_DOUBLE_EQ(*sda.share_pct, 64);
    ASSERT_EQ(sda.fixes.size(), 1u);
    EXPECT_EQ(sda.fixes[0].action, "echo 32 > /sys/block/sda/queue/nr_requests");
    ASSERT_EQ(sda.verify.size(), 2u);
    EXPECT_EQ(sda.verify[0], "disk.util_pct < 90 % (now 97.5 %)");
    EXPECT_EQ(sda.verify[1], "queue.scheduler in [mq-deadline, bfq] (now none)");
    const RuleResult& vda = results[2];
    EXPECT_EQ(vda.outcome, Tri::False);
    EXPECT_FALSE(vda.share_pct.has_value());
    EXPECT_EQ(vda.verify[1], "queue.scheduler in [mq-deadline, bfq] (now not measured)");
}

TEST_F(RuleEvalTest, CitesEvidenceListAndDecidingLeavesWithProvenance) {
    const auto results = evaluate_rules(load(kDeviceRule), two_devices());
    const RuleResult& sda = results[1];
    // Evidence list first (util, scheduler), then the other deciding leaf (allocstall).
    ASSERT_EQ(sda.cited.size(), 3u);
    EXPECT_EQ(sda.cited[0].name, "disk.util_pct");
    EXPECT_EQ(sda.cited[0].labels, (Labels{{"device", "sda"}}));
    EXPECT_DOUBLE_EQ(sda.cited[0].value, 97.5);
    EXPECT_EQ(sda.cited[0].unit, "pct");
    EXPECT_EQ(sda.cited[0].formatted, "97.5 %");
    EXPECT_EQ(sda.cited[0].comparison, ">= 90 %");
    EXPECT_EQ(sda.cited[0].provenance.source, "/proc/diskstats");
    EXPECT_EQ(sda.cited[1].name, "queue.scheduler");
    EXPECT_EQ(sda.cited[1].text, "none");
    EXPECT_EQ(sda.cited[1].comparison, "");
    EXPECT_EQ(sda.cited[2].name, "vm.allocstall");
    EXPECT_TRUE(sda.cited[2].labels.empty());
    EXPECT_EQ(sda.cited[2].comparison, ">= 0");
    // A False outcome cites the leaf that made it False.
    const RuleResult& vda = results[2];
    ASSERT_EQ(vda.cited.size(), 1u);
    EXPECT_EQ(vda.cited[0].name, "disk.util_pct");
    EXPECT_EQ(vda.cited[0].comparison, ">= 90 %");
}

TEST_F(RuleEvalTest, AnyCitesOnlyTheTrueChildren) {
    Evidence ev;
    ev.add_metric("t.x", {}, 1, "count", file("x"));
    ev.add_metric("t.y", {}, 0, "count", file("y"));
    const auto r = evaluate_rules(load(global_rule(std::string("{any: [") + kX + ", " + kY + "]}")), ev);
    ASSERT_EQ(r[0].outcome, Tri::True);
    ASSERT_EQ(r[0].cited.size(), 1u);
    EXPECT_EQ(r[0].cited[0].name, "t.x");
}

TEST_F(RuleEvalTest, NoInstancesGivesOneUnknownResult) {
    Evidence ev;
    ev.add_metric("vm.allocstall", {}, 3, "count", file("/proc/vmstat"));
    const auto r = evaluate_rules(load(kDeviceRule), ev);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].outcome, Tri::Unknown);
    EXPECT_EQ(r[0].instance, "");
    EXPECT_EQ(r[0].missing, (std::vector<std::string>{"no device in the evidence"}));
}

const char* kRatioRule = R"(rules:
  - id: dev.slow
    layer: device
    severity: warning
    for_each: device
    title: "{device} slow"
    when: {metric: disk.read_await_ms, ratio_of: device.nominal_read_latency_ms, op: ">", value: 10}
    mechanism: m
    verify:
      - {metric: disk.read_await_ms, ratio_of: device.nominal_read_latency_ms, op: "<=", value: 3}
)";

TEST_F(RuleEvalTest, RatioComparesMetricOverMetric) {
    Evidence ev;
    ev.add_metric("disk.read_await_ms", {{"device", "sda"}}, 25, "ms", file("/proc/diskstats"));
    ev.add_metric("device.nominal_read_latency_ms", {{"device", "sda"}}, 1, "ms",
                  {"reference", "seed 000 §3.1"});
    ev.add_metric("disk.read_await_ms", {{"device", "sdb"}}, 5, "ms", file("/proc/diskstats"));
    ev.add_metric("device.nominal_read_latency_ms", {{"device", "sdb"}}, 1, "ms", {"reference", "seed"});
    ev.add_metric("disk.read_await_ms", {{"device", "vda"}}, 5, "ms", file("/proc/diskstats"));   // no nominal
    ev.add_metric("disk.read_await_ms", {{"device", "zram0"}}, 5, "ms", file("/proc/diskstats"));
    ev.add_metric("device.nominal_read_latency_ms", {{"device", "zram0"}}, 0, "ms", {"reference", "seed"});
    const auto r = evaluate_rules(load(kRatioRule), ev);
    ASSERT_EQ(r.size(), 4u);
    EXPECT_EQ(r[0].outcome, Tri::True);
    ASSERT_EQ(r[0].cited.size(), 1u);
    EXPECT_EQ(r[0].cited[0].comparison,
              "> 10 x device.nominal_read_latency_ms (= 1 ms); measured 25 x");
    EXPECT_DOUBLE_EQ(r[0].cited[0].value, 25);
    EXPECT_NE(r[0].cited[0].provenance.source.find("seed 000 §3.1"), std::string::npos);
    EXPECT_EQ(r[0].verify[0], "disk.read_await_ms / device.nominal_read_latency_ms <= 3 (now 25 x)");
    EXPECT_EQ(r[1].outcome, Tri::False);
    EXPECT_EQ(r[2].outcome, Tri::Unknown);   // a class with no nominal value
    EXPECT_EQ(r[2].missing, (std::vector<std::string>{"device.nominal_read_latency_ms (device=vda)"}));
    EXPECT_EQ(r[3].outcome, Tri::Unknown);   // division by zero is not an answer
    EXPECT_NE(r[3].missing[0].find("is 0"), std::string::npos);
}

TEST_F(RuleEvalTest, PercentileOfAHistogram) {
    const RuleSet s = load(R"(rules:
  - id: d2c.tail
    layer: device
    severity: warning
    for_each: device
    title: "{device} tail"
    when: {metric: block.d2c_us, percentile: 99, op: ">", value: 1000}
    mechanism: m
)");
    Evidence ev;
    Log2Histogram slow, fast, none;
    slow.add(100, 90);     // bucket 6
    slow.add(3000, 10);    // bucket 11: [2048, 4095]
    fast.add(100, 100);
    ev.histograms.push_back({"block.d2c_us", {{"device", "sda"}}, "us", slow, {"tracepoint", "block"}});
    ev.histograms.push_back({"block.d2c_us", {{"device", "sdb"}}, "us", fast, {"tracepoint", "block"}});
    ev.histograms.push_back({"block.d2c_us", {{"device", "sdc"}}, "us", none, {"tracepoint", "block"}});
    const auto r = evaluate_rules(s, ev);
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[0].outcome, Tri::True);
    ASSERT_EQ(r[0].cited.size(), 1u);
    EXPECT_EQ(r[0].cited[0].name, "block.d2c_us p99");
    EXPECT_DOUBLE_EQ(r[0].cited[0].value, slow.percentile(99).value);
    EXPECT_NE(r[0].cited[0].comparison.find("in bucket 2048..4095 us"), std::string::npos)
        << r[0].cited[0].comparison;
    EXPECT_EQ(r[1].outcome, Tri::False);
    EXPECT_EQ(r[2].outcome, Tri::Unknown);   // no samples: no percentile
    EXPECT_EQ(r[2].missing, (std::vector<std::string>{"block.d2c_us (device=sdc) has no samples"}));
}

TEST_F(RuleEvalTest, FactsCompareAsText) {
    const RuleSet s = load(R"(rules:
  - id: f
    layer: block_queue
    severity: info
    for_each: device
    title: t
    when:
      all:
        - {fact: queue.scheduler, op: "!=", value: bfq}
        - {fact: device.class, in: [hdd, sata_ssd]}
    mechanism: m
)");
    Evidence ev;
    ev.add_fact("queue.scheduler", {{"device", "sda"}}, "none", file("s"));
    ev.add_fact("device.class", {{"device", "sda"}}, "hdd", file("c"));
    ev.add_fact("queue.scheduler", {{"device", "nvme0n1"}}, "none", file("s"));
    ev.add_fact("device.class", {{"device", "nvme0n1"}}, "nvme", file("c"));
    ev.add_fact("queue.scheduler", {{"device", "vda"}}, "bfq", file("s"));   // class unknown, but != is False
    ev.add_fact("queue.scheduler", {{"device", "vdb"}}, "none", file("s"));   // class unknown
    const auto r = evaluate_rules(s, ev);
    ASSERT_EQ(r.size(), 4u);
    EXPECT_EQ(r[0].instance, "nvme0n1");
    EXPECT_EQ(r[0].outcome, Tri::False);
    EXPECT_EQ(r[1].outcome, Tri::True);
    ASSERT_EQ(r[1].cited.size(), 2u);
    EXPECT_EQ(r[1].cited[0].comparison, "!= bfq");
    EXPECT_EQ(r[1].cited[1].comparison, "in [hdd, sata_ssd]");
    EXPECT_EQ(r[1].cited[1].text, "hdd");
    EXPECT_EQ(r[2].outcome, Tri::False);
    EXPECT_EQ(r[3].outcome, Tri::Unknown);
}

TEST_F(RuleEvalTest, HandBuiltRuleLooksUpPerInstanceThenGlobal) {
    // A rule not made by the loader has no instance_keys.
    RuleSet s;
    Rule r;
    r.id = "hand";
    r.for_each = "device";
    r.title = "{device}: {disk.util_pct}, {vm.allocstall}";
    Condition a, b;
    a.leaf.metric = "disk.util_pct";
    a.leaf.op = CmpOp::Gt;
    a.leaf.value = 50;
    b.leaf.metric = "vm.allocstall";
    b.leaf.op = CmpOp::Gt;
    b.leaf.value = 0;
    r.when.kind = Condition::Kind::All;
    r.when.children = {a, b};
    s.rules.push_back(r);
    const auto res = evaluate_rules(s, two_devices());
    ASSERT_EQ(res.size(), 3u);
    EXPECT_EQ(res[1].outcome, Tri::True);
    EXPECT_EQ(res[1].title, "sda: 97.5 %, 3");
}

}  // namespace
