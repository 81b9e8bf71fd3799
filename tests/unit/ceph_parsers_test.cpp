// The Ceph parsers on real 16.2.15 output (tests/fixtures/ceph, captured from
// the test cluster of tests/ceph/cluster.sh) and on broken or foreign input:
// nothing crashes, nothing is half-parsed, window deltas never go negative.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "collectors/ceph/ceph_cluster_status.hpp"
#include "collectors/ceph/ceph_op_tracker.hpp"
#include "collectors/ceph/ceph_osd_network.hpp"
#include "collectors/ceph/ceph_osd_snapshot.hpp"
#include "collectors/ceph/ceph_perf_counters.hpp"

using namespace iodiag;

namespace {

std::string fixture(const std::string& name) {
    std::ifstream in(std::string(IODIAG_FIXTURES) + "/ceph/" + name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

TEST(CephPerfDump, ParsesARealOsdDump) {
    const PerfDumpParse p = parse_perf_dump(fixture("perf_dump_16.2.15.json"));
    ASSERT_TRUE(p.dump) << p.error;
    const PerfCounter* w = p.dump->find("osd.op_w_latency");
    ASSERT_NE(w, nullptr);
    EXPECT_TRUE(w->is_average);
    EXPECT_DOUBLE_EQ(w->avgcount, 571);
    EXPECT_NEAR(w->sum, 12.186440089, 1e-9);
    const PerfCounter* kv = p.dump->find("bluestore.kv_sync_lat");
    ASSERT_NE(kv, nullptr);
    EXPECT_DOUBLE_EQ(kv->avgcount, 496);
    const PerfCounter* numpg = p.dump->find("osd.numpg");
    ASSERT_NE(numpg, nullptr);
    EXPECT_FALSE(numpg->is_average);
    EXPECT_DOUBLE_EQ(numpg->value, 33);
    // Sections with punctuation in their names keep them.
    EXPECT_NE(p.dump->find("throttle-osd_client_messages.wait"), nullptr);
    EXPECT_NE(p.dump->find("AsyncMessenger::Worker-0.msgr_recv_messages"), nullptr);
}

TEST(CephPerfDump, WindowIsTheDifferenceAndRejectsARestart) {
    PerfDump a, b;
    a.counters["osd.op_w_latency"] = {true, 0, 100, 2.0};
    b.counters["osd.op_w_latency"] = {true, 0, 150, 3.5};
    a.counters["osd.recovery_ops"] = {false, 10, 0, 0};
    b.counters["osd.recovery_ops"] = {false, 25, 0, 0};
    const auto w = perf_window(a, b, "osd.op_w_latency");
    ASSERT_TRUE(w);
    EXPECT_DOUBLE_EQ(w->count, 50);
    EXPECT_DOUBLE_EQ(w->mean(), 0.03);
    EXPECT_EQ(perf_increase(a, b, "osd.recovery_ops"), 15);
    // The daemon restarted in the window: counters start again from zero.
    b.counters["osd.op_w_latency"] = {true, 0, 20, 0.5};
    EXPECT_FALSE(perf_window(a, b, "osd.op_w_latency"));
    EXPECT_FALSE(perf_window(a, b, "osd.absent"));
    // A plain counter asked as an average (another version's shape) is absent, not zero.
    EXPECT_FALSE(perf_window(a, b, "osd.recovery_ops"));
}

TEST(CephPerfDump, RejectsWhatIsNotADump) {
    for (const char* bad : {"", "not json", "[1,2]", "42", "{\"osd\": 1}", "{\"osd\": {\"x\": \"text\"}}",
                            "{\"osd\": {\"op\": {\"avgcount\": \"1\", \"sum\": 2}}}", "{\"a\": {\"b\": {\"sum\": 1}}}",
                            "{\"osd\": {\"op_w_latency\": {\"avgcount\": 1, \"sum\": 2}"}) {
        const PerfDumpParse p = parse_perf_dump(bad);
        EXPECT_FALSE(p.dump) << bad;
        EXPECT_FALSE(p.error.empty()) << bad;
    }
    // Unknown shapes next to known ones are skipped, the rest kept.
    const PerfDumpParse p = parse_perf_dump(R"({"osd": {"op": 5, "weird": [1, 2], "lat": {"avgcount": 2, "sum": 0.5}}})");
    ASSERT_TRUE(p.dump) << p.error;
    EXPECT_EQ(p.dump->counters.size(), 2u);
}

TEST(CephPerfHistogram, ReducesToLatencyAndRebucketsTheWindow) {
    const PerfHistogramParse p = parse_perf_histogram_dump(fixture("perf_histogram_dump_16.2.15.json"));
    ASSERT_TRUE(p.error.empty()) << p.error;
    const auto it = p.histograms.find("osd.op_w_latency_in_bytes_histogram");
    ASSERT_NE(it, p.histograms.end());
    const PerfLatencyHistogram& after = it->second;
    uint64_t total = 0;
    for (auto c : after.counts) total += c;
    EXPECT_EQ(total, 688u);   // summed over the request-size axis
    PerfLatencyHistogram before = after;
    for (auto& c : before.counts) c /= 2;
    const auto h = perf_histogram_window_us(before, after);
    ASSERT_TRUE(h);
    uint64_t window = 0;
    for (size_t i = 0; i < after.counts.size(); ++i) window += after.counts[i] - before.counts[i];
    EXPECT_EQ(h->total(), window);
    // The 6.4-12.8 ms bucket (ns bounds in the dump) lands in the log2 bucket of 9.6 ms.
    EXPECT_GT(h->buckets().at(Log2Histogram::bucket_of(9600)), 0u);
    // A bucket that went backwards (restart) gives no histogram.
    before.counts[8] = after.counts[8] + 1;
    EXPECT_FALSE(perf_histogram_window_us(before, after));
}

TEST(CephPerfHistogram, RejectsOtherLayouts) {
    for (const char* bad : {"", "[]", R"({"osd": {"h": {"axes": [], "values": []}}})",
                            R"({"osd": {"h": {"axes": [{"ranges": [{"min": 0}]}], "values": [[1], [2]]}}})",
                            R"({"osd": {"h": {"axes": [{"ranges": [{"min": 0}]}], "values": [[-1]]}}})"}) {
        const PerfHistogramParse p = parse_perf_histogram_dump(bad);
        EXPECT_TRUE(p.histograms.empty()) << bad;
        EXPECT_FALSE(p.error.empty()) << bad;
    }
}

TEST(CephOpTracker, ReadsTheTimelinesOfRealOps) {
    const TrackedOpsParse p = parse_tracked_ops(fixture("historic_ops.json"));
    ASSERT_TRUE(p.error.empty()) << p.error;
    ASSERT_EQ(p.ops.size(), 5u);
    const TrackedOp& w = p.ops[2];   // the last client write of the fixture
    EXPECT_EQ(w.kind, TrackedOp::Kind::ClientWrite);
    EXPECT_EQ(w.reqid, "client.4140.0:1577");
    EXPECT_EQ(w.peers, (std::vector<int>{1, 2}));
    ASSERT_TRUE(w.queue_wait());
    EXPECT_NEAR(*w.queue_wait(), 0.959466 - 0.959338, 1e-6);
    ASSERT_TRUE(w.replica_wait());
    EXPECT_NEAR(*w.replica_wait(), 0.993485 - 0.959563, 1e-6);   // to the last sub_op_commit_rec
    ASSERT_TRUE(w.local_commit());
    EXPECT_NEAR(*w.local_commit(), 1.003081 - 0.959563, 1e-6);
    EXPECT_FALSE(w.waited_for_rw_locks());
    EXPECT_NEAR(w.duration_s, 0.043866674, 1e-9);
    EXPECT_EQ(p.ops[3].kind, TrackedOp::Kind::Replica);
    EXPECT_FALSE(p.ops[3].reqid.empty());
}

TEST(CephOpTracker, RwLockWaitsAndReadsAndTheSlowOpsDump) {
    const std::string text = R"J({"Ops": [{"description": "osd_op(client.9.0:7 2.1 2:abc:::obj:head [read 0~4096] snapc 0=[] ondisk+read+known_if_redirected e20)",
        "initiated_at": "2026-12-01T07:10:00.000000+0000", "duration": 0.5,
        "type_data": {"flag_point": "done", "events": [
          {"event": "initiated", "time": "2026-12-01T07:10:00.000000+0000"},
          {"event": "queued_for_pg", "time": "2026-12-01T07:10:00.010000+0000"},
          {"event": "reached_pg", "time": "2026-12-01T07:10:00.020000+0000"},
          {"event": "waiting for rw locks", "time": "2026-12-01T07:10:00.020000+0000"},
          {"event": "reached_pg", "time": "2026-12-01T07:10:00.320000+0000"},
          {"event": "done", "time": "2026-12-01T07:10:00.500000+0000"}]}}]})J";
    const TrackedOpsParse p = parse_tracked_ops(text);
    ASSERT_EQ(p.ops.size(), 1u);
    const TrackedOp& op = p.ops[0];
    EXPECT_EQ(op.kind, TrackedOp::Kind::ClientRead);
    EXPECT_TRUE(op.waited_for_rw_locks());
    EXPECT_NEAR(op.rw_lock_wait(), 0.3, 1e-6);
    EXPECT_NEAR(*op.before_queue(), 0.01, 1e-6);
    EXPECT_FALSE(op.replica_wait());
}

