// The per-OSD attribution on hand-built evidence: the write latency split
// into op queue, BlueStore, block queue, device and replica wait by the
// documented formulas, the device joined by name, the slowest peer named; and
// the Ceph layers appear in a verdict only where a Ceph collector reported.
#include <gtest/gtest.h>

#include "app/catalog.hpp"
#include "engine/evidence/layers.hpp"
#include "engine/rules/rules.hpp"
#include "engine/triage/analysis.hpp"
#include "engine/derive/ceph_attribution.hpp"
#include "engine/derive/derived_metrics.hpp"

using namespace iodiag;

namespace {

void osd(Evidence& ev, const std::string& name, const std::string& dev, std::map<std::string, double> m) {
    const Labels l{{"osd", name}};
    ev.add_fact("ceph.osd.device", l, dev, {"file", "test"});
    for (const auto& [k, v] : m) ev.add_metric(k, l, v, k.find("ops") != std::string::npos ? "count" : "ms", {"admin_socket", "test"});
}

void block(Evidence& ev, const std::string& dev, double q2c_ms, double d2c_ms) {
    ev.add_metric("block.requests", {{"device", dev}}, 1000, "count", {"tracepoint", "test"});
    ev.add_metric("block.q2c_total_us", {{"device", dev}, {"op", "write"}}, q2c_ms * 1000, "us", {"tracepoint", "test"});
    ev.add_metric("block.d2c_total_us", {{"device", dev}, {"op", "write"}}, d2c_ms * 1000, "us", {"tracepoint", "test"});
}

double get(const Evidence& ev, const std::string& name, const std::string& o) {
    const Metric* m = ev.find_metric(name, {{"osd", o}});
    EXPECT_NE(m, nullptr) << name << " " << o;
    return m ? m->value : -1;
}

// Whether rules/ceph.yaml's `rule` fires for `osd` on this evidence.
bool ceph_rule_fires(const Evidence& ev, const std::string& rule, const std::string& osd) {
    const MetricCatalog cat = full_catalog();
    LoadContext ctx{&cat, {}};
    const RuleSet rs = load_rules({std::string(IODIAG_SOURCE_DIR) + "/rules/ceph.yaml"}, ctx);
    EXPECT_TRUE(rs.ok());
    for (const auto& r : evaluate_rules(rs, ev))
        if (r.rule->id == rule && r.instance == osd) return r.outcome == Tri::True;
    ADD_FAILURE() << rule << " not evaluated for " << osd;
    return false;
}

Evidence two_osds() {
    Evidence ev;
    ev.window.duration_s = 10;
    ev.collectors.push_back({"ceph", true, "", layer::ceph()});
    // osd.1: its own disk is slow. osd.0: healthy disk, waits for osd.1.
    osd(ev, "osd.1", "loop1",
        {{"ceph.osd.client_write_ops", 50}, {"ceph.osd.client_write_latency_ms", 200}, {"ceph.osd.client_write_process_ms", 199},
         {"ceph.osd.client_write_prepare_ms", 1}, {"ceph.bluestore.commit_ms", 190}, {"ceph.bluestore.state_aio_wait_ms", 0},
         {"ceph.bluestore.state_kv_queued_ms", 90}, {"ceph.bluestore.state_kv_committing_ms", 95},
         {"ceph.bluestore.kv_sync_total_ms", 10000}, {"ceph.osd.replica_write_latency_ms", 180},
         {"ceph.osd.replica_write_ops", 100}});
    block(ev, "loop1", 12000, 11400);
    osd(ev, "osd.0", "loop0",
        {{"ceph.osd.client_write_ops", 60}, {"ceph.osd.client_write_latency_ms", 150}, {"ceph.osd.client_write_process_ms", 149},
         {"ceph.osd.client_write_prepare_ms", 1}, {"ceph.bluestore.commit_ms", 20}, {"ceph.bluestore.state_kv_queued_ms", 8},
         {"ceph.bluestore.state_kv_committing_ms", 10}, {"ceph.bluestore.kv_sync_total_ms", 2000},
         {"ceph.osd.replica_write_latency_ms", 15}, {"ceph.osd.replica_write_ops", 100}});
    ev.add_fact("ceph.osd.replica_peers", {{"osd", "osd.0"}}, "osd.1,osd.2", {"admin_socket", "test"});
    // osd.3: a third, healthy OSD of this host (not osd.0's peer here).
    osd(ev, "osd.3", "loop3", {{"ceph.osd.replica_write_latency_ms", 12}, {"ceph.osd.replica_write_ops", 100}});
    block(ev, "loop0", 1500, 1400);
    ev.add_metric("disk.write_await_ms", {{"device", "loop1"}}, 120, "ms", {"file", "test"});
    return ev;
}

}  // namespace

