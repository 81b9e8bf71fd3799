#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <string>

#include "collectors/procfs/dirty_limits.hpp"
#include "collectors/text_file.hpp"
#include "collectors/procfs/vmstat.hpp"
#include "tests/unit/procsys_fixtures.hpp"

using namespace iodiag;
using namespace iodiag::fixtures;

TEST(Zoneinfo, TotalReserveAsCalculateTotalreservePages) {
    // DMA: max(protection) 6859 + high 54 > managed 3840 -> 3840
    // DMA32: protection of higher zones 3840 + high 11130 = 14970
    // Normal: 0 + 14156; Movable: 32 capped at managed 0; Device: 0.
    EXPECT_EQ(parse_totalreserve_pages(read_text_file(kGuest + "/proc/zoneinfo"), "zoneinfo"), 32966u);
}

TEST(Zoneinfo, OnlyOwnAndHigherZonesProtectionAndBoostRemoved) {
    const std::string text =
        "Node 0, zone      DMA\n  pages free 10\n        boost    0\n        high     5\n"
        "        managed  1000\n        protection: (0, 100, 200)\n"
        "Node 0, zone   Normal\n  pages free 10\n        boost    40\n        high     90\n"
        "        managed  100000\n        protection: (999, 0, 0)\n"
        "  pagesets\n    cpu: 0\n              count:    0\n              high:     6785\n"
        "Node 1, zone   Normal\n  pages free 10\n        boost    0\n        high     7\n"
        "        managed  100000\n        protection: (0, 0, 0)\n";
    // DMA 200+5; node 0 Normal (index 1): entries j>=1 are 0, high 90-40 = 50
    // (the 999 belongs to a lower zone, the pageset "high:" is not the
    // watermark); node 1 Normal (index 0 of its node): 0 + 7.
    EXPECT_EQ(parse_totalreserve_pages(text, "zoneinfo"), 205u + 50u + 7u);
}

TEST(Zoneinfo, TruncatedOrGarbageNamesFileAndLine) {
    auto expect_error = [](const std::string& text, const std::string& fragment) {
        try {
            parse_totalreserve_pages(text, "/proc/zoneinfo");
            ADD_FAILURE() << "no error for: " << text;
        } catch (const SourceError& e) {
            EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
        }
    };
    expect_error("", "/proc/zoneinfo: no zones");
    expect_error(read_text_file(kBroken + "/proc/zoneinfo"), "/proc/zoneinfo:13: zone without its high");
    expect_error("garbage\n", "/proc/zoneinfo:1: data before the first");
    expect_error("Node 0, zone DMA\n high 5\n managed 10\n protection: (0, 1", "/proc/zoneinfo:4: malformed protection");
    expect_error("Node 0, zone DMA\n high x\n", "/proc/zoneinfo:2: expected an unsigned number");
    expect_error("Node 0 zone\n", "/proc/zoneinfo:1: expected 'Node N, zone NAME'");
}

TEST(DirtyLimits, KernelArithmeticWithRatios) {
    DirtyInputs in;
    in.page_size = 4096;
    in.free_pages = 1000000;
    in.totalreserve_pages = 30000;
    in.active_file = 50000;
    in.inactive_file = 70000;
    in.dirty_ratio = 20;
    in.dirty_background_ratio = 10;
    const auto lim = compute_dirty_limits(in);
    EXPECT_EQ(lim.dirtyable, 1090001u);
    EXPECT_EQ(lim.thresh, 819u * 1090001u / 4096u);   // 20 % in parts per page: 819/4096
    EXPECT_EQ(lim.bg_thresh, 409u * 1090001u / 4096u);
    EXPECT_EQ(lim.freerun, (lim.thresh + lim.bg_thresh) / 2);
}

TEST(DirtyLimits, BytesOverrideRatiosAndBackgroundIsHalvedWhenNotBelow) {
    DirtyInputs in;
    in.free_pages = 1000000;
    in.dirty_ratio = 20;
    in.dirty_background_ratio = 10;
    in.dirty_bytes = 40 * 1024 * 1024 + 1;     // rounded up to pages
    in.dirty_background_bytes = 80 * 1024 * 1024;
    const auto lim = compute_dirty_limits(in);
    EXPECT_EQ(lim.thresh, 10241u);
    EXPECT_EQ(lim.bg_thresh, 10241u / 2);
}

TEST(DirtyLimits, ReservesLargerThanFreeMemory) {
    DirtyInputs in;
    in.free_pages = 100;
    in.totalreserve_pages = 5000;
    in.inactive_file = 10;
    in.dirty_ratio = 20;
    in.dirty_background_ratio = 10;
    EXPECT_EQ(compute_dirty_limits(in).dirtyable, 11u);
}