TEST(CephOpTracker, SkipsBrokenOpsAndRejectsForeignDumps) {
    EXPECT_FALSE(parse_tracked_ops("").error.empty());
    EXPECT_FALSE(parse_tracked_ops("[]").error.empty());
    EXPECT_FALSE(parse_tracked_ops(R"({"num_ops": 3})").error.empty());
    const TrackedOpsParse p = parse_tracked_ops(
        R"({"ops": [1, {"description": 5}, {"initiated_at": "yesterday"}, {"initiated_at": "2026-12-01T07:10:00+0000",
            "type_data": {"events": [{"event": "initiated"}, {"time": "x"}, 3]}}]})");
    EXPECT_TRUE(p.error.empty());
    ASSERT_EQ(p.ops.size(), 1u);
    EXPECT_TRUE(p.ops[0].events.empty());
    EXPECT_EQ(p.ops[0].kind, TrackedOp::Kind::Other);
}

TEST(CephOpTracker, Timestamps) {
    EXPECT_NEAR(*parse_ceph_timestamp("1970-01-01T00:00:01.5+0000"), 1.5, 1e-9);
    EXPECT_NEAR(*parse_ceph_timestamp("1970-01-01T01:00:00.000000+0100"), 0, 1e-9);
    EXPECT_NEAR(*parse_ceph_timestamp("1970-01-01 00:00:02Z"), 2, 1e-9);
    for (const char* bad : {"", "2026-13-01T00:00:00+0000", "2026-12-01T07:10:55.959332+00", "2026-12-01T07:10:55x",
                            "2026-12-01T25:00:00+0000", "abcd-ef-ghTij:kl:mn"})
        EXPECT_FALSE(parse_ceph_timestamp(bad)) << bad;
}

