#include <gtest/gtest.h>

#include <string>

#include "collectors/text_file.hpp"
#include "collectors/procfs/vmstat.hpp"
#include "tests/unit/procsys_fixtures.hpp"

using namespace iodiag;
using namespace iodiag::fixtures;

TEST(VmstatParse, RealSample) {
    const auto c = parse_vmstat(read_text_file(kGuest + "/proc/vmstat"), "vmstat");
    EXPECT_EQ(c.at("nr_dirty_threshold"), 1155101u);
    EXPECT_EQ(c.at("nr_dirty"), 16509u);
    EXPECT_TRUE(c.count("allocstall_normal"));
}

TEST(VmstatParse, MalformedInputNamesFileAndLine) {
    auto expect_error = [](const std::string& text, const std::string& fragment) {
        try {
            parse_vmstat(text, "/proc/vmstat");
            ADD_FAILURE() << "no error for: " << text;
        } catch (const SourceError& e) {
            EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
        }
    };
    expect_error("", "/proc/vmstat: empty");
    expect_error("\n\n", "/proc/vmstat: empty");
    expect_error("nr_dirty 5\npgmajfault\n", "/proc/vmstat:2: expected 'name value'");
    expect_error("nr_dirty 5\npgmajfault 12abc\n", "/proc/vmstat:2: expected an unsigned number");
    expect_error("nr_dirty 5\nnr_dirty 6\n", "/proc/vmstat:2: 'nr_dirty' seen twice");
    expect_error("nr_dirty 5 6\n", "/proc/vmstat:1");
}

TEST(VmstatMetrics, DeltasOfCurrentKernelCounters) {
    const auto before = parse_vmstat(
        "allocstall_dma 0\nallocstall_dma32 1\nallocstall_normal 10\nallocstall_movable 0\n"
        "pgscan_direct 100\npgsteal_direct 80\npgscan_kswapd 1000\npgsteal_kswapd 900\n"
        "pgscan_direct_throttle 7\npgmajfault 50\nworkingset_refault_anon 3\nworkingset_refault_file 30\n"
        "compact_stall 2\nnr_dirty 100\nnr_writeback 5\n",
        "a");
    const auto after = parse_vmstat(
        "allocstall_dma 0\nallocstall_dma32 2\nallocstall_normal 14\nallocstall_movable 1\n"
        "pgscan_direct 250\npgsteal_direct 180\npgscan_kswapd 1500\npgsteal_kswapd 1300\n"
        "pgscan_direct_throttle 9\npgmajfault 58\nworkingset_refault_anon 4\nworkingset_refault_file 40\n"
        "compact_stall 2\nnr_dirty 300\nnr_writeback 7\n",
        "b");
    Evidence ev;
    add_vmstat_metrics(before, after, ev);
    EXPECT_DOUBLE_EQ(value(ev, "vm.allocstall"), 6);
    EXPECT_DOUBLE_EQ(value(ev, "vm.pgscan_direct"), 150);  // pgscan_direct_throttle not counted
    EXPECT_DOUBLE_EQ(value(ev, "vm.pgsteal_direct"), 100);
    EXPECT_DOUBLE_EQ(value(ev, "vm.pgscan_kswapd"), 500);
    EXPECT_DOUBLE_EQ(value(ev, "vm.pgsteal_kswapd"), 400);
    EXPECT_DOUBLE_EQ(value(ev, "vm.pgmajfault"), 8);
    EXPECT_DOUBLE_EQ(value(ev, "vm.workingset_refault"), 11);
    EXPECT_DOUBLE_EQ(value(ev, "vm.compact_stall"), 0);
    EXPECT_DOUBLE_EQ(value(ev, "vm.nr_dirty"), 300);
    EXPECT_DOUBLE_EQ(value(ev, "vm.nr_writeback"), 7);
    EXPECT_EQ(ev.find_metric("vm.nr_dirty")->unit, "pages");
    EXPECT_EQ(ev.find_metric("vm.allocstall")->unit, "count");
}

