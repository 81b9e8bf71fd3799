// Contention (issue 23) on hand-built evidence through the shipped rules: a
// neighbor saturating a healthy device, hogging the CPUs or filling the
// commits is named with its share; an application that is its own load, or
// whose writeback is its own data, is not told it has a neighbor.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "app/catalog.hpp"
#include "collectors/cgroup/cgroup_label.hpp"
#include "collectors/procfs/proc_cpu.hpp"
#include "engine/evidence/cgroup_labels.hpp"
#include "engine/derive/derived_metrics.hpp"
#include "engine/evidence/application_label.hpp"
#include "engine/render/render.hpp"
#include "engine/render/render_prometheus.hpp"
#include "engine/triage/analysis.hpp"
#include "tests/unit/shipped_rules.hpp"

using namespace iodiag;
using iodiag::testing::shipped_rules;

namespace {

const Provenance kP{"file", "test"};
const char* const kLayers[] = {"device", "block_queue", "filesystem", "journal", "page_cache", "dirty",
                               "reclaim", "cgroup", "locks", "cpu", "other"};

// The application that suffered most, its slow syscalls split as given
// (attr.app.*), over `ops` syscalls of `time_us` in all, and the machine's
// slow set alike; a 4 s window.
void sufferer(Evidence& ev, const std::string& app, const std::map<std::string, double>& pct, double time_us = 2e6,
              double ops = 500) {
    ev.window.duration_s = 4;
    ev.add_fact("attr.app.name", {}, app, kP);
    ev.add_metric("attr.app.ops", {}, ops, "count", kP);
    ev.add_metric("attr.app.time_us", {}, time_us, "us", kP);
    ev.add_metric("attr.app.basis_us", {}, 1024, "us", kP);
    ev.add_metric("attr.slow.ops", {}, ops, "count", kP);
    ev.add_metric("attr.slow.threshold_us", {}, 1024, "us", kP);
    std::string top;
    double best = -1;
    for (const char* l : kLayers) {
        const double v = pct.count(l) ? pct.at(l) : 0;
        ev.add_metric(std::string("attr.app.") + l + "_pct", {}, v, "pct", kP);
        ev.add_metric(std::string("attr.slow.") + l + "_pct", {}, v, "pct", kP);
        ev.add_metric(std::string("attr.slow.") + l + "_us", {}, v / 100 * time_us, "us", kP);
        if (v > best) best = v, top = l;
    }
    ev.add_fact("attr.slow.top_layer", {}, top, kP);
    ev.add_metric("syscall.proc.time_us", {{"comm", app}, {"pid", "100"}, {"cgroup", "/system.slice/db.service"}},
                  time_us * 1.2, "us", kP);
}

// A flash-fast device: `n` requests of about `d2c_us`, `aqu` in flight.
void fast_device(Evidence& ev, const std::string& dev, double d2c_us, uint64_t n, double aqu) {
    const Labels l{{"device", dev}};
    ev.add_fact("device.class", l, "loop", kP);
    HistogramMetric h{"block.d2c_us", l, "us", {}, kP};
    h.hist.add_bucket(Log2Histogram::bucket_of(static_cast<uint64_t>(d2c_us)), n);
    ev.histograms.push_back(h);
    ev.add_metric("block.requests", l, static_cast<double>(n), "count", kP);
    ev.add_metric("block.d2c_total_us", l, d2c_us * static_cast<double>(n), "us", kP);
    ev.add_metric("block.q2c_total_us", l, d2c_us * static_cast<double>(n) * 1.1, "us", kP);
    ev.add_metric("block.d2c_p99_us", l, d2c_us * 2, "us", kP);
    ev.add_metric("disk.aqu_sz", l, aqu, "requests", kP);
    ev.add_metric("disk.util_pct", l, 99, "pct", kP);
    ev.add_fact("queue.scheduler", l, "none", kP);
}

// One submitter group of `dev` as the block collector emits it.
void group(Evidence& ev, const std::string& dev, const std::string& comm, const std::string& cgroup,
           const std::string& kind, double d2c_us, double bytes, const std::string& pid, double write_bytes = 0,
           double service_us = -1) {
    const Labels l{{"device", dev}, {"comm", comm}, {"cgroup", cgroup}, {"kind", kind}};
    ev.add_metric("block.submitter.d2c_total_us", l, d2c_us, "us", kP);
    if (service_us >= 0) ev.add_metric("block.submitter.service_total_us", l, service_us, "us", kP);
    ev.add_metric("block.submitter.q2c_total_us", l, d2c_us * 1.1, "us", kP);
    ev.add_metric("block.submitter.bytes", l, bytes, "bytes", kP);
    ev.add_metric("block.submitter.write_bytes", l, write_bytes, "bytes", kP);
    ev.add_metric("block.submitter.requests", l, bytes / 4096, "count", kP);
    ev.add_fact("block.submitter.top_pid", l, pid, kP);
    // The per-command sums the device judgement splits the wait by.
    if (kind == "process") {
        const Labels c{{"device", dev}, {"comm", comm}};
        const Metric* was = ev.find_metric("block.submitter_q2c_total_us", c);
        if (!was) ev.add_metric("block.submitter_q2c_total_us", c, d2c_us * 1.1, "us", kP);
    }
}

// postgres waits on loop0 (90 % of its slow time); backup holds 90 % of
// loop0's service time.
Evidence neighbor_on_device(double backup_d2c_us = 9e6) {
    Evidence ev;
    sufferer(ev, "postgres", {{"device", 90}, {"cpu", 10}});
    fast_device(ev, "loop0", 120, 80000, 24);
    group(ev, "loop0", "postgres", "/system.slice/db.service", "process", 1e6, 40e6, "100");
    group(ev, "loop0", "backup", "/system.slice/backup.service", "process", backup_d2c_us, 4e9, "4242");
    return ev;
}

const Finding* find(const std::vector<Finding>& v, const std::string& id) {
    for (const auto& f : v)
        if (f.rule_id == id) return &f;
    return nullptr;
}

}  // namespace

