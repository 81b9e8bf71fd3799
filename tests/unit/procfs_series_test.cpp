// Per-interval series of the procfs collectors (psi, vmstat, diskstats):
// interval i is the difference between two cumulative snapshots over the time
// really measured between them; a source that could not be read at one sample
// gets no series rather than a made-up value.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "collectors/procfs/diskstats.hpp"
#include "collectors/procfs/psi.hpp"
#include "collectors/procfs/vmstat.hpp"
#include "tests/unit/procsys_fixtures.hpp"

using namespace iodiag;
using namespace iodiag::fixtures;
using std::chrono::milliseconds;

namespace {

const auto kT0 = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);

std::vector<double> series(const Evidence& ev, const std::string& name, const Labels& labels = {}) {
    const ValueSeries* s = ev.series.find_values(name, labels);
    if (!s) {
        ADD_FAILURE() << "series " << name << " missing";
        return {};
    }
    return s->intervals;
}

// A writable copy of the fixture tree, removed at the end of the test.
struct TreeCopy {
    explicit TreeCopy(const std::string& from) {
        char tmpl[] = "/tmp/iodiag-series-XXXXXX";
        root = mkdtemp(tmpl);
        std::filesystem::copy(from, root, std::filesystem::copy_options::recursive);
    }
    ~TreeCopy() { std::filesystem::remove_all(root); }
    void write(const std::string& rel, const std::string& text) const { std::ofstream(root + rel) << text; }
    std::string root;
};

}  // namespace

