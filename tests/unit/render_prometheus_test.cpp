// The textfile-collector output: well-formed exposition text with HELP/TYPE,
// base units, bounded labels, the figures of the verdict it renders; checked
// by promtool itself when it is installed; written atomically by the app.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "app/commands.hpp"
#include "app/fleet_outputs.hpp"
#include "engine/evidence/atomic_file.hpp"
#include "engine/evidence/bundle.hpp"
#include "engine/render/plugin_output.hpp"
#include "engine/render/render_prometheus.hpp"
#include "engine/triage/analysis.hpp"
#include "tests/unit/shipped_rules.hpp"

using namespace iodiag;
using iodiag::testing::shipped_rules;

namespace {

const std::string kBundles = std::string(IODIAG_FIXTURES) + "/bundles/";

struct Rendered {
    Evidence ev;
    Verdict v;
    std::string text;
};

Rendered render_bundle(const std::string& name) {
    Rendered r;
    r.ev = load_bundle(kBundles + name + ".json");
    r.v = analyze(r.ev, shipped_rules());
    r.text = render_prometheus(r.v, r.ev, {"replay", 1700000000.5, 5.25, "0.1.0"});
    return r;
}

struct Sample {
    std::string name;
    std::map<std::string, std::string> labels;
    double value = 0;
};

// A small parser of the exposition format, enough to check what we write.
std::vector<Sample> samples_of(const std::string& text) {
    std::vector<Sample> out;
    std::istringstream in(text);
    std::string line;
    const std::regex sample_re(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)$)");
    const std::regex label_re(R"re(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)")re");
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::smatch m;
        EXPECT_TRUE(std::regex_match(line, m, sample_re)) << "not a sample line (or has a timestamp): " << line;
        if (m.empty()) continue;
        Sample s;
        s.name = m[1];
        s.value = std::stod(m[3]);
        const std::string labels = m[2];
        for (auto it = std::sregex_iterator(labels.begin(), labels.end(), label_re); it != std::sregex_iterator(); ++it)
            s.labels[(*it)[1]] = (*it)[2];
        out.push_back(std::move(s));
    }
    return out;
}

std::vector<Sample> named(const std::vector<Sample>& all, const std::string& name) {
    std::vector<Sample> out;
    for (const auto& s : all)
        if (s.name == name) out.push_back(s);
    return out;
}

std::string run_capture(const std::string& cmd, int* rc) {
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int st = pclose(p);
    *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

}  // namespace

TEST(RenderPrometheus, EveryFamilyHasHelpAndTypeOnceAndItsSamplesTogether) {
    ASSERT_TRUE(shipped_rules().ok());
    const auto r = render_bundle("dirty_throttle");
    std::istringstream in(r.text);
    std::string line, current;
    std::set<std::string> helped, typed, finished;
    while (std::getline(in, line)) {
        if (line.rfind("# HELP ", 0) == 0) {
            const std::string name = line.substr(7, line.find(' ', 7) - 7);
            EXPECT_TRUE(helped.insert(name).second) << "second HELP for " << name;
            if (!current.empty()) finished.insert(current);
            current = name;
            continue;
        }
        if (line.rfind("# TYPE ", 0) == 0) {
            const std::string name = line.substr(7, line.find(' ', 7) - 7);
            EXPECT_EQ(name, current);
            EXPECT_TRUE(typed.insert(name).second);
            EXPECT_NE(line.find(" gauge"), std::string::npos) << line;
            continue;
        }
        const std::string name = line.substr(0, line.find('{'));
        EXPECT_EQ(name, current) << "sample outside its family: " << line;
        EXPECT_EQ(finished.count(name), 0u) << "family split: " << name;
        EXPECT_EQ(name.rfind("iodiag_", 0), 0u) << name;
    }
    EXPECT_EQ(helped, typed);
}