TEST(Contention, NeighborSaturatingAHealthyDeviceIsTheFirstFindingWithItsShare) {
    const Verdict v = analyze(neighbor_on_device(), shipped_rules());
    ASSERT_FALSE(v.findings.empty()) << render_text(v);
    const Finding& f = v.findings.front();
    EXPECT_EQ(f.rule_id, "contention.device_neighbor") << render_text(v);
    EXPECT_EQ(f.severity, Severity::Warning);
    EXPECT_EQ(f.instance, "loop0");
    EXPECT_NE(f.title.find("backup (pid 4242) in cgroup /system.slice/backup.service"), std::string::npos) << f.title;
    EXPECT_NE(f.title.find("90 %"), std::string::npos) << f.title;   // its share of loop0's service time
    ASSERT_TRUE(f.share_pct);
    EXPECT_NEAR(*f.share_pct, 90 * 0.9, 0.01);   // postgres's wait on loop0 x the others' share
    EXPECT_EQ(f.culprit, "backup");
    // The device is contended (device.contended, one definition): the device
    // rules that judge it at its own pace stay silent, and the judgement
    // model's finding on the device layer is covered by this one.
    EXPECT_EQ(find(v.notes, "device.dominant_busy"), nullptr);
    EXPECT_EQ(find(v.findings, "device.dominant_busy"), nullptr);
    EXPECT_EQ(find(v.findings, "judgement.dominant_layer"), nullptr) << render_text(v);
}

// A buffered reader's misses wait for their data in the page cache (a folio
// wait), not in the device class: read from a device the backup holds, that
// wait is behind the backup's requests too (issue 33's bulk reader).
TEST(Contention, ABufferedReadersMissesWaitBehindTheNeighborToo) {
    Evidence ev;
    sufferer(ev, "postgres", {{"page_cache", 85}, {"cpu", 15}});
    fast_device(ev, "loop0", 120, 80000, 24);
    group(ev, "loop0", "postgres", "/system.slice/db.service", "process", 1e6, 40e6, "100");
    group(ev, "loop0", "backup", "/system.slice/backup.service", "process", 9e6, 4e9, "4242");
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty()) << render_text(v);
    EXPECT_EQ(v.findings.front().rule_id, "contention.device_neighbor") << render_text(v);
    ASSERT_TRUE(v.findings.front().share_pct);
    EXPECT_NEAR(*v.findings.front().share_pct, 85 * 0.9, 0.01);   // its misses' wait x the others' share
}

// The cgroup's name, where the evidence has it (cgroup.name), comes first and
// the path after it; the culprit says the name alone.
TEST(Contention, TheCgroupsNameIsSaidWhereTheEvidenceHasIt) {
    Evidence ev = neighbor_on_device();
    ev.add_fact("cgroup.name", {{"cgroup", "/system.slice/backup.service"}}, "backup.service", kP);
    ev.add_fact("cgroup.kind", {{"cgroup", "/system.slice/backup.service"}}, "systemd-unit", kP);
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty());
    const Finding& f = v.findings.front();
    EXPECT_NE(f.title.find("backup (pid 4242) in cgroup backup.service (/system.slice/backup.service)"),
              std::string::npos)
        << f.title;
    EXPECT_EQ(f.culprit, "backup (backup.service)");
}

// One application keeping a fast device busy alone is healthy, and a few
// percent of others' I/O beside it is noise: others must hold the majority.
TEST(Contention, AnApplicationThatIsItsOwnLoadHasNoNeighbor) {
    Evidence alone;
    sufferer(alone, "postgres", {{"device", 90}, {"cpu", 10}});
    fast_device(alone, "loop0", 120, 80000, 24);
    group(alone, "loop0", "postgres", "/system.slice/db.service", "process", 9e6, 4e9, "100");
    Evidence copy = alone;
    add_derived_metrics(copy);
    const Metric* others = copy.find_metric("device.others_d2c_share_pct", {{"device", "loop0"}});
    ASSERT_NE(others, nullptr);
    EXPECT_EQ(others->value, 0);
    const Verdict v = analyze(alone, shipped_rules());
    EXPECT_EQ(find(v.findings, "contention.device_neighbor"), nullptr);
    EXPECT_EQ(find(v.notes, "contention.device_neighbor"), nullptr);

    const Verdict few = analyze(neighbor_on_device(0.5e6), shipped_rules());   // others: a third
    EXPECT_EQ(find(few.findings, "contention.device_neighbor"), nullptr) << render_text(few);
}

// A device that is slow for its work (busy 4 ms per completed request, 3x
// over what the slowest flash device needs for it) is not called fine, even
// with a neighbor on it: the device rules judge it.
TEST(Contention, ASlowDeviceIsNotCalledFineBecauseSomeoneElseUsesIt) {
    Evidence ev;
    sufferer(ev, "postgres", {{"device", 90}, {"cpu", 10}});
    fast_device(ev, "loop0", 120, 1000, 24);   // 1000 requests in 4 s at 99 % busy: 4 ms each
    group(ev, "loop0", "postgres", "/system.slice/db.service", "process", 1e6, 4e6, "100");
    group(ev, "loop0", "backup", "/system.slice/backup.service", "process", 9e6, 4e6, "4242");
    Evidence d = ev;
    add_derived_metrics(d);
    const Metric* per = d.find_metric("device.busy_per_request_us", {{"device", "loop0"}});
    const Metric* bar = d.find_metric("device.flash_request_us", {{"device", "loop0"}});
    ASSERT_TRUE(per && bar);
    EXPECT_NEAR(per->value, 3960, 0.01);
    EXPECT_NEAR(bar->value, 3 * (300 + 8000.0 / 600), 0.01);
    const Verdict v = analyze(ev, shipped_rules());
    EXPECT_EQ(find(v.findings, "contention.device_neighbor"), nullptr) << render_text(v);
}