TEST(CephClusterStatus, HealthStatusAndClockSkew) {
    const auto h = parse_health_detail(
        R"({"status":"HEALTH_WARN","checks":{"SLOW_OPS":{"severity":"HEALTH_WARN","summary":{"message":"3 slow ops","count":3}},
            "MON_CLOCK_SKEW":{"severity":"HEALTH_WARN","summary":{"message":"clock skew","count":1}}},"mutes":[]})");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->status, "HEALTH_WARN");
    EXPECT_DOUBLE_EQ(h->checks.at("SLOW_OPS").count, 3);
    EXPECT_FALSE(parse_health_detail("{}"));
    EXPECT_FALSE(parse_health_detail("garbage"));
    const auto pg = parse_status_pgmap(
        R"({"pgmap":{"num_pgs":33,"pgs_by_state":[{"state_name":"active+clean","count":30},
            {"state_name":"active+recovering+degraded","count":2},{"state_name":"active+undersized+degraded+remapped+backfilling","count":1}],
            "recovering_bytes_per_sec":1048576}})");
    ASSERT_TRUE(pg);
    EXPECT_DOUBLE_EQ(pg->degraded, 3);
    EXPECT_DOUBLE_EQ(pg->recovering, 2);
    EXPECT_DOUBLE_EQ(pg->backfilling, 1);
    EXPECT_EQ(pg->recovering_bytes_per_s, 1048576);
    EXPECT_FALSE(parse_status_pgmap(R"({"health": {}})"));
    EXPECT_NEAR(*parse_time_sync_max_skew(R"({"time_skew_status":{"a":{"skew":0.0},"b":{"skew":-0.08}}})"), 0.08, 1e-12);
    EXPECT_FALSE(parse_time_sync_max_skew("[]"));
}