TEST(PsiSeries, ShareOfEachMeasuredInterval) {
    IntervalSnapshots<PsiTotals> snaps;
    snaps.begin_at(kT0, {1'000'000, 500'000});
    snaps.take_at(kT0 + milliseconds(1000), PsiTotals{1'500'000, 500'000});   // some 0.5 s of 1 s
    snaps.take_at(kT0 + milliseconds(1500), PsiTotals{2'000'000, 750'000});   // 0.5 s of 0.5 s, full 0.25 s
    Evidence ev;
    add_psi_series("io", snaps, "/proc/pressure/io", ev);
    EXPECT_EQ(series(ev, "psi.io_some_pct"), (std::vector<double>{50, 100}));
    EXPECT_EQ(series(ev, "psi.io_full_pct"), (std::vector<double>{0, 50}));
    EXPECT_EQ(ev.series.find_values("psi.io_some_pct")->unit, "pct");
    EXPECT_NE(ev.series.find_values("psi.io_some_pct")->provenance.source.find("/proc/pressure/io"),
              std::string::npos);
}

TEST(PsiSeries, MissingKindAndBackwardsTotalGiveNoSeries) {
    IntervalSnapshots<PsiTotals> snaps;
    snaps.begin_at(kT0, {1'000, std::nullopt});   // a cpu file before 5.13: no "full" line
    snaps.take_at(kT0 + milliseconds(1000), PsiTotals{900, std::nullopt});
    Evidence ev;
    add_psi_series("cpu", snaps, "/proc/pressure/cpu", ev);
    EXPECT_TRUE(ev.series.values.empty());
}

TEST(PsiSeries, AnUnreadableSampleDropsTheSeriesNotTheWindow) {
    TreeCopy tree(kGuest);
    PsiCollector c;
    CollectOptions opts;
    opts.root = tree.root;
    ASSERT_TRUE(c.start(opts).available);
    c.sample(0);
    std::filesystem::rename(tree.root + "/proc/pressure/io", tree.root + "/io.away");
    c.sample(1);
    std::filesystem::rename(tree.root + "/io.away", tree.root + "/proc/pressure/io");
    c.sample(2);
    Evidence ev;
    c.finish(ev);
    EXPECT_NE(ev.find_metric("psi.io_some_pct"), nullptr);          // window: before and after were read
    EXPECT_EQ(ev.series.find_values("psi.io_some_pct"), nullptr);   // interval 1 and 2 unknown
    EXPECT_EQ(series(ev, "psi.memory_some_pct").size(), 3u);        // memory was read every time
}

TEST(VmstatSeries, DeltasPerIntervalAndGaugesAtEachEnd) {
    auto counters = [](std::uint64_t stall_dma32, std::uint64_t stall_normal, std::uint64_t dirtied,
                       std::uint64_t nr_dirty, std::uint64_t threshold) {
        return vmstat_series_snapshot(VmstatCounters{{"allocstall_dma32", stall_dma32},
                                                     {"allocstall_normal", stall_normal},
                                                     {"nr_dirtied", dirtied},
                                                     {"nr_dirty", nr_dirty},
                                                     {"nr_dirty_threshold", threshold}});
    };
    IntervalSnapshots<VmstatSeriesSnapshot> snaps;
    snaps.begin_at(kT0, counters(1, 10, 1000, 500, 90000));
    snaps.take_at(kT0 + milliseconds(1000), counters(1, 12, 1800, 600, 90000));
    snaps.take_at(kT0 + milliseconds(2000), counters(3, 15, 1900, 40, 512));   // vm.dirty_bytes made tiny
    Evidence ev;
    add_vmstat_series(snaps, ev);
    EXPECT_EQ(series(ev, "vmstat.allocstall"), (std::vector<double>{2, 5}));   // summed over zones
    EXPECT_EQ(series(ev, "vmstat.nr_dirtied"), (std::vector<double>{800, 100}));
    EXPECT_EQ(series(ev, "vmstat.nr_dirty"), (std::vector<double>{600, 40}));
    EXPECT_EQ(series(ev, "vmstat.nr_dirty_threshold"), (std::vector<double>{90000, 512}));
    EXPECT_EQ(ev.series.find_values("vmstat.nr_dirty")->unit, "pages");
    EXPECT_EQ(ev.series.find_values("vmstat.allocstall")->unit, "count");
    // Counters this "kernel" lacks have no series, rather than zeros.
    EXPECT_EQ(ev.series.find_values("vmstat.pgmajfault"), nullptr);
    EXPECT_EQ(ev.series.find_values("vmstat.nr_writeback"), nullptr);
}

TEST(VmstatSeries, CounterGoingBackwardsInOneIntervalHasNoSeries) {
    IntervalSnapshots<VmstatSeriesSnapshot> snaps;
    snaps.begin_at(kT0, vmstat_series_snapshot({{"pgmajfault", 10}, {"compact_stall", 1}}));
    snaps.take_at(kT0 + milliseconds(1000), vmstat_series_snapshot({{"pgmajfault", 5}, {"compact_stall", 2}}));
    Evidence ev;
    add_vmstat_series(snaps, ev);
    EXPECT_EQ(ev.series.find_values("vmstat.pgmajfault"), nullptr);
    EXPECT_EQ(series(ev, "vmstat.compact_stall"), std::vector<double>{1});
}

TEST(VmstatSeries, CollectorSamplesTheFixtureTree) {
    VmstatCollector c;
    CollectOptions opts;
    opts.root = kGuest;
    ASSERT_TRUE(c.start(opts).available);
    c.sample(0);
    c.sample(1);
    Evidence ev;
    c.finish(ev);
    EXPECT_EQ(series(ev, "vmstat.pgmajfault"), (std::vector<double>{0, 0}));   // the same file each time
    EXPECT_EQ(series(ev, "vmstat.nr_dirty"), (std::vector<double>{16509, 16509}));
    for (const auto& s : ev.series.values) EXPECT_EQ(s.intervals.size(), 2u) << s.name;
}

namespace {

DiskStatsRecord disk(const std::string& name, std::uint64_t reads, std::uint64_t read_ticks, std::uint64_t writes,
                     std::uint64_t write_ticks, std::uint64_t io_ticks) {
    DiskStatsRecord r;
    r.major = 254, r.name = name;
    r.reads = reads, r.read_ticks_ms = read_ticks, r.writes = writes, r.write_ticks_ms = write_ticks;
    r.io_ticks_ms = io_ticks;
    r.has_discard = r.has_flush = true;
    return r;
}

DiskSeriesSnapshot snapshot(std::initializer_list<DiskStatsRecord> recs) {
    std::map<std::string, DiskStatsRecord> m;
    std::vector<std::string> names;
    for (const auto& r : recs) m[r.name] = r, names.push_back(r.name);
    return disk_series_snapshot(m, names);
}

}  // namespace

TEST(DiskSeries, IopsAwaitAndUtilisationPerInterval) {
    IntervalSnapshots<DiskSeriesSnapshot> snaps;
    snaps.begin_at(kT0, snapshot({disk("vda", 100, 50, 100, 50, 1000), disk("sdb", 5, 5, 5, 5, 5)}));
    // 1 s: 200 reads taking 300 ms + 100 writes taking 300 ms, busy 400 ms
    snaps.take_at(kT0 + milliseconds(1000),
                  snapshot({disk("vda", 300, 350, 200, 350, 1400), disk("sdb", 5, 5, 5, 5, 5)}));
    // 0.5 s: nothing completed, nothing in flight
    snaps.take_at(kT0 + milliseconds(1500),
                  snapshot({disk("vda", 300, 350, 200, 350, 1400), disk("sdb", 5, 5, 5, 5, 5)}));
    Evidence ev;
    add_disk_series(snaps, {"vda", "sdb"}, ev);
    const Labels vda{{"device", "vda"}};
    EXPECT_EQ(series(ev, "disk.iops", vda), (std::vector<double>{300, 0}));
    EXPECT_EQ(series(ev, "disk.await_ms", vda), (std::vector<double>{2, 0}));
    EXPECT_EQ(series(ev, "disk.util_pct", vda), (std::vector<double>{40, 0}));
    // sdb did nothing in the whole window: no series to look at.
    EXPECT_EQ(ev.series.find_values("disk.iops", {{"device", "sdb"}}), nullptr);
}

TEST(DiskSeries, ReplacedOrVanishedDeviceHasNoSeries) {
    IntervalSnapshots<DiskSeriesSnapshot> snaps;
    snaps.begin_at(kT0, snapshot({disk("loop0", 100, 10, 0, 0, 100), disk("loop1", 1, 1, 0, 0, 1)}));
    snaps.take_at(kT0 + milliseconds(1000), snapshot({disk("loop0", 5, 1, 0, 0, 5)}));   // re-attached; loop1 gone
    Evidence ev;
    add_disk_series(snaps, {"loop0", "loop1"}, ev);
    EXPECT_TRUE(ev.series.values.empty());
}

TEST(DiskSeries, CollectorSeriesFollowTheFile) {
    TreeCopy tree(kGuest);
    DiskstatsCollector c;
    CollectOptions opts;
    opts.root = tree.root;
    opts.devices = {"vda"};
    ASSERT_TRUE(c.start(opts).available);
    c.sample(0);   // nothing changed
    std::ifstream in(kGuest + "/proc/diskstats");
    std::string text((std::istreambuf_iterator<char>(in)), {}), out, line;
    std::istringstream lines(text);
    while (std::getline(lines, line)) {
        if (line.find(" vda ") != std::string::npos) {
            // +10 reads taking 40 ms in all (fields 4 and 7), io_ticks +30 ms (field 13)
            std::istringstream f(line);
            std::vector<std::string> v{std::istream_iterator<std::string>(f), {}};
            v[3] = std::to_string(std::stoull(v[3]) + 10);
            v[6] = std::to_string(std::stoull(v[6]) + 40);
            v[12] = std::to_string(std::stoull(v[12]) + 30);
            line.clear();
            for (const auto& x : v) line += " " + x;
        }
        out += line + "\n";
    }
    tree.write("/proc/diskstats", out);
    c.sample(1);
    Evidence ev;
    c.finish(ev);
    const auto await = series(ev, "disk.await_ms", {{"device", "vda"}});
    ASSERT_EQ(await.size(), 2u);
    EXPECT_EQ(await[0], 0);
    EXPECT_DOUBLE_EQ(await[1], 4);
    const auto iops = series(ev, "disk.iops", {{"device", "vda"}});
    EXPECT_EQ(iops[0], 0);
    EXPECT_GT(iops[1], 0);   // 10 over the few microseconds between the samples
    EXPECT_TRUE(std::isfinite(iops[1]));
}
