// The Ceph collector against fake admin sockets: good, hung, refusing,
// malformed and truncated OSDs side by side (each not-observed OSD has its
// reason, the good one is still observed), sockets that are not OSDs left
// alone, and a host without Ceph that costs nothing and says nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "collectors/ceph/ceph_admin_socket.hpp"
#include "collectors/ceph/ceph_collector.hpp"
#include "engine/evidence/layers.hpp"
#include "tests/unit/ceph_fake_admin_socket.hpp"

using namespace iodiag;
using iodiag::testing::FakeAdminSocket;
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& name) {
    std::ifstream in(std::string(IODIAG_FIXTURES) + "/ceph/" + name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

struct TempDir {
    fs::path path;
    TempDir() {
        char tmpl[] = "/tmp/iodiag-ceph-test-XXXXXX";
        path = ::mkdtemp(tmpl);
    }
    ~TempDir() { fs::remove_all(path); }
};

// The fixture dump with every client write counter advanced: 100 more writes
// taking 5 s in all (50 ms each).
std::string later_dump() {
    auto d = nlohmann::json::parse(fixture("perf_dump_16.2.15.json"));
    d["osd"]["op_w_latency"]["avgcount"] = 671;
    d["osd"]["op_w_latency"]["sum"] = 17.186440089;
    return d.dump();
}

const char* kConfig = R"({"osd_data": "/osd/ceph-0", "osd_op_queue": "wpq", "osd_op_num_shards": "0",
    "osd_op_num_shards_hdd": "5", "osd_op_num_threads_per_shard_hdd": "1", "osd_op_complaint_time": "30"})";

}  // namespace

TEST(CephAdminSocket, SpeaksTheProtocolAndNamesTheSocketInErrors) {
    TempDir t;
    const std::string good = (t.path / "good.asok").string();
    FakeAdminSocket s(good, {{"version", R"({"version": "16.2.15"})"}});
    const AdminSocketReply r = admin_socket_command(good, R"({"prefix": "version"})", 1000);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.body, R"({"version": "16.2.15"})");
    EXPECT_EQ(r.peer_pid, ::getpid());

    const AdminSocketReply none = admin_socket_command((t.path / "absent.asok").string(), "{}", 200);
    EXPECT_FALSE(none.ok);
    EXPECT_NE(none.error.find("absent.asok"), std::string::npos);

    const std::string hung = (t.path / "hung.asok").string();
    FakeAdminSocket h(hung, {}, FakeAdminSocket::Mode::Hang);
    const auto t0 = std::chrono::steady_clock::now();
    const AdminSocketReply late = admin_socket_command(hung, R"({"prefix": "perf dump"})", 200);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_FALSE(late.ok);
    EXPECT_NE(late.error.find("timed out"), std::string::npos) << late.error;
    std::printf("a hung admin socket cost %.0f ms with a 200 ms timeout\n", ms);

    const std::string huge = (t.path / "huge.asok").string();
    FakeAdminSocket hg(huge, {{"perf dump", "{}"}}, FakeAdminSocket::Mode::HugeLength);
    const AdminSocketReply big = admin_socket_command(huge, R"({"prefix": "perf dump"})", 500);
    EXPECT_FALSE(big.ok);
    EXPECT_NE(big.error.find("exceeds"), std::string::npos) << big.error;

    const std::string cut = (t.path / "cut.asok").string();
    FakeAdminSocket c(cut, {{"perf dump", fixture("perf_dump_16.2.15.json")}}, FakeAdminSocket::Mode::Truncate);
    const AdminSocketReply half = admin_socket_command(cut, R"({"prefix": "perf dump"})", 500);
    EXPECT_FALSE(half.ok);
    EXPECT_NE(half.error.find("connection closed"), std::string::npos) << half.error;
}