TEST(CephAttribution, SplitsTheWriteLatencyOfASlowDiskOsd) {
    Evidence ev = two_osds();
    add_ceph_derived_metrics(ev);
    // io = aio + (kv_queued + kv_committing) x min(1, ΣQ2C / Σkv_sync) = 185;
    // device = io x ΣD2C/ΣQ2C = 185 x 0.95.
    EXPECT_NEAR(get(ev, "ceph.osd.write_device_ms", "osd.1"), 175.75, 1e-9);
    EXPECT_NEAR(get(ev, "ceph.osd.write_block_queue_ms", "osd.1"), 9.25, 1e-9);
    EXPECT_NEAR(get(ev, "ceph.osd.write_bluestore_ms", "osd.1"), 5, 1e-9);
    EXPECT_NEAR(get(ev, "ceph.osd.write_replica_wait_ms", "osd.1"), 8, 1e-9);
    EXPECT_NEAR(get(ev, "ceph.osd.write_op_queue_ms", "osd.1"), 2, 1e-9);
    EXPECT_NEAR(get(ev, "ceph.osd.write_device_pct", "osd.1"), 87.875, 1e-9);
    EXPECT_NEAR(get(ev, "ceph.osd.device_pct", "osd.1"), 87.875, 1e-9);   // writes only
    EXPECT_NEAR(get(ev, "ceph.osd.kv_sync_block_pct", "osd.1"), 100, 1e-9);
    // The device's own figures, joined by name.
    EXPECT_NEAR(get(ev, "ceph.osd.device_write_await_ms", "osd.1"), 120, 1e-9);
}

TEST(CephAttribution, TracesAPrimarysReplicaWaitToItsSlowPeer) {
    Evidence ev = two_osds();
    add_ceph_derived_metrics(ev);
    // replica wait = process - prepare - commit = 128 of 150 ms.
    EXPECT_NEAR(get(ev, "ceph.osd.write_replica_wait_ms", "osd.0"), 128, 1e-9);
    EXPECT_NEAR(get(ev, "ceph.osd.replica_wait_pct", "osd.0"), 100.0 * 128 / 150, 1e-9);
    // kv sync only 75 % in the block layer: f = 1500 / 2000.
    EXPECT_NEAR(get(ev, "ceph.osd.kv_sync_block_pct", "osd.0"), 75, 1e-9);
    ASSERT_NE(ev.find_fact("ceph.osd.slowest_peer", {{"osd", "osd.0"}}), nullptr);
    EXPECT_EQ(ev.find_fact("ceph.osd.slowest_peer", {{"osd", "osd.0"}})->value, "osd.1");   // osd.2 is not local
    EXPECT_EQ(ev.find_fact("ceph.osd.slowest_peer_device", {{"osd", "osd.0"}})->value, "loop1");
    // The host's OSDs normally write a replica in 15 ms (median of 180, 15, 12):
    // osd.1's excess, 165 ms, explains the whole 128 ms wait.
    EXPECT_NEAR(get(ev, "ceph.osd.normal_replica_ms", "osd.0"), 15, 1e-9);
    EXPECT_NEAR(get(ev, "ceph.osd.slowest_peer_excess_ms", "osd.0"), 165, 1e-9);
    EXPECT_NEAR(get(ev, "ceph.osd.replica_wait_explained_pct", "osd.0"), 100, 1e-9);
    EXPECT_NEAR(get(ev, "ceph.osd.replica_wait_peer_pct", "osd.0"), 100.0 * 128 / 150, 1e-9);
    EXPECT_NEAR(get(ev, "ceph.osd.slowest_peer_device_pct", "osd.0"), 87.875, 1e-9);
    EXPECT_NEAR(get(ev, "ceph.osd.slowest_peer_commit_ms", "osd.0"), 190, 1e-9);

    const MetricCatalog cat = full_catalog();
    LoadContext ctx{&cat, {}};
    const RuleSet rs = load_rules({std::string(IODIAG_SOURCE_DIR) + "/rules/ceph.yaml"}, ctx);
    ASSERT_TRUE(rs.ok());
    bool fired = false;
    for (const auto& r : evaluate_rules(rs, ev))
        if (r.rule->id == "ceph.replica_wait_dominated" && r.instance == "osd.0") fired = r.outcome == Tri::True;
    EXPECT_TRUE(fired);
}

