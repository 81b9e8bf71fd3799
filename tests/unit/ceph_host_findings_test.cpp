// Host-level findings about the slow syscall set yield to the Ceph view when
// the slow syscalls are an OSD's: folded into the Ceph finding on that OSD, or
// kept as a note where the Ceph rules found nothing; untouched when the
// sufferer is another process, the OSD was not observed, or the host has no
// OSDs.
#include <gtest/gtest.h>

#include "engine/triage/ceph_host_findings.hpp"

using namespace iodiag;

namespace {

Evidence osd_host(const std::string& top_pid, const std::string& top_comm, bool with_pids = true) {
    Evidence ev;
    for (const auto& [osd, pid] : {std::pair{"osd.0", "100"}, std::pair{"osd.1", "101"}}) {
        ev.add_fact("ceph.osd.device", {{"osd", osd}}, std::string("loop") + osd[4], {"file", "test"});
        if (with_pids) ev.add_fact("ceph.osd.pid", {{"osd", osd}}, pid, {"admin_socket", "test SO_PEERCRED"});
    }
    ev.add_fact("attr.slow.top_pid", {}, top_pid, {"tracepoint", "test"});
    ev.add_fact("attr.slow.top_comm", {}, top_comm, {"tracepoint", "test"});
    return ev;
}

Finding fsync_chain() {
    Finding f;
    f.rule_id = "syscall.fsync_chain";
    f.layer = "journal";
    f.severity = Severity::Warning;
    f.share_pct = 90;
    f.share_metric = "attr.slow.fsync_chain_pct";
    f.mechanism = "Slow fsyncs wait for their data.";
    f.fixes.push_back({Priority::P1, "Separate the database log from big writers", "journal-fsync-wait"});
    CitedValue c;
    c.name = "attr.slow.fsync_chain_pct";
    c.value = 90;
    f.evidence.push_back(c);
    return f;
}

Finding ceph(const std::string& rule, const std::string& osd, Severity s, double score) {
    Finding f;
    f.rule_id = rule;
    f.layer = "device";
    f.severity = s;
    f.instance_key = "osd";
    f.instance = osd;
    f.score = score;
    return f;
}

}  // namespace

TEST(CephHostFindings, TheSlowSetsOsdIsFoundByItsPidOrElseByItsThreadName) {
    EXPECT_EQ(slow_set_osd(osd_host("101", "bstore_kv_sync")), "osd.1");
    // Another process's slow syscalls, whatever its thread is called.
    EXPECT_EQ(slow_set_osd(osd_host("555", "bstore_kv_sync")), std::nullopt);
    // A bundle without the OSDs' pids: one of this host's OSDs, not which.
    EXPECT_EQ(slow_set_osd(osd_host("555", "bstore_kv_sync", false)), "");
    EXPECT_EQ(slow_set_osd(osd_host("555", "postgres", false)), std::nullopt);
    Evidence none;
    none.add_fact("attr.slow.top_comm", {}, "bstore_kv_sync", {"tracepoint", "test"});
    EXPECT_EQ(slow_set_osd(none), std::nullopt);
}

TEST(CephHostFindings, FoldsIntoTheCephFindingOnThatOsd) {
    std::vector<Finding> fired{ceph("ceph.replica_wait_dominated", "osd.0", Severity::Warning, 0.9), fsync_chain(),
                               ceph("ceph.osd_disk_slow", "osd.1", Severity::Critical, 0.5)};
    yield_osd_findings_to_ceph(fired, osd_host("101", "bstore_kv_sync"));
    ASSERT_EQ(fired.size(), 2u);
    const Finding& disk = fired[1];
    EXPECT_EQ(disk.rule_id, "ceph.osd_disk_slow");
    EXPECT_EQ(disk.folded, std::vector<std::string>{"syscall.fsync_chain"});
    ASSERT_EQ(disk.evidence.size(), 1u);
    EXPECT_EQ(disk.evidence[0].name, "attr.slow.fsync_chain_pct");
    EXPECT_NE(disk.mechanism.find("osd.1's (thread bstore_kv_sync)"), std::string::npos) << disk.mechanism;
    EXPECT_TRUE(fired[0].folded.empty());
}

