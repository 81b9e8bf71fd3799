#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "collectors/procfs/diskstats.hpp"
#include "collectors/text_file.hpp"
#include "tests/unit/procsys_fixtures.hpp"

using namespace iodiag;
using namespace iodiag::fixtures;

namespace {


// One 20-field line of vda with the given counters.
std::string line20(unsigned long reads, unsigned long rmerge, unsigned long rsect, unsigned long rticks,
                   unsigned long writes, unsigned long wmerge, unsigned long wsect, unsigned long wticks,
                   unsigned long inflight, unsigned long io_ticks, unsigned long tiq, unsigned long flushes,
                   unsigned long fticks) {
    return " 254 0 vda " + std::to_string(reads) + " " + std::to_string(rmerge) + " " + std::to_string(rsect) +
           " " + std::to_string(rticks) + " " + std::to_string(writes) + " " + std::to_string(wmerge) + " " +
           std::to_string(wsect) + " " + std::to_string(wticks) + " " + std::to_string(inflight) + " " +
           std::to_string(io_ticks) + " " + std::to_string(tiq) + " 0 0 0 0 " + std::to_string(flushes) + " " +
           std::to_string(fticks) + "\n";
}

}  // namespace

TEST(DiskstatsParse, ReadsAllThreeLayouts) {
    const std::string text =
        "   8       0 sda 10 1 80 5 20 2 160 30 0 40 35\n"                       // 14 fields (< 4.18)
        "   8      16 sdb 10 1 80 5 20 2 160 30 1 40 35 3 0 24 6\n"             // 18 fields (4.18+)
        "   8      32 sdc 10 1 80 5 20 2 160 30 2 40 35 3 0 24 6 7 8\n"         // 20 fields (5.5+)
        "   8       1 sda1 10 80 20 160\n";                                     // 7 fields: old partition
    const auto recs = parse_diskstats(text, "/proc/diskstats");
    ASSERT_EQ(recs.size(), 3u);
    EXPECT_FALSE(recs.at("sda").has_discard);
    EXPECT_FALSE(recs.at("sda").has_flush);
    EXPECT_EQ(recs.at("sda").time_in_queue_ms, 35u);
    EXPECT_TRUE(recs.at("sdb").has_discard);
    EXPECT_FALSE(recs.at("sdb").has_flush);
    EXPECT_EQ(recs.at("sdb").discard_ticks_ms, 6u);
    EXPECT_TRUE(recs.at("sdc").has_flush);
    EXPECT_EQ(recs.at("sdc").flushes, 7u);
    EXPECT_EQ(recs.at("sdc").flush_ticks_ms, 8u);
    EXPECT_EQ(recs.at("sdc").in_flight, 2u);
    EXPECT_EQ(recs.at("sdc").major, 8u);
    EXPECT_EQ(recs.at("sdc").minor, 32u);
}

TEST(DiskstatsParse, MalformedInputNamesFileAndLine) {
    auto expect_error = [](const std::string& text, const std::string& fragment) {
        try {
            parse_diskstats(text, "/proc/diskstats");
            ADD_FAILURE() << "no error for: " << text;
        } catch (const SourceError& e) {
            EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
        }
    };
    expect_error("", "/proc/diskstats: no devices");
    expect_error(" 254 0 vda 1 2 3\n", "/proc/diskstats:1: expected 14, 18 or 20 fields, got 6");
    expect_error(" 7 0 loop0 0 0 0 0 0 0 0 0 0 0 0\n 254 0 vda 1 2 3 4 5 6 7 8 9 10 x\n",
                 "/proc/diskstats:2 field 14");
    expect_error(" 254 0 vda 1 2 3 4 5 6 7 8 9 10 -11\n", "expected an unsigned number");
    expect_error(" 254 0 vda 1 2 3 4 5 6 7 8 9 10 11\n 254 0 vda 1 2 3 4 5 6 7 8 9 10 11\n", "seen twice");
    expect_error("\x01\x02\x03 garbage\n", "/proc/diskstats:1");
}

