// Replays bundles recorded from real faults (tests/fixtures/bundles) through
// the shipped rules and checks the diagnosis each fault must give.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/triage/analysis.hpp"
#include "engine/evidence/bundle.hpp"
#include "engine/render/render.hpp"
#include "tests/unit/shipped_rules.hpp"

using namespace iodiag;
using nlohmann::json;

namespace {

const std::string kBundles = std::string(IODIAG_FIXTURES) + "/bundles/";

using iodiag::testing::shipped_rules;

json expectations() {
    std::ifstream in(kBundles + "expected.json");
    return json::parse(in);
}

class Replay : public ::testing::TestWithParam<std::string> {};

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

}  // namespace

TEST_P(Replay, GivesTheDiagnosisOfTheRecordedFault) {
    ASSERT_TRUE(shipped_rules().ok());
    const std::string name = GetParam();
    const json want = expectations().at(name);
    const Evidence ev = load_bundle(kBundles + name + ".json");

    const auto t0 = std::chrono::steady_clock::now();
    const Verdict v = analyze(ev, shipped_rules());
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s: analysis of a %.1f s bundle took %.1f ms\n", name.c_str(), ev.window.duration_s, ms);
    SCOPED_TRACE(name + " (" + want.value("why", "") + ")\n" + render_text(v));

    if (want.contains("top_layer") || want.contains("top_layer_in") || want.contains("top_rule")) {
        // "top_is_note": the cause is info-level (e.g. depth-1 synchronous I/O),
        // so nothing is a finding and it leads the notes.
        const bool note = want.value("top_is_note", false);
        if (note) {
            EXPECT_TRUE(v.findings.empty());
            ASSERT_FALSE(v.notes.empty());
        } else {
            ASSERT_FALSE(v.findings.empty());
        }
        const Finding& top = note ? v.notes.front() : v.findings.front();
        if (want.contains("top_layer")) { EXPECT_EQ(top.layer, want["top_layer"].get<std::string>()); }
        if (want.contains("top_layer_in")) {
            const auto allowed = want["top_layer_in"].get<std::vector<std::string>>();
            EXPECT_NE(std::find(allowed.begin(), allowed.end(), top.layer), allowed.end()) << top.layer;
        }
        if (want.contains("top_rule")) { EXPECT_EQ(top.rule_id, want["top_rule"].get<std::string>()); }
        if (want.contains("top_instance_prefix")) {
            EXPECT_TRUE(starts_with(top.instance, want["top_instance_prefix"])) << top.instance;
        }
        if (want.contains("top_title_contains")) {
            EXPECT_NE(top.title.find(want["top_title_contains"].get<std::string>()), std::string::npos) << top.title;
        }
        if (want.contains("min_top_share_pct")) {
            ASSERT_TRUE(top.share_pct.has_value());
            EXPECT_GT(*top.share_pct, want["min_top_share_pct"].get<double>());
        }
        // Measured independently while the bundle was recorded
        // (tests/lab/ground_truth.bt over the victims' slow syscalls).
        if (want.contains("ground_truth_share_pct")) {
            ASSERT_TRUE(top.share_pct.has_value());
            EXPECT_NEAR(*top.share_pct, want["ground_truth_share_pct"].get<double>(), 15.0);
        }
    }
    // Two causes at once: the other one ranked second, its share (over its
    // own application's slow syscalls) near its own ground truth.
    if (want.contains("second_rule")) {
        ASSERT_GE(v.findings.size(), 2u);
        EXPECT_EQ(v.findings[1].rule_id, want["second_rule"].get<std::string>());
        if (want.contains("second_ground_truth_share_pct")) {
            ASSERT_TRUE(v.findings[1].share_pct.has_value());
            EXPECT_NEAR(*v.findings[1].share_pct, want["second_ground_truth_share_pct"].get<double>(), 15.0);
        }
        // Whose slow syscalls the second cause was judged on (another
        // application than the one that suffered most), where and how much.
        if (want.contains("second_sufferer")) { EXPECT_EQ(v.findings[1].sufferer, want["second_sufferer"].get<std::string>()); }
        if (want.contains("second_instance_prefix")) {
            EXPECT_TRUE(starts_with(v.findings[1].instance, want["second_instance_prefix"])) << v.findings[1].instance;
        }
        if (want.contains("min_second_share_pct")) {
            ASSERT_TRUE(v.findings[1].share_pct.has_value());
            EXPECT_GT(*v.findings[1].share_pct, want["min_second_share_pct"].get<double>());
        }
    }
    if (want.contains("cgroup_named")) {
        const std::string text = render_text(v);
        EXPECT_NE(text.find(want["cgroup_named"].get<std::string>()), std::string::npos);
    }
    // The per-layer table's largest share of slow time is the layer the time
    // was measured in (a thread asleep for its own request while bfq held it
    // counts under the block queue, not the device).
    if (want.contains("table_top_layer")) {
        const LayerRow* top = nullptr;
        for (const auto& row : v.layers)
            if (row.layer != "syscall" && row.share_slow_pct && (!top || *row.share_slow_pct > *top->share_slow_pct))
                top = &row;
        ASSERT_NE(top, nullptr);
        EXPECT_EQ(top->layer, want["table_top_layer"].get<std::string>()) << *top->share_slow_pct;
    }
    if (want.contains("device_row_names")) {
        for (const auto& row : v.layers)
            if (row.layer == "device") { EXPECT_NE(row.figures.find(want["device_row_names"].get<std::string>()), std::string::npos); }
    }
    if (want.contains("fires"))
        for (const auto& id : want["fires"].get<std::vector<std::string>>()) {
            bool fired = false;
            for (const auto& f : v.findings) {
                fired |= f.rule_id == id;
                // folded into another finding of the same cause (one cause, one finding)
                for (const auto& folded : f.folded) fired |= folded.rfind(id + "@", 0) == 0;
            }
            EXPECT_TRUE(fired) << id;
        }
    if (want.contains("fired_cite")) {  // every finding of a rule cites these values (e.g. the peer a replica wait is traced to)
        for (const auto& [rule, cites] : want["fired_cite"].items())
            for (const auto& f : v.findings) {
                if (f.rule_id != rule) continue;
                for (const auto& [name, value] : cites.items()) {
                    std::string cited;
                    for (const auto& e : f.evidence)
                        if (e.name == name) cited = e.text.empty() ? e.formatted : e.text;
                    EXPECT_EQ(cited, value.get<std::string>()) << rule << " on " << f.instance << ": " << name;
                }
            }
    }
    if (want.contains("notes_fire")) {   // info-level causes said beside the finding
        for (const auto& id : want["notes_fire"].get<std::vector<std::string>>())
            EXPECT_TRUE(std::any_of(v.notes.begin(), v.notes.end(), [&](const Finding& n) { return n.rule_id == id; }))
                << id;
    }
    if (want.contains("not_fires")) {  // another mechanism's rule (e.g. jbd2 on an XFS fault) must stay silent
        for (const auto& id : want["not_fires"].get<std::vector<std::string>>())
            for (const auto& f : v.findings) EXPECT_NE(f.rule_id, id);
    }
    if (want.contains("no_finding_above")) {
        EXPECT_EQ(want["no_finding_above"], "info");
        for (const auto& f : v.findings) EXPECT_EQ(f.severity, Severity::Info) << f.rule_id;
    }
    if (want.contains("no_finding_on_layer")) {
        for (const auto& f : v.findings) EXPECT_NE(f.layer, want["no_finding_on_layer"].get<std::string>()) << f.rule_id;
    }
}