TEST(CephHostFindings, WithoutACephFindingAboveInfoItIsANote) {
    std::vector<Finding> fired{fsync_chain(), ceph("ceph.osd_disk_scheduler", "osd.1", Severity::Info, 0.1)};
    yield_osd_findings_to_ceph(fired, osd_host("101", "bstore_kv_sync"));
    ASSERT_EQ(fired.size(), 2u);
    EXPECT_EQ(fired[0].severity, Severity::Info);
    EXPECT_NE(fired[0].mechanism.find("found nothing above info"), std::string::npos);
    EXPECT_NE(fired[0].title.find("osd.1's own I/O (thread bstore_kv_sync)"), std::string::npos) << fired[0].title;
    EXPECT_TRUE(fired[0].fixes.empty());
    EXPECT_EQ(fired[0].evidence.back().name, "ceph.osd.pid");
    EXPECT_EQ(fired[0].evidence.back().text, "101");
}

TEST(CephHostFindings, OtherFindingsAndUnjudgedOsdsAreLeftAlone) {
    Finding per_device = fsync_chain();
    per_device.instance_key = "device";
    per_device.instance = "loop1";
    Finding other_share = fsync_chain();
    other_share.share_metric = "block.d2c_share_pct";
    std::vector<Finding> fired{per_device, other_share};
    yield_osd_findings_to_ceph(fired, osd_host("101", "bstore_kv_sync"));
    for (const auto& f : fired) EXPECT_EQ(f.severity, Severity::Warning) << f.share_metric;

    // Not an OSD's slow syscalls.
    fired = {fsync_chain()};
    yield_osd_findings_to_ceph(fired, osd_host("555", "postgres"));
    EXPECT_EQ(fired[0].severity, Severity::Warning);

    // The OSD's admin socket gave nothing: the Ceph rules did not judge it.
    Evidence hung = osd_host("101", "bstore_kv_sync");
    hung.add_fact("ceph.osd.not_observed", {{"osd", "osd.1"}}, "timed out after 2 s", {"admin_socket", "test"});
    fired = {fsync_chain()};
    yield_osd_findings_to_ceph(fired, hung);
    EXPECT_EQ(fired[0].severity, Severity::Warning);
}

// The device rules' findings on the device under a slow OSD (here a blk-throttle
// cap under its loop device) are the same slow disk: one finding, the OSD's,
// naming the OSD and its device, with the cap as the mechanism under it, its
// evidence cited and its fix first. Findings on another OSD's device, or in
// another layer of the same device, stay.
TEST(CephHostFindings, TheDeviceFindingUnderASlowOsdFoldsIntoIt) {
    Evidence ev = osd_host("555", "postgres");
    Finding disk = ceph("ceph.osd_disk_slow", "osd.1", Severity::Warning, 0.7);
    disk.title = "osd.1's disk loop1 is slow";
    disk.mechanism = "osd.1 keeps its data on loop1.";
    disk.share_pct = 80;
    disk.fixes.push_back({Priority::P3, "Replace loop1", "ceph-osd-slow-disk"});
    Finding cap;
    cap.rule_id = "cgroup.limit_below_stacked_device";
    cap.layer = "cgroup";
    cap.instance_key = "device";
    cap.instance = "loop1";
    cap.title = "loop1 is slow because the I/O under it is capped";
    cap.mechanism = "A blk-throttle limit holds the loop worker's I/O.";
    cap.share_pct = 95;
    cap.score = 0.76;
    cap.folded.push_back("device.slow_for_class@loop1");
    cap.fixes.push_back({Priority::P1, "Raise the cgroup's limit", "cgroup-io-limit"});
    CitedValue limit;
    limit.name = "device.lower_limit_setting";
    limit.labels = {{"device", "loop1"}};
    limit.text = "blkio.throttle.write_iops_device 40";
    cap.evidence.push_back(limit);
    Finding other = cap;
    other.instance = "loop0";
    Finding sched = cap;
    sched.rule_id = "queue.scheduler_mismatch";
    sched.layer = "block_queue";
    Finding note = cap;
    note.rule_id = "device.dominant_busy";
    note.layer = "device";
    note.severity = Severity::Info;
    std::vector<Finding> fired{cap, disk, other, sched, note};
    yield_osd_findings_to_ceph(fired, ev);
    ASSERT_EQ(fired.size(), 4u);
    EXPECT_EQ(fired[3].rule_id, "device.dominant_busy");   // a note stays a note
    const Finding& f = fired[0];
    EXPECT_EQ(f.rule_id, "ceph.osd_disk_slow");
    EXPECT_EQ(f.instance, "osd.1");
    EXPECT_EQ(f.share_pct, 80);   // the share of the OSD's client op time
    EXPECT_NE(f.title.find("capped"), std::string::npos) << f.title;
    EXPECT_NE(f.mechanism.find("blk-throttle"), std::string::npos) << f.mechanism;
    EXPECT_EQ(f.folded, (std::vector<std::string>{"cgroup.limit_below_stacked_device@loop1", "device.slow_for_class@loop1"}));
    ASSERT_EQ(f.evidence.size(), 1u);
    EXPECT_EQ(f.evidence[0].name, "device.lower_limit_setting");
    ASSERT_EQ(f.fixes.size(), 2u);
    EXPECT_EQ(f.fixes[0].playbook, "cgroup-io-limit");
    EXPECT_EQ(fired[1].instance, "loop0");
    EXPECT_EQ(fired[2].rule_id, "queue.scheduler_mismatch");
}

