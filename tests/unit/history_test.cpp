// History and drift over fixture state directories: bundles of earlier runs
// written into a temporary directory, the store reads them, history.* metrics
// go into tonight's evidence, and the shipped rules (rules/history.yaml)
// decide. Also what the store must never do: delete what it did not write,
// stop the check over a corrupt or foreign file or an unusable directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "app/history_store.hpp"
#include "engine/evidence/bundle.hpp"
#include "engine/evidence/format.hpp"
#include "engine/render/plugin_output.hpp"
#include "engine/render/render.hpp"
#include "engine/triage/analysis.hpp"
#include "tests/unit/shipped_rules.hpp"

using namespace iodiag;
using iodiag::testing::shipped_rules;
using iodiag::cli::HistoryLimits;
using iodiag::cli::HistoryStore;
namespace fs = std::filesystem;

namespace {

constexpr double kDay = 86400;
constexpr double kNight0 = 1764547200;   // 2025-12-01 00:00:00 UTC

// One run's evidence: a virtio disk (no class reference) with a measured
// block tail, as the block collector writes it.
Evidence run_on(double start, double d2c_p99_us, double requests = 500, const std::string& host = "web1") {
    Evidence ev;
    ev.host = host;
    ev.kernel = "6.1";
    ev.window = {start, 5};
    ev.collectors.push_back({"block_bpf", true, "", {"device", "block_queue"}});
    const Labels vdb{{"device", "vdb"}};
    const Provenance tp{"tracepoint", "tracepoint:block:block_rq_complete"};
    ev.add_fact("device.class", vdb, "virtio", {"file", "/sys/block/vdb"});
    ev.add_metric("block.requests", vdb, requests, "count", tp);
    ev.add_metric("block.d2c_p99_us", vdb, d2c_p99_us, "us", tp);
    ev.add_metric("block.q2c_p99_us", vdb, d2c_p99_us * 1.1, "us", tp);
    ev.add_metric("block.d2c_share_pct", vdb, 90, "pct", tp);
    ev.add_metric("block.queue_share_pct", vdb, 10, "pct", tp);
    return ev;
}

class TempDir {
public:
    TempDir() {
        path_ = fs::temp_directory_path() / ("iodiag-history-test-" + std::to_string(::getpid()) + "-" +
                                             std::to_string(counter_++));
        fs::remove_all(path_);
        fs::create_directories(path_);
    }
    ~TempDir() { fs::remove_all(path_); }
    std::string str() const { return path_.string(); }
    fs::path operator/(const std::string& name) const { return path_ / name; }

private:
    fs::path path_;
    static inline int counter_ = 0;
};

std::string stamp_name(double start) { return "iodiag-check-" + format_utc_stamp(start) + ".json"; }

void write_run(const TempDir& dir, const Evidence& ev) { save_bundle((dir / stamp_name(ev.window.start_unix)).string(), ev); }

// What `iodiag check` does with its state directory, without collecting.
struct Checked {
    Evidence ev;
    Verdict verdict;
    cli::HistoryLoad load;
};

Checked check(const TempDir& dir, Evidence tonight, size_t nights = 7) {
    HistoryStore store(dir.str(), HistoryLimits{});
    Checked c;
    c.load = store.load(tonight.host);
    add_history_metrics(tonight, c.load.runs, {dir.str(), nights});
    c.ev = evidence_from_json(evidence_to_json(tonight));
    c.verdict = analyze(c.ev, shipped_rules());
    return c;
}

const Finding* finding(const Verdict& v, const std::string& rule, const std::string& instance) {
    for (const auto& f : v.findings)
        if (f.rule_id == rule && f.instance == instance) return &f;
    return nullptr;
}

const CitedValue* cited(const Finding& f, const std::string& name) {
    for (const auto& c : f.evidence)
        if (c.name == name) return &c;
    return nullptr;
}

}  // namespace