TEST(CephOsdConfig, EffectiveShardsAndThreadsFollowTheDeviceType) {
    const std::string conf = R"({"osd_data": "/var/lib/ceph/osd/ceph-3", "osd_op_queue": "wpq",
        "osd_op_num_shards": "0", "osd_op_num_shards_hdd": "5", "osd_op_num_shards_ssd": "8",
        "osd_op_num_threads_per_shard": "0", "osd_op_num_threads_per_shard_hdd": "1", "osd_op_num_threads_per_shard_ssd": "2",
        "osd_op_complaint_time": "30.000000", "osd_recovery_max_active": "0", "osd_recovery_max_active_hdd": "3",
        "osd_recovery_max_active_ssd": "10", "osd_max_backfills": "1"})";
    const auto hdd = parse_osd_config(conf, true);
    ASSERT_TRUE(hdd);
    EXPECT_EQ(hdd->op_shards, 5);
    EXPECT_EQ(hdd->op_threads_per_shard, 1);
    EXPECT_EQ(hdd->recovery_max_active, 3);
    EXPECT_EQ(hdd->complaint_time_s, 30);
    EXPECT_EQ(hdd->osd_data, "/var/lib/ceph/osd/ceph-3");
    const auto ssd = parse_osd_config(conf, false);
    EXPECT_EQ(ssd->op_shards, 8);
    EXPECT_EQ(ssd->op_threads_per_shard, 2);
    EXPECT_EQ(ssd->recovery_max_active, 10);
    EXPECT_FALSE(parse_osd_config("[]", true));
    const auto odd = parse_osd_config(R"({"osd_op_num_shards": "lots", "osd_op_complaint_time": 5})", true);
    ASSERT_TRUE(odd);
    EXPECT_EQ(odd->op_shards, 0);
    EXPECT_EQ(odd->complaint_time_s, 5);
}

TEST(CephOsdNetwork, ParsesARealReplyAndSkipsWhatItCannotUse) {
    const OsdNetworkParse p = parse_osd_network(fixture("osd_network.json"));
    EXPECT_TRUE(p.error.empty()) << p.error;
    ASSERT_EQ(p.pings.size(), 4u);   // two peers, front and back each
    EXPECT_EQ(p.pings[0].to_osd, 2);
    EXPECT_EQ(p.pings[0].interface, "front");
    EXPECT_DOUBLE_EQ(p.pings[0].avg_1min_ms, 0.524);   // the average, not 16.2's odd "min"
    EXPECT_EQ(p.pings[3].to_osd, 1);
    EXPECT_EQ(p.pings[3].interface, "back");
    EXPECT_DOUBLE_EQ(p.pings[3].avg_1min_ms, 0.445);
    EXPECT_DOUBLE_EQ(p.pings[0].last_ms, 0.648);   // the newest heartbeat's round trip
    // A fresh OSD lists nothing yet; stale or malformed entries are skipped.
    EXPECT_TRUE(parse_osd_network(R"({"threshold": 0, "entries": []})").pings.empty());
    const OsdNetworkParse odd = parse_osd_network(R"({"entries": [
        {"to osd": 3, "interface": "back", "stale": true, "average": {"1min": 9}},
        {"to osd": "x", "interface": "back", "average": {"1min": 9}},
        {"to osd": 4, "interface": "back", "average": {"1min": -1}},
        {"to osd": 5, "interface": "back", "average": {"5min": 1}},
        {"to osd": 6, "interface": "back", "average": {"1min": 1.5}}]})");
    ASSERT_EQ(odd.pings.size(), 1u);
    EXPECT_EQ(odd.pings[0].to_osd, 6);
    EXPECT_EQ(odd.pings[0].last_ms, -1);   // no "last": the average alone
    // Another version's answer, an error text, garbage.
    EXPECT_FALSE(parse_osd_network(R"({"threshold": 0})").error.empty());
    EXPECT_FALSE(parse_osd_network("unknown command dump_osd_network").error.empty());
    EXPECT_FALSE(parse_osd_network("[1,2]").error.empty());
}