// A device slow for its work (a capped volume: 4 ms of busy time per request)
// shared with a backup: the busy time the device gave each submitter's
// requests says the backup's load was 97 % of it, and postgres's small
// requests spent 91 % of their time waiting, not served. The backup is named,
// the device's pace said, and the device findings on loop0 folded in.
Evidence slow_device_shared(double own_service_us) {
    Evidence ev;
    sufferer(ev, "postgres", {{"device", 90}, {"cpu", 10}});
    fast_device(ev, "loop0", 120, 1000, 24);   // 1000 requests in 4 s at 99 % busy: 4 ms each
    group(ev, "loop0", "postgres", "/system.slice/db.service", "process", 1e6, 4e6, "100", 0, own_service_us);
    group(ev, "loop0", "backup", "/system.slice/backup.service", "process", 3e6, 4e6, "4242", 0, 3.8e6);
    return ev;
}

TEST(Contention, ABackupOnASlowDeviceIsNamedWhenTheVictimsRequestsWaitBehindIt) {
    const Verdict v = analyze(slow_device_shared(0.1e6), shipped_rules());
    ASSERT_FALSE(v.findings.empty()) << render_text(v);
    const Finding& f = v.findings.front();
    EXPECT_EQ(f.rule_id, "contention.slow_device_neighbor") << render_text(v);
    EXPECT_EQ(f.severity, Severity::Warning);
    EXPECT_NE(f.title.find("backup (pid 4242)"), std::string::npos) << f.title;
    EXPECT_NE(f.title.find("slow for its load"), std::string::npos) << f.title;
    EXPECT_EQ(f.culprit, "backup");
    ASSERT_TRUE(f.share_pct);
    // Its wait x the others' part of the device's time while its requests
    // were in it: 1 s of D2C (one at a time: under the 3.96 s busy), 0.1 s of
    // it served to them.
    EXPECT_NEAR(*f.share_pct, 90 * (1e6 - 0.1e6) / 1e6, 0.01);
    Evidence d = slow_device_shared(0.1e6);
    add_derived_metrics(d);
    const Metric* queued = d.find_metric("device.sufferer_queued_pct", {{"device", "loop0"}});
    ASSERT_NE(queued, nullptr);
    EXPECT_NEAR(queued->value, 100 * (1.1e6 - 0.1e6) / 1.1e6, 0.01);
    // By D2C the backup held 75 %: the share is the busy time's, not D2C's.
    const Metric* d2c = d.find_metric("device.others_d2c_share_pct", {{"device", "loop0"}});
    ASSERT_NE(d2c, nullptr);
    EXPECT_NEAR(d2c->value, 75, 0.01);
    EXPECT_EQ(find(v.findings, "device.dominant_no_reference"), nullptr) << render_text(v);
}

// The same device where postgres's requests were mostly served (its own
// service 73 % of their time): its latency is the device's pace for its own
// requests, not the queue behind the backup; the neighbor is not blamed.
TEST(Contention, OnASlowDeviceRequestsMostlyServedAreNotBlamedOnTheNeighbor) {
    const Verdict v = analyze(slow_device_shared(0.8e6), shipped_rules());
    EXPECT_EQ(find(v.findings, "contention.slow_device_neighbor"), nullptr) << render_text(v);
    EXPECT_EQ(find(v.findings, "contention.device_neighbor"), nullptr) << render_text(v);
}

// The flusher writes what someone dirtied: the application's own data is its
// own load; another program's is the neighbor's, said as inferred.
TEST(Contention, WritebackIsChargedToWhoeverDirtiedTheData) {
    auto with_flusher = [](const std::string& dirtier) {
        Evidence ev;
        sufferer(ev, "postgres", {{"device", 90}, {"cpu", 10}});
        fast_device(ev, "loop0", 120, 80000, 24);
        group(ev, "loop0", "postgres", "/system.slice/db.service", "process", 1e6, 40e6, "100");
        group(ev, "loop0", "writeback (kworker flush)", "/", "writeback", 9e6, 4e9, "31", 4e9);
        ev.add_metric("io.write_bytes_dirtied", {}, 4e9, "bytes", kP);
        ev.add_metric("io.proc_write_bytes", {{"pid", "77"}, {"comm", dirtier}}, 4e9, "bytes", kP);
        ev.add_fact("io.top_writer", {}, dirtier + " (pid 77)", kP);
        ev.add_metric("io.top_writer_pct", {}, 100, "pct", kP);
        return ev;
    };
    const Verdict own = analyze(with_flusher("postgres"), shipped_rules());
    EXPECT_EQ(find(own.findings, "contention.device_neighbor"), nullptr) << render_text(own);

    const Verdict v = analyze(with_flusher("backup"), shipped_rules());
    ASSERT_FALSE(v.findings.empty()) << render_text(v);
    const Finding& f = v.findings.front();
    EXPECT_EQ(f.rule_id, "contention.device_neighbor");
    EXPECT_NE(f.title.find("writeback (kworker flush)"), std::string::npos) << f.title;
    EXPECT_NE(f.title.find("writing back backup (pid 77)'s data"), std::string::npos) << f.title;
    bool inferred = false;
    for (const auto& c : f.evidence)
        if (c.name == "device.neighbor_dirtier") inferred = c.provenance.source.find("inferred") != std::string::npos;
    EXPECT_TRUE(inferred);

    // cgroup v2 writeback: the kernel charged the flusher's bios to the
    // dirtier's cgroup, which says whose data it is (nothing inferred).
    auto charged = [](const std::string& cgroup) {
        Evidence ev;
        sufferer(ev, "postgres", {{"device", 90}, {"cpu", 10}});
        fast_device(ev, "loop0", 120, 80000, 24);
        group(ev, "loop0", "postgres", "/system.slice/db.service", "process", 1e6, 40e6, "100");
        group(ev, "loop0", "writeback (kworker flush)", cgroup, "writeback", 9e6, 4e9, "31", 4e9);
        return ev;
    };
    const Verdict mine = analyze(charged("/system.slice/db.service"), shipped_rules());
    EXPECT_EQ(find(mine.findings, "contention.device_neighbor"), nullptr) << render_text(mine);
    const Verdict theirs = analyze(charged("/system.slice/backup.service"), shipped_rules());
    ASSERT_FALSE(theirs.findings.empty()) << render_text(theirs);
    EXPECT_NE(theirs.findings.front().title.find("writeback (kworker flush) (pid 31) in cgroup /system.slice/backup.service"),
              std::string::npos)
        << theirs.findings.front().title;
    EXPECT_EQ(theirs.findings.front().title.find("writing back"), std::string::npos);
}