TEST(History, DriftFindingNamesTheDeviceAndTheNightsCompared) {
    TempDir dir;
    const std::vector<double> normal{700, 900, 800};
    for (size_t i = 0; i < normal.size(); ++i) write_run(dir, run_on(kNight0 + i * kDay, normal[i]));
    const Checked c = check(dir, run_on(kNight0 + 3 * kDay, 12000));

    ASSERT_TRUE(c.load.skipped.empty());
    const Finding* f = finding(c.verdict, "history.device_latency_drift", "vdb");
    ASSERT_NE(f, nullptr) << render_text(c.verdict);
    EXPECT_EQ(f->severity, Severity::Warning);
    EXPECT_NE(f->title.find("vdb is slower than its own normal"), std::string::npos) << f->title;
    EXPECT_NE(f->title.find("15 x its median over the last 3 runs"), std::string::npos) << f->title;
    // The nights compared, by bundle in the provenance and by time in the mechanism.
    const CitedValue* median = cited(*f, "history.d2c_p99_median_us");
    ASSERT_NE(median, nullptr);
    EXPECT_EQ(median->value, 800);
    EXPECT_EQ(median->provenance.kind, "history");
    for (int i = 0; i < 3; ++i) {
        EXPECT_NE(median->provenance.source.find(stamp_name(kNight0 + i * kDay)), std::string::npos)
            << median->provenance.source;
    }
    EXPECT_NE(f->mechanism.find("2025-12-01 00:00:00 UTC, 2025-12-02 00:00:00 UTC, 2025-12-03 00:00:00 UTC"),
              std::string::npos)
        << f->mechanism;
    // Tonight's value is cited with the comparison that decided.
    EXPECT_NE(cited(*f, "block.d2c_p99_us"), nullptr);
    EXPECT_EQ(c.verdict.status, Severity::Warning);
    // The classless device's perfdata get its own normal as the warning mark.
    const PluginResult pr = plugin_result(c.verdict);
    bool marked = false;
    for (const auto& p : pr.perfdata)
        if (p.label == "vdb_d2c_p99") marked = p.warn && std::abs(*p.warn - 3 * 800 / 1e6) < 1e-12;
    EXPECT_TRUE(marked) << pr.status_line();
    EXPECT_EQ(pr.state, PluginState::Warning);
}

TEST(History, NoDriftWithinItsNormal) {
    TempDir dir;
    for (int i = 0; i < 3; ++i) write_run(dir, run_on(kNight0 + i * kDay, 800));
    // 2.5x its median: within seed 000's 3x.
    EXPECT_EQ(finding(check(dir, run_on(kNight0 + 3 * kDay, 2000)).verdict, "history.device_latency_drift", "vdb"),
              nullptr);
}

TEST(History, NoDriftBelowTheHighestNightCompared) {
    TempDir dir;
    for (double p99 : {800.0, 800.0, 800.0, 9000.0}) {
        static int i = 0;
        write_run(dir, run_on(kNight0 + i++ * kDay, p99));
    }
    // 10x the median, but the device has been there before.
    const Checked c = check(dir, run_on(kNight0 + 4 * kDay, 8000));
    EXPECT_EQ(finding(c.verdict, "history.device_latency_drift", "vdb"), nullptr);
    EXPECT_NEAR(c.ev.find_metric("history.d2c_p99_ratio", {{"device", "vdb"}})->value, 10, 1e-9);
}

TEST(History, NeedsThreeNightsWithEnoughRequests) {
    TempDir dir;
    write_run(dir, run_on(kNight0, 800));
    write_run(dir, run_on(kNight0 + kDay, 800));
    write_run(dir, run_on(kNight0 + 2 * kDay, 800, 40));   // too few requests for a p99: not a night of the median
    const Checked c = check(dir, run_on(kNight0 + 3 * kDay, 12000));
    EXPECT_EQ(c.ev.find_metric("history.device_nights", {{"device", "vdb"}})->value, 2);
    EXPECT_EQ(finding(c.verdict, "history.device_latency_drift", "vdb"), nullptr);
    EXPECT_EQ(c.ev.find_metric("history.nights")->value, 3);
}

