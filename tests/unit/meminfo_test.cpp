#include <gtest/gtest.h>

#include <string>

#include "collectors/procfs/meminfo.hpp"
#include "collectors/text_file.hpp"
#include "tests/unit/procsys_fixtures.hpp"

using namespace iodiag;
using namespace iodiag::fixtures;

TEST(MeminfoParse, KilobytesBecomeBytesAndCountsStay) {
    const auto m = parse_meminfo("MemTotal:       24684092 kB\nActive(file):      27560 kB\nHugePages_Total:       3\n",
                                 "/proc/meminfo");
    EXPECT_EQ(m.at("MemTotal"), 24684092ull * 1024);
    EXPECT_EQ(m.at("Active(file)"), 27560ull * 1024);
    EXPECT_EQ(m.at("HugePages_Total"), 3u);
}

TEST(MeminfoParse, MalformedInputNamesFileAndLine) {
    auto expect_error = [](const std::string& text, const std::string& fragment) {
        try {
            parse_meminfo(text, "/proc/meminfo");
            ADD_FAILURE() << "no error for: " << text;
        } catch (const SourceError& e) {
            EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
        }
    };
    expect_error("", "/proc/meminfo: empty");
    expect_error("MemTotal: 10 kB\nMemFree:", "/proc/meminfo:2: expected 'Key: value [kB]'");
    expect_error("MemTotal 10 kB\n", "/proc/meminfo:1");
    expect_error("MemTotal: 10 MB\n", "/proc/meminfo:1");
    expect_error("MemTotal: ten kB\n", "/proc/meminfo:1: expected an unsigned number");
    expect_error("MemTotal: 99999999999999999999 kB\n", "out of range");
    expect_error("MemTotal: 18014398509481984 kB\n", "out of range");  // ×1024 would overflow
    expect_error("MemTotal: 1 kB\nMemTotal: 2 kB\n", "seen twice");
}

TEST(MeminfoCollector, FixtureTree) {
    MeminfoCollector c;
    CollectOptions opts;
    opts.root = kGuest;
    const auto st = c.start(opts);
    ASSERT_TRUE(st.available) << st.reason;
    Evidence ev;
    c.finish(ev);
    ASSERT_EQ(ev.metrics.size(), 8u);
    const Metric* free = ev.find_metric("mem.free_bytes");
    ASSERT_NE(free, nullptr);
    EXPECT_DOUBLE_EQ(free->value, 22218200.0 * 1024);
    EXPECT_EQ(free->unit, "bytes");
    EXPECT_EQ(free->provenance.kind, "file");
    for (const char* n : {"mem.total_bytes", "mem.available_bytes", "mem.cached_bytes", "mem.dirty_bytes",
                          "mem.writeback_bytes", "mem.active_file_bytes", "mem.inactive_file_bytes"})
        EXPECT_NE(ev.find_metric(n), nullptr) << n;
}

TEST(MeminfoCollector, EmptyAndMissingAreUnavailableNamingTheFile) {
    MeminfoCollector c;
    CollectOptions opts;
    opts.root = kBroken;
    auto st = c.start(opts);
    EXPECT_FALSE(st.available);
    EXPECT_EQ(st.reason, kBroken + "/proc/meminfo: empty");
    opts.root = kGuest + "/does-not-exist";
    st = c.start(opts);
    EXPECT_FALSE(st.available);
    EXPECT_NE(st.reason.find("/does-not-exist/proc/meminfo: No such file"), std::string::npos) << st.reason;
}

TEST(MeminfoCollector, RealProc) {
    MeminfoCollector c;
    const auto st = c.start(CollectOptions{});
    if (!st.available) GTEST_SKIP() << st.reason;
    Evidence ev;
    c.finish(ev);
    const Metric* total = ev.find_metric("mem.total_bytes");
    const Metric* free = ev.find_metric("mem.free_bytes");
    const Metric* avail = ev.find_metric("mem.available_bytes");
    ASSERT_TRUE(total && free && avail);
    EXPECT_GT(total->value, 0);
    EXPECT_LE(free->value, total->value);
    EXPECT_LE(avail->value, total->value);
}
