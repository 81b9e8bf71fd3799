// Bad input from strangers: a malformed bundle names the JSON path and what
// was expected there; values that cannot be true are refused with their path;
// bundles, rule files and kernel text files have size limits that the message
// states.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "collectors/text_file.hpp"
#include "engine/evidence/bundle.hpp"
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
    for (int i = 0; i < 12; ++i) j["metrics"].push_back(j["metrics"][0]);
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