TEST(History, TheMedianIsOverTheLastNNights) {
    TempDir dir;
    for (int i = 0; i < 5; ++i) write_run(dir, run_on(kNight0 + i * kDay, i < 2 ? 100000 : 800));
    const Checked c = check(dir, run_on(kNight0 + 5 * kDay, 12000), 3);
    const Metric* median = c.ev.find_metric("history.d2c_p99_median_us", {{"device", "vdb"}});
    ASSERT_NE(median, nullptr);
    EXPECT_EQ(median->value, 800);
    EXPECT_EQ(median->provenance.source.find(stamp_name(kNight0)), std::string::npos);
    EXPECT_NE(finding(c.verdict, "history.device_latency_drift", "vdb"), nullptr);
}

TEST(History, TonightsBundleReplaysToTheSameVerdict) {
    TempDir dir;
    for (int i = 0; i < 3; ++i) write_run(dir, run_on(kNight0 + i * kDay, 800));
    const Checked c = check(dir, run_on(kNight0 + 3 * kDay, 12000));
    HistoryStore store(dir.str(), HistoryLimits{});
    store.load("web1");
    std::string error;
    const auto saved = store.save(c.ev, &error);
    ASSERT_TRUE(saved) << error;
    EXPECT_EQ(render_json(analyze(load_bundle(*saved), shipped_rules())).dump(), render_json(c.verdict).dump());
}

TEST(History, NvmeWearRateMatchedBySerialAcrossARename) {
    TempDir dir;
    auto nvme_run = [](double start, const std::string& device, double used, double errors) {
        Evidence ev = run_on(start, 100);
        const Labels l{{"device", device}};
        const Provenance smart{"ioctl", "NVMe SMART log page 0x02"};
        ev.add_fact("device.class", l, "nvme", {"file", "/sys/block/" + device});
        ev.add_fact("nvme.serial", l, "S4EVNX0N123456", {"file", "/sys/class/nvme/nvme0/serial"});
        ev.add_metric("nvme.percent_used", l, used, "pct", smart);
        ev.add_metric("nvme.media_errors", l, errors, "count", smart);
        return ev;
    };
    for (int i = 0; i < 7; ++i) write_run(dir, nvme_run(kNight0 + i * kDay, "nvme0n1", 40 + (i * 4) / 7, 3));
    // Tonight the namespace is nvme1n1 (another enumeration order): the same drive.
    const Checked c = check(dir, nvme_run(kNight0 + 7 * kDay, "nvme1n1", 44, 5));
    const Finding* wear = finding(c.verdict, "history.nvme_wear_rate", "nvme1n1");
    ASSERT_NE(wear, nullptr) << render_text(c.verdict);
    // +4 points in 7 days: 0.571 a day, 56 points left.
    EXPECT_EQ(wear->title, "nvme1n1: percentage used +4 % in 7 days: end of rated life in ~98 days");
    const CitedValue* change = cited(*wear, "history.nvme_percent_used_change");
    ASSERT_NE(change, nullptr);
    EXPECT_NE(change->provenance.source.find("serial S4EVNX0N123456"), std::string::npos);
    EXPECT_NE(change->provenance.source.find(stamp_name(kNight0)), std::string::npos) << change->provenance.source;
    const Finding* errors = finding(c.verdict, "history.nvme_media_errors_growth", "nvme1n1");
    ASSERT_NE(errors, nullptr);
    EXPECT_EQ(errors->severity, Severity::Critical);
    EXPECT_EQ(c.verdict.status, Severity::Critical);
}

TEST(History, NvmeWearTooSlowOrTooShortIsNoFinding) {
    TempDir dir;
    auto nvme_run = [](double start, double used) {
        Evidence ev = run_on(start, 100);
        const Labels l{{"device", "nvme0n1"}};
        ev.add_fact("device.class", l, "nvme", {"file", "/sys/block/nvme0n1"});
        ev.add_metric("nvme.percent_used", l, used, "pct", {"ioctl", "SMART"});
        return ev;
    };
    write_run(dir, nvme_run(kNight0, 10));
    // +2 points in 30 days: 1350 days left.
    EXPECT_EQ(finding(check(dir, nvme_run(kNight0 + 30 * kDay, 12)).verdict, "history.nvme_wear_rate", "nvme0n1"),
              nullptr);
    // +5 points in a day: the counter's rounding over too short a span.
    EXPECT_EQ(finding(check(dir, nvme_run(kNight0 + kDay, 15)).verdict, "history.nvme_wear_rate", "nvme0n1"), nullptr);
}