TEST(RenderPrometheus, CarriesTheVerdictInBaseUnitsWithBoundedLabels) {
    const auto r = render_bundle("dirty_throttle");
    ASSERT_FALSE(r.v.findings.empty());
    const auto all = samples_of(r.text);

    const auto status = named(all, "iodiag_status");
    ASSERT_EQ(status.size(), 1u);
    EXPECT_EQ(status[0].value, static_cast<int>(plugin_state(r.v)));
    EXPECT_GE(status[0].value, 1);

    // Each finding on the triage path, with its rule id and the fingerprint.
    const auto findings = named(all, "iodiag_finding");
    ASSERT_FALSE(findings.empty());
    bool top_seen = false;
    for (const auto& f : findings) {
        EXPECT_EQ(f.labels.at("fingerprint"), r.v.fingerprint);
        if (f.labels.at("rule_id") == r.v.findings.front().rule_id) top_seen = true;
    }
    EXPECT_TRUE(top_seen);
    // The top finding's share as a ratio.
    const Finding& top = r.v.findings.front();
    ASSERT_TRUE(top.share_pct.has_value());
    bool share_seen = false;
    for (const auto& s : named(all, "iodiag_finding_share_ratio"))
        if (s.labels.at("rule_id") == top.rule_id) {
            EXPECT_NEAR(s.value, *top.share_pct / 100.0, 1e-6);
            share_seen = true;
        }
    EXPECT_TRUE(share_seen);

    // Layer shares are ratios 0..1; a layer row's slow share is rendered.
    const auto shares = named(all, "iodiag_layer_share_ratio");
    ASSERT_FALSE(shares.empty());
    for (const auto& s : shares) {
        EXPECT_GE(s.value, 0);
        EXPECT_LE(s.value, 1.0 + 1e-9);
    }
    for (const auto& row : r.v.layers)
        if (row.share_slow_pct) {
            bool found = false;
            for (const auto& s : shares)
                if (s.labels.at("layer") == row.layer && s.labels.at("basis") == "slow") {
                    EXPECT_NEAR(s.value, *row.share_slow_pct / 100.0, 1e-6);
                    found = true;
                }
            EXPECT_TRUE(found) << row.layer;
        }

    // Per-device tails in seconds, from the bundle's histograms.
    const auto d2c = named(all, "iodiag_device_d2c_p99_seconds");
    ASSERT_FALSE(d2c.empty());
    for (const auto& s : d2c) {
        const HistogramMetric* h = r.ev.find_histogram("block.d2c_us", {{"device", s.labels.at("device")}});
        ASSERT_NE(h, nullptr);
        EXPECT_NEAR(s.value, h->hist.percentile(99).value / 1e6, 1e-9);
    }
    EXPECT_FALSE(named(all, "iodiag_device_q2c_p99_seconds").empty());

    // Run time and window.
    EXPECT_EQ(named(all, "iodiag_last_run_timestamp_seconds").at(0).value, 1700000000.5);
    EXPECT_EQ(named(all, "iodiag_last_run_duration_seconds").at(0).value, 5.25);
    EXPECT_NEAR(named(all, "iodiag_window_duration_seconds").at(0).value, r.v.window.duration_s, 1e-6);
    EXPECT_EQ(named(all, "iodiag_collector_available").size(), r.v.collectors.size());

    // Only bounded label names anywhere: an application's command and a
    // cgroup's name and kind (a service, a container, a pod) are as many as
    // the programs and services that suffered, never a path or a pid.
    const std::set<std::string> allowed{"mode", "rule_id", "layer", "severity", "rule_severity", "device", "fingerprint",
                                        "collector", "what", "basis", "status", "version",
                                        "app", "cgroup_name", "cgroup_kind"};
    for (const auto& s : all) {
        EXPECT_EQ(s.labels.at("mode"), "replay");
        for (const auto& [k, _] : s.labels) EXPECT_TRUE(allowed.count(k)) << s.name << " has label " << k;
    }
}

TEST(RenderPrometheus, FoldsFindingsOnCgroupsIntoOneSeriesPerRule) {
    // One rule firing on two cgroups and on a device: the cgroup paths must
    // not become labels; the cgroup findings fold into one series.
    Verdict v;
    v.fingerprint = "0123456789abcdef";
    v.status = Severity::Warning;
    auto finding = [](std::string key, std::string instance, std::optional<double> share) {
        Finding f;
        f.rule_id = key == "device" ? "block.device_d2c_tail" : "cgroup.io_limit_reached";
        f.layer = key == "device" ? "device" : "cgroup";
        f.severity = Severity::Warning;
        f.instance_key = key;
        f.instance = instance;
        f.share_pct = share;
        return f;
    };
    v.findings = {finding("cgroup", "/system.slice/db.service", 40.0), finding("cgroup", "/user.slice/batch", 25.0),
                  finding("device", "sdb", 10.0)};
    const std::string text = render_prometheus(v, Evidence{}, {"check", 1, 1, "x"});
    EXPECT_EQ(text.find("slice"), std::string::npos) << "a cgroup path leaked into a label:\n" << text;
    const auto all = samples_of(text);
    const auto findings = named(all, "iodiag_finding");
    ASSERT_EQ(findings.size(), 2u) << text;
    for (const auto& s : named(all, "iodiag_finding_instances"))
        EXPECT_EQ(s.value, s.labels.at("rule_id") == "cgroup.io_limit_reached" ? 2 : 1);
    for (const auto& s : named(all, "iodiag_finding_share_ratio")) {
        if (s.labels.at("rule_id") == "cgroup.io_limit_reached") {
            EXPECT_EQ(s.value, 0.40);   // the largest instance's
            EXPECT_EQ(s.labels.count("device"), 0u);
        } else {
            EXPECT_EQ(s.labels.at("device"), "sdb");
        }
    }
}