TEST(DiskstatsMetrics, RatesAwaitsAndUtilisationOverTheWindow) {
    // 2 s window: 200 reads of 8 sectors (4 KiB) taking 300 ms in all, 100
    // writes of 16 sectors taking 500 ms, 10 flushes taking 20 ms, io_ticks
    // +1000 ms (50 %), time_in_queue +1600 ms (aqu 0.8), 4 in flight at the end.
    const auto before = parse_diskstats(line20(1000, 5, 8000, 900, 500, 3, 8000, 700, 0, 5000, 9000, 50, 100), "a");
    const auto after =
        parse_diskstats(line20(1200, 25, 9600, 1200, 600, 13, 9600, 1200, 4, 6000, 10600, 60, 120), "b");
    Evidence ev;
    ASSERT_TRUE(add_disk_metrics(before.at("vda"), after.at("vda"), 2.0, ev));
    EXPECT_DOUBLE_EQ(value(ev, "disk.read_iops", "vda"), 100);
    EXPECT_DOUBLE_EQ(value(ev, "disk.write_iops", "vda"), 50);
    EXPECT_DOUBLE_EQ(value(ev, "disk.flush_iops", "vda"), 5);
    EXPECT_DOUBLE_EQ(value(ev, "disk.discard_iops", "vda"), 0);
    EXPECT_DOUBLE_EQ(value(ev, "disk.ios_per_s", "vda"), 155);
    EXPECT_DOUBLE_EQ(value(ev, "disk.read_bytes_per_s", "vda"), 1600.0 * 512 / 2);
    EXPECT_DOUBLE_EQ(value(ev, "disk.write_bytes_per_s", "vda"), 1600.0 * 512 / 2);
    EXPECT_DOUBLE_EQ(value(ev, "disk.read_await_ms", "vda"), 1.5);
    EXPECT_DOUBLE_EQ(value(ev, "disk.write_await_ms", "vda"), 5.0);
    EXPECT_DOUBLE_EQ(value(ev, "disk.flush_await_ms", "vda"), 2.0);
    EXPECT_DOUBLE_EQ(value(ev, "disk.await_ms", "vda"), (300.0 + 500 + 20) / 310);
    EXPECT_DOUBLE_EQ(value(ev, "disk.util_pct", "vda"), 50);
    EXPECT_DOUBLE_EQ(value(ev, "disk.aqu_sz", "vda"), 0.8);
    EXPECT_DOUBLE_EQ(value(ev, "disk.in_flight", "vda"), 4);
    EXPECT_DOUBLE_EQ(value(ev, "disk.read_merges_per_s", "vda"), 10);
    EXPECT_DOUBLE_EQ(value(ev, "disk.write_merges_per_s", "vda"), 5);
    EXPECT_DOUBLE_EQ(value(ev, "disk.avg_read_kb", "vda"), 4);
    EXPECT_DOUBLE_EQ(value(ev, "disk.avg_write_kb", "vda"), 8);
    const Metric* m = ev.find_metric("disk.read_await_ms", {{"device", "vda"}});
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->unit, "ms");
    EXPECT_EQ(m->provenance.kind, "derived");
    EXPECT_NE(m->provenance.source.find("/proc/diskstats"), std::string::npos);
}

TEST(DiskstatsMetrics, NoAwaitWithoutCompletedIo) {
    const auto snap = parse_diskstats(line20(1000, 5, 8000, 900, 500, 3, 8000, 700, 0, 5000, 9000, 50, 100), "a");
    Evidence ev;
    ASSERT_TRUE(add_disk_metrics(snap.at("vda"), snap.at("vda"), 1.0, ev));
    for (const char* name : {"disk.read_await_ms", "disk.write_await_ms", "disk.flush_await_ms", "disk.await_ms",
                             "disk.avg_read_kb", "disk.avg_write_kb"})
        EXPECT_EQ(ev.find_metric(name, {{"device", "vda"}}), nullptr) << name;
    EXPECT_DOUBLE_EQ(value(ev, "disk.read_iops", "vda"), 0);
    EXPECT_DOUBLE_EQ(value(ev, "disk.util_pct", "vda"), 0);
}

TEST(DiskstatsMetrics, OnlyTheKindsThatCompletedGetAnAwait) {
    const auto before = parse_diskstats(line20(1000, 5, 8000, 900, 500, 3, 8000, 700, 0, 5000, 9000, 50, 100), "a");
    const auto after = parse_diskstats(line20(1010, 5, 8080, 910, 500, 3, 8000, 700, 0, 5010, 9010, 50, 100), "b");
    Evidence ev;
    ASSERT_TRUE(add_disk_metrics(before.at("vda"), after.at("vda"), 1.0, ev));
    EXPECT_DOUBLE_EQ(value(ev, "disk.read_await_ms", "vda"), 1.0);
    EXPECT_EQ(ev.find_metric("disk.write_await_ms", {{"device", "vda"}}), nullptr);
    EXPECT_EQ(ev.find_metric("disk.flush_await_ms", {{"device", "vda"}}), nullptr);
    EXPECT_DOUBLE_EQ(value(ev, "disk.await_ms", "vda"), 1.0);
}

TEST(DiskstatsMetrics, CounterWrapSkipsTheDevice) {
    // read_ticks wrapped (32-bit milliseconds): nothing emitted, never negative.
    const auto before =
        parse_diskstats(line20(1000, 5, 8000, 4294967000ul, 500, 3, 8000, 700, 0, 5000, 9000, 50, 100), "a");
    const auto after = parse_diskstats(line20(1010, 5, 8080, 200, 500, 3, 8000, 700, 0, 5010, 9010, 50, 100), "b");
    Evidence ev;
    EXPECT_FALSE(add_disk_metrics(before.at("vda"), after.at("vda"), 1.0, ev));
    EXPECT_TRUE(ev.metrics.empty());
}

