// rules/delayacct.yaml: per-process delay-accounting notes, with the
// interpretation that blkio delay is not device time.
#include <gtest/gtest.h>

#include "app/catalog.hpp"
#include "engine/rules/rules.hpp"

using namespace iodiag;

namespace {

std::vector<RuleResult> evaluate(const Evidence& ev, RuleSet& keep) {
    static const MetricCatalog catalog = full_catalog();
    LoadContext ctx;
    ctx.catalog = &catalog;
    keep = load_rules({std::string(IODIAG_SOURCE_DIR) + "/rules/delayacct.yaml"}, ctx);
    EXPECT_TRUE(keep.ok());
    return evaluate_rules(keep, ev);
}

const RuleResult* find(const std::vector<RuleResult>& rs, const std::string& id, const std::string& pid) {
    for (const auto& r : rs)
        if (r.rule->id == id && r.instance == pid) return &r;
    return nullptr;
}

}  // namespace

TEST(DelayacctRules, BlkioWaitIsANoteThatSaysItIsNotDeviceTime) {
    Evidence ev;
    const Provenance p{"file", "taskstats"};
    ev.add_fact("delayacct.comm", {{"pid", "42"}}, "postgres", p);
    ev.add_metric("delayacct.blkio_delay_pct", {{"pid", "42"}}, 65, "pct", p);
    ev.add_metric("delayacct.blkio_delay_ms", {{"pid", "42"}}, 3250, "ms", p);
    ev.add_metric("delayacct.freepages_delay_ms", {{"pid", "42"}}, 0, "ms", p);
    ev.add_metric("delayacct.thrashing_delay_ms", {{"pid", "42"}}, 0, "ms", p);
    ev.add_fact("delayacct.comm", {{"pid", "7"}}, "cron", p);
    ev.add_metric("delayacct.blkio_delay_pct", {{"pid", "7"}}, 1, "pct", p);
    RuleSet rules;
    const auto rs = evaluate(ev, rules);
    const RuleResult* busy = find(rs, "delayacct.blkio_wait", "42");
    ASSERT_NE(busy, nullptr);
    EXPECT_EQ(busy->outcome, Tri::True);
    EXPECT_EQ(busy->rule->severity, Severity::Info);
    EXPECT_NE(busy->title.find("postgres"), std::string::npos) << busy->title;
    EXPECT_NE(busy->mechanism.find("not device time"), std::string::npos);
    EXPECT_EQ(find(rs, "delayacct.blkio_wait", "7")->outcome, Tri::False);
    EXPECT_EQ(find(rs, "delayacct.reclaim_wait", "42")->outcome, Tri::False);
    EXPECT_EQ(find(rs, "delayacct.thrashing_wait", "42")->outcome, Tri::False);
}