// Issue 34: the same wait behind another program's writeback on a device
// whose writeback throttling is off. The setting is named, with the
// contention it let happen folded in; with wbt on (or under bfq, which turns
// it off itself) the contention finding stays as it was.
TEST(Contention, WritebackThrottlingOffIsNamedAsTheSettingBehindTheWait) {
    auto behind_writeback = [](double wbt_usec, const std::string& scheduler) {
        Evidence ev;
        sufferer(ev, "postgres", {{"device", 90}, {"cpu", 10}});
        fast_device(ev, "loop0", 120, 80000, 24);
        ev.facts.erase(std::remove_if(ev.facts.begin(), ev.facts.end(),
                                      [](const Fact& f) { return f.name == "queue.scheduler"; }),
                       ev.facts.end());
        ev.add_fact("queue.scheduler", {{"device", "loop0"}}, scheduler, kP);
        ev.add_metric("queue.wbt_lat_usec", {{"device", "loop0"}}, wbt_usec, "us", kP);
        group(ev, "loop0", "postgres", "/system.slice/db.service", "process", 1e6, 40e6, "100");
        group(ev, "loop0", "writeback (kworker flush)", "/system.slice/backup.service", "writeback", 9e6, 4e9, "31",
              4e9);
        return ev;
    };
    const Verdict off = analyze(behind_writeback(0, "mq-deadline"), shipped_rules());
    ASSERT_FALSE(off.findings.empty()) << render_text(off);
    const Finding& f = off.findings.front();
    EXPECT_EQ(f.rule_id, "settings.wbt_off_under_writeback") << render_text(off);
    EXPECT_NE(f.title.find("wbt_lat_usec 0 us"), std::string::npos) << f.title;
    EXPECT_EQ(find(off.findings, "contention.device_neighbor"), nullptr) << "folded into the setting's finding";
    ASSERT_TRUE(f.share_pct.has_value());
    EXPECT_NEAR(*f.share_pct, 90.0 * 0.9, 1.0);

    for (const auto& [wbt, scheduler] : {std::pair<double, std::string>{2000, "mq-deadline"}, {0, "bfq"}}) {
        const Verdict v = analyze(behind_writeback(wbt, scheduler), shipped_rules());
        EXPECT_EQ(find(v.findings, "settings.wbt_off_under_writeback"), nullptr) << render_text(v);
        EXPECT_NE(find(v.findings, "contention.device_neighbor"), nullptr) << render_text(v);
    }
}

// The CPUs: a hog pinned where the application runs, another program that
// may run anywhere counted on its CPUs in proportion.
TEST(Contention, CpuHogInAnotherCgroupIsNamedWithItsShare) {
    Evidence ev;
    sufferer(ev, "fio", {{"cpu", 85}, {"device", 15}}, 1e6);
    ev.add_metric("attr.all.cpu_us", {}, 0.85e6, "us", kP);
    ev.add_fact("cpu.online_list", {}, "0,1", kP);
    ev.add_metric("cpu.online_cpus", {}, 2, "count", kP);
    auto proc = [&](const std::string& comm, const std::string& pid, const std::string& cg, double us,
                    const std::string& cpus) {
        const Labels l{{"pid", pid}, {"comm", comm}, {"cgroup", cg}};
        ev.add_metric("cpu.proc_oncpu_us", l, us, "us", kP);
        if (!cpus.empty()) ev.add_fact("cpu.proc_allowed_cpus", l, cpus, kP);
    };
    proc("stress-ng-cpu", "900", "/batch", 3.6e6, "1");
    proc("fio", "100", "/system.slice/db.service", 0.3e6, "1");
    proc("cc1plus", "55", "/", 3.0e6, "");   // either CPU: half of it on CPU 1
    ev.add_metric("cpu.oncpu_total_us", {}, 7.0e6, "us", kP);
    ev.add_metric("cpu.kthread_oncpu_us", {}, 0.1e6, "us", kP);
    ev.add_metric("cpu.self_oncpu_us", {}, 0, "us", kP);
    Evidence derived = ev;
    add_derived_metrics(derived);
    const Metric* others = derived.find_metric("cpu.others_share_pct");
    ASSERT_NE(others, nullptr);
    // on CPU 1: stress-ng 3.6, cc1plus 1.5, fio 0.3, kernel threads 0.05;
    // fio's one process is the waiter, which never waits behind itself
    EXPECT_NEAR(others->value, 100.0 * 5.1 / 5.15, 0.01);
    EXPECT_EQ(derived.find_fact("cpu.sufferer_cpus")->value, "1");

    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty()) << render_text(v);
    const Finding& f = v.findings.front();
    EXPECT_EQ(f.rule_id, "contention.cpu_neighbor") << render_text(v);
    EXPECT_NE(f.title.find("stress-ng-cpu (pid 900, cgroup /batch, in another cgroup than fio's)"), std::string::npos)
        << f.title;
    EXPECT_EQ(find(v.notes, "syscall.runqueue_delay"), nullptr);
    ASSERT_TRUE(f.share_pct);
    const Metric* rq = derived.find_metric("attr.sufferer.cpu_all_pct");
    ASSERT_NE(rq, nullptr);
    EXPECT_NEAR(*f.share_pct, rq->value * others->value / 100, 0.01);

    // The same neighbor while the application's CPU waits are a tail of its
    // time (its other process's syscalls take six times as long as the slow
    // ones): time sharing, as syscall.runqueue_delay and the judgement model
    // say (a quarter of all its syscall time is their bar), so no warning.
    Evidence tail = ev;
    tail.add_metric("syscall.proc.time_us", {{"comm", "fio"}, {"pid", "101"}, {"cgroup", "/system.slice/db.service"}},
                    6e6, "us", kP);
    const Verdict t = analyze(tail, shipped_rules());
    EXPECT_EQ(find(t.findings, "contention.cpu_neighbor"), nullptr) << render_text(t);

    // Its own threads queueing behind each other (one process that ran
    // 7.5 s in a 4 s window: two threads at least): no neighbor to name.
    Evidence own;
    sufferer(own, "fio", {{"cpu", 85}, {"device", 15}}, 1e6);
    own.add_fact("cpu.online_list", {}, "0,1", kP);
    own.add_metric("cpu.proc_oncpu_us", {{"pid", "100"}, {"comm", "fio"}, {"cgroup", "/"}}, 7.5e6, "us", kP);
    own.add_metric("cpu.oncpu_total_us", {}, 7.6e6, "us", kP);
    const Verdict o = analyze(own, shipped_rules());
    EXPECT_EQ(find(o.findings, "contention.cpu_neighbor"), nullptr) << render_text(o);
}

