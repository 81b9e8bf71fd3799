// The site configuration: checked like the rules (file:line:col, stable
// codes), threshold addresses that must name exactly one comparison, and what
// it changes: the rule set (disable, severity, thresholds) and the evidence's
// device references (provenance "config", winning over the class table).
#include <gtest/gtest.h>

#include "app/catalog.hpp"
#include "engine/evidence/bundle.hpp"
#include "engine/rules/site_config.hpp"
#include "engine/triage/analysis.hpp"
#include "engine/derive/derived_metrics.hpp"
#include "tests/unit/rule_test_catalog.hpp"

using namespace iodiag;
using iodiag::testing::with_code;

namespace {

const char* kRules = R"(
macros:
  busy: {metric: disk.aqu_sz, op: ">", value: 5}
rules:
  - id: t.slow
    layer: device
    severity: warning
    for_each: device
    title: "{device} slow"
    when:
      all:
        - {macro: busy}
        - any:
            - {macro: busy}
            - {metric: disk.read_await_ms, op: ">", value: 10}
        - {metric: disk.read_await_ms, ratio_of: device.nominal_read_latency_ms, op: ">", value: 3}
        - {metric: block.d2c_us, percentile: 99, op: ">", value: 1000}
        - {metric: block.d2c_us, percentile: 50, op: ">", value: 100}
        - {fact: device.class, op: "==", value: nvme}
        - {metric: disk.util_pct, op: ">=", value: 90}
    mechanism: "queueing"
    verify:
      - {metric: disk.util_pct, op: "<", value: 90}
  - id: t.other
    layer: reclaim
    severity: info
    title: "reclaim"
    when: {metric: vm.allocstall, op: ">", value: 0}
    mechanism: "reclaim"
)";

struct Fixture {
    MetricCatalog catalog = iodiag::testing::rule_test_catalog();
    RuleSet rules;
    SiteConfigContext ctx;
    Fixture() {
        LoadContext lc;
        lc.catalog = &catalog;
        rules = load_rules_from_string(kRules, "rules.yaml", lc);
        ctx.rules = &rules;
        ctx.catalog = &catalog;
        ctx.device_classes = reference_classes();
    }
    SiteConfig parse(const std::string& yaml) { return parse_site_config(yaml, "site.yaml", ctx); }
};

const Rule& rule(const RuleSet& rs, const std::string& id) {
    for (const auto& r : rs.rules)
        if (r.id == id) return r;
    throw std::runtime_error("no rule " + id);
}

std::vector<double> leaf_values(const Condition& c) {
    if (c.kind == Condition::Kind::Leaf) return {c.leaf.value};
    std::vector<double> out;
    for (const auto& ch : c.children)
        for (double v : leaf_values(ch)) out.push_back(v);
    return out;
}

}  // namespace

TEST(SiteConfig, AnEmptyOrAbsentSectionChangesNothing) {
    Fixture f;
    EXPECT_TRUE(f.parse("").ok());
    EXPECT_TRUE(f.parse("rules: {}\ndevices: {}\n").ok());
}

TEST(SiteConfig, UnknownRuleIdIsC001WithFileLineColumnAndASuggestion) {
    Fixture f;
    const SiteConfig c = f.parse("rules:\n  t.slwo: {disable: true}\n");
    ASSERT_EQ(with_code(c.diagnostics, "C001").size(), 1u);
    EXPECT_EQ(c.diagnostics[0].to_string(), "site.yaml:2:3: C001: unknown rule id 't.slwo' (did you mean 't.slow'?) (iodiag rules list)");
    EXPECT_FALSE(c.ok());
}

