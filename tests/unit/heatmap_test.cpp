// Heatmaps: the grid follows the series (rows from the lowest to the highest
// bucket used, one column per interval), every cell is drawn (empty ones apart
// from low counts), axis labels carry units, names come from the series, and
// everything from a bundle is escaped.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "engine/render/heatmap.hpp"
#include "engine/render/heatmap_files.hpp"
#include "engine/render/heatmap_select.hpp"
#include "engine/render/report_markup.hpp"
#include "tests/unit/series_evidence.hpp"

using namespace iodiag;
using iodiag::testing::count_of;
using iodiag::testing::series_evidence;

namespace {

Heatmap d2c_heatmap(const Evidence& ev) {
    const auto* s = ev.series.find_histogram("block.d2c_us", {{"device", "vda"}});
    EXPECT_NE(s, nullptr);
    return make_heatmap(ev.series, *s, ev.window.duration_s);
}

}  // namespace

TEST(Heatmap, GridSpansTheBucketsUsed) {
    const Evidence ev = series_evidence();
    const Heatmap h = d2c_heatmap(ev);
    EXPECT_EQ(h.intervals, 10u);
    EXPECT_EQ(h.bucket_lo, 7);
    EXPECT_EQ(h.bucket_hi, 13);
    EXPECT_EQ(h.rows(), 7u);
    EXPECT_EQ(h.count(0, 7), 900u);
    EXPECT_EQ(h.count(3, 9), 1u);
    EXPECT_EQ(h.count(6, 13), 40u);
    EXPECT_EQ(h.count(6, 7), 0u);
    EXPECT_EQ(h.max_count, 900u);
    EXPECT_EQ(h.total, 5u * 900 + 1 + 5u * 40);
    EXPECT_EQ(h.title(), "block.d2c_us{device=vda}");
}

