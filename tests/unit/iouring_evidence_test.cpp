#include <gtest/gtest.h>

#include "collectors/bpf/iouring_bpf.hpp"

using namespace iodiag;

namespace {
IouringRingStats ring(uint32_t pid, uint64_t id, uint64_t writes, uint64_t punted_writes) {
    IouringRingStats r;
    r.pid = pid;
    r.ring = id;
    r.comm = "fio";
    r.submitted[1] = writes;
    r.punted[1] = punted_writes;
    r.completed = writes;
    r.lat_sum_ns = writes * 100000;   // 100 us each
    r.iowq_ns = punted_writes * 90000; // 90 us of each punted one in a worker
    r.lat_hist.assign(32, 0);
    r.lat_hist[6] = writes;           // [64, 127] us
    r.cqwait_count = 10;
    r.cqwait_sum_ns = 10 * 2000000;
    r.cqwait_hist.assign(32, 0);
    r.cqwait_hist[10] = 10;
    return r;
}
}  // namespace

TEST(IouringEvidence, PuntShareAndLatencyPerProcessAndGlobal) {
    Evidence ev;
    add_iouring_evidence({ring(100, 0xffff1000, 1000, 1000), ring(200, 0xffff2000, 1000, 0)}, 5.0, "tp_btf", ev);
    EXPECT_DOUBLE_EQ(ev.find_metric("iouring.rw_punt_share_pct")->value, 50.0);
    EXPECT_DOUBLE_EQ(ev.find_metric("iouring.proc.rw_punt_share_pct", {{"pid", "100"}})->value, 100.0);
    EXPECT_DOUBLE_EQ(ev.find_metric("iouring.proc.rw_punt_share_pct", {{"pid", "200"}})->value, 0.0);
    EXPECT_DOUBLE_EQ(ev.find_metric("iouring.punted_writes")->value, 1000);
    EXPECT_DOUBLE_EQ(ev.find_metric("iouring.latency_mean_us")->value, 100);
    EXPECT_DOUBLE_EQ(ev.find_metric("iouring.iowq_time_pct")->value, 45.0);   // 90 us of 200 us per pair
    const auto* h = ev.find_histogram("iouring.latency_us");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->hist.total(), 2000u);
    EXPECT_DOUBLE_EQ(ev.find_metric("iouring.cq_wait_total_ms")->value, 40);
    EXPECT_EQ(ev.find_fact("iouring.proc.comm", {{"pid", "100"}})->value, "fio");
    ASSERT_TRUE(ev.find_metric("iouring.ring.submitted", {{"pid", "100"}, {"ring", "0xffff1000"}}));
    EXPECT_EQ(ev.find_metric("iouring.read_punt_share_pct"), nullptr);   // no reads: no share
    MetricCatalog cat;
    cat.add_all(iouring_metric_specs());
    for (const auto& m : ev.metrics) EXPECT_TRUE(cat.find(m.name)) << m.name;
    for (const auto& f : ev.facts) EXPECT_TRUE(cat.find(f.name)) << f.name;
    for (const auto& x : ev.histograms) EXPECT_TRUE(cat.find(x.name)) << x.name;
}

TEST(IouringEvidence, NoTrafficMeansNoShareNotZeroShare) {
    Evidence ev;
    add_iouring_evidence({}, 5.0, "raw_tp", ev);
    EXPECT_EQ(ev.find_metric("iouring.rw_punt_share_pct"), nullptr);
    EXPECT_DOUBLE_EQ(ev.find_metric("iouring.rw_submitted")->value, 0);
    EXPECT_EQ(ev.find_fact("iouring.attach_mode")->value, "raw_tp");
}