// The commits: most of the data written to the device the application's
// fsyncs wrote to was dirtied by another program (written by the kernel's
// threads: inferred from /proc/PID/io).
TEST(Contention, CommitsCarryingABulkWritersDataNameIt) {
    Evidence ev;
    sufferer(ev, "postgres", {{"journal", 60}, {"device", 30}, {"cpu", 10}}, 2e6);
    for (const auto& [op, n] : std::map<std::string, uint64_t>{{"fsync", 400}, {"read", 100}}) {
        HistogramMetric h{"syscall.latency_us", {{"op", op}}, "us", {}, kP};
        h.hist.add_bucket(Log2Histogram::bucket_of(op == "fsync" ? 40000 : 20), n);
        ev.histograms.push_back(h);
    }
    ev.add_metric("journal.commits", {}, 40, "count", kP);
    ev.add_metric("journal.jbd2_wait_us", {}, 1.2e6, "us", kP);
    ev.add_metric("attr.all.journal_us", {}, 1.2e6, "us", kP);
    ev.add_fact("device.class", {{"device", "loop0"}}, "hdd", kP);
    group(ev, "loop0", "postgres", "/system.slice/db.service", "process", 1e6, 10e6, "100", 10e6);
    group(ev, "loop0", "writeback (kworker flush)", "/", "writeback", 5e6, 300e6, "31", 300e6);
    group(ev, "loop0", "jbd2/loop0-8", "/", "kernel", 1e6, 20e6, "30", 20e6);
    ev.add_metric("io.write_bytes_dirtied", {}, 330e6, "bytes", kP);
    ev.add_metric("io.proc_write_bytes", {{"pid", "77"}, {"comm", "backup"}}, 320e6, "bytes", kP);
    ev.add_metric("io.proc_write_bytes", {{"pid", "100"}, {"comm", "postgres"}}, 10e6, "bytes", kP);
    ev.add_fact("io.top_writer", {}, "backup (pid 77)", kP);
    ev.add_metric("io.top_writer_pct", {}, 100.0 * 320 / 330, "pct", kP);
    Evidence derived = ev;
    add_derived_metrics(derived);
    const Metric* others = derived.find_metric("journal.others_data_share_pct");
    ASSERT_NE(others, nullptr);
    EXPECT_NEAR(others->value, 100.0 * 320 * (320.0 / 330) / 330, 0.01);
    EXPECT_EQ(derived.find_fact("journal.neighbor_comm")->value, "backup");

    const Verdict v = analyze(ev, shipped_rules());
    const Finding* f = find(v.findings, "contention.journal_neighbor");
    ASSERT_NE(f, nullptr) << render_text(v);
    EXPECT_EQ(v.findings.front().rule_id, "contention.journal_neighbor") << render_text(v);
    EXPECT_NE(f->title.find("carrying backup's data (pid 77)"), std::string::npos) << f->title;
    EXPECT_EQ(f->culprit, "backup");
}

// A backup job in one unit: its cp writes the data, its sync (another
// program of the same backup.service) waits for the commits that carry it.
// The cp's data is the sync's own application's (application_service.cpp):
// not another program's, whatever their command names.
TEST(Contention, CommitsCarryingDataOfTheSameUnitAreItsOwn) {
    Evidence ev;
    sufferer(ev, "sync /backup/copy", {{"journal", 80}, {"device", 15}, {"cpu", 5}}, 2e6);
    const std::string unit = "/system.slice/backup.service";
    // sufferer() puts its process in db.service: here it is the backup's.
    ev.metrics.erase(std::remove_if(ev.metrics.begin(), ev.metrics.end(),
                                    [](const Metric& m) { return m.name == "syscall.proc.time_us"; }),
                     ev.metrics.end());
    for (const auto& [pid, comm] : std::map<std::string, std::string>{{"200", "sync /backup/copy"}, {"201", "cp"}}) {
        ev.add_metric("syscall.proc.time_us", {{"pid", pid}, {"comm", comm}, {"cgroup", unit}}, 1e6, "us", kP);
    }
    ev.add_fact(kCgroupNameFact, {{"cgroup", unit}}, "backup.service", kP);
    ev.add_fact(kCgroupKindFact, {{"cgroup", unit}}, "systemd-unit", kP);
    group(ev, "loop0", "sync /backup/copy", unit, "process", 1e6, 10e6, "200", 10e6);
    group(ev, "loop0", "cp", unit, "process", 5e6, 300e6, "201", 300e6);
    group(ev, "loop0", "jbd2/loop0-8", "/", "kernel", 1e6, 20e6, "30", 20e6);
    ev.add_metric("io.write_bytes_dirtied", {}, 310e6, "bytes", kP);
    ev.add_metric("io.proc_write_bytes", {{"pid", "201"}, {"comm", "cp"}}, 300e6, "bytes", kP);
    ev.add_metric("io.proc_write_bytes", {{"pid", "200"}, {"comm", "sync /backup/copy"}}, 10e6, "bytes", kP);
    ev.add_fact("io.top_writer", {}, "cp (pid 201)", kP);
    ev.add_metric("io.top_writer_pct", {}, 100.0 * 300 / 310, "pct", kP);
    Evidence derived = ev;
    add_derived_metrics(derived);
    const Metric* others = derived.find_metric("journal.others_data_share_pct");
    ASSERT_NE(others, nullptr);
    EXPECT_LT(others->value, 1) << "the cp and the sync are one unit's programs";
    const Metric* foreign = derived.find_metric("attr.slow.fsync_foreign_data_pct");
    ASSERT_NE(foreign, nullptr);
    EXPECT_LT(foreign->value, 1);
    // The same programs in no unit (a login session's scope) are two.
    for (auto& f : ev.facts)
        if (f.name == kCgroupKindFact) f.value = "systemd-scope";
    Evidence apart = ev;
    add_derived_metrics(apart);
    EXPECT_GT(apart.find_metric("journal.others_data_share_pct")->value, 90);
}