TEST(CephCollector, EachBadOsdIsNotObservedWithItsReasonAndTheRestGoesOn) {
    TempDir t;
    // A fixture root: /osd/ceph-0/block -> /dev/sdz, a rotational disk.
    fs::create_directories(t.path / "osd/ceph-0");
    fs::create_directories(t.path / "sys/class/block/sdz");
    fs::create_directories(t.path / "sys/block/sdz/queue");
    std::ofstream(t.path / "sys/block/sdz/queue/rotational") << "1\n";
    fs::create_symlink("/dev/sdz", t.path / "osd/ceph-0/block");
    const fs::path run = t.path / "run";
    fs::create_directories(run);
    std::map<std::string, std::string> replies{{"version", R"({"version": "16.2.15"})"},
                                               {"config show", kConfig},
                                               {"perf dump", fixture("perf_dump_16.2.15.json")},
                                               {"perf histogram dump", fixture("perf_histogram_dump_16.2.15.json")},
                                               {"dump_historic_ops", fixture("historic_ops.json")},
                                               {"dump_historic_slow_ops", fixture("historic_slow_ops_empty.json")},
                                               {"dump_ops_in_flight", fixture("ops_in_flight.json")},
                                               {"dump_osd_network", fixture("osd_network.json")}};
    FakeAdminSocket good((run / "ceph-osd.0.asok").string(), replies);
    FakeAdminSocket hung((run / "ceph-osd.1.asok").string(), {}, FakeAdminSocket::Mode::Hang);
    auto garbage = replies;
    garbage["perf dump"] = "{\"osd\": {";
    FakeAdminSocket bad((run / "ceph-osd.2.asok").string(), garbage);
    FakeAdminSocket closes((run / "ceph-osd.3.asok").string(), {}, FakeAdminSocket::Mode::CloseAtOnce);
    auto foreign = replies;
    foreign["perf dump"] = R"({"osd": {"ops": 5}, "something": {"else": {"avgcount": 1, "sum": 2}}})";
    FakeAdminSocket other_version((run / "ceph-osd.4.asok").string(), foreign);
    // Not OSDs: a client's and a monitor's sockets are left alone.
    FakeAdminSocket client((run / "ceph-client.admin.4242.94.asok").string(), replies);
    FakeAdminSocket mon((run / "ceph-mon.a.asok").string(), replies);

    CephCollectorOptions o;
    o.run_dir = run.string();
    o.socket_timeout_ms = 300;
    o.query_cluster = false;
    CephCollector col(o);
    CollectOptions opts;
    opts.root = t.path.string();
    const auto t0 = std::chrono::steady_clock::now();
    const CollectorStatus st = col.start(opts);
    const double start_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("start() with one hung OSD among five: %.0f ms (socket timeout 300 ms)\n", start_ms);
    EXPECT_TRUE(col.applicable());
    EXPECT_TRUE(st.available) << st.reason;
    for (const char* osd : {"osd.1 not observed", "osd.2 not observed", "osd.3 not observed", "osd.4 not observed"})
        EXPECT_NE(st.reason.find(osd), std::string::npos) << st.reason;
    EXPECT_NE(st.reason.find("timed out"), std::string::npos) << st.reason;
    EXPECT_EQ(st.reason.find("osd.0"), std::string::npos) << st.reason;

    good.set_reply("perf dump", later_dump());
    // A stall of a minute ago (osd.2's front 1-minute average at 12 ms) whose
    // last heartbeat is back to normal.
    auto network = nlohmann::json::parse(fixture("osd_network.json"));
    network["entries"][0]["average"]["1min"] = 12.0;
    good.set_reply("dump_osd_network", network.dump());
    Evidence ev;
    ev.collectors.push_back(st);
    col.finish(ev);
    const Labels osd0{{"osd", "osd.0"}};
    const Metric* w = ev.find_metric("ceph.osd.client_write_latency_ms", osd0);
    ASSERT_NE(w, nullptr);
    EXPECT_NEAR(w->value, 50.0, 1e-6);
    EXPECT_EQ(w->provenance.kind, "admin_socket");
    EXPECT_DOUBLE_EQ(ev.find_metric("ceph.osd.client_write_ops", osd0)->value, 100);
    ASSERT_NE(ev.find_fact("ceph.osd.device", osd0), nullptr);
    EXPECT_EQ(ev.find_fact("ceph.osd.device", osd0)->value, "sdz");
    EXPECT_EQ(ev.find_fact("ceph.osd.device_rotational", osd0)->value, "yes");
    EXPECT_EQ(ev.find_fact("ceph.osd.separate_db", osd0)->value, "no");
    EXPECT_DOUBLE_EQ(ev.find_metric("ceph.osd.op_shards", osd0)->value, 5);   // the _hdd variant
    EXPECT_DOUBLE_EQ(ev.find_metric("ceph.osd.ops_in_flight", osd0)->value, 2);
    // Heartbeat round trips to its peers (dump_osd_network 0).
    const Metric* ping = ev.find_metric("ceph.osd.peer_ping_ms", {{"osd", "osd.0"}, {"peer", "osd.2"}});
    ASSERT_NE(ping, nullptr);
    // Per interface the lower of the 1-minute average and the last round
    // trip: front min(12, 0.648), back min(0.505, 0.635); then the slower.
    EXPECT_DOUBLE_EQ(ping->value, 0.648);
    // osd.1: front min(0.518, 0.74), back min(0.445, 0.43).
    EXPECT_DOUBLE_EQ(ev.find_metric("ceph.osd.peer_ping_ms", {{"osd", "osd.0"}, {"peer", "osd.1"}})->value, 0.518);
    EXPECT_DOUBLE_EQ(ev.find_metric("ceph.host.osds")->value, 5);
    for (const char* osd : {"osd.1", "osd.2", "osd.3", "osd.4"}) {
        const Fact* why = ev.find_fact("ceph.osd.not_observed", {{"osd", osd}});
        ASSERT_NE(why, nullptr) << osd;
        EXPECT_FALSE(why->value.empty());
        EXPECT_EQ(ev.find_metric("ceph.osd.client_write_latency_ms", {{"osd", osd}}), nullptr) << osd;
    }
    EXPECT_NE(ev.find_fact("ceph.osd.not_observed", {{"osd", "osd.4"}})->value.find("Ceph version"), std::string::npos);
    EXPECT_EQ(client.commands(), 0);
    EXPECT_EQ(mon.commands(), 0);
}