TEST(DiskstatsMetrics, UtilisationIsCappedAtTheWindow) {
    const auto before = parse_diskstats(line20(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), "a");
    const auto after = parse_diskstats(line20(1, 0, 8, 1, 0, 0, 0, 0, 0, 1004, 1004, 0, 0), "b");
    Evidence ev;
    ASSERT_TRUE(add_disk_metrics(before.at("vda"), after.at("vda"), 1.0, ev));
    EXPECT_DOUBLE_EQ(value(ev, "disk.util_pct", "vda"), 100);
}

TEST(DiskstatsCollector, FixtureTreeReportsWholeDisksOnly) {
    DiskstatsCollector c;
    CollectOptions opts;
    opts.root = kGuest;
    const auto st = c.start(opts);
    ASSERT_TRUE(st.available) << st.reason;
    EXPECT_EQ(st.layers, std::vector<std::string>{"device"});
    Evidence ev;
    c.finish(ev);
    const auto devices = ev.instances("device");
    // Whole disks of the fixture's /sys/block that /proc/diskstats lists;
    // sdb1 (a partition) and loop2..7 (not in the fixture's /sys/block) are not.
    EXPECT_EQ(devices, (std::vector<std::string>{"loop0", "loop1", "nvme0n1", "sdb", "vda", "zram0"}));
    EXPECT_DOUBLE_EQ(value(ev, "disk.read_iops", "vda"), 0);  // same file twice: nothing happened
    EXPECT_DOUBLE_EQ(value(ev, "disk.in_flight", "nvme0n1"), 3);
    EXPECT_EQ(ev.find_metric("disk.read_await_ms", {{"device", "vda"}}), nullptr);
    for (const auto& m : ev.metrics) EXPECT_GE(m.value, 0) << m.name;
}

TEST(DiskstatsCollector, DeviceFilter) {
    DiskstatsCollector c;
    CollectOptions opts;
    opts.root = kGuest;
    opts.devices = {"/dev/vda", "sdb1", "nope"};
    const auto st = c.start(opts);
    ASSERT_TRUE(st.available) << st.reason;
    EXPECT_NE(st.reason.find("sdb1"), std::string::npos) << st.reason;
    EXPECT_NE(st.reason.find("nope"), std::string::npos) << st.reason;
    Evidence ev;
    c.finish(ev);
    EXPECT_EQ(ev.instances("device"), std::vector<std::string>{"vda"});

    DiskstatsCollector none;
    opts.devices = {"nope"};
    const auto st2 = none.start(opts);
    EXPECT_FALSE(st2.available);
    EXPECT_NE(st2.reason.find("nope"), std::string::npos) << st2.reason;
}

TEST(DiskstatsCollector, TruncatedFileIsUnavailableNamingIt) {
    DiskstatsCollector c;
    CollectOptions opts;
    opts.root = kBroken;
    const auto st = c.start(opts);
    EXPECT_FALSE(st.available);
    EXPECT_NE(st.reason.find(kBroken + "/proc/diskstats:10"), std::string::npos) << st.reason;
}

TEST(DiskstatsCollector, MissingFileIsUnavailableNamingIt) {
    DiskstatsCollector c;
    CollectOptions opts;
    opts.root = kGuest + "/does-not-exist";
    const auto st = c.start(opts);
    EXPECT_FALSE(st.available);
    EXPECT_NE(st.reason.find("/does-not-exist/proc/diskstats: No such file"), std::string::npos) << st.reason;
}

TEST(DiskstatsCollector, RealProcOverAShortWindow) {
    DiskstatsCollector c;
    const auto st = c.start(CollectOptions{});
    if (!st.available) GTEST_SKIP() << "no /proc/diskstats here: " << st.reason;
    usleep(200 * 1000);
    Evidence ev;
    c.finish(ev);
    const auto devices = ev.instances("device");
    ASSERT_FALSE(devices.empty());
    for (const auto& dev : devices) {
        const Metric* util = ev.find_metric("disk.util_pct", {{"device", dev}});
        ASSERT_NE(util, nullptr) << dev;
        EXPECT_GE(util->value, 0);
        EXPECT_LE(util->value, 100);
        for (const char* aw : {"disk.read_await_ms", "disk.write_await_ms", "disk.await_ms", "disk.flush_await_ms"})
            if (const Metric* m = ev.find_metric(aw, {{"device", dev}})) {
                EXPECT_GE(m->value, 0) << aw;
            }
        EXPECT_NE(ev.find_metric("disk.in_flight", {{"device", dev}}), nullptr);
    }
    for (const auto& m : ev.metrics) EXPECT_GE(m.value, 0) << m.name;
    if (std::filesystem::is_directory("/sys/block/vda")) {
        EXPECT_NE(std::find(devices.begin(), devices.end(), "vda"), devices.end());
    }
}
