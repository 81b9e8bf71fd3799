// Live, as root: a 10 s recording in which a real fault starts halfway (the
// lab's dirty_midwindow: a buffered writer on ext4 on a loop device, and
// vm.dirty_bytes cut to 2 MiB at second 5, put back on every exit path by the
// lab script). The per-interval series must show the change in numbers, the
// heatmap of write() latency must show it, and the report of the recording
// passes the browser checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include <unistd.h>

#include "engine/evidence/bundle.hpp"
#include "engine/render/heatmap.hpp"
#include "tests/live/live_support.hpp"
#include "tests/unit/series_evidence.hpp"

using namespace iodiag;
using namespace iodiag::live;

namespace {

const std::string kIodiag = IODIAG_BINARY;
const std::string kSource = IODIAG_SOURCE_DIR;

#define REQUIRE(reason_expr)                          \
    do {                                              \
        const std::string reason_ = (reason_expr);    \
        if (!reason_.empty()) GTEST_SKIP() << reason_; \
    } while (0)

double mean(const std::vector<double>& v, size_t from, size_t to) {
    double s = 0;
    for (size_t i = from; i < to; ++i) s += v[i];
    return to > from ? s / static_cast<double>(to - from) : 0;
}

// Share of `layer` in the sum of layer.time_us over intervals [from, to).
double layer_share(const Series& s, const std::string& layer, size_t from, size_t to) {
    double mine = 0, all = 0;
    for (const auto& v : s.values) {
        if (v.name != "layer.time_us") continue;
        for (size_t i = from; i < to; ++i) {
            all += v.intervals[i];
            if (v.labels.count("layer") && v.labels.at("layer") == layer) mine += v.intervals[i];
        }
    }
    return all > 0 ? mine / all : 0;
}

// Share of the operations of intervals [from, to) that took 1 ms or more.
double slow_fraction(const Heatmap& h, size_t from, size_t to) {
    double slow = 0, all = 0;
    for (size_t t = from; t < to; ++t)
        for (int b = h.bucket_lo; b <= h.bucket_hi; ++b) {
            all += static_cast<double>(h.count(t, b));
            if (Log2Histogram::bucket_lo(b) >= 1024) slow += static_cast<double>(h.count(t, b));
        }
    return all > 0 ? slow / all : 0;
}

// Median over intervals [from, to) of the bucket that holds each interval's p99.
double median_p99_bucket(const Heatmap& h, size_t from, size_t to) {
    std::vector<double> rows;
    for (size_t t = from; t < to; ++t) {
        uint64_t total = 0;
        for (int b = h.bucket_lo; b <= h.bucket_hi; ++b) total += h.count(t, b);
        if (total == 0) continue;
        uint64_t seen = 0;
        for (int b = h.bucket_lo; b <= h.bucket_hi; ++b) {
            seen += h.count(t, b);
            if (static_cast<double>(seen) >= 0.99 * static_cast<double>(total)) {
                rows.push_back(b);
                break;
            }
        }
    }
    if (rows.empty()) return 0;
    std::sort(rows.begin(), rows.end());
    return rows[rows.size() / 2];
}

struct TempDir {
    TempDir() {
        char tmpl[] = "/tmp/iodiag-pictures-XXXXXX";
        path = mkdtemp(tmpl);
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    std::string path;
};

}  // namespace

TEST(LivePictures, DirtyLimitCutMidWindowShowsInTheSeriesAndTheHeatmap) {
    REQUIRE(missing_root());
    for (const char* tool : {"fio", "mkfs.ext4", "losetup"}) REQUIRE(missing_tool(tool));
    TempDir dir;
    const std::string bundle = dir.path + "/dirty_midwindow.json";
    std::string out;
    // This process holds the machine lock; the lab script must not wait for it.
    const int rc = run_capture("IODIAG_LIVE_LOCK_HELD=1 IODIAG=" + kIodiag + " " + kSource +
                                   "/tests/lab/scenario.sh dirty_midwindow " + bundle + " 10 2>&1",
                               &out);
    ASSERT_EQ(rc, 0) << out;
    const auto at = out.find("fault_unix ");
    ASSERT_NE(at, std::string::npos) << out;
    const double fault_unix = std::stod(out.substr(at + 11));

    const Evidence ev = load_bundle(bundle);
    const Series& s = ev.series;
    ASSERT_GE(s.count, 9u) << "a 10 s window at 1 s intervals";
    ASSERT_GT(s.interval_s, 0);
    const double fault_s = fault_unix - s.start_unix;
    const size_t fault = static_cast<size_t>(std::floor(fault_s / s.interval_s));
    std::printf("window %.2f s, %zu intervals of %.1f s; the dirty limit was cut at %.2f s (interval %zu)\n",
                ev.window.duration_s, s.count, s.interval_s, fault_s, fault);
    ASSERT_GE(fault, 2u);
    ASSERT_LE(fault + 3, s.count);
    // Before: the intervals ending before the cut; after: those starting after it.
    const size_t before_end = fault, after_begin = fault + 1;

    // procfs series: the limit the kernel throttles against, and what is dirty.
    const ValueSeries* threshold = s.find_values("vmstat.nr_dirty_threshold");
    const ValueSeries* dirty = s.find_values("vmstat.nr_dirty");
    ASSERT_NE(threshold, nullptr);
    ASSERT_NE(dirty, nullptr);
    const double thr_before = mean(threshold->intervals, 0, before_end);
    const double thr_after = mean(threshold->intervals, after_begin, s.count);
    const double dirty_before = mean(dirty->intervals, 0, before_end);
    const double dirty_after = mean(dirty->intervals, after_begin, s.count);
    std::printf("vmstat.nr_dirty_threshold %.0f -> %.0f pages; vmstat.nr_dirty %.0f -> %.0f pages\n", thr_before,
                thr_after, dirty_before, dirty_after);
    EXPECT_LE(thr_after, 1024) << "2 MiB is 512 pages";
    EXPECT_GT(thr_before, 10 * thr_after);
    EXPECT_LT(dirty_after, dirty_before) << "a writer under a 2 MiB limit keeps less dirty";
    if (const ValueSeries* psi = s.find_values("psi.io_some_pct"))
        std::printf("psi.io_some_pct %.1f -> %.1f %%\n", mean(psi->intervals, 0, before_end),
                    mean(psi->intervals, after_begin, s.count));

    // The report of this recording through the browser checks.
    std::string browser;
    const int brc = run_capture("python3 " + kSource + "/tests/browser/report_browser_test.py --iodiag " + kIodiag +
                                    " --bundle " + bundle + " 2>&1",
                                &browser);
    std::printf("%s", browser.c_str());
    if (brc != 77) { EXPECT_EQ(brc, 0) << browser; }

    // The BPF side: the dirty layer's share and the write() heatmap.
    const auto syscall_bpf = std::find_if(ev.collectors.begin(), ev.collectors.end(),
                                          [](const CollectorStatus& c) { return c.name == "syscall_bpf"; });
    ASSERT_NE(syscall_bpf, ev.collectors.end());
    if (!syscall_bpf->available)
        GTEST_SKIP() << "procfs series checked; the dirty layer's share and the write() heatmap need syscall_bpf: "
                     << syscall_bpf->reason;
    const bool have_layers = std::any_of(s.values.begin(), s.values.end(),
                                         [](const ValueSeries& v) { return v.name == "layer.time_us"; });
    ASSERT_TRUE(have_layers) << "syscall_bpf ran but recorded no layer.time_us series";
    const HistogramSeries* writes = s.find_histogram("syscall.latency_us", {{"op", "write"}});
    ASSERT_NE(writes, nullptr) << "syscall_bpf ran but recorded no syscall.latency_us{op=write} series";
    const double share_before = layer_share(s, "dirty", 0, before_end);
    const double share_after = layer_share(s, "dirty", after_begin, s.count);
    std::printf("dirty layer's share of syscall time: %.1f %% -> %.1f %%\n", share_before * 100, share_after * 100);
    EXPECT_GT(share_after, share_before + 0.3);
    // The heatmap: a band of throttled writes appears in the milliseconds, and
    // each column's p99 row moves up (most writes still only copy into the
    // page cache below the limit, so the bulk stays where it was).
    const Heatmap h = make_heatmap(s, *writes, ev.window.duration_s);
    const double slow_before = slow_fraction(h, 0, before_end), slow_after = slow_fraction(h, after_begin, s.count);
    const double p99_before = median_p99_bucket(h, 0, before_end), p99_after = median_p99_bucket(h, after_begin, s.count);
    std::printf("write() calls of 1 ms or more: %.1f %% -> %.1f %%; median p99 bucket %.0f -> %.0f\n%s",
                slow_before * 100, slow_after * 100, p99_before, p99_after, render_heatmap_terminal(h).c_str());
    EXPECT_GT(slow_after, 3 * slow_before);
    // Throttling pauses a writer every so many pages, not every call: the band
    // is a small fraction of all writes (the rate-limited writer's included).
    EXPECT_GT(slow_after, 0.005);
    EXPECT_GE(p99_after, p99_before + 3) << "the p99 row moves up at least 8x";
}

// `iodiag heatmap --live`: a window observed now, drawn from what its bundle holds.
TEST(LivePictures, HeatmapOfALiveWindow) {
    REQUIRE(missing_root());
    REQUIRE(missing_tool("fio"));
    LoopDevice loop("/tmp", 256);
    ASSERT_TRUE(loop.ok()) << loop.error();
    Background fio("exec fio --name=w --filename=" + loop.path() +
                   " --rw=randwrite --bs=4k --direct=1 --ioengine=libaio --iodepth=8 --time_based --runtime=60"
                   " --output=/dev/null");
    sleep(1);
    ASSERT_TRUE(fio.running()) << "fio did not start";
    TempDir dir;
    const std::string svg = dir.path + "/d2c.svg", bundle = dir.path + "/live.json";
    std::string out;
    ASSERT_EQ(run_capture(kIodiag + " heatmap --live --duration 3 --device " + loop.name() +
                              " --metric block.d2c_us -o " + svg + " --record " + bundle + " 2>&1",
                          &out),
              0)
        << out;
    const Evidence ev = load_bundle(bundle);
    const HistogramSeries* d2c = ev.series.find_histogram("block.d2c_us", {{"device", loop.name()}});
    ASSERT_NE(d2c, nullptr) << out;
    const Heatmap h = make_heatmap(ev.series, *d2c, ev.window.duration_s);
    EXPECT_GT(h.total, 100u) << "fio wrote for 3 s";
    std::ifstream in(svg);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(iodiag::testing::count_of(text, "<rect class=\"cell"), h.intervals * h.rows());
    EXPECT_NE(text.find("data-total=\"" + std::to_string(h.total) + "\""), std::string::npos);
    EXPECT_NE(text.find("block.d2c_us{device=" + loop.name() + "}"), std::string::npos);
}

// ---- the commands as a user runs them (no root needed) ----------------------

namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), {});
}