TEST(VmstatMetrics, OldKernelCounterNamesAndMissingOnes) {
    // Pre-4.8 per-zone scan counters, a single allocstall and workingset_refault;
    // no compact_stall (CONFIG_COMPACTION off): not emitted, not an error.
    const auto before = parse_vmstat(
        "allocstall 4\npgscan_direct_dma32 10\npgscan_direct_normal 20\npgscan_direct_throttle 1\n"
        "workingset_refault 100\nnr_dirty 1\nnr_writeback 0\n",
        "a");
    const auto after = parse_vmstat(
        "allocstall 5\npgscan_direct_dma32 15\npgscan_direct_normal 40\npgscan_direct_throttle 3\n"
        "workingset_refault 160\nnr_dirty 2\nnr_writeback 0\n",
        "b");
    Evidence ev;
    add_vmstat_metrics(before, after, ev);
    EXPECT_DOUBLE_EQ(value(ev, "vm.allocstall"), 1);
    EXPECT_DOUBLE_EQ(value(ev, "vm.pgscan_direct"), 25);
    EXPECT_DOUBLE_EQ(value(ev, "vm.workingset_refault"), 60);
    EXPECT_EQ(ev.find_metric("vm.compact_stall"), nullptr);
    EXPECT_EQ(ev.find_metric("vm.pgsteal_kswapd"), nullptr);
}

TEST(VmstatMetrics, CounterGoingBackwardsIsNotReported) {
    const auto before = parse_vmstat("pgmajfault 50\ncompact_stall 3\n", "a");
    const auto after = parse_vmstat("pgmajfault 40\ncompact_stall 4\n", "b");
    Evidence ev;
    add_vmstat_metrics(before, after, ev);
    EXPECT_EQ(ev.find_metric("vm.pgmajfault"), nullptr);
    EXPECT_DOUBLE_EQ(value(ev, "vm.compact_stall"), 1);
}

TEST(VmstatCollector, FixtureTree) {
    VmstatCollector c;
    CollectOptions opts;
    opts.root = kGuest;
    const auto st = c.start(opts);
    ASSERT_TRUE(st.available) << st.reason;
    EXPECT_TRUE(st.layers.empty());
    Evidence ev;
    c.finish(ev);
    EXPECT_DOUBLE_EQ(value(ev, "vm.pgmajfault"), 0);
    EXPECT_DOUBLE_EQ(value(ev, "vm.nr_dirty"), 16509);
    EXPECT_EQ(ev.metrics.size(), 10u);
}

TEST(VmstatCollector, GarbageAndMissingAreUnavailableNamingTheFile) {
    VmstatCollector c;
    CollectOptions opts;
    opts.root = kBroken;
    auto st = c.start(opts);
    EXPECT_FALSE(st.available);
    EXPECT_NE(st.reason.find(kBroken + "/proc/vmstat:6"), std::string::npos) << st.reason;
    opts.root = kGuest + "/does-not-exist";
    st = c.start(opts);
    EXPECT_FALSE(st.available);
    EXPECT_NE(st.reason.find("/does-not-exist/proc/vmstat"), std::string::npos) << st.reason;
}

TEST(VmstatCollector, RealProc) {
    VmstatCollector c;
    const auto st = c.start(CollectOptions{});
    if (!st.available) GTEST_SKIP() << st.reason;
    Evidence ev;
    c.finish(ev);
    // Every kernel since 2.6 has these.
    EXPECT_NE(ev.find_metric("vm.pgmajfault"), nullptr);
    EXPECT_NE(ev.find_metric("vm.nr_dirty"), nullptr);
    EXPECT_NE(ev.find_metric("vm.allocstall"), nullptr);
    for (const auto& m : ev.metrics) EXPECT_GE(m.value, 0) << m.name;
}