TEST(Heatmap, SvgHasACellPerIntervalAndBucketAxesWithUnitsAndALegend) {
    const Heatmap h = d2c_heatmap(series_evidence());
    const std::string svg = render_heatmap_svg(h);
    EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
    EXPECT_EQ(count_of(svg, "<rect class=\"cell"), 70u);
    EXPECT_EQ(count_of(svg, "<rect class=\"cell empty\""), 70u - 11u);   // 5 + 1 + 5 cells hold operations
    EXPECT_NE(svg.find("data-intervals=\"10\" data-columns=\"10\" data-per-column=\"1\""), std::string::npos);
    EXPECT_NE(svg.find("data-rows=\"7\""), std::string::npos);
    // y: the bucket bounds in human units; x: seconds; the legend and its empty swatch.
    // Bucket bounds are powers of two microseconds: 1024 us is "1.02 ms".
    for (const char* label : {">128 us<", ">256 us<", ">1.02 ms<", ">8.19 ms<", ">16.4 ms<", ">0 s<", ">4 s<",
                              "latency (log2 buckets", "time since the window", "operations per cell", "(log scale)", "0 (none)"})
        EXPECT_NE(svg.find(label), std::string::npos) << label;
    // The lone slow I/O is coloured, and unlike an empty cell.
    const std::regex lone(R"re(<rect class="cell" [^>]*fill="(#[0-9a-f]{6})"><title>3–4 s, 512 us–1.02 ms: 1</title>)re");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(svg, m, lone)) << "the single I/O in interval 3 is not drawn as a cell";
    EXPECT_NE(m[1].str(), heatmap_colour(0, h.max_count));
    EXPECT_NE(heatmap_colour(1, 900), heatmap_colour(900, 900));
    EXPECT_EQ(count_of(svg, "<script"), 0u);
}

TEST(Heatmap, LongRecordingsAreMergedIntoColumns) {
    Evidence ev = series_evidence();
    ev.series.count = 1001;
    auto& d2c = ev.series.histograms[0];
    d2c.intervals.resize(1001, iodiag::testing::hist_at(8, 3));
    ev.window.duration_s = 1001;
    const Heatmap h = make_heatmap(ev.series, d2c, ev.window.duration_s);
    const Heatmap m = merge_intervals(h, 600);
    EXPECT_EQ(m.per_column, 2u);
    EXPECT_EQ(m.intervals, 501u);
    EXPECT_DOUBLE_EQ(m.interval_s, 2);
    EXPECT_EQ(m.count(0, 7), 1800u);   // intervals 0 and 1
    EXPECT_EQ(m.count(500, 8), 3u);    // the last column holds one interval
    EXPECT_EQ(m.max_count, 1800u);
    EXPECT_EQ(merge_intervals(h, 2000).intervals, 1001u);
    const std::string svg = render_heatmap_svg(h);
    EXPECT_EQ(count_of(svg, "<rect class=\"cell"), 501u * h.rows());
    EXPECT_NE(svg.find("data-intervals=\"1001\" data-columns=\"501\" data-per-column=\"2\""), std::string::npos);
    EXPECT_NE(render_heatmap_terminal(h, {false, 100}).find("11 intervals per column"), std::string::npos);
}

TEST(Heatmap, LogColourScaleKeepsRareCountsApartFromEmpty) {
    // 1 of 10,000 sits a tenth up a log scale (a linear one would put it at 0.01 %).
    EXPECT_NE(heatmap_colour(1, 10'000), heatmap_colour(0, 10'000));
    EXPECT_NE(heatmap_colour(1, 10'000), heatmap_colour(2, 10'000));
    EXPECT_EQ(heatmap_colour(10'000, 10'000), "#440154");
}

TEST(Heatmap, EmptySeriesSaysSo) {
    const Evidence ev = series_evidence();
    const Heatmap h = make_heatmap(ev.series, *ev.series.find_histogram("block.d2c_us", {{"device", "sdz"}}), 9.5);
    EXPECT_TRUE(h.empty());
    EXPECT_EQ(h.rows(), 0u);
    const std::string svg = render_heatmap_svg(h);
    EXPECT_EQ(count_of(svg, "class=\"cell"), 0u);
    EXPECT_NE(svg.find("no operation recorded"), std::string::npos);
    EXPECT_NE(render_heatmap_terminal(h).find("no operation recorded"), std::string::npos);
}

TEST(Heatmap, SharedScaleForSideBySide) {
    Evidence before = series_evidence(), after = series_evidence();
    auto& hs = after.series.histograms[0].intervals;
    for (auto& i : hs) i = iodiag::testing::hist_at(5, 3000);
    Heatmap a = d2c_heatmap(before), b = d2c_heatmap(after);
    share_scale(a, b);
    EXPECT_EQ(a.bucket_lo, 5);
    EXPECT_EQ(b.bucket_lo, 5);
    EXPECT_EQ(a.bucket_hi, 13);
    EXPECT_EQ(b.bucket_hi, 13);
    EXPECT_EQ(a.max_count, 3000u);
    EXPECT_EQ(b.max_count, 3000u);
    EXPECT_EQ(a.count(0, 7), 900u);
    EXPECT_EQ(b.count(0, 5), 3000u);
    EXPECT_EQ(count_of(render_heatmap_svg(a), "<rect class=\"cell"), 10u * 9);
}

TEST(Heatmap, TerminalBlocksColourOnlyWhenAsked) {
    const Heatmap h = d2c_heatmap(series_evidence());
    const std::string plain = render_heatmap_terminal(h);
    EXPECT_EQ(plain.find('\033'), std::string::npos);
    EXPECT_NE(plain.find("█"), std::string::npos);
    EXPECT_NE(plain.find("░"), std::string::npos);   // the lone I/O, lowest shade
    EXPECT_NE(plain.find("8.19 ms ┤"), std::string::npos);
    EXPECT_NE(plain.find("128 us ┤"), std::string::npos);
    EXPECT_NE(plain.find("legend:"), std::string::npos);
    EXPECT_EQ(count_of(plain, "┤"), 7u);
    const std::string colour = render_heatmap_terminal(h, {true, 100});
    EXPECT_NE(colour.find("\033[38;5;"), std::string::npos);
    // 10 intervals into at most 4 columns: 3 per column.
    const std::string narrow = render_heatmap_terminal(h, {false, 4});
    EXPECT_NE(narrow.find("3 intervals per column"), std::string::npos);
}

TEST(HeatmapSelect, DefaultIsTheDeviceAggregateOfD2c) {
    const Evidence ev = series_evidence();
    const auto found = find_heatmap_series(ev.series, {});
    ASSERT_NE(found.series, nullptr) << found.error;
    EXPECT_EQ(found.series->name, "block.d2c_us");
    EXPECT_EQ(found.series->labels, (Labels{{"device", "vda"}}));
    const auto write = find_heatmap_series(ev.series, {"syscall.latency_us", {{"op", "write"}}});
    ASSERT_NE(write.series, nullptr);
    EXPECT_EQ(write.series->labels.at("op"), "write");
}

TEST(HeatmapSelect, UnknownMetricOrDeviceListsWhatExists) {
    const Evidence ev = series_evidence();
    const auto metric = find_heatmap_series(ev.series, {"block.nope_us", {}});
    EXPECT_EQ(metric.series, nullptr);
    EXPECT_NE(metric.error.find("block.nope_us"), std::string::npos);
    EXPECT_NE(metric.error.find("block.d2c_us {device: sdz, vda; op: write}"), std::string::npos) << metric.error;
    EXPECT_NE(metric.error.find("syscall.latency_us {op: read, write}"), std::string::npos) << metric.error;
    const auto device = find_heatmap_series(ev.series, {"block.d2c_us", {{"device", "nvme9n1"}}});
    EXPECT_EQ(device.series, nullptr);
    EXPECT_NE(device.error.find("device=nvme9n1"), std::string::npos);
    EXPECT_NE(device.error.find("device: sdz, vda"), std::string::npos) << device.error;
    EXPECT_EQ(device.error.find("syscall"), std::string::npos) << "lists only the metric asked for";
    Evidence v1;
    v1.schema_version = 1;
    EXPECT_NE(find_heatmap_series(v1.series, {}).error.find("no per-interval series"), std::string::npos);
}

TEST(HeatmapSelect, ReportShowsAggregatesBusiestFirst) {
    const Evidence ev = series_evidence();
    std::vector<std::string> left_out;
    const auto chosen = report_heatmap_series(ev.series, 1, &left_out);
    ASSERT_EQ(chosen.size(), 2u);
    EXPECT_EQ(chosen[0]->name, "syscall.latency_us");
    EXPECT_EQ(chosen[0]->labels.at("op"), "write");
    EXPECT_EQ(chosen[1]->labels, (Labels{{"device", "vda"}}));   // not the per-op split
    EXPECT_EQ(left_out, (std::vector<std::string>{"syscall.latency_us{op=read}", "block.d2c_us{device=sdz}"}));
}

TEST(ReportMarkup, EscapesEverythingAndKeepsXmlWellFormed) {
    EXPECT_EQ(xml_escape("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
    EXPECT_EQ(xml_escape(std::string("a\x01" "b\x7f", 4)), "a\xEF\xBF\xBD" "b\x7f");
    EXPECT_EQ(xml_escape("tab\tok\n"), "tab\tok\n");
    EXPECT_EQ(xml_escape("\xC3\xA9t\xC3\xA9"), "\xC3\xA9t\xC3\xA9");             // é kept
    EXPECT_EQ(xml_escape("\xC3"), "\xEF\xBF\xBD");                               // truncated sequence
    EXPECT_EQ(xml_escape("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");   // a surrogate
    EXPECT_EQ(xml_escape("\xEF\xBF\xBF"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");   // U+FFFF
    EXPECT_EQ(svg_number(12.345), "12.35");
    EXPECT_EQ(svg_number(-0.0001), "0");
    EXPECT_EQ(svg_number(3), "3");
    EXPECT_EQ(format_bound(0, "us"), "0");
    EXPECT_EQ(format_bound(512, "us"), "512 us");
    EXPECT_EQ(format_bound(2048, "us"), "2.05 ms");
    EXPECT_EQ(format_bound(1u << 20, "us"), "1.05 s");
}

TEST(HeatmapFiles, WritesSvgsNextToATicketWithSafeNames) {
    Evidence ev = series_evidence("../../etc/x y");
    char tmpl[] = "/tmp/iodiag-heatmap-files-XXXXXX";
    const std::string dir = mkdtemp(tmpl);
    const auto files = write_heatmap_files(ev, dir, "ticket 42", 3);
    ASSERT_EQ(files.size(), 3u);
    for (const auto& f : files) {
        EXPECT_EQ(f.file_name.find('/'), std::string::npos) << f.file_name;
        EXPECT_EQ(f.path, dir + "/" + f.file_name);
        EXPECT_TRUE(std::filesystem::is_regular_file(f.path)) << f.path;
        std::ifstream in(f.path);
        const std::string svg((std::istreambuf_iterator<char>(in)), {});
        EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
    }
    EXPECT_EQ(files[0].file_name, "ticket_42-heatmap-1-syscall.latency_us_op_write_.svg");
    const std::string md = markdown_heatmap_links(files);
    EXPECT_NE(md.find("![Latency heatmap of block.d2c\\_us\\{device=../../etc/x y\\}"), std::string::npos) << md;
    EXPECT_NE(md.find("](" + files[2].file_name + ")"), std::string::npos);
    std::filesystem::remove_all(dir);
    Evidence v1;
    EXPECT_TRUE(write_heatmap_files(v1, "/nonexistent", "x").empty());
}