// A version-2 bundle with series (hand-built) and the recorded version-1 one.
struct Bundles {
    Bundles() {
        save_bundle(v2, iodiag::testing::series_evidence());
    }
    TempDir dir;
    std::string v2 = dir.path + "/v2.json";
    std::string v1 = std::string(IODIAG_FIXTURES) + "/bundles/dirty_throttle.json";
};

}  // namespace

TEST(PicturesCli, HeatmapNamesWhatExistsForAnUnknownMetricOrDevice) {
    Bundles b;
    std::string out;
    EXPECT_EQ(run_capture(kIodiag + " heatmap " + b.v2 + " --metric block.nope_us 2>&1", &out), 3) << out;
    EXPECT_NE(out.find("block.d2c_us {device: sdz, vda; op: write}"), std::string::npos) << out;
    EXPECT_NE(out.find("syscall.latency_us {op: read, write}"), std::string::npos) << out;
    out.clear();
    EXPECT_EQ(run_capture(kIodiag + " heatmap " + b.v2 + " --device nvme9n1 2>&1", &out), 3) << out;
    EXPECT_NE(out.find("device: sdz, vda"), std::string::npos) << out;
    out.clear();
    EXPECT_EQ(run_capture(kIodiag + " heatmap " + b.v1 + " 2>&1", &out), 3) << out;
    EXPECT_NE(out.find("no per-interval series"), std::string::npos) << out;
    out.clear();
    EXPECT_EQ(run_capture(kIodiag + " heatmap " + b.v2 + " --label op 2>&1", &out), 3) << out;
    EXPECT_NE(out.find("KEY=VALUE"), std::string::npos) << out;
    out.clear();
    EXPECT_EQ(run_capture(kIodiag + " heatmap 2>&1", &out), 3) << out;
    EXPECT_NE(out.find("BUNDLE or --live"), std::string::npos) << out;
    out.clear();
    EXPECT_EQ(run_capture(kIodiag + " heatmap " + b.v2 + " --list", &out), 0) << out;
    EXPECT_NE(out.find("syscall.latency_us {op: read, write}"), std::string::npos) << out;
}

