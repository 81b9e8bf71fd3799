// The rule loader: every diagnostic code, with its file:line:col.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "engine/rules/rules.hpp"
#include "rule_test_catalog.hpp"

using namespace iodiag;
using iodiag::testing::with_code;

namespace {

class RuleLoaderTest : public ::testing::Test {
protected:
    void SetUp() override {
        catalog_ = iodiag::testing::rule_test_catalog();
        ctx_.catalog = &catalog_;
    }
    RuleSet load(const std::string& yaml) { return load_rules_from_string(yaml, "t.yaml", ctx_); }
    // The only diagnostic with `code`; fails the test if there is not exactly one.
    Diagnostic one(const RuleSet& s, const std::string& code) {
        auto d = with_code(s.diagnostics, code);
        EXPECT_EQ(d.size(), 1u) << dump(s);
        return d.empty() ? Diagnostic{} : d.front();
    }
    static std::string dump(const RuleSet& s) {
        std::string out;
        for (const auto& d : s.diagnostics) out += d.to_string() + "\n";
        return out;
    }
    MetricCatalog catalog_;
    LoadContext ctx_;
};

// A valid rule, used as a base; `extra` is inserted as more rule keys.
std::string rule(const std::string& id, const std::string& when, const std::string& extra = "",
                 const std::string& for_each = "device") {
    return "  - id: " + id + "\n"
           "    layer: device\n"
           "    severity: warning\n" +
           (for_each.empty() ? "" : "    for_each: " + for_each + "\n") +
           "    title: \"busy\"\n"
           "    when: " + when + "\n"
           "    mechanism: \"why\"\n" + extra;
}

TEST_F(RuleLoaderTest, ValidRuleIsParsedCompletely) {
    const auto s = load(R"(macros:
  busy: {metric: disk.util_pct, op: ">=", value: 90}
rules:
  - id: device.busy
    layer: device
    severity: critical
    confidence: 0.6
    for_each: device
    title: "{device} busy at {disk.util_pct}"
    when:
      all:
        - {macro: busy}
        - {metric: disk.read_await_ms, ratio_of: device.nominal_read_latency_ms, op: ">", value: 10}
        - {metric: block.d2c_us, percentile: 99, op: ">", value: 1000}
        - not: {fact: queue.scheduler, op: "==", value: none}
        - any:
            - {fact: device.class, in: [hdd, sata_ssd]}
            - {metric: vm.allocstall, op: ">", value: 0}
    share_metric: block.d2c_share_pct
    mechanism: "queueing on {device}"
    evidence: [disk.util_pct, queue.scheduler, block.d2c_us]
    fixes:
      - {priority: P1, action: "lower the depth of {device}", playbook: device-saturated}
    verify:
      - {metric: disk.aqu_sz, op: "<", value: 1}
)");
    ASSERT_TRUE(s.ok()) << dump(s);
    EXPECT_TRUE(s.diagnostics.empty()) << dump(s);
    ASSERT_EQ(s.rules.size(), 1u);
    const Rule& r = s.rules[0];
    EXPECT_EQ(r.id, "device.busy");
    EXPECT_EQ(r.severity, Severity::Critical);
    EXPECT_DOUBLE_EQ(r.confidence, 0.6);
    EXPECT_EQ(r.for_each, "device");
    EXPECT_EQ(r.pos.file, "t.yaml");
    EXPECT_EQ(r.pos.line, 4);
    ASSERT_EQ(r.when.kind, Condition::Kind::All);
    ASSERT_EQ(r.when.children.size(), 5u);
    // The macro is expanded in place.
    EXPECT_EQ(r.when.children[0].kind, Condition::Kind::Leaf);
    EXPECT_EQ(r.when.children[0].leaf.metric, "disk.util_pct");
    EXPECT_EQ(r.when.children[0].leaf.op, CmpOp::Ge);
    EXPECT_EQ(r.when.children[0].leaf.pos.line, 2);
    EXPECT_EQ(r.when.children[1].leaf.ratio_of, "device.nominal_read_latency_ms");
    EXPECT_EQ(r.when.children[2].leaf.percentile, 99.0);
    EXPECT_EQ(r.when.children[3].kind, Condition::Kind::Not);
    EXPECT_EQ(r.when.children[3].children[0].leaf.text, "none");
    EXPECT_EQ(r.when.children[4].children[0].leaf.one_of, (std::vector<std::string>{"hdd", "sata_ssd"}));
    EXPECT_EQ(r.share_metric, "block.d2c_share_pct");
    ASSERT_EQ(r.fixes.size(), 1u);
    EXPECT_EQ(r.fixes[0].priority, Priority::P1);
    EXPECT_EQ(r.fixes[0].playbook, "device-saturated");
    ASSERT_EQ(r.verify.size(), 1u);
    EXPECT_EQ(r.verify[0].op, CmpOp::Lt);
    // Instance keys recorded for the evaluator.
    EXPECT_EQ(r.instance_keys.at("disk.util_pct"), "device");
    EXPECT_EQ(r.instance_keys.at("vm.allocstall"), "");
    EXPECT_EQ(s.to_json()["rules"][0], "device.busy");
}

TEST_F(RuleLoaderTest, E001SyntaxErrorWithPosition) {
    const auto s = load("rules:\n  - id: x\n    title: [unclosed\n");
    const auto d = one(s, "E001");
    EXPECT_EQ(d.pos.file, "t.yaml");
    EXPECT_GE(d.pos.line, 3);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(d.to_string().find("t.yaml:"), std::string::npos);
}

TEST_F(RuleLoaderTest, E002MissingRequiredKeyAtTheRule) {
    const auto s = load("rules:\n  - id: x\n    layer: device\n    severity: info\n    title: t\n    mechanism: m\n");
    const auto d = one(s, "E002");
    EXPECT_EQ(d.pos.line, 2);
    EXPECT_EQ(d.pos.column, 5);
    EXPECT_NE(d.message.find("'when'"), std::string::npos);
    EXPECT_TRUE(s.rules.empty());   // a rule with errors is not loaded
}

TEST_F(RuleLoaderTest, E003UnknownKeyAtTheKey) {
    const auto s = load("rules:\n" + rule("a", "{metric: disk.util_pct, op: \">\", value: 1}", "    titel: typo\n"));
    const auto d = one(s, "E003");
    EXPECT_EQ(d.pos.line, 9);
    EXPECT_EQ(d.pos.column, 5);
    EXPECT_NE(d.message.find("'titel'"), std::string::npos);
    // In a comparison too.
    const auto s2 = load("rules:\n" + rule("a", "{metric: disk.util_pct, op: \">\", value: 1, unit: ms}"));
    EXPECT_EQ(one(s2, "E003").pos.line, 7);
}

TEST_F(RuleLoaderTest, E004UnknownNamesAndWrongKinds) {
    auto s = load("rules:\n" + rule("a", "{metric: disk.util_pc, op: \">\", value: 1}"));
    auto d = one(s, "E004");
    EXPECT_EQ(d.pos.line, 7);
    EXPECT_EQ(d.pos.column, 20);
    EXPECT_NE(d.message.find("did you mean 'disk.util_pct'"), std::string::npos) << d.message;
    // percentile: needs a histogram.
    s = load("rules:\n" + rule("a", "{metric: disk.util_pct, percentile: 99, op: \">\", value: 1}"));
    EXPECT_NE(one(s, "E004").message.find("not a histogram"), std::string::npos);
    // A histogram without percentile.
    s = load("rules:\n" + rule("a", "{metric: block.d2c_us, op: \">\", value: 1}"));
    EXPECT_NE(one(s, "E004").message.find("percentile"), std::string::npos);
    // fact: needs a fact; a fact is not a metric.
    s = load("rules:\n" + rule("a", "{fact: disk.util_pct, op: \"==\", value: x}"));
    EXPECT_EQ(one(s, "E004").pos.line, 7);
    s = load("rules:\n" + rule("a", "{metric: queue.scheduler, op: \">\", value: 1}"));
    EXPECT_NE(one(s, "E004").message.find("is a fact"), std::string::npos);
    // Evidence entries and ratio_of are checked too.
    s = load("rules:\n" + rule("a", "{metric: disk.util_pct, ratio_of: nope, op: \">\", value: 1}",
                               "    evidence: [disk.util_pct, nothing.here]\n"));
    EXPECT_EQ(with_code(s.diagnostics, "E004").size(), 2u) << dump(s);
}

TEST_F(RuleLoaderTest, E005BadOperatorsAndComparisons) {
    auto s = load("rules:\n" + rule("a", "{metric: disk.util_pct, op: \"=>\", value: 1}"));
    auto d = one(s, "E005");
    EXPECT_EQ(d.pos.line, 7);
    EXPECT_EQ(d.pos.column, 39);
    s = load("rules:\n" + rule("a", "{fact: queue.scheduler, op: \">\", value: none}"));
    EXPECT_NE(one(s, "E005").message.find("as text"), std::string::npos);
    s = load("rules:\n" + rule("a", "{metric: block.d2c_us, percentile: 150, op: \">\", value: 1}"));
    EXPECT_NE(one(s, "E005").message.find("percentile"), std::string::npos);
    s = load("rules:\n" + rule("a", "{metric: disk.util_pct, fact: queue.scheduler, op: \">\", value: 1}"));
    one(s, "E005");
    s = load("rules:\n" + rule("a", "{all: []}"));
    EXPECT_NE(one(s, "E005").message.find("empty"), std::string::npos);
    s = load("rules:\n" + rule("a", "{all: [{metric: disk.util_pct, op: \">\", value: 1}], any: []}"));
    EXPECT_FALSE(with_code(s.diagnostics, "E005").empty());
}

TEST_F(RuleLoaderTest, E006SeverityConfidencePriority) {
    const auto s = load(R"(rules:
  - id: a
    layer: device
    severity: fatal
    confidence: 1.5
    title: t
    when: {metric: vm.allocstall, op: ">", value: 0}
    mechanism: m
    fixes:
      - {priority: P9, action: x}
)");
    const auto d = with_code(s.diagnostics, "E006");
    ASSERT_EQ(d.size(), 3u) << dump(s);
    EXPECT_EQ(d[0].pos.line, 4);
    EXPECT_EQ(d[1].pos.line, 5);
    EXPECT_EQ(d[2].pos.line, 10);
    EXPECT_EQ(d[2].pos.column, 20);
}

TEST_F(RuleLoaderTest, E007DuplicateIdsAcrossFiles) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("iodiag_rules_dup_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string body = "rules:\n" + rule("same.id", "{metric: disk.util_pct, op: \">\", value: 1}");
    std::ofstream(dir / "a.yaml") << body;
    std::ofstream(dir / "b.yaml") << "# second\n" << body;
    const auto s = load_rules({dir.string()}, ctx_);
    fs::remove_all(dir);
    const auto d = one(s, "E007");
    EXPECT_EQ(d.pos.file, (dir / "b.yaml").string());
    EXPECT_EQ(d.pos.line, 3);
    EXPECT_NE(d.message.find("a.yaml:2"), std::string::npos) << d.message;
    EXPECT_EQ(s.rules.size(), 1u);
}

TEST_F(RuleLoaderTest, E008UnknownLayer) {
    auto yaml = "rules:\n" + rule("a", "{metric: vm.allocstall, op: \">\", value: 0}", "", "");
    yaml.replace(yaml.find("layer: device"), 13, "layer: disk");
    const auto d = one(load(yaml), "E008");
    EXPECT_EQ(d.pos.line, 3);
    EXPECT_EQ(d.pos.column, 12);
    EXPECT_NE(d.message.find("block_queue"), std::string::npos);
}

TEST_F(RuleLoaderTest, E009WrongTypes) {
    auto s = load("rules:\n" + rule("a", "[{metric: disk.util_pct, op: \">\", value: 1}]"));
    EXPECT_EQ(one(s, "E009").pos.line, 7);
    s = load("rules:\n" + rule("a", "{metric: disk.util_pct, op: \">\", value: lots}"));
    EXPECT_NE(one(s, "E009").message.find("number"), std::string::npos);
    s = load("rules: {a: 1}\n");
    EXPECT_EQ(one(s, "E009").pos.line, 1);
    s = load("- just a list\n");
    one(s, "E009");
    s = load("rules:\n" + rule("a", "{metric: disk.util_pct, op: \">\", value: 1}", "    evidence: disk.util_pct\n"));
    EXPECT_NE(one(s, "E009").message.find("list"), std::string::npos);
}

TEST_F(RuleLoaderTest, E010UnknownPlaybookOnlyWhenPlaybooksAreKnown) {
    const std::string yaml = "rules:\n" + rule("a", "{metric: disk.util_pct, op: \">\", value: 1}",
                                               "    fixes:\n      - {priority: P4, action: x, playbook: nope}\n");
    EXPECT_TRUE(load(yaml).ok());   // no playbook list: not checked
    ctx_.playbook_ids = {"other"};
    const auto d = one(load(yaml), "E010");
    EXPECT_EQ(d.pos.line, 10);
    EXPECT_EQ(d.pos.column, 45);
    ctx_.playbook_ids = {"nope"};
    EXPECT_TRUE(load(yaml).ok());
}

TEST_F(RuleLoaderTest, E011UnknownPlaceholders) {
    auto yaml = "rules:\n" + rule("a", "{metric: disk.util_pct, op: \">\", value: 1}");
    yaml.replace(yaml.find("\"busy\""), 6, "\"{device} at {disk.util_pct} and {bogus.name}\"");
    const auto d = one(load(yaml), "E011");
    EXPECT_EQ(d.pos.line, 6);
    EXPECT_NE(d.message.find("{bogus.name}"), std::string::npos);
    // {device} in a global rule is not a placeholder it has.
    auto global = "rules:\n" + rule("b", "{metric: vm.allocstall, op: \">\", value: 0}", "", "");
    global.replace(global.find("\"why\""), 5, "\"on {device}\"");
    const auto needs = one(load(global), "E011");
    EXPECT_EQ(needs.pos.line, 7);
    EXPECT_NE(needs.message.find("needs 'for_each: device'"), std::string::npos) << needs.message;
    // Shell and JSON braces are not placeholders.
    auto shell = "rules:\n" + rule("c", "{metric: disk.util_pct, op: \">\", value: 1}");
    shell.replace(shell.find("\"why\""), 5, "\"run ${DEV} or {\\\"a\\\": 1} or { x }\"");
    EXPECT_TRUE(load(shell).ok()) << dump(load(shell));
}

TEST_F(RuleLoaderTest, E012UnknownMacroAndCycles) {
    auto s = load("rules:\n" + rule("a", "{macro: nope}"));
    auto d = one(s, "E012");
    EXPECT_EQ(d.pos.line, 7);
    EXPECT_EQ(d.pos.column, 19);
    s = load("macros:\n  m1: {macro: m2}\n  m2: {all: [{macro: m1}]}\nrules:\n" + rule("a", "{macro: m1}"));
    const auto cycles = with_code(s.diagnostics, "E012");
    ASSERT_FALSE(cycles.empty()) << dump(s);
    EXPECT_NE(cycles[0].message.find("cycle"), std::string::npos);
    EXPECT_TRUE(s.rules.empty());
}

TEST_F(RuleLoaderTest, E013InstanceMismatch) {
    // A per-device metric in a global rule.
    auto s = load("rules:\n" + rule("a", "{metric: disk.util_pct, op: \">\", value: 1}", "", ""));
    auto d = one(s, "E013");
    EXPECT_EQ(d.pos.line, 6);
    EXPECT_NE(d.message.find("for_each: device"), std::string::npos);
    // A cgroup metric in a for_each: device rule.
    s = load("rules:\n" + rule("a", "{metric: cgroup.io_pressure_some_pct, op: \">\", value: 1}"));
    EXPECT_NE(one(s, "E013").message.find("per cgroup"), std::string::npos);
    // Through a macro: reported where the macro's leaf is.
    s = load("macros:\n  m: {metric: cgroup.io_pressure_some_pct, op: \">\", value: 1}\nrules:\n" +
             rule("a", "{macro: m}"));
    EXPECT_EQ(one(s, "E013").pos.line, 2);
    // A global metric in a device rule is fine.
    EXPECT_TRUE(load("rules:\n" + rule("a", "{metric: vm.allocstall, op: \">\", value: 1}")).ok());
    // An instance label no metric has.
    s = load("rules:\n" + rule("a", "{metric: vm.allocstall, op: \">\", value: 1}", "", "volume"));
    EXPECT_EQ(one(s, "E013").pos.line, 5);
}

TEST_F(RuleLoaderTest, E014UnreadablePath) {
    const auto s = load_rules({"/nonexistent/iodiag/rules"}, ctx_);
    const auto d = one(s, "E014");
    EXPECT_EQ(d.pos.file, "/nonexistent/iodiag/rules");
    EXPECT_FALSE(s.ok());
}

TEST_F(RuleLoaderTest, W001UnusedMacroIsAWarning) {
    const auto s = load("macros:\n  used: {metric: disk.util_pct, op: \">\", value: 1}\n"
                        "  lonely: {macro: unused_too}\n  unused_too: {metric: disk.aqu_sz, op: \">\", value: 1}\n"
                        "rules:\n" + rule("a", "{macro: used}"));
    const auto w = with_code(s.diagnostics, "W001");
    ASSERT_EQ(w.size(), 2u) << dump(s);
    EXPECT_EQ(w[0].pos.line, 3);
    EXPECT_FALSE(w[0].error);
    EXPECT_TRUE(s.ok());
    EXPECT_EQ(s.rules.size(), 1u);
}

TEST_F(RuleLoaderTest, KeepsGoingAfterErrorsAndSortsByPosition) {
    const auto s = load(R"(rules:
  - id: a
    layer: nowhere
    severity: loud
    title: t
    when: {metric: missing.metric, op: "?", value: 1}
    mechanism: m
  - id: b
    layer: device
    severity: info
    title: t
    when: {metric: vm.allocstall, op: ">", value: 0}
    mechanism: m
    extra: 1
)");
    std::vector<std::string> codes;
    for (const auto& d : s.diagnostics) codes.push_back(d.code);
    EXPECT_EQ(codes, (std::vector<std::string>{"E008", "E006", "E004", "E005", "E003"})) << dump(s);
    const auto j = s.to_json();
    EXPECT_EQ(j["diagnostics"].size(), 5u);
    EXPECT_EQ(j["diagnostics"][0]["line"], 3);
    EXPECT_EQ(j["ok"], false);
}

TEST_F(RuleLoaderTest, DiagnosticFormat) {
    Diagnostic d{"E004", true, {"rules/x.yaml", 12, 7}, "unknown metric 'a'"};
    EXPECT_EQ(d.to_string(), "rules/x.yaml:12:7: E004: unknown metric 'a'");
}

}  // namespace