TEST(HistoryStore, CorruptForeignAndStrangeFilesAreSkippedNamedAndLeftAlone) {
    TempDir dir;
    write_run(dir, run_on(kNight0, 800));
    write_run(dir, run_on(kNight0 + kDay, 800, 500, "db7"));   // another host's bundle
    std::ofstream(dir / "iodiag-check-20251203T000000Z.json") << "{\"schema\": \"iodiag-bundle\", trunc";
    std::ofstream(dir / "notes.txt") << "mine";
    std::ofstream(dir / "iodiag-check-latest.json") << "{}";   // not our name pattern
    fs::create_symlink(dir / "notes.txt", dir / "iodiag-check-20251204T000000Z.json");

    HistoryStore store(dir.str(), HistoryLimits{1, 1ull << 30});   // keep 1: prune everything it may
    const cli::HistoryLoad load = store.load("web1");
    ASSERT_EQ(load.runs.size(), 1u);
    std::map<std::string, std::string> skipped;
    for (const auto& s : load.skipped) skipped[s.name] = s.why;
    ASSERT_EQ(skipped.size(), 3u);
    EXPECT_NE(skipped[stamp_name(kNight0 + kDay)].find("a bundle of host 'db7'"), std::string::npos);
    EXPECT_NE(skipped["iodiag-check-20251203T000000Z.json"].find("corrupt, left in place"), std::string::npos);
    EXPECT_EQ(skipped["iodiag-check-20251204T000000Z.json"], "not a regular file");

    std::string error;
    const auto saved = store.save(run_on(kNight0 + 5 * kDay, 800), &error);
    ASSERT_TRUE(saved) << error;
    std::vector<std::string> problems;
    const auto pruned = store.prune("web1", *saved, problems);
    EXPECT_EQ(pruned, std::vector<std::string>{stamp_name(kNight0)});
    EXPECT_TRUE(problems.empty());
    for (const char* kept : {"iodiag-check-20251203T000000Z.json", "notes.txt", "iodiag-check-latest.json",
                             "iodiag-check-20251204T000000Z.json"})
        EXPECT_TRUE(fs::exists(fs::symlink_status(dir / kept))) << kept;
    EXPECT_TRUE(fs::exists(dir / stamp_name(kNight0 + kDay))) << "another host's bundle is not pruned";
    EXPECT_TRUE(fs::exists(*saved));
}

TEST(HistoryStore, BoundedByCountAndBytesOldestFirstNeverTonight) {
    TempDir dir;
    for (int i = 0; i < 6; ++i) write_run(dir, run_on(kNight0 + i * kDay, 800));
    const uint64_t one = fs::file_size(dir / stamp_name(kNight0));
    {
        HistoryStore store(dir.str(), HistoryLimits{4, 1ull << 30});
        store.load("web1");
        std::string error;
        const auto saved = store.save(run_on(kNight0 + 6 * kDay, 800), &error);
        ASSERT_TRUE(saved) << error;
        std::vector<std::string> problems;
        EXPECT_EQ(store.prune("web1", *saved, problems),
                  (std::vector<std::string>{stamp_name(kNight0), stamp_name(kNight0 + kDay), stamp_name(kNight0 + 2 * kDay)}));
    }
    {
        // Bytes: room for two and a half bundles -> two are kept.
        HistoryStore store(dir.str(), HistoryLimits{100, one * 5 / 2});
        store.load("web1");
        std::vector<std::string> problems;
        const auto pruned = store.prune("web1", (dir / stamp_name(kNight0 + 6 * kDay)).string(), problems);
        EXPECT_EQ(pruned.size(), 2u);
        EXPECT_TRUE(fs::exists(dir / stamp_name(kNight0 + 6 * kDay)));
        EXPECT_TRUE(fs::exists(dir / stamp_name(kNight0 + 5 * kDay)));
    }
    {
        // Smaller than one bundle: tonight's stays, and that is said.
        HistoryStore store(dir.str(), HistoryLimits{100, one / 2});
        store.load("web1");
        std::vector<std::string> problems;
        const std::string tonight = (dir / stamp_name(kNight0 + 6 * kDay)).string();
        store.prune("web1", tonight, problems);
        EXPECT_TRUE(fs::exists(tonight));
        ASSERT_EQ(problems.size(), 1u);
        EXPECT_NE(problems[0].find("more than max_bytes"), std::string::npos);
    }
}