TEST(PicturesCli, HeatmapDrawsInTheTerminalWithColourOnlyWhenAsked) {
    Bundles b;
    std::string plain, colour;
    ASSERT_EQ(run_capture(kIodiag + " heatmap " + b.v2 + " --device vda", &plain), 0) << plain;
    EXPECT_NE(plain.find("block.d2c_us{device=vda}"), std::string::npos) << plain;
    EXPECT_NE(plain.find("█"), std::string::npos);
    EXPECT_EQ(plain.find('\033'), std::string::npos) << "not a tty: no colour";
    ASSERT_EQ(run_capture(kIodiag + " heatmap " + b.v2 + " --metric syscall.latency_us --label op=write --color always",
                          &colour),
              0);
    EXPECT_NE(colour.find("syscall.latency_us{op=write}"), std::string::npos) << colour;
    EXPECT_NE(colour.find("\033[38;5;"), std::string::npos);
}

TEST(PicturesCli, OutputsAreReplacedAtomicallyAndNeverHalfWritten) {
    Bundles b;
    const std::string svg = b.dir.path + "/heat.svg", html = b.dir.path + "/report.html";
    std::ofstream(svg) << "old";
    std::ofstream(html) << "old";
    std::string out;
    // A failure leaves the old file as it was.
    EXPECT_EQ(run_capture(kIodiag + " heatmap " + b.v2 + " --metric nope -o " + svg + " 2>&1", &out), 3);
    EXPECT_EQ(read_file(svg), "old");
    EXPECT_EQ(run_capture(kIodiag + " report " + b.dir.path + "/missing.json -o " + html + " 2>&1", &out), 3);
    EXPECT_EQ(read_file(html), "old");
    EXPECT_EQ(run_capture(kIodiag + " report " + b.v2 + " -o " + b.dir.path + "/no/such/dir/r.html 2>&1", &out), 3);
    // Success replaces it whole (a new file renamed over the old one: a reader
    // that had the old file open still reads all of it), and leaves no
    // temporary file behind.
    std::ifstream old_svg(svg), old_html(html);
    ASSERT_EQ(run_capture(kIodiag + " heatmap " + b.v2 + " -o " + svg + " 2>&1", &out), 0) << out;
    EXPECT_EQ(read_file(svg).rfind("<?xml", 0), 0u);
    EXPECT_NE(read_file(svg).find("</svg>"), std::string::npos);
    ASSERT_EQ(run_capture(kIodiag + " report " + b.v2 + " -o " + html + " 2>&1", &out), 0) << out;
    EXPECT_NE(read_file(html).find("</html>"), std::string::npos);
    EXPECT_EQ(std::string((std::istreambuf_iterator<char>(old_svg)), {}), "old") << "rewritten in place";
    EXPECT_EQ(std::string((std::istreambuf_iterator<char>(old_html)), {}), "old") << "rewritten in place";
    ASSERT_EQ(run_capture(kIodiag + " report " + b.v1 + " " + b.v2 + " -o " + html + " 2>&1", &out), 0) << out;
    EXPECT_NE(read_file(html).find("id=\"diff\""), std::string::npos);
    for (const auto& e : std::filesystem::directory_iterator(b.dir.path))
        EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

TEST(PicturesCli, ReportWritesAMarkdownTicketWithItsHeatmapsBesideIt) {
    Bundles b;
    std::string out;
    const std::string md = b.dir.path + "/ticket.md", html = b.dir.path + "/r.html";
    ASSERT_EQ(run_capture(kIodiag + " report " + b.v2 + " -o " + html + " --markdown " + md + " 2>&1", &out), 0) << out;
    const std::string text = read_file(md);
    const auto at = text.find("## Latency over time");
    ASSERT_NE(at, std::string::npos) << text;
    // Every linked picture exists beside the ticket, whole.
    size_t links = 0;
    for (size_t pos = text.find("](", at); pos != std::string::npos; pos = text.find("](", pos + 2)) {
        const std::string file = text.substr(pos + 2, text.find(')', pos) - pos - 2);
        const std::string svg = read_file(b.dir.path + "/" + file);
        EXPECT_EQ(svg.rfind("<?xml", 0), 0u) << file;
        EXPECT_NE(svg.find("</svg>"), std::string::npos) << file;
        ++links;
    }
    EXPECT_GE(links, 2u) << text;
    // A version-1 bundle: the ticket says why there is no picture.
    ASSERT_EQ(run_capture(kIodiag + " report " + b.v1 + " -o " + html + " --markdown " + md + " 2>&1", &out), 0) << out;
    EXPECT_NE(read_file(md).find("need a newer recording"), std::string::npos);
    // Two bundles: the comparison is the HTML page only.
    EXPECT_EQ(run_capture(kIodiag + " report " + b.v1 + " " + b.v2 + " -o " + html + " --markdown " + md + " 2>&1", &out),
              3);
}