TEST(SiteConfig, WrongTypesAreE009AndBadValuesC004) {
    Fixture f;
    const SiteConfig c = f.parse(
        "rules:\n"
        "  t.slow:\n"
        "    disable: maybe\n"                    // 3
        "    severity: fatal\n"                   // 4
        "    thresholds:\n"
        "      disk.util_pct: 150\n"              // 6: a percentage
        "      block.d2c_us p99: -1\n"            // 7: a latency
        "      disk.aqu_sz: [1]\n"                // 8: a list
        "      disk.read_await_ms / device.nominal_read_latency_ms: .inf\n"   // 9
        "history: {nights: 0, keep: two, max_bytes: 12 parsecs}\n");           // 10
    std::vector<std::string> got;
    for (const auto& d : c.diagnostics) got.push_back(std::to_string(d.pos.line) + " " + d.code);
    EXPECT_EQ(got, (std::vector<std::string>{"3 E009", "4 E006", "6 C004", "7 C004", "8 E009", "9 C004", "10 C004",
                                             "10 E009", "10 E009"}));
}

TEST(SiteConfig, AThresholdAddressesExactlyOneComparison) {
    Fixture f;
    // disk.read_await_ms is compared plainly and as a ratio; block.d2c_us at two
    // percentiles: the bare names are ambiguous, the qualified ones are not.
    SiteConfig c = f.parse(
        "rules:\n  t.slow:\n    thresholds:\n"
        "      disk.read_await_ms: 20\n"
        "      block.d2c_us: 5000\n"
        "      device.class: 1\n"
        "      disk.nope: 1\n"
        "      'not an address!': 1\n");
    ASSERT_EQ(with_code(c.diagnostics, "C003").size(), 2u);
    EXPECT_NE(c.diagnostics[0].message.find("'disk.read_await_ms' at rules.yaml:"), std::string::npos)
        << c.diagnostics[0].message;
    EXPECT_NE(c.diagnostics[0].message.find("'disk.read_await_ms / device.nominal_read_latency_ms' at rules.yaml:"),
              std::string::npos);
    ASSERT_EQ(with_code(c.diagnostics, "C002").size(), 3u);
    EXPECT_NE(c.diagnostics[2].message.find("is a fact"), std::string::npos) << c.diagnostics[2].message;
    EXPECT_NE(c.diagnostics[3].message.find("it compares: disk.aqu_sz, disk.read_await_ms,"), std::string::npos)
        << c.diagnostics[3].message;

    c = f.parse(
        "rules:\n  t.slow:\n    thresholds:\n"
        "      disk.read_await_ms / device.nominal_read_latency_ms: 5\n"
        "      block.d2c_us p99: 5000\n"
        "      disk.aqu_sz: 8\n");   // one comparison, used twice through a macro
    EXPECT_TRUE(c.ok()) << (c.diagnostics.empty() ? "" : c.diagnostics[0].to_string());
}

TEST(SiteConfig, OverridesChangeTheRuleSetAndSayWhere) {
    Fixture f;
    const SiteConfig c = f.parse(
        "rules:\n"
        "  t.slow:\n"
        "    severity: critical\n"
        "    thresholds:\n"
        "      disk.util_pct: 95\n"
        "      block.d2c_us p99: 5000\n"
        "      disk.aqu_sz: 8\n"
        "  t.other: {disable: true}\n");
    ASSERT_TRUE(c.ok());
    RuleSet rs = f.rules;
    const auto lines = apply_rule_overrides(c, rs);
    ASSERT_EQ(rs.rules.size(), 1u);
    const Rule& r = rule(rs, "t.slow");
    EXPECT_EQ(r.severity, Severity::Critical);
    // aqu_sz (twice, one macro), await 10, ratio 3, p99 5000, p50 100, fact, util 95
    EXPECT_EQ(leaf_values(r.when), (std::vector<double>{8, 8, 10, 3, 5000, 100, 0, 95}));
    EXPECT_EQ(r.verify[0].value, 95);   // verify checks the threshold in force
    EXPECT_NE(r.mechanism.find("site configuration site.yaml:2: severity critical (was warning); threshold of "
                               "disk.util_pct 95 (was 90)"),
              std::string::npos)
        << r.mechanism;
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(lines[1], "t.other: disabled (site.yaml:8)");
}