TEST_P(Replay, IsDeterministic) {
    const Evidence ev = load_bundle(kBundles + GetParam() + ".json");
    EXPECT_EQ(render_json(analyze(ev, shipped_rules())).dump(), render_json(analyze(ev, shipped_rules())).dump());
    EXPECT_EQ(render_text(analyze(ev, shipped_rules())), render_text(analyze(ev, shipped_rules())));
}

INSTANTIATE_TEST_SUITE_P(RecordedFaults, Replay,
                         ::testing::Values("slow_device", "tiny_nr_requests", "dirty_throttle", "memcg_reader",
                                           "device_saturated", "fsync_storm", "cached_reads", "blkio_throttle",
                                           "fsync_storm_xfs", "dirty_throttle_xfs", "memcg_reader_xfs",
                                           "fsync_storm_btrfs", "dirty_throttle_btrfs", "memcg_reader_btrfs",
                                           // issue 13 (accuracy matrix runs, ground truth in expected.json)
                                           "classless_slow", "stacked_slow", "loop_cgroup_limit", "pgbench_writer",
                                           "qd1_fast", "lock_contention", "cpu_starved", "hdd_seek",
                                           "busy_healthy", "dirty_throttle_loaded", "hdd_seek_known",
                                           "stacked_slow_busy_disk", "bfq_idling", "two_apps", "two_apps_device",
                                           // issue 12 (real single-host Ceph 16.2 cluster, tests/ceph/cluster.sh)
                                           "ceph_slow_osd_disk", "ceph_cpu_starved", "ceph_healthy",
                                           // issue 23 (a draw of the accuracy matrix, tests/lab/draws.py)
                                           "db_commits_postgres", "app_alone_postgres", "app_alone_fio",
                                           "two_apps_device_one_thread",
                                           // issue 33: a paced backup beside a reader (seed 161)
                                           "paced_backup_reader", "paced_backup_large_reads",
                                           // seed 181: twelve readers queued on a single-head disk
                                           "hdd_seek_twelve"));