TEST(RenderPrometheus, AHealthyVerdictHasStatusZeroAndNoFinding) {
    const auto r = render_bundle("cached_reads");
    const auto all = samples_of(r.text);
    EXPECT_EQ(named(all, "iodiag_status").at(0).value, 0);
    EXPECT_TRUE(named(all, "iodiag_finding").empty());
    EXPECT_EQ(named(all, "iodiag_verdict_info").at(0).labels.at("status"), "ok");
}

// A rule above info kept off the triage path is a note: counted under
// iodiag_notes by its rule's severity, never among the findings, so that
// iodiag_findings{severity="critical"} agrees with the status.
// two_apps_device_one_thread: loop0's D2C tail (critical) on the writers'
// device, which no slow syscall waited on.
TEST(RenderPrometheus, NotesAreCountedApartFromTheFindings) {
    const auto r = render_bundle("two_apps_device_one_thread");
    ASSERT_NE(r.v.status, Severity::Critical);
    const auto critical_notes = std::count_if(r.v.notes.begin(), r.v.notes.end(),
                                              [](const Finding& f) { return f.severity == Severity::Critical; });
    ASSERT_GT(critical_notes, 0) << "the fixture no longer has a critical rule among its notes";
    const auto all = samples_of(r.text);
    std::map<std::string, double> findings, notes;
    for (const auto& s : named(all, "iodiag_findings")) findings[s.labels.at("severity")] = s.value;
    for (const auto& s : named(all, "iodiag_notes")) notes[s.labels.at("rule_severity")] = s.value;
    EXPECT_EQ(findings["critical"], 0);
    EXPECT_EQ(notes["critical"], critical_notes);
    double findings_total = 0, notes_total = 0;
    for (const auto& [_, n] : findings) findings_total += n;
    for (const auto& [_, n] : notes) notes_total += n;
    EXPECT_EQ(findings_total, r.v.findings.size());
    EXPECT_EQ(notes_total, r.v.notes.size());
}

TEST(RenderPrometheus, LabelValuesAreEscaped) {
    Verdict v;
    v.collectors.push_back({"we\"ird\\name\n", true, "", {}});
    const std::string text = render_prometheus(v, Evidence{}, {"diagnose", 1, 1, "x"});
    EXPECT_NE(text.find(R"(collector="we\"ird\\name\n")"), std::string::npos) << text;
}

TEST(RenderPrometheus, PromtoolAcceptsWhatWeWrite) {
    int rc = 0;
    run_capture("command -v promtool >/dev/null 2>&1", &rc);
    if (rc != 0) GTEST_SKIP() << "needs promtool (Debian package prometheus)";
    for (const std::string name : {"dirty_throttle", "blkio_throttle", "cached_reads", "fsync_storm"}) {
        const auto r = render_bundle(name);
        const std::string path = ::testing::TempDir() + "iodiag-" + name + ".prom";
        write_file_atomically(path, r.text);
        const std::string out = run_capture("promtool check metrics < " + path + " 2>&1", &rc);
        EXPECT_EQ(rc, 0) << name << ": " << out;
        EXPECT_EQ(out, "") << name << ": lint problems:\n" << out;
        std::remove(path.c_str());
    }
}

TEST(FleetOutputs, ATextfileInAMissingDirectoryIsABadArgument) {
    cli::FleetOutputs o;
    o.prometheus_file = "/nonexistent-iodiag-dir/iodiag.prom";
    try {
        cli::check_fleet_outputs(o, "replay");
        FAIL() << "no error";
    } catch (const cli::ExitCode& e) {
        EXPECT_EQ(e.code, 3);
    }
    o.prometheus_file = ::testing::TempDir() + "iodiag.prom";
    EXPECT_NO_THROW(cli::check_fleet_outputs(o, "replay"));
}

TEST(FleetOutputs, TheTextfileIsReplacedInOneStepAndNothingElseIsLeft) {
    const std::string dir = ::testing::TempDir() + "iodiag-prom-atomic";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string path = dir + "/iodiag.prom";
    {
        std::ofstream old(path);
        old << "# old content\n";
    }
    // Keep a reader's view of the old file open: rename() gives it a new
    // inode, so a reader sees either the old or the new file, never a mix.
    std::ifstream reader(path);
    const auto r = render_bundle("dirty_throttle");
    cli::write_prometheus_textfile(path, r.v, r.ev, "replay", std::chrono::steady_clock::now());
    std::string old_line;
    std::getline(reader, old_line);
    EXPECT_EQ(old_line, "# old content");
    std::ifstream now(path);
    std::stringstream ss;
    ss << now.rdbuf();
    EXPECT_EQ(ss.str().rfind("# HELP iodiag_", 0), 0u);
    size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        ++files;
        EXPECT_EQ(e.path().filename(), "iodiag.prom") << "left behind: " << e.path();
    }
    EXPECT_EQ(files, 1u);
    std::filesystem::remove_all(dir);
}