// One host, every OSD equally loaded on the same kind of disk: each primary
// waits for its replicas as long as they take to commit, a large share of its
// write latency, and that is the cost of replication, not a fault: no peer is
// slower than the host's OSDs normally are, so no replica-wait finding.
TEST(CephAttribution, ReplicaWaitOfEquallyLoadedOsdsIsNotAFinding) {
    Evidence ev;
    ev.window.duration_s = 10;
    ev.collectors.push_back({"ceph", true, "", layer::ceph()});
    const double commit[] = {9.7, 9.6, 7.9}, replica[] = {10.1, 10.0, 8.4};
    for (int i = 0; i < 3; ++i) {
        const std::string n = "osd." + std::to_string(i);
        osd(ev, n, "loop" + std::to_string(i),
            {{"ceph.osd.client_write_ops", 2000}, {"ceph.osd.client_write_latency_ms", 17}, {"ceph.osd.client_write_process_ms", 16.9},
             {"ceph.osd.client_write_prepare_ms", 0.1}, {"ceph.bluestore.commit_ms", commit[i]},
             {"ceph.osd.replica_write_latency_ms", replica[i]}, {"ceph.osd.replica_write_ops", 4000}});
        std::string peers;
        for (int j = 0; j < 3; ++j)
            if (j != i) peers += (peers.empty() ? "" : ",") + std::string("osd.") + std::to_string(j);
        ev.add_fact("ceph.osd.replica_peers", {{"osd", n}}, peers, {"admin_socket", "test"});
    }
    add_ceph_derived_metrics(ev);
    EXPECT_GT(get(ev, "ceph.osd.replica_wait_pct", "osd.2"), 40);   // the old 40 % bar would have fired
    EXPECT_LT(get(ev, "ceph.osd.replica_wait_peer_pct", "osd.2"), 25);
    const MetricCatalog cat = full_catalog();
    LoadContext ctx{&cat, {}};
    const RuleSet rs = load_rules({std::string(IODIAG_SOURCE_DIR) + "/rules/ceph.yaml"}, ctx);
    ASSERT_TRUE(rs.ok());
    for (const auto& r : evaluate_rules(rs, ev))
        if (r.rule->id == "ceph.replica_wait_dominated") {
            EXPECT_NE(r.outcome, Tri::True) << r.instance;
        }
}

TEST(CephAttribution, PartsNeverExceedTheMeasuredLatency) {
    Evidence ev;
    ev.window.duration_s = 5;
    // Means of different counters that over-fill the write latency.
    osd(ev, "osd.3", "sdb",
        {{"ceph.osd.client_write_ops", 10}, {"ceph.osd.client_write_latency_ms", 10}, {"ceph.osd.client_write_process_ms", 9},
         {"ceph.osd.client_write_prepare_ms", 2}, {"ceph.bluestore.commit_ms", 30}});
    add_ceph_derived_metrics(ev);
    double sum_pct = 0, sum_ms = 0;
    for (const char* p : {"device", "block_queue", "bluestore", "op_queue", "replica_wait", "other"}) {
        sum_pct += get(ev, std::string("ceph.osd.write_") + p + "_pct", "osd.3");
        sum_ms += get(ev, std::string("ceph.osd.write_") + p + "_ms", "osd.3");
    }
    EXPECT_NEAR(sum_pct, 100, 1e-9);
    EXPECT_NEAR(sum_ms, 10, 1e-9);
    // No device joined (no block figures for sdb): its I/O is not split out.
    EXPECT_NEAR(get(ev, "ceph.osd.write_device_pct", "osd.3"), 0, 1e-9);
}

TEST(CephAttribution, CephLayersOnlyWhereACephCollectorReported) {
    const RuleSet none;
    Evidence plain;
    plain.collectors.push_back({"diskstats", true, "", {layer::kDevice}});
    const Verdict v = analyze(plain, none);
    EXPECT_EQ(v.layers.size(), layer::all().size());
    for (const auto& s : v.trail) EXPECT_EQ(std::count(layer::ceph().begin(), layer::ceph().end(), s.layer), 0) << s.layer;

    const Verdict c = analyze(two_osds(), none);
    EXPECT_EQ(c.layers.size(), layer::all().size() + layer::ceph().size());
    std::vector<std::string> walked;
    for (const auto& s : c.trail) walked.push_back(s.layer);
    // Bottom-up: the device under the OSD, BlueStore, the op path, then the replicas.
    auto at = [&](const std::string& l) { return std::find(walked.begin(), walked.end(), l) - walked.begin(); };
    EXPECT_LT(at(layer::kDevice), at(layer::kBluestore));
    EXPECT_LT(at(layer::kBluestore), at(layer::kOsdOp));
    EXPECT_LT(at(layer::kOsdOp), at(layer::kReplication));
    EXPECT_LT(at(layer::kReplication), static_cast<long>(walked.size()));
    for (const auto& row : c.layers)
        if (row.layer == layer::kBluestore) {
            ASSERT_TRUE(row.share_all_pct);
            EXPECT_NE(row.share_basis.find("osd.1"), std::string::npos) << row.share_basis;
        }
}