// The kv sync on the same slow disk is how that disk reaches every write: it
// folds into the OSD's slow-disk finding, its DB/WAL fix after the disk's own;
// another OSD's kv sync finding is another disk's and stays.
TEST(CephHostFindings, TheKvSyncOnTheSameSlowDiskFoldsIntoItAfterItsFixes) {
    Evidence ev = osd_host("555", "postgres");
    Finding disk = ceph("ceph.osd_disk_slow", "osd.1", Severity::Warning, 0.7);
    disk.mechanism = "osd.1 keeps its data on loop1.";
    disk.fixes.push_back({Priority::P3, "Replace loop1", "ceph-osd-slow-disk"});
    Finding kv = ceph("ceph.kv_sync_on_shared_slow_device", "osd.1", Severity::Warning, 0);
    kv.layer = "bluestore";
    kv.mechanism = "The kv sync flushes loop1.";
    kv.fixes.push_back({Priority::P3, "Give osd.1 a DB/WAL device on flash", "ceph-separate-db-wal"});
    Finding other_kv = kv;
    other_kv.instance = "osd.0";
    std::vector<Finding> fired{disk, kv, other_kv};
    yield_osd_findings_to_ceph(fired, ev);
    ASSERT_EQ(fired.size(), 2u);
    const Finding& f = fired[0];
    EXPECT_EQ(f.folded, (std::vector<std::string>{"ceph.kv_sync_on_shared_slow_device@osd.1"}));
    EXPECT_NE(f.mechanism.find("The kv sync flushes loop1."), std::string::npos) << f.mechanism;
    ASSERT_EQ(f.fixes.size(), 2u);
    EXPECT_EQ(f.fixes[0].playbook, "ceph-osd-slow-disk");
    EXPECT_EQ(f.fixes[1].playbook, "ceph-separate-db-wal");
    EXPECT_EQ(fired[1].instance, "osd.0");
}

// osd.0 waits for its slow peer osd.1 most of its client op time (96.7 %,
// scored 0.58), while osd.1's slow disk holds 58 % of osd.1's own (0.52):
// the cause ranks above the wait it causes and says whom it holds up. The
// wait stays, with its share. Without the peer named, nothing moves.
TEST(CephHostFindings, ASlowPeersOwnFindingRanksAboveThePrimariesWaitingForIt) {
    auto findings = [] {
        Finding wait = ceph("ceph.replica_wait_dominated", "osd.0", Severity::Warning, 0.58);
        wait.share_pct = 96.7;
        Finding disk = ceph("ceph.osd_disk_slow", "osd.1", Severity::Warning, 0.52);
        disk.share_pct = 58.2;
        disk.mechanism = "osd.1's disk is slow.";
        return std::vector<Finding>{wait, disk};
    };
    Evidence ev = osd_host("555", "postgres");
    ev.add_fact("ceph.osd.slowest_peer", {{"osd", "osd.0"}}, "osd.1", {"derived", "test"});
    std::vector<Finding> fired = findings();
    yield_osd_findings_to_ceph(fired, ev);
    ASSERT_EQ(fired.size(), 2u);
    EXPECT_GT(fired[1].score, fired[0].score);
    EXPECT_DOUBLE_EQ(*fired[0].share_pct, 96.7);
    EXPECT_NE(fired[1].mechanism.find("osd.1 also holds up osd.0, which replicates to it: 96.7 % of osd.0's client op time"),
              std::string::npos)
        << fired[1].mechanism;

    std::vector<Finding> unnamed = findings();
    yield_osd_findings_to_ceph(unnamed, osd_host("555", "postgres"));
    EXPECT_DOUBLE_EQ(unnamed[1].score, 0.52);
    EXPECT_EQ(unnamed[1].mechanism, "osd.1's disk is slow.");
}