TEST(HistoryStore, AnUnusableDirectoryIsAProblemNotAFailure) {
    TempDir dir;
    std::ofstream(dir / "a-file") << "x";
    HistoryStore store((dir / "a-file").string() + "/state", HistoryLimits{});
    const cli::HistoryLoad load = store.load("web1");
    ASSERT_EQ(load.problems.size(), 1u);
    EXPECT_NE(load.problems[0].find("cannot create the state directory"), std::string::npos) << load.problems[0];
    std::string error;
    EXPECT_FALSE(store.save(run_on(kNight0, 800), &error));
    EXPECT_NE(error.find("does not exist"), std::string::npos) << error;
}

TEST(HistoryStore, TwoRunsInOneSecondKeepBothBundles) {
    TempDir dir;
    HistoryStore store(dir.str(), HistoryLimits{});
    store.load("web1");
    std::string error;
    const auto a = store.save(run_on(kNight0, 800), &error);
    const auto b = store.save(run_on(kNight0, 900), &error);
    ASSERT_TRUE(a && b);
    EXPECT_NE(*a, *b);
    EXPECT_TRUE(HistoryStore::is_run_name(fs::path(*b).filename().string())) << *b;
}

// An operation far above its own normal is a finding even when no layer's
// share crosses a rule's threshold: fsync's p99 against its median over the
// last runs (issue 13 §0).
TEST(History, OperationFarAboveItsOwnNormalIsAFinding) {
    auto with_fsyncs = [](Evidence ev, double p99_us) {
        const Labels op{{"op", "fsync"}};
        const Provenance tp{"tracepoint", "tracepoint:raw_syscalls:sys_enter/sys_exit"};
        ev.add_metric("syscall.ops", op, 400, "count", tp);
        ev.add_metric("syscall.p99_us", op, p99_us, "us", tp);
        return ev;
    };
    TempDir dir;
    const std::vector<double> normal{1800, 2100, 2000};
    for (size_t i = 0; i < normal.size(); ++i) write_run(dir, with_fsyncs(run_on(kNight0 + i * kDay, 800), normal[i]));

    const Checked slow = check(dir, with_fsyncs(run_on(kNight0 + 3 * kDay, 800), 16000));
    const Finding* f = finding(slow.verdict, "history.operation_latency_drift", "fsync");
    ASSERT_NE(f, nullptr) << render_text(slow.verdict);
    EXPECT_EQ(f->severity, Severity::Warning);
    EXPECT_NEAR(slow.ev.find_metric("history.op_p99_ratio", {{"op", "fsync"}})->value, 8, 1e-9);
    const CitedValue* median = cited(*f, "history.op_p99_median_us");
    ASSERT_NE(median, nullptr);
    EXPECT_EQ(median->provenance.kind, "history");
    EXPECT_NE(slow.verdict.status, Severity::Info);

    // Within 3x of its normal, or not above the slowest earlier run: no finding.
    const Checked usual = check(dir, with_fsyncs(run_on(kNight0 + 3 * kDay, 800), 5000));
    EXPECT_EQ(finding(usual.verdict, "history.operation_latency_drift", "fsync"), nullptr);
}
