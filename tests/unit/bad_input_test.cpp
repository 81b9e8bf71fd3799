// Bad input from strangers: a malformed bundle names the JSON path and what
// was expected there; values that cannot be true are refused with their path;
// bundles, rule files and kernel text files have size limits that the message
// states.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "app/catalog.hpp"
#include "collectors/text_file.hpp"
#include "engine/evidence/bundle.hpp"
#include "engine/evidence/value_bounds.hpp"
#include "engine/rules/rules.hpp"
#include "engine/rules/yaml_reader.hpp"

using namespace iodiag;
using nlohmann::json;

namespace {

json good() {
    return json::parse(R"({
      "schema": "iodiag-bundle", "schema_version": 2, "host": "h", "kernel": "6.1",
      "window": {"start_unix": 1764460000, "duration_s": 2},
      "collectors": [{"name": "diskstats", "available": true, "reason": "", "layers": ["device"]}],
      "metrics": [{"name": "disk.util_pct", "labels": {"device": "vda"}, "value": 12.5, "unit": "pct",
                   "provenance": {"kind": "file", "source": "/proc/diskstats"}}],
      "facts": [],
      "histograms": [{"name": "block.d2c_us", "labels": {"device": "vda"}, "unit": "us", "log2_buckets": [0, 3, 1],
                      "provenance": {"kind": "tracepoint", "source": "block:block_rq_complete"}}],
      "exemplars": [{"kind": "block_io", "labels": {}, "values": {"q2c_us": 120, "sector": 8}, "unit": "us",
                     "provenance": {"kind": "tracepoint", "source": "x"}}],
      "series": {"start_unix": 1764460000, "interval_s": 1, "count": 2,
                 "histograms": [], "values": [{"name": "psi.io_some_pct", "labels": {}, "unit": "pct",
                                               "values": [1, 2], "provenance": {"kind": "file", "source": "p"}}]}
    })");
}

// The message evidence_from_json throws for `j`; "" when it loads.
std::string error_of(const json& j) {
    try {
        evidence_from_json(j);
        return "";
    } catch (const BundleError& e) {
        return e.what();
    }
}

std::string error_of_text(const std::string& text) {
    try {
        parse_bundle(text);
        return "";
    } catch (const BundleError& e) {
        return e.what();
    }
}

}  // namespace

TEST(BadBundle, TheGoodOneLoads) { EXPECT_EQ(error_of(good()), ""); }

TEST(BadBundle, WrongTypesNameTheirPathAndWhatWasExpected) {
    auto j = good();
    for (int i = 1; i <= 12; ++i) {
        j["metrics"].push_back(j["metrics"][0]);
        j["metrics"][i]["labels"]["device"] = "vd" + std::to_string(i);
    }
    j["metrics"][12]["value"] = nullptr;
    EXPECT_EQ(error_of(j), "metrics[12].value: expected a number, got null");

    j = good();
    j["collectors"][0]["available"] = "yes";
    EXPECT_EQ(error_of(j), "collectors[0].available: expected true or false, got a string (\"yes\")");

    j = good();
    j["metrics"][0]["labels"]["device"] = 3;
    EXPECT_EQ(error_of(j), "metrics[0].labels.device: expected a string, got a number (3)");

    j = good();
    j["window"].erase("duration_s");
    EXPECT_EQ(error_of(j), "window: missing \"duration_s\"");

    j = good();
    j["facts"] = json::object();
    EXPECT_EQ(error_of(j), "facts: expected an array, got an object");

    j = good();
    j["metrics"][0]["labels"] = json::object({{"odd key", json::array()}});
    EXPECT_EQ(error_of(j), "metrics[0].labels[\"odd key\"]: expected a string, got an array");
}