TEST(DirtyLimitsCollector, FixtureMatchesTheKernelsOwnThresholds) {
    if (sysconf(_SC_PAGESIZE) != 4096) GTEST_SKIP() << "fixture was taken with 4 KiB pages";
    DirtyLimitsCollector c;
    CollectOptions opts;
    opts.root = kGuest;
    const auto st = c.start(opts);
    ASSERT_TRUE(st.available) << st.reason;
    Evidence ev;
    c.finish(ev);
    // The fixture's /proc/vmstat carries the kernel's own nr_dirty_threshold
    // (1155101) and nr_dirty_background_threshold (576845), read at the same
    // moment: the computation reproduces them exactly, and so is used.
    EXPECT_DOUBLE_EQ(value(ev, "dirty.limit_bytes"), 1155101.0 * 4096);
    EXPECT_DOUBLE_EQ(value(ev, "dirty.background_limit_bytes"), 576845.0 * 4096);
    EXPECT_EQ(ev.find_metric("dirty.limit_bytes")->provenance.kind, "derived");
    EXPECT_DOUBLE_EQ(value(ev, "dirty.dirtyable_bytes"), 5776919.0 * 4096);
    EXPECT_DOUBLE_EQ(value(ev, "dirty.freerun_bytes"), ((1155101 + 576845) / 2) * 4096.0);
    EXPECT_DOUBLE_EQ(value(ev, "dirty.pct_of_limit"), 16509.0 / 1155101 * 100);
    EXPECT_DOUBLE_EQ(value(ev, "vm.dirty_ratio"), 20);
    EXPECT_DOUBLE_EQ(value(ev, "vm.dirty_background_ratio"), 10);
    EXPECT_DOUBLE_EQ(value(ev, "vm.dirty_bytes"), 0);
    EXPECT_DOUBLE_EQ(value(ev, "vm.dirty_background_bytes"), 0);
    EXPECT_DOUBLE_EQ(value(ev, "vm.dirty_expire_centisecs"), 3000);
    EXPECT_DOUBLE_EQ(value(ev, "vm.dirty_writeback_centisecs"), 500);
    EXPECT_DOUBLE_EQ(value(ev, "vm.min_free_kbytes"), 67584);
    EXPECT_DOUBLE_EQ(value(ev, "vm.swappiness"), 60);
    EXPECT_EQ(ev.find_metric("vm.dirty_ratio")->provenance.source, "/proc/sys/vm/dirty_ratio");
}

TEST(DirtyLimitsCollector, GarbageSysctlIsUnavailableNamingTheFile) {
    DirtyLimitsCollector c;
    CollectOptions opts;
    opts.root = kBroken;
    const auto st = c.start(opts);
    EXPECT_FALSE(st.available);
    EXPECT_NE(st.reason.find(kBroken + "/proc/sys/vm/dirty_ratio: expected an unsigned number, got 'twenty'"),
              std::string::npos)
        << st.reason;
    opts.root = kGuest + "/does-not-exist";
    const auto st2 = c.start(opts);
    EXPECT_FALSE(st2.available);
    EXPECT_NE(st2.reason.find("/does-not-exist/proc/sys/vm/dirty_ratio: No such file"), std::string::npos)
        << st2.reason;
}

TEST(DirtyLimitsCollector, RealProcAgreesWithTheKernel) {
    DirtyLimitsCollector c;
    const auto st = c.start(CollectOptions{});
    if (!st.available) GTEST_SKIP() << st.reason;
    Evidence ev;
    c.finish(ev);
    const auto vmstat = parse_vmstat(read_text_file("/proc/vmstat"), "/proc/vmstat");
    if (!vmstat.count("nr_dirty_threshold")) GTEST_SKIP() << "kernel does not export nr_dirty_threshold";
    const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
    const double kernel_limit = static_cast<double>(vmstat.at("nr_dirty_threshold")) * page;
    // Free and file pages move between the reads: within 2 %, and computed
    // (not the kernel's figure taken as a fallback).
    const Metric* limit = ev.find_metric("dirty.limit_bytes");
    ASSERT_NE(limit, nullptr);
    EXPECT_NEAR(limit->value, kernel_limit, 0.02 * kernel_limit);
    EXPECT_EQ(limit->provenance.kind, "derived") << limit->provenance.source;
    EXPECT_LE(value(ev, "dirty.background_limit_bytes"), limit->value);
    EXPECT_LE(value(ev, "dirty.freerun_bytes"), limit->value);
    EXPECT_GE(value(ev, "dirty.pct_of_limit"), 0);
}