TEST(CephCollector, AllOsdsFailingMakesTheCollectorUnavailableNotAbsent) {
    TempDir t;
    FakeAdminSocket closes((t.path / "ceph-osd.7.asok").string(), {}, FakeAdminSocket::Mode::CloseAtOnce);
    CephCollectorOptions o;
    o.run_dir = t.path.string();
    o.query_cluster = false;
    CephCollector col(o);
    const CollectorStatus st = col.start({});
    EXPECT_TRUE(col.applicable());   // a Ceph node whose OSD is not observed: its layers are "not observed"
    EXPECT_FALSE(st.available);
    EXPECT_NE(st.reason.find("osd.7"), std::string::npos);
    EXPECT_EQ(st.layers, layer::ceph());
}

TEST(CephCollector, AHostWithoutCephPaysNothing) {
    CephCollectorOptions o;
    o.run_dir = "/nonexistent/iodiag/ceph-run";
    CephCollector col(o);
    const auto t0 = std::chrono::steady_clock::now();
    const CollectorStatus st = col.start({});
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    std::printf("start() on a host without Ceph: %.1f us\n", us);
    EXPECT_FALSE(col.applicable());
    EXPECT_FALSE(st.available);
    EXPECT_NE(st.reason.find("not a Ceph node"), std::string::npos);
    // The default location under a fixture root without /var/run/ceph.
    CephCollector def;
    CollectOptions opts;
    opts.root = "/nonexistent-root";
    ::unsetenv("IODIAG_CEPH_RUN_DIR");
    def.start(opts);
    EXPECT_FALSE(def.applicable());
}