TEST(BadBundle, ValuesThatCannotBeTrueAreRefusedWithTheirPath) {
    auto j = good();
    j["histograms"][0]["log2_buckets"][2] = -3;
    EXPECT_EQ(error_of(j), "histograms[0].log2_buckets[2]: expected a count (an integer >= 0), got a number (-3)");

    j = good();
    j["histograms"][0]["log2_buckets"][1] = 2.5;
    EXPECT_EQ(error_of(j), "histograms[0].log2_buckets[1]: expected a count (an integer >= 0), got a number (2.5)");

    j = good();
    j["histograms"][0]["log2_buckets"] = json::array({UINT64_MAX, 1});
    EXPECT_NE(error_of(j).find("histograms[0].log2_buckets[1]: the bucket counts add up past 2^64"), std::string::npos);

    j = good();
    j["histograms"][0]["log2_buckets"] = std::vector<int>(65, 1);
    EXPECT_EQ(error_of(j), "histograms[0].log2_buckets: expected at most 64 log2 buckets, got 65");

    // A duration cannot be negative; a sector number is not a duration.
    j = good();
    j["exemplars"][0]["values"]["q2c_us"] = -5;
    EXPECT_EQ(error_of(j), "exemplars[0].values.q2c_us: expected a number >= 0, got a number (-5)");
    j = good();
    j["window"]["duration_s"] = -1;
    EXPECT_EQ(error_of(j), "window.duration_s: expected a number >= 0, got a number (-1)");

    // JSON has no NaN; a number too large for a double is a syntax error; a
    // document built in memory can still hold them.
    std::string text = good().dump();
    text.replace(text.find("12.5"), 4, "1e999");
    EXPECT_EQ(error_of_text(text), "not valid JSON: number overflow parsing '1e999'");
    j = good();
    j["metrics"][0]["value"] = std::numeric_limits<double>::quiet_NaN();
    EXPECT_EQ(error_of(j), "metrics[0].value: expected a finite number, got a number that is not finite (NaN)");
    j = good();
    j["exemplars"][0]["values"]["sector"] = -std::numeric_limits<double>::infinity();
    EXPECT_EQ(error_of(j), "exemplars[0].values.sector: expected a finite number, got a number that is not finite (-inf)");

    // Series: one value per interval, and no more intervals than the window holds.
    j = good();
    j["series"]["values"][0]["values"].push_back(3);
    EXPECT_EQ(error_of(j), "series.values[0].values: expected series.count = 2 intervals, got 3");
    j = good();
    j["series"]["count"] = 100000000000LL;
    j["series"]["values"] = json::array();
    EXPECT_EQ(error_of(j), "series.count: 100000000000 intervals of 1 s cannot fit in a window of 2 s");
    j = good();
    j["series"]["interval_s"] = 0;
    EXPECT_EQ(error_of(j), "series.count: intervals counted (2) but interval_s is 0");
}

// What no collector writes (engine/evidence/value_bounds.hpp), as `iodiag
// replay` met it in bundles attached to tickets: judged as if measured until
// it was refused like any other malformed input.
TEST(BadBundle, ValuesNoCollectorWritesAreRefusedWithTheirPath) {
    auto metric = [](const std::string& name, double value, const std::string& unit) {
        auto j = good();
        j["metrics"].push_back({{"name", name}, {"labels", {{"device", "vdb"}}}, {"value", value}, {"unit", unit},
                                {"provenance", {{"kind", "file"}, {"source", "/proc/diskstats"}}}});
        return j;
    };
    EXPECT_EQ(error_of(metric("disk.read_iops", 1.7e308, "1/s")),
              "metrics[1].value: expected at most 8.19e+13 (a rate, 1/s: an event per cycle of 8192 CPUs at 10 GHz, "
              "more than any machine), got a number (1.7e+308)");
    EXPECT_EQ(error_of(metric("disk.read_iops", -5e9, "1/s")),
              "metrics[1].value: expected a number >= 0 (a rate, 1/s), got a number (-5000000000.0)");
    EXPECT_NE(error_of(metric("disk.read_bytes_per_s", 1e18, "bytes/s"))
                  .find("metrics[1].value: expected at most 3.36e+17 (a rate, bytes/s: a page per cycle"),
              std::string::npos);
    EXPECT_EQ(error_of(metric("ceph.osd.cpu_used_cores", 9000, "cores")),
              "metrics[1].value: expected at most 8192 (a rate, cores: the most CPUs a kernel is built for), got a "
              "number (9000.0)");
    EXPECT_EQ(error_of(metric("disk.reads", -1, "count")),
              "metrics[1].value: expected a number >= 0 (a count, count), got a number (-1.0)");
    EXPECT_EQ(error_of(metric("disk.read_await_ms", -0.5, "ms")),
              "metrics[1].value: expected a number >= 0 (a time, ms), got a number (-0.5)");
    EXPECT_EQ(error_of(metric("disk.util_pct", -3, "pct")).substr(0, 57),
              "metrics[1].value: expected a number >= 0 (a share, pct), ");
    // The busiest real devices are far below the bounds (the fixtures'
    // highest: 115,353 IOPS, 4.9 GB/s); a difference may be negative, and so
    // may a temperature or a unit iodiag does not write.
    EXPECT_EQ(error_of(metric("disk.read_iops", 2e6, "1/s")), "");
    EXPECT_EQ(error_of(metric("disk.read_bytes_per_s", 1e11, "bytes/s")), "");
    EXPECT_EQ(error_of(metric("history.layer_share_change_pct", -40, "pct")), "");
    EXPECT_EQ(error_of(metric("nvme.spare_margin_pct", -5, "pct")), "");
    EXPECT_EQ(error_of(metric("history.nvme_media_errors_per_day", -0.5, "count")), "");
    EXPECT_EQ(error_of(metric("nvme.temperature_c", -10, "degC")), "");
    EXPECT_EQ(error_of(metric("some.new_metric", -1, "furlongs")), "");

    // Series values are bounded by their unit the same way.
    auto j = good();
    j["series"]["values"][0]["values"][1] = -2;
    EXPECT_EQ(error_of(j), "series.values[0].values[1]: expected a number >= 0 (a share, pct), got a number (-2)");
}