// A peer on this host whose own replica commit takes most of the wait leaves
// the network no more than the rest, whatever its heartbeats said: a round
// trip of 12 ms from a minute of CPU starvation does not make a 31 ms replica
// wait, 28 ms of which the peer spent committing, the network's.
TEST(CephAttribution, TheNetworkClaimsNoMoreOfAReplicaWaitThanThePeersCommitLeaves) {
    for (const double commit : {28.0, 5.0}) {
        Evidence ev;
        ev.window.duration_s = 6;
        ev.collectors.push_back({"ceph", true, "", layer::ceph()});
        osd(ev, "osd.2", "loop2",
            {{"ceph.osd.client_write_ops", 60}, {"ceph.osd.client_write_latency_ms", 36}, {"ceph.osd.client_write_process_ms", 35.5},
             {"ceph.osd.client_write_prepare_ms", 0.5}, {"ceph.bluestore.commit_ms", 4}});
        osd(ev, "osd.1", "loop1", {{"ceph.osd.replica_write_latency_ms", commit}, {"ceph.osd.replica_write_ops", 60}});
        ev.add_fact("ceph.osd.replica_peers", {{"osd", "osd.2"}}, "osd.1", {"admin_socket", "test"});
        ev.add_metric("ceph.osd.peer_ping_ms", {{"osd", "osd.2"}, {"peer", "osd.1"}}, 12.0, "ms", {"admin_socket", "test"});
        add_ceph_derived_metrics(ev);
        // replica wait = 35.5 - 0.5 - 4 = 31 ms of 36; the network's part at
        // most min(12, 31 - commit).
        const double network_ms = std::min(12.0, 31.0 - commit);
        EXPECT_NEAR(get(ev, "ceph.osd.replica_ping_ms", "osd.2"), 12.0, 1e-9);
        EXPECT_NEAR(get(ev, "ceph.osd.replica_wait_network_pct", "osd.2"), 100.0 * 31 / 36 * network_ms / 31, 1e-9);
        EXPECT_EQ(ceph_rule_fires(ev, "ceph.replica_wait_network", "osd.2"), commit < 20) << commit;
    }
}

// Peers on other hosts: no local figures of theirs, but the primary's own
// heartbeats measure the round trip to each. A round trip that takes most of
// the replica wait is the network's share; one of half a millisecond is not.
TEST(CephAttribution, ReplicaWaitOnASlowNetworkIsTracedToTheFarthestPeer) {
    for (const double rtt : {30.0, 0.5}) {
        Evidence ev;
        ev.window.duration_s = 10;
        ev.collectors.push_back({"ceph", true, "", layer::ceph()});
        osd(ev, "osd.0", "sdb",
            {{"ceph.osd.client_write_ops", 500}, {"ceph.osd.client_write_latency_ms", 45}, {"ceph.osd.client_write_process_ms", 44.5},
             {"ceph.osd.client_write_prepare_ms", 0.5}, {"ceph.bluestore.commit_ms", 4}});
        ev.add_fact("ceph.osd.replica_peers", {{"osd", "osd.0"}}, "osd.7,osd.9", {"admin_socket", "test"});
        ev.add_metric("ceph.osd.peer_ping_ms", {{"osd", "osd.0"}, {"peer", "osd.7"}}, 0.4, "ms", {"admin_socket", "test"});
        ev.add_metric("ceph.osd.peer_ping_ms", {{"osd", "osd.0"}, {"peer", "osd.9"}}, rtt, "ms", {"admin_socket", "test"});
        ev.add_metric("ceph.osd.peer_ping_ms", {{"osd", "osd.0"}, {"peer", "osd.3"}}, 90, "ms", {"admin_socket", "test"});  // not a replica peer
        add_ceph_derived_metrics(ev);
        // replica wait = 44.5 - 0.5 - 4 = 40 ms of 45.
        EXPECT_EQ(ev.find_fact("ceph.osd.slowest_ping_peer", {{"osd", "osd.0"}})->value, "osd.9");
        EXPECT_NEAR(get(ev, "ceph.osd.replica_ping_ms", "osd.0"), rtt, 1e-9);
        EXPECT_NEAR(get(ev, "ceph.osd.replica_wait_network_pct", "osd.0"), 100.0 * 40 / 45 * rtt / 40, 1e-9);
        EXPECT_EQ(ev.find_fact("ceph.osd.slowest_peer", {{"osd", "osd.0"}}), nullptr);   // no local peer figures
        EXPECT_EQ(ceph_rule_fires(ev, "ceph.replica_wait_network", "osd.0"), rtt > 10) << rtt;
    }
}