// Every rendering of the verdict carries the neighbor's name: the title in
// text, Markdown, HTML and JSON (with `culprit`), the culprit as a bounded
// Prometheus label, the title in the Nagios line.
TEST(Contention, EveryRenderingNamesTheNeighbor) {
    Evidence ev = neighbor_on_device();
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty());
    EXPECT_NE(render_text(v).find("backup (pid 4242"), std::string::npos);
    EXPECT_NE(render_markdown(v).find("backup (pid 4242"), std::string::npos);
    const auto j = render_json(v);
    EXPECT_EQ(j["findings"][0]["culprit"], "backup");
    EXPECT_NE(j["findings"][0]["title"].get<std::string>().find("backup (pid 4242"), std::string::npos);
    const std::string prom = render_prometheus(v, ev, PrometheusRun{});
    EXPECT_NE(prom.find("culprit=\"backup\""), std::string::npos) << prom;
    EXPECT_NE(prom.find("rule_id=\"contention.device_neighbor\""), std::string::npos);
}

TEST(Contention, CgroupLabelIsTheSyscallCollectorsFromProcCgroup) {
    const auto hybrid = cgroup::parse_proc_cgroup(
        "12:memory:/docker/abc\n8:blkio:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/x\n0::/x\n");
    EXPECT_EQ(cgroup::label_of(hybrid), "memory:/docker/abc,blkio:/docker/abc");
    const auto roots = cgroup::parse_proc_cgroup("12:memory:/\n8:blkio:/\n0::/user.slice/session-1.scope\n");
    EXPECT_EQ(cgroup::label_of(roots), "/user.slice/session-1.scope");
    EXPECT_EQ(cgroup::label_of(cgroup::parse_proc_cgroup("0::/system.slice/postgresql@15-main.service\n")),
              "/system.slice/postgresql@15-main.service");
    EXPECT_EQ(cgroup::label_of(cgroup::parse_proc_cgroup("12:memory:/\n8:blkio:/\n")), "/");
    EXPECT_EQ(cgroup::label_of(cgroup::ProcessCgroups{}), "");
}

TEST(Contention, OnCpuTimeIsTheWindowsDifferencePerProcess) {
    namespace fs = std::filesystem;
    const fs::path root = fs::temp_directory_path() / ("iodiag-proc-cpu-" + std::to_string(::getpid()));
    fs::remove_all(root);
    auto stat = [&](int pid, const std::string& comm, uint64_t flags, uint64_t ticks, uint64_t start) {
        fs::create_directories(root / "proc" / std::to_string(pid));
        std::ofstream(root / "proc" / std::to_string(pid) / "stat")
            << pid << " (" << comm << ") S 1 1 1 0 -1 " << flags << " 0 0 0 0 " << ticks << " 0 0 0 20 0 1 0 "
            << start << " 0 0\n";
        std::ofstream(root / "proc" / std::to_string(pid) / "cgroup") << "0::/" << comm << "\n";
    };
    auto system = [&](uint64_t busy, double uptime_s) {
        fs::create_directories(root / "proc");
        std::ofstream(root / "proc" / "stat") << "cpu  " << busy << " 0 0 1000 0 0 0 0 0 0\n";
        std::ofstream(root / "proc" / "uptime") << uptime_s << " 1.0\n";
    };
    system(1000, 100);
    stat(10, "hog (x)", 0, 500, 50);
    stat(11, "kworker/0:1", 0x00200000, 100, 1);
    stat(12, "victim", 0, 40, 60);
    const CpuSnapshot before = read_cpu_snapshot(root.string(), 100);
    system(1900, 104);
    stat(10, "hog (x)", 0, 800, 50);       // +300 ticks = 3 s
    stat(11, "kworker/0:1", 0x00200000, 150, 1);
    stat(12, "victim", 0, 45, 60);
    stat(13, "new", 0, 200, 10200);         // started in the window: all of it
    const CpuSnapshot after = read_cpu_snapshot(root.string(), 100);
    Evidence ev;
    add_proc_cpu_metrics(before, after, 100, "0-1", 12, root.string(), ev);
    const Metric* hog = ev.find_metric("cpu.proc_oncpu_us", {{"pid", "10"}, {"comm", "hog (x)"}, {"app", "hog (x)"}, {"cgroup", "/hog (x)"}});
    ASSERT_NE(hog, nullptr);
    EXPECT_EQ(hog->value, 3e6);
    ASSERT_NE(ev.find_metric("cpu.proc_oncpu_us", {{"pid", "13"}, {"comm", "new"}, {"app", "new"}, {"cgroup", "/new"}}), nullptr);
    EXPECT_EQ(ev.find_metric("cpu.oncpu_total_us")->value, (300 + 50 + 5 + 200) * 1e4);
    EXPECT_EQ(ev.find_metric("cpu.kthread_oncpu_us")->value, 50 * 1e4);
    EXPECT_EQ(ev.find_metric("cpu.self_oncpu_us")->value, 5 * 1e4);   // pid 12 is "iodiag" here
    EXPECT_EQ(ev.find_metric("cpu.busy_us")->value, 900 * 1e4);
    EXPECT_EQ(ev.find_fact("cpu.online_list")->value, "0,1");
    EXPECT_EQ(expand_cpu_list("0-2,5"), "0,1,2,5");
    EXPECT_EQ(expand_cpu_list("3-1"), "");
    fs::remove_all(root);
}