// The bounds read the unit a metric was recorded with: every unit the
// collectors and the engine declare says what it measures, and the metrics
// that may be negative are exactly those whose description says they are a
// difference ("minus", "a - b", "gained per day").
TEST(BadBundle, EveryDeclaredUnitIsBoundedAndOnlyDifferencesMayBeNegative) {
    const MetricCatalog catalog = full_catalog();
    for (const auto& [name, spec] : catalog.all()) {
        if (spec.kind != MetricSpec::Kind::Metric) continue;
        const Quantity q = quantity_of(spec.unit);
        EXPECT_NE(q, Quantity::Unknown) << name << ": unit \"" << spec.unit << "\" not in value_bounds.cpp";
        const std::string& d = spec.description;
        const bool says_difference = d.find("minus") != std::string::npos || d.find(" - ") != std::string::npos ||
                                     d.find("gained per") != std::string::npos;
        if (q != Quantity::Other) {
            EXPECT_EQ(is_difference(name), says_difference) << name << ": " << d;
        }
    }
}

TEST(BadBundle, TheSameSeriesTwiceIsRefusedWithBothPaths) {
    auto j = good();
    for (int i = 0; i < 50; ++i) j["metrics"].push_back(j["metrics"][0]);   // 51 in all
    EXPECT_EQ(error_of(j), "metrics[1]: disk.util_pct again, with the same labels as metrics[0]: a collector writes "
                           "each series once");
    // Other labels make another series; so does another kind of entry.
    j = good();
    j["metrics"].push_back(j["metrics"][0]);
    j["metrics"][1]["labels"]["device"] = "vdb";
    j["facts"].push_back({{"name", "disk.util_pct"}, {"labels", {{"device", "vda"}}}, {"value", "x"},
                          {"provenance", {{"kind", "file"}, {"source", "f"}}}});
    EXPECT_EQ(error_of(j), "");
    j["facts"].push_back(j["facts"][0]);
    EXPECT_EQ(error_of(j), "facts[1]: disk.util_pct again, with the same labels as facts[0]: a collector writes each "
                           "series once");
    j = good();
    j["histograms"].push_back(j["histograms"][0]);
    EXPECT_NE(error_of(j).find("histograms[1]: block.d2c_us again, with the same labels as histograms[0]"),
              std::string::npos);
    j = good();
    j["series"]["values"].push_back(j["series"]["values"][0]);
    EXPECT_NE(error_of(j).find("series.values[1]: psi.io_some_pct again, with the same labels as series.values[0]"),
              std::string::npos);
}

TEST(BadBundle, ALabelLongerThanAnyCollectorWritesIsRefused) {
    // The longest: a cgroup v1 label of two paths, each as long as the kernel
    // hands out (PATH_MAX - 1 bytes).
    const std::string path = "/" + std::string(kPathMax - 2, 'a');
    const std::string longest = "memory:" + path + ",blkio:" + path;
    ASSERT_EQ(longest.size(), kMaxLabelChars);
    auto j = good();
    j["metrics"][0]["labels"]["cgroup"] = longest;
    EXPECT_EQ(error_of(j), "");
    // Counted in characters, not bytes: a byte that is not UTF-8 is written as
    // U+FFFD (three bytes), so a path may take three times its bytes in a bundle.
    std::string wide;
    for (size_t i = 0; i < kMaxLabelChars; ++i) wide += "\u00e9";   // two bytes each
    j["metrics"][0]["labels"]["cgroup"] = wide;
    EXPECT_EQ(error_of(j), "");

    j["metrics"][0]["labels"]["comm"] = std::string(100000, 'x');
    EXPECT_EQ(error_of(j), "metrics[0].labels.comm: a label of 100000 characters, longer than any a collector writes "
                           "(8204: a cgroup v1 label, two paths under PATH_MAX)");
    j = good();
    j["exemplars"][0]["labels"][std::string(kMaxLabelChars + 1, 'k')] = "v";
    EXPECT_EQ(error_of(j), "exemplars[0].labels: a label name of 8205 characters, longer than any a collector writes "
                           "(8204: a cgroup v1 label, two paths under PATH_MAX)");
}

