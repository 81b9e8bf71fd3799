// The rules and playbooks that ship in rules/ and playbooks/: they load with
// no errors against the real catalog (every collector's specs + derived
// metrics), each rule is actionable, and the rules decide as their mechanisms
// say on hand-built evidence.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "app/catalog.hpp"
#include "engine/rules/playbooks.hpp"
#include "engine/rules/rules.hpp"

using namespace iodiag;

namespace {

const std::string kRulesDir = std::string(IODIAG_SOURCE_DIR) + "/rules";
const std::string kPlaybooksDir = std::string(IODIAG_SOURCE_DIR) + "/playbooks";

std::string dump(const std::vector<Diagnostic>& diags) {
    std::string out;
    for (const auto& d : diags) out += d.to_string() + "\n";
    return out;
}

struct Shipped {
    MetricCatalog catalog = full_catalog();
    PlaybookSet playbooks = load_playbooks({kPlaybooksDir});
    RuleSet rules;
    Shipped() {
        LoadContext ctx;
        ctx.catalog = &catalog;
        ctx.playbook_ids = playbooks.ids();
        rules = load_rules({kRulesDir}, ctx);
    }
};

TEST(ShippedRules, LoadWithoutErrorsOrWarningsAgainstTheFullCatalog) {
    const Shipped s;
    EXPECT_TRUE(s.playbooks.ok()) << dump(s.playbooks.diagnostics);
    EXPECT_TRUE(s.rules.diagnostics.empty()) << dump(s.rules.diagnostics);
    EXPECT_TRUE(check_playbook_rules(s.playbooks, s.rules).empty())
        << dump(check_playbook_rules(s.playbooks, s.rules));
    EXPECT_FALSE(s.rules.rules.empty());
}

TEST(ShippedRules, EveryRuleCitesEvidenceAndHasFixesWithPlaybooks) {
    const Shipped s;
    for (const auto& r : s.rules.rules) {
        EXPECT_FALSE(r.evidence.empty()) << r.id;
        ASSERT_FALSE(r.fixes.empty()) << r.id;
        for (const auto& f : r.fixes) {
            EXPECT_FALSE(f.playbook.empty()) << r.id << ": " << f.action;
            const Playbook* p = s.playbooks.find(f.playbook);
            ASSERT_NE(p, nullptr) << r.id << " -> " << f.playbook;
            EXPECT_NE(std::find(p->applies_to.begin(), p->applies_to.end(), r.id), p->applies_to.end())
                << "playbook " << p->id << " does not list " << r.id << " in applies_to";
        }
    }
}

// The device, block-queue and memory rules (issue 2) also say how to verify
// the fix and list their fixes in P0..P5 order.
TEST(ShippedRules, CoreRulesHaveVerificationAndOrderedFixes) {
    const Shipped s;
    const std::set<std::string> files{"device.yaml", "block_queue.yaml", "memory.yaml"};
    size_t seen = 0;
    for (const auto& r : s.rules.rules) {
        const std::string file = r.pos.file.substr(r.pos.file.find_last_of('/') + 1);
        if (!files.count(file)) continue;
        ++seen;
        EXPECT_FALSE(r.verify.empty()) << r.id;
        EXPECT_TRUE(std::is_sorted(r.fixes.begin(), r.fixes.end(),
                                   [](const Fix& a, const Fix& b) { return a.priority < b.priority; }))
            << r.id;
    }
    EXPECT_EQ(seen, 16u);
}

// ---- the rules decide as their mechanisms say --------------------------------

Provenance prov() { return {"file", "test"}; }

const RuleResult* result(const std::vector<RuleResult>& rs, const std::string& id, const std::string& inst = "") {
    for (const auto& r : rs)
        if (r.rule->id == id && r.instance == inst) return &r;
    return nullptr;
}

// A busy disk with a deep queue: Little's law, aqu = IOPS x await.
Evidence disk(const std::string& dev, double util, double aqu, double iops, double await_ms,
              std::optional<double> nominal_ms, double avg_kb = 4) {
    Evidence ev;
    const Labels l{{"device", dev}};
    ev.add_metric("disk.util_pct", l, util, "pct", prov());
    ev.add_metric("disk.aqu_sz", l, aqu, "requests", prov());
    ev.add_metric("disk.ios_per_s", l, iops, "1/s", prov());
    ev.add_metric("disk.read_iops", l, iops, "1/s", prov());
    ev.add_metric("disk.write_iops", l, 0, "1/s", prov());
    ev.add_metric("disk.read_requests", l, iops * 4, "count", prov());   // a 4 s window
    ev.add_metric("disk.write_requests", l, 0, "count", prov());
    ev.add_metric("disk.read_await_ms", l, await_ms, "ms", prov());
    ev.add_metric("disk.await_ms", l, await_ms, "ms", prov());
    ev.add_metric("disk.avg_read_kb", l, avg_kb, "KiB", prov());
    if (nominal_ms) {
        ev.add_metric("device.nominal_read_latency_ms", l, *nominal_ms, "ms", {"reference", "seed 000 §3.1"});
        ev.add_metric("device.nominal_write_latency_ms", l, *nominal_ms, "ms", {"reference", "seed 000 §3.1"});
    }
    return ev;
}

TEST(ShippedRules, DeviceSaturatedNeedsBusyDeepQueueAndSlowAwait) {
    const Shipped s;
    // HDD: 150 IOPS x 60 ms = 9 in flight; nominal 9 ms.
    auto rs = evaluate_rules(s.rules, disk("sda", 99, 9, 150, 60, 9));
    ASSERT_NE(result(rs, "device.saturated", "sda"), nullptr);
    EXPECT_EQ(result(rs, "device.saturated", "sda")->outcome, Tri::True);
    EXPECT_EQ(result(rs, "device.slow_for_class", "sda")->outcome, Tri::False);   // it queues
    // Busy but shallow: not saturated, and slow for its class instead.
    rs = evaluate_rules(s.rules, disk("sdb", 95, 0.9, 9, 100, 9));
    EXPECT_EQ(result(rs, "device.saturated", "sdb")->outcome, Tri::False);
    EXPECT_EQ(result(rs, "device.slow_for_class", "sdb")->outcome, Tri::True);
    // Big requests are not "slow for the class".
    rs = evaluate_rules(s.rules, disk("sdb", 95, 0.9, 9, 100, 9, 1024));
    EXPECT_EQ(result(rs, "device.slow_for_class", "sdb")->outcome, Tri::False);
    // Nor is a mean over a handful of requests (2 a second for 4 s: 8).
    rs = evaluate_rules(s.rules, disk("sdb", 5, 0.2, 2, 100, 9));
    EXPECT_EQ(result(rs, "device.slow_for_class", "sdb")->outcome, Tri::False);
    // Parallel device at 100 % util with a queue but await near nominal: not saturated.
    rs = evaluate_rules(s.rules, disk("nvme0n1", 100, 8, 80000, 0.1, 0.1));
    EXPECT_EQ(result(rs, "device.saturated", "nvme0n1")->outcome, Tri::False);
    // No nominal latency for the class: Unknown, never "healthy".
    rs = evaluate_rules(s.rules, disk("vda", 99, 9, 150, 60, std::nullopt));
    EXPECT_EQ(result(rs, "device.saturated", "vda")->outcome, Tri::Unknown);
    EXPECT_EQ(result(rs, "device.slow_for_class", "vda")->outcome, Tri::False);   // it queues
}

TEST(ShippedRules, DirectReclaimOnAnyStall) {
    const Shipped s;
    Evidence ev;
    ev.add_metric("vm.allocstall", {}, 0, "count", prov());
    EXPECT_EQ(result(evaluate_rules(s.rules, ev), "reclaim.direct_reclaim")->outcome, Tri::False);
    ev.metrics.clear();
    ev.add_metric("vm.allocstall", {}, 45, "count", prov());
    const auto rs = evaluate_rules(s.rules, ev);
    const RuleResult* r = result(rs, "reclaim.direct_reclaim");
    EXPECT_EQ(r->outcome, Tri::True);
    // The fix order follows P0..P4: working set first, then the sysctls.
    ASSERT_EQ(r->fixes.size(), 3u);
    EXPECT_EQ(r->fixes[0].playbook, "reclaim-working-set");
}

TEST(ShippedRules, DirtyThrottlingStartsAtTheFreerunPoint) {
    const Shipped s;
    auto ev_with = [](double dirty, double writeback, double limit, double bg) {
        Evidence ev;
        ev.add_metric("mem.dirty_bytes", {}, dirty, "bytes", prov());
        ev.add_metric("mem.writeback_bytes", {}, writeback, "bytes", prov());
        ev.add_metric("dirty.limit_bytes", {}, limit, "bytes", prov());
        ev.add_metric("dirty.background_limit_bytes", {}, bg, "bytes", prov());
        ev.add_metric("dirty.freerun_bytes", {}, (limit + bg) / 2, "bytes", prov());
        ev.add_metric("dirty.pct_of_limit", {}, (dirty + writeback) / limit * 100, "pct", prov());
        return ev;
    };
    const double G = 1 << 30;
    auto outcome = [&](const Evidence& ev) { return result(evaluate_rules(s.rules, ev), "dirty.writers_throttled")->outcome; };
    // Above the background threshold but below freerun at the end of the window:
    // without the balance_dirty_pages tracepoint a pause earlier in the window
    // cannot be excluded (Unknown); with it measured at zero, nobody was paused.
    Evidence below = ev_with(1.2 * G, 0, 2 * G, 1 * G);
    EXPECT_EQ(outcome(below), Tri::Unknown);
    below.add_metric("dirty.pause_ms", {}, 0, "ms", {"tracepoint", "writeback:balance_dirty_pages"});
    EXPECT_EQ(outcome(below), Tri::False);
    // Measured pauses decide even when the snapshot is below freerun.
    Evidence paused = ev_with(0.2 * G, 0, 2 * G, 1 * G);
    paused.add_metric("dirty.pause_ms", {}, 840, "ms", {"tracepoint", "writeback:balance_dirty_pages"});
    EXPECT_EQ(outcome(paused), Tri::True);
    // Above freerun = 1.5 GiB: writers are paused.
    const auto rs = evaluate_rules(s.rules, ev_with(1.6 * G, 0.1 * G, 2 * G, 1 * G));
    const RuleResult* r = result(rs, "dirty.writers_throttled");
    EXPECT_EQ(r->outcome, Tri::True);
    EXPECT_NE(r->mechanism.find("balance_dirty_pages"), std::string::npos);
    EXPECT_NE(r->mechanism.find("= 1.5"), std::string::npos) << r->mechanism;
}

TEST(ShippedRules, SchedulerAndQueueDepthRules) {
    const Shipped s;
    Evidence ev;
    const Labels hdd{{"device", "sda"}}, nvme{{"device", "nvme0n1"}};
    ev.add_metric("queue.rotational", hdd, 1, "bool", prov());
    ev.add_fact("queue.scheduler", hdd, "none", prov());
    ev.add_fact("device.class", hdd, "hdd", prov());
    ev.add_metric("disk.aqu_sz", hdd, 40, "requests", prov());
    ev.add_metric("queue.nr_requests", hdd, 1024, "requests", prov());
    ev.add_metric("queue.hw_queue_depth", hdd, 32, "requests", prov());
    ev.add_metric("queue.nr_requests_default", hdd, 32, "count", prov());
    ev.add_metric("queue.rotational", nvme, 0, "bool", prov());
    ev.add_fact("queue.scheduler", nvme, "bfq", prov());
    ev.add_fact("device.class", nvme, "nvme", prov());
    ev.add_metric("disk.aqu_sz", nvme, 3.8, "requests", prov());
    ev.add_metric("queue.nr_requests", nvme, 4, "requests", prov());
    ev.add_metric("queue.hw_queue_depth", nvme, 1023, "requests", prov());
    ev.add_metric("queue.nr_requests_default", nvme, 256, "count", prov());   // bfq: 2 x min(1023, 128)
    ev.add_metric("disk.ios_per_s", nvme, 90000, "1/s", prov());
    ev.add_metric("block.q2g_share_pct", nvme, 60, "pct", prov());   // the wait was measured
    ev.add_metric("disk.ios_per_s", hdd, 150, "1/s", prov());
    // A virtual disk claims rotational=1 whatever backs it: not a spinning disk.
    const Labels vda{{"device", "vda"}};
    ev.add_metric("queue.rotational", vda, 1, "bool", prov());
    ev.add_fact("queue.scheduler", vda, "none", prov());
    ev.add_fact("device.class", vda, "virtio", prov());
    ev.add_metric("disk.aqu_sz", vda, 40, "requests", prov());
    ev.add_metric("queue.nr_requests", vda, 1024, "requests", prov());
    const auto rs = evaluate_rules(s.rules, ev);
    EXPECT_EQ(result(rs, "block_queue.scheduler_none_on_rotational", "vda")->outcome, Tri::False);
    EXPECT_EQ(result(rs, "block_queue.nr_requests_huge_rotational", "vda")->outcome, Tri::False);
    EXPECT_EQ(result(rs, "block_queue.scheduler_none_on_rotational", "sda")->outcome, Tri::True);
    EXPECT_EQ(result(rs, "block_queue.scheduler_none_on_rotational", "nvme0n1")->outcome, Tri::False);
    EXPECT_EQ(result(rs, "block_queue.bfq_on_nvme", "nvme0n1")->outcome, Tri::True);
    EXPECT_EQ(result(rs, "block_queue.bfq_on_nvme", "sda")->outcome, Tri::False);
    EXPECT_EQ(result(rs, "block_queue.nr_requests_huge_rotational", "sda")->outcome, Tri::True);
    EXPECT_EQ(result(rs, "block_queue.nr_requests_tiny", "nvme0n1")->outcome, Tri::True);   // 3.8 of 4 tags
    EXPECT_EQ(result(rs, "block_queue.nr_requests_tiny", "sda")->outcome, Tri::False);
}

// bfq on a device served from memory (or NVMe) whose scheduler wait is a
// measured quarter of the slow time: a finding with that share. Not on the
// rotational flag: a loop device whose backing is unknown is not judged so,
// and a small measured wait (bfq's bookkeeping) is no finding.
TEST(ShippedRules, BfqIdlingJudgedOnWhatBacksTheDeviceAndTheMeasuredWait) {
    const Shipped s;
    Evidence ev;
    const Labels mem{{"device", "loop0"}}, unknown{{"device", "loop1"}}, light{{"device", "loop2"}};
    auto device = [&](const Labels& l, const char* effective_class, double scheduler_wait_pct) {
        ev.add_fact("queue.scheduler", l, "bfq", prov());
        ev.add_metric("queue.rotational", l, 1, "bool", prov());
        ev.add_fact("device.effective_class", l, effective_class, prov());
        ev.add_metric("device.scheduler_wait_share_pct", l, scheduler_wait_pct, "pct", prov());
    };
    device(mem, "memory", 60);
    device(unknown, "loop", 60);
    device(light, "memory", 5);
    const auto rs = evaluate_rules(s.rules, ev);
    EXPECT_EQ(result(rs, "block_queue.bfq_idling_fast_device", "loop0")->outcome, Tri::True);
    EXPECT_EQ(result(rs, "block_queue.bfq_idling_fast_device", "loop1")->outcome, Tri::False);
    EXPECT_EQ(result(rs, "block_queue.bfq_idling_fast_device", "loop2")->outcome, Tri::False);
}

// A pool filled by a workload whose concurrency equals nr_requests is not a
// tag wait: measured Q2G and syscall tag-wait shares near zero veto the rule,
// and without either measurement it is not evaluated rather than guessed.
TEST(ShippedRules, FullTagPoolWithoutMeasuredWaitIsNotTagStarvation) {
    const Shipped s;
    Evidence ev;
    const Labels l{{"device", "loop3"}};
    ev.add_metric("queue.nr_requests", l, 4, "requests", prov());
    ev.add_metric("queue.hw_queue_depth", l, 128, "requests", prov());
    ev.add_metric("queue.nr_requests_default", l, 128, "count", prov());
    ev.add_metric("disk.ios_per_s", l, 200, "1/s", prov());
    ev.add_metric("disk.aqu_sz", l, 3.9, "requests", prov());
    ev.add_metric("block.requests", l, 800, "count", prov());
    ev.add_metric("block.q2g_total_us", l, 10, "us", prov());
    ev.add_metric("block.d2c_total_us", l, 100000, "us", prov());
    EXPECT_EQ(result(evaluate_rules(s.rules, ev), "block_queue.nr_requests_tiny", "loop3")->outcome, Tri::Unknown);
    ev.add_metric("block.q2g_share_pct", l, 0.01, "pct", prov());
    ev.add_metric("attr.all.block_queue_pct", {}, 0, "pct", prov());
    EXPECT_EQ(result(evaluate_rules(s.rules, ev), "block_queue.nr_requests_tiny", "loop3")->outcome, Tri::False);
}

// nr_requests is a cause only where someone set it below the kernel's
// default and below what the device takes at once (issue 34): a shallow
// device at its default (an SD card's 4 tags), or a scheduler's spare
// requests lowered while the device's own queue stays full, is not the
// setting, however long requests wait for a tag.
TEST(ShippedRules, TinyNrRequestsIsASettingBelowTheDefaultAndTheDevicesDepth) {
    const Shipped s;
    Evidence ev;
    auto queue = [&](const std::string& d, double nr, double depth, double def) {
        const Labels l{{"device", d}};
        ev.add_metric("queue.nr_requests", l, nr, "requests", prov());
        ev.add_metric("queue.hw_queue_depth", l, depth, "requests", prov());
        ev.add_metric("queue.nr_requests_default", l, def, "count", prov());
        ev.add_metric("disk.ios_per_s", l, 5000, "1/s", prov());
        ev.add_metric("block.q2g_total_us", l, 900000, "us", prov());
        ev.add_metric("block.d2c_total_us", l, 100000, "us", prov());
    };
    queue("loop0", 4, 128, 128);     // lowered from 128 on a device taking 128
    queue("mmcblk0", 4, 4, 4);       // the device's own depth and the default
    queue("sdb", 48, 32, 64);        // mq-deadline's spare requests lowered: the disk's 32 stay full
    const auto rs = evaluate_rules(s.rules, ev);
    EXPECT_EQ(result(rs, "block_queue.nr_requests_tiny", "loop0")->outcome, Tri::True);
    EXPECT_EQ(result(rs, "block_queue.nr_requests_tiny", "mmcblk0")->outcome, Tri::False);
    EXPECT_EQ(result(rs, "block_queue.nr_requests_tiny", "sdb")->outcome, Tri::False);
}

// An idle device whose queue settings were not read (e.g. an unbound loop
// device in /proc/diskstats) is decided False, not left Unknown.
TEST(ShippedRules, IdleDeviceWithoutQueueSettingsIsNotUnknown) {
    const Shipped s;
    Evidence ev;
    const Labels l{{"device", "loop7"}};
    ev.add_metric("disk.aqu_sz", l, 0, "requests", prov());
    ev.add_metric("disk.util_pct", l, 0, "pct", prov());
    ev.add_metric("disk.read_iops", l, 0, "1/s", prov());
    ev.add_metric("disk.write_iops", l, 0, "1/s", prov());
    ev.add_metric("disk.ios_per_s", l, 0, "1/s", prov());
    ev.add_metric("vm.pgmajfault", {}, 12, "count", prov());
    const auto rs = evaluate_rules(s.rules, ev);
    for (const char* id : {"device.saturated", "device.slow_for_class", "block_queue.scheduler_none_on_rotational",
                           "block_queue.bfq_on_nvme", "block_queue.nr_requests_tiny",
                           "block_queue.nr_requests_huge_rotational", "page_cache.readahead_on_faults"}) {
        const RuleResult* r = result(rs, id, "loop7");
        ASSERT_NE(r, nullptr) << id;
        EXPECT_EQ(r->outcome, Tri::False) << id;
    }
}

}  // namespace