// A light bulk reader beside a busy reader (issue 33's shared_light control,
// seed 91001): 95 % of its slow time is its wait on loop0, whose busy time was
// 76 % the other's, but its 1 MiB requests were being served for 70 % of
// their time: of the device's time while they were in it (their D2C, 1.11 s),
// the others had 23 %. The others cost it 95 x 0.23 = 22 %, under the quarter
// at which an application waits: no neighbor is blamed.
TEST(Contention, ABulkJobWhoseRequestsWereMostlyServedLostLittleToOthers) {
    Evidence ev;
    sufferer(ev, "backup", {{"device", 95}, {"cpu", 5}});
    fast_device(ev, "loop0", 120, 80000, 3);
    group(ev, "loop0", "backup", "/system.slice/backup.service", "process", 1.11e6, 100e6, "4242", 0, 0.85e6);
    group(ev, "loop0", "sqlite", "/system.slice/db.service", "process", 2e6, 40e6, "100", 0, 2.7e6);
    Evidence d = ev;
    add_derived_metrics(d);
    const Metric* share = d.find_metric("device.contention_share_pct", {{"device", "loop0"}});
    const Metric* lost = d.find_metric("device.contention_lost_pct", {{"device", "loop0"}});
    ASSERT_NE(share, nullptr);
    ASSERT_NE(lost, nullptr);
    EXPECT_NEAR(share->value, 95 * (1.11 - 0.85) / 1.11, 0.01);
    // At most its wait x the part of its requests' time (Q2C) they waited: 30 %.
    EXPECT_NEAR(lost->value, std::min(share->value, 95 * (1 - 0.85 / 1.221)), 0.01);
    const Verdict v = analyze(ev, shipped_rules());
    EXPECT_EQ(find(v.findings, "contention.device_neighbor"), nullptr) << render_text(v);
}

// A backup paced at 30 % of a volume's cap, beside a reader with one request
// in flight (issue 33, bulk_reader_neighbor seed 161002: the reader 1.74x
// slower). The backup held 48 % of the busy time, under the majority, and the
// verdict said STATUS OK. While the reader's requests were in the device
// (their D2C, 3.66 s) it served the reader's own for 1.87 s and the backup's
// for most of the rest: the reader's requests took 1.95x their own service,
// over the 1.5x at which a victim suffers. The backup is named.
TEST(Contention, APacedBackupsBurstsAreWhatAReaderWithOneRequestInFlightWaitsBehind) {
    Evidence ev;
    sufferer(ev, "fio", {{"device", 98}, {"cpu", 2}});
    fast_device(ev, "loop0", 700, 5528, 1.37);
    group(ev, "loop0", "fio", "/", "process", 3.657e6, 5043 * 8192.0, "100", 0, 1.871e6);
    group(ev, "loop0", "backup", "/system.slice/backup.service", "process", 1.784e6, 485 * 262144.0, "200", 0,
          1.76e6);
    for (auto& m : ev.metrics)
        if (m.name == "disk.util_pct") m.value = 91.7;
    Evidence d = ev;
    add_derived_metrics(d);
    const Labels l{{"device", "loop0"}};
    EXPECT_LT(d.find_metric("device.others_busy_share_pct", l)->value, 50);
    // (3.657 - 1.871) / 3.657 = 49 %, at most the backup's whole busy time over it.
    EXPECT_NEAR(d.find_metric("device.others_overlap_pct", l)->value, 100 * 1.76 / 3.657, 0.01);
    EXPECT_EQ(d.find_metric("device.contended", l)->value, 1);
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty()) << render_text(v);
    EXPECT_EQ(v.findings.front().rule_id, "contention.device_neighbor") << render_text(v);
    EXPECT_EQ(v.findings.front().culprit, "backup");
    // The same reader with the backup's requests served beside its own only
    // now and then (a tenth of its time in the device): its own demand.
    for (auto& m : ev.metrics)
        if (m.name == "block.submitter.service_total_us" && application_label(m.labels) == "fio") m.value = 3.3e6;
    const Verdict quiet = analyze(ev, shipped_rules());
    EXPECT_EQ(find(quiet.findings, "contention.device_neighbor"), nullptr) << render_text(quiet);
}

// A bulk job alone on a throughput-capped volume (issue 33's shared_bulk_alone
// control, seed 91000): dd's 1 MiB direct reads take 16.7 ms each at 50 MB/s,
// a median slower than any flash device's 4 KiB access, with nobody beside
// it. Its requests' time is their transfer at the rate the volume delivers:
// the device finding is the rate, at info, and the device layer is normal.
// The same volume serving 16 KiB requests that slowly is slow storage.
namespace {

Evidence streaming(double request_bytes, double d2c_us) {
    Evidence ev;
    sufferer(ev, "dd", {{"device", 98.5}, {"filesystem", 1.5}});
    const double n = 240;
    fast_device(ev, "loop0", d2c_us, static_cast<uint64_t>(n), 1.6);
    group(ev, "loop0", "dd", "/system.slice/backup.service", "process", d2c_us * n, request_bytes * n, "4242", 0,
          0.99 * 4e6);
    for (auto& m : ev.metrics)
        if (m.name == "block.submitter.requests") m.value = n;
    return ev;
}

}  // namespace