TEST(BadBundle, SyntaxErrorsGiveLineAndColumnNotTheLibrarysTag) {
    const std::string e = error_of_text("{\"schema\": nul}");
    EXPECT_EQ(e, "not valid JSON: parse error at line 1, column 15: syntax error while parsing value - invalid "
                 "literal; last read: '\"schema\": nul}'");
    EXPECT_EQ(error_of_text("[1, 2]"), "not an iodiag bundle (no \"schema\": \"iodiag-bundle\" at the top level)");
}

TEST(BadBundle, DeepNestingAndHugeFilesAreRefusedWithTheLimit) {
    const std::string deep = std::string(100, '[') + std::string(100, ']');
    EXPECT_EQ(error_of_text(deep), "nested deeper than 32 levels: not a bundle iodiag wrote");
    // The limit counts the containers around a value, not brackets in strings:
    // a value inside 32 arrays is read (and then is not a bundle), inside 33 not.
    const std::string not_a_bundle = "not an iodiag bundle (no \"schema\": \"iodiag-bundle\" at the top level)";
    EXPECT_EQ(error_of_text(std::string(32, '[') + "\"[[\\\"[\"" + std::string(32, ']')), not_a_bundle);
    EXPECT_EQ(error_of_text(std::string(33, '[') + "1" + std::string(33, ']')),
              "nested deeper than 32 levels: not a bundle iodiag wrote");

    // A sparse 300 MiB file: refused by its size, before it is read.
    const auto path = std::filesystem::temp_directory_path() / ("iodiag_huge_" + std::to_string(getpid()) + ".json");
    { std::ofstream(path) << "{}"; }
    std::filesystem::resize_file(path, 300u << 20);
    try {
        load_bundle(path.string());
        ADD_FAILURE() << "a 300 MiB bundle was read";
    } catch (const BundleError& e) {
        EXPECT_EQ(std::string(e.what()), path.string() + ": 300 MiB is more than a bundle may hold (256 MiB): "
                                                          "not a bundle iodiag wrote");
    }
    std::filesystem::remove(path);
}

TEST(BadRules, AFileOverTheLimitIsRefusedSayingTheLimit) {
    const std::string huge(yamlr::kMaxYamlFileBytes + 1, '#');
    const RuleSet s = load_rules_from_string(huge, "huge.yaml", LoadContext{});
    ASSERT_EQ(s.diagnostics.size(), 1u);
    EXPECT_EQ(s.diagnostics[0].code, "E014");
    EXPECT_NE(s.diagnostics[0].message.find("more than the 4 MiB a rule or playbook file may have"), std::string::npos)
        << s.diagnostics[0].message;
}

TEST(BadKernelFile, AFileThatNeverEndsIsCutAtTheLimit) {
    try {
        read_text_file("/dev/zero");
        ADD_FAILURE() << "/dev/zero read to the end";
    } catch (const SourceError& e) {
        EXPECT_EQ(std::string(e.what()), "/dev/zero: more than 64 MiB: not a kernel text file iodiag reads");
    }
}

// Text from the system is bytes: a process name or cgroup path that is not
// UTF-8 (nlohmann's dump() throws on it) is written as U+FFFD, and the bundle
// still loads.
TEST(BadText, BytesThatAreNotUtf8AreWrittenAsReplacementCharacters) {
    Evidence ev = parse_bundle(good().dump());
    ev.add_fact("io.top_writer", {{"cgroup", "/app/\xff\xfe"}}, "pg\xc3 (pid 7)", {"file", "/proc/7/comm"});
    std::string text;
    ASSERT_NO_THROW(text = bundle_text(ev));
    EXPECT_NE(text.find("pg\xef\xbf\xbd (pid 7)"), std::string::npos);
    const Evidence back = parse_bundle(text);
    ASSERT_EQ(back.facts.size(), ev.facts.size());
    EXPECT_EQ(back.facts.back().labels.at("cgroup"), "/app/\xef\xbf\xbd\xef\xbf\xbd");
}