TEST(SiteConfig, DeviceReferencesEnterTheEvidenceAsConfigAndWin) {
    Fixture f;
    const SiteConfig c = f.parse(
        "devices:\n"
        "  vdb: {class: nvme, read_latency_ms: 2}\n"
        "  vdc: {read_latency_ms: 1.5, write_latency_ms: 4}\n"
        "  /dev/disk/by-id/gone: {class: hdd}\n");
    ASSERT_TRUE(c.ok());
    Evidence ev;
    ev.add_fact("device.class", {{"device", "vdb"}}, "virtio", {"file", "/sys/block/vdb"});
    ev.add_fact("device.class", {{"device", "vdc"}}, "virtio", {"file", "/sys/block/vdc"});
    auto resolve = [](const std::string& k) { return k.rfind("/dev/", 0) == 0 ? std::string() : k; };
    const auto lines = apply_device_config(c, ev, resolve);
    apply_device_config(c, ev, resolve);   // twice: nothing doubles
    add_derived_metrics(ev);
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_EQ(lines[2], "/dev/disk/by-id/gone: not a block device of this host (site.yaml:4)");

    const Fact* cls = ev.find_fact("device.class", {{"device", "vdb"}});
    ASSERT_NE(cls, nullptr);
    EXPECT_EQ(cls->value, "nvme");
    EXPECT_EQ(cls->provenance.kind, "config");
    EXPECT_EQ(cls->provenance.source, "site.yaml:2 (detected: virtio)");
    // The configured reference wins: it replaces the class table's for the
    // device (a write figure comes from the configuration too, or there is none).
    const Metric* read = ev.find_metric("device.nominal_read_latency_ms", {{"device", "vdb"}});
    ASSERT_NE(read, nullptr);
    EXPECT_EQ(read->value, 2);
    EXPECT_EQ(read->provenance.kind, "config");
    EXPECT_EQ(read->provenance.source, "site.yaml:2");
    EXPECT_EQ(ev.find_metric("device.nominal_write_latency_ms", {{"device", "vdb"}}), nullptr);
    // A virtio disk has no class reference: the configuration gives it one.
    EXPECT_EQ(ev.find_metric("device.nominal_write_latency_ms", {{"device", "vdc"}})->value, 4);
    size_t reads = 0;
    for (const auto& m : ev.metrics) reads += m.name == "device.nominal_read_latency_ms";
    EXPECT_EQ(reads, 2u);
}

TEST(SiteConfig, AReferenceForAVirtioDiskLetsTheShippedRulesJudgeIt) {
    // In this recording vda (virtio) has no reference: its speed is not judged.
    // A site reference (say the volume's SLA) makes it judged, and it is cited
    // with its provenance.
    const MetricCatalog catalog = full_catalog();
    LoadContext lc;
    lc.catalog = &catalog;
    const RuleSet rules = load_rules({std::string(IODIAG_SOURCE_DIR) + "/rules"}, lc);
    SiteConfigContext ctx{&rules, &catalog, reference_classes()};
    const SiteConfig c = parse_site_config("devices:\n  vda: {read_latency_ms: 0.01, write_latency_ms: 0.01}\n",
                                           "/etc/iodiag/iodiag.yaml", ctx);
    ASSERT_TRUE(c.ok());
    Evidence ev = load_bundle(std::string(IODIAG_FIXTURES) + "/bundles/slow_device.json");
    const Verdict before = analyze(ev, rules);
    apply_device_config(c, ev, {});
    const Verdict after = analyze(evidence_from_json(evidence_to_json(ev)), rules);
    std::string figures_before, figures_after;
    for (const auto& r : before.layers)
        if (r.layer == "device") figures_before = r.figures;
    for (const auto& r : after.layers)
        if (r.layer == "device") figures_after = r.figures;
    EXPECT_NE(figures_before.find("vda: "), std::string::npos);
    EXPECT_NE(figures_before.find("no reference latency for its class"), std::string::npos) << figures_before;
    EXPECT_NE(figures_after.find("reference read 0.01 ms"), std::string::npos) << figures_after;
    bool cited = false;
    for (const auto& f : after.findings)
        if (f.instance == "vda")
            for (const auto& e : f.evidence)
                cited |= e.name == "device.nominal_read_latency_ms" && e.provenance.kind == "config" &&
                         e.provenance.source == "/etc/iodiag/iodiag.yaml:2";
    EXPECT_TRUE(cited) << "a finding on vda citing the configured reference";
}