TEST(Contention, ABulkJobAloneStreamingLargeRequestsIsItsOwnDemand) {
    Evidence ev = streaming(1 << 20, 16678);
    Evidence d = ev;
    add_derived_metrics(d);
    const Labels l{{"device", "loop0"}};
    ASSERT_NE(d.find_metric("device.throughput_bound", l), nullptr);
    EXPECT_EQ(d.find_metric("device.throughput_bound", l)->value, 1);
    EXPECT_NEAR(d.find_metric("device.sufferer_bytes_per_s", l)->value, 240.0 * (1 << 20) / (0.99 * 4), 1);
    const Verdict v = analyze(ev, shipped_rules());
    EXPECT_EQ(find(v.findings, "device.dominant_no_reference"), nullptr) << render_text(v);
    const Finding* f = find(v.notes, "device.streaming");   // info: a note
    ASSERT_NE(f, nullptr) << render_text(v);
    EXPECT_EQ(f->severity, Severity::Info);
    EXPECT_EQ(v.status, Severity::Info) << render_text(v);   // nothing abnormal: OK
}

// A loop of dds writing a file again and again (seed 93000): each pass's
// writeback starts at close and is waited for by the next pass's O_TRUNC
// open, so its requests' time is many times its syscalls' (it is nobody's
// device.top_submitter), and no dd made enough slow syscalls for its own
// breakdown. The device is judged for the application the verdict names.
TEST(Contention, ABulkJobThatWaitsForFewOfItsRequestsIsStillJudgedOnItsStream) {
    Evidence ev = streaming(1 << 20, 16678);
    std::erase_if(ev.facts, [](const Fact& f) { return f.name == "attr.app.name"; });
    std::erase_if(ev.metrics, [](const Metric& m) { return m.name.rfind("attr.app.", 0) == 0; });
    for (auto& m : ev.metrics)
        if (m.name == "block.submitter.q2c_total_us") m.value = 40e6;   // 10 requests in flight all the window
    Evidence d = ev;
    add_derived_metrics(d);
    const Labels l{{"device", "loop0"}};
    ASSERT_EQ(d.find_fact("device.top_submitter", l), nullptr);
    ASSERT_NE(d.find_fact("device.sufferer", l), nullptr);
    EXPECT_EQ(d.find_fact("device.sufferer", l)->value, "dd");
    EXPECT_EQ(d.find_metric("device.throughput_bound", l)->value, 1);
    const Verdict v = analyze(ev, shipped_rules());
    EXPECT_EQ(find(v.findings, "device.dominant_no_reference"), nullptr) << render_text(v);
    EXPECT_NE(find(v.notes, "device.streaming"), nullptr) << render_text(v);
    // Another program holding most of the busy time: not the job's stream.
    group(ev, "loop0", "backup", "/", "process", 16678 * 240.0, 240.0 * (1 << 20), "77", 0, 0.99 * 4e6 * 2);
    Evidence e = ev;
    add_derived_metrics(e);
    EXPECT_EQ(e.find_metric("device.throughput_bound", l)->value, 0);
}

TEST(Contention, SmallRequestsServedThatSlowlyAreSlowStorage) {
    const Evidence ev = streaming(16 << 10, 16678);
    Evidence d = ev;
    add_derived_metrics(d);
    EXPECT_EQ(d.find_metric("device.throughput_bound", {{"device", "loop0"}})->value, 0);
    const Verdict v = analyze(ev, shipped_rules());
    EXPECT_NE(find(v.findings, "device.dominant_no_reference"), nullptr) << render_text(v);
    EXPECT_EQ(find(v.notes, "device.streaming"), nullptr);
}

// A reader half in tag waits behind a buffered writer (neighbor_buffered,
// seed 93001): the writer held 48 % of loop0's busy time but most of its
// tags, its write requests waiting in mq-deadline (which serves reads first)
// with a tag each. The tags the reader waited for were held by requests
// between their tag and their completion, whatever their service: that part
// of its wait is split by the tag-holding time (D2C + scheduler wait), not by
// Q2C, in which a request still waiting for a tag holds none; the rest by the
// device's time while the reader's requests were in it (their D2C, 3 s, 1.857
// s of it their own service). Together most of it was the writer's.
TEST(Contention, ATagWaitIsTheOthersInTheShareOfTheQueueTheyHold) {
    Evidence ev;
    sufferer(ev, "fio", {{"device", 40}, {"block_queue", 50}, {"cpu", 10}});
    fast_device(ev, "loop0", 400, 18000, 70);
    group(ev, "loop0", "fio", "/", "process", 3.0e6, 7698 * 4096.0, "100", 0, 1.857e6);
    group(ev, "loop0", "backup", "/system.slice/backup.service", "process", 3.0e6, 7905 * 4096.0, "200", 0, 1.718e6);
    ev.add_metric("block.submitter.scheduler_wait_us",
                  {{"device", "loop0"}, {"comm", "backup"}, {"cgroup", "/system.slice/backup.service"}, {"kind", "process"}},
                  60e6, "us", kP);
    // The reader's own Q2C is mostly its tag wait: it holds no tag meanwhile.
    for (auto& m : ev.metrics)
        if (m.name == "block.submitter.q2c_total_us") m.value = application_label(m.labels) == "fio" ? 60e6 : 63e6;
    Evidence d = ev;
    add_derived_metrics(d);
    const Labels l{{"device", "loop0"}};
    const double busy_others = 1.718 / (1.718 + 1.857), hold_others = 63.0 / (63.0 + 3.0);
    const double overlap_others = (3.0 - 1.857) / 3.0;
    const double tag = d.find_metric("device.tag_wait_share_pct", l)->value;
    const double w = d.find_metric("device.sufferer_wait_pct", l)->value;
    EXPECT_NEAR(d.find_metric("device.contention_share_pct", l)->value,
                (w - tag) * overlap_others + tag * hold_others, 0.01);
    EXPECT_LT(busy_others, 0.5);
    EXPECT_EQ(d.find_metric("device.contended", l)->value, 1);
}
