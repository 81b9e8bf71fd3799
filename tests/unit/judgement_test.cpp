// Issue 22, the judgement model (docs/judgement.md): a layer holding most of a
// slowed application's time is never OK and never "not judged"; a wait that is
// not the application's own demand, or a material tail of a layer's own
// distribution, is abnormal; the application's own demand on a healthy layer
// stays quiet; a finding that explains nothing never outranks one that does;
// OK needs the layers that carry the applications' latency observed.
#include <gtest/gtest.h>

#include "engine/render/plugin_output.hpp"
#include "engine/render/render.hpp"
#include "engine/triage/analysis.hpp"
#include "engine/triage/judgement.hpp"
#include "shipped_rules.hpp"
#include "synthetic_evidence.hpp"

using namespace iodiag;
using namespace iodiag::testing;

namespace {

// The syscall and block collectors ran (their layers observed).
void observed_by_bpf(Evidence& ev) {
    ev.collectors.push_back({"syscall_bpf", true, "", {"filesystem", "journal", "page_cache", "dirty", "reclaim",
                                                       "cgroup", "locks", "syscall", "cpu"}});
    ev.collectors.push_back({"block_bpf", true, "", {"device", "block_queue"}});
}

// The suffering application `app`: `ops` slow syscalls of `mean_us` on
// average, split over the layers by `pct` (its own, attr.app.*), the same as
// the machine's slow set.
void sufferer(Evidence& ev, const std::string& app, const std::map<std::string, double>& pct, double mean_us,
              double ops = 500) {
    ev.add_fact("attr.app.name", {}, app, kP);
    ev.add_metric("attr.app.ops", {}, ops, "count", kP);
    ev.add_metric("attr.app.time_us", {}, ops * mean_us, "us", kP);
    ev.add_metric("attr.app.basis_us", {}, 1024, "us", kP);
    for (const char* l : {"device", "block_queue", "filesystem", "journal", "page_cache", "dirty", "reclaim", "cgroup",
                          "locks", "cpu", "other"})
        ev.add_metric(std::string("attr.app.") + l + "_pct", {}, pct.count(l) ? pct.at(l) : 0, "pct", kP);
    slow_set(ev, pct, mean_us);
    observed_by_bpf(ev);
    ev.add_metric("attr.slow.threshold_us", {}, 1024, "us", kP);
    ev.add_metric("syscall.proc.time_us", {{"comm", app}, {"pid", "100"}, {"cgroup", "/"}}, ops * mean_us * 2, "us",
                  kP);
}

// A device's service time: `fast` requests near `fast_us`, `stalled` near `stall_us`.
void stalling_device(Evidence& ev, const std::string& dev, double fast_us, uint64_t fast, double stall_us,
                     uint64_t stalled, double aqu = 1.0) {
    device(ev, dev, "loop", fast_us, fast, aqu);
    for (auto& h : ev.histograms)
        if (h.name == "block.d2c_us" && h.labels.at("device") == dev)
            h.hist.add_bucket(Log2Histogram::bucket_of(static_cast<uint64_t>(stall_us)), stalled);
    const Labels l{{"device", dev}};
    const double total = fast_us * static_cast<double>(fast) + stall_us * static_cast<double>(stalled);
    ev.metrics.erase(std::remove_if(ev.metrics.begin(), ev.metrics.end(),
                                    [&](const Metric& m) {
                                        return m.labels == l && (m.name == "block.d2c_total_us" ||
                                                                 m.name == "block.requests");
                                    }),
                     ev.metrics.end());
    ev.add_metric("block.d2c_total_us", l, total, "us", kP);
    ev.add_metric("block.q2c_total_us", l, total, "us", kP);
    ev.add_metric("block.requests", l, static_cast<double>(fast + stalled), "count", kP);
}

// redis-server waits on vdb (90 % of its slow time) while "backup" gets 90 %
// of the device's service time.
void redis_behind_a_backup(Evidence& ev) {
    device(ev, "vdb", "virtio", 200, 40000, 12);
    sufferer(ev, "redis-server", {{"device", 90}, {"cpu", 10}}, 3000);
    submitter(ev, "redis-server", "vdb", 4e6, 1e6, 0.8e6);
    submitter(ev, "backup", "vdb", 4e6, 3e6, 7.2e6);
}

const Finding* find(const std::vector<Finding>& v, const std::string& id) {
    for (const auto& f : v)
        if (f.rule_id == id) return &f;
    return nullptr;
}

const LayerRow& row(const Verdict& v, const std::string& layer) {
    for (const auto& r : v.layers)
        if (r.layer == layer) return r;
    throw std::runtime_error("no row " + layer);
}

}  // namespace

// CPU contention: 80 % of the slowed application's slow time is run-queue
// delay, 2 ms per slow syscall. A warning, so `check` alerts (was a note).
TEST(Judgement, WaitingForACpuThatHoldsMostOfTheTimeIsAWarning) {
    Evidence ev;
    sufferer(ev, "fio", {{"cpu", 80}, {"device", 20}}, 2500);
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty());
    EXPECT_EQ(v.findings.front().rule_id, "syscall.runqueue_delay");
    EXPECT_EQ(v.status, Severity::Warning);
    EXPECT_EQ(status_word(v), "warning");
    EXPECT_EQ(plugin_state(v), PluginState::Warning);
}

// The same share of ordinary time sharing (a few microseconds per slow
// syscall, far under one flash read) is no finding.
TEST(Judgement, ShortRunQueueDelaysAreOrdinaryTimeSharing) {
    Evidence ev;
    sufferer(ev, "fio", {{"cpu", 80}, {"device", 20}}, 50);
    const Verdict v = analyze(ev, shipped_rules());
    EXPECT_EQ(find(v.findings, "syscall.runqueue_delay"), nullptr);
    EXPECT_EQ(status_word(v), "ok");
}

// A CPU-bound reader of cached data, preempted inside its reads on a busy
// machine: its slow syscalls never block on storage, so their run-queue delay
// is time slicing, not a wait after its I/O. No CPU finding.
TEST(Judgement, RunQueueDelayOfAThreadThatNeverBlocksIsTimeSlicing) {
    Evidence ev;
    sufferer(ev, "fio", {{"cpu", 90}, {"filesystem", 9.8}, {"page_cache", 0.2}}, 2500);   // 5 us blocked each
    const Verdict v = analyze(ev, shipped_rules());
    EXPECT_EQ(find(v.findings, "syscall.runqueue_delay"), nullptr) << render_text(v, {});
    EXPECT_EQ(status_word(v), "ok");
}

// A device that stalls now and then (median 256 us, 2 % of its requests at
// ~100 ms: most of its service time) and holds the reader's slow time: a
// warning on the device, and no note saying the device is not slow.
TEST(Judgement, AFastMedianWithATailOfStallsIsAFinding) {
    Evidence ev;
    stalling_device(ev, "loop3", 256, 4900, 100000, 100);
    sufferer(ev, "fio", {{"device", 97}, {"cpu", 3}}, 20000);
    submitter(ev, "fio", "loop3", 4e6, 2.5e6, 2.5e6);
    ev.metrics.erase(std::remove_if(ev.metrics.begin(), ev.metrics.end(),
                                    [](const Metric& m) { return m.name == "block.submitter_d2c_total_us"; }),
                     ev.metrics.end());
    ev.add_metric("block.submitter_d2c_total_us", {{"device", "loop3"}, {"comm", "fio"}}, 256.0 * 4900 + 1e7, "us",
                  kP);
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty());
    EXPECT_EQ(v.findings.front().rule_id, "device.stall_tail") << render_text(v, {});
    EXPECT_EQ(v.findings.front().instance, "loop3");
    EXPECT_EQ(find(v.notes, "device.sync_depth1_bound"), nullptr);
    EXPECT_EQ(find(v.notes, "device.dominant_busy"), nullptr);
    EXPECT_EQ(row(v, "device").state, LayerState::Abnormal);
}

// The journal holds 75 % of a database's slow time and its commits carry
// another program's data; no journal rule could be evaluated (jbd2's phase
// statistics missing): the invariant names the layer at warning level,
// never "journal not judged".
TEST(Judgement, ADominantJournalCarryingAnotherProgramsDataIsNamed) {
    Evidence ev;
    sufferer(ev, "postgres", {{"journal", 75.5}, {"device", 20}, {"cpu", 4.5}}, 9000);
    ev.add_fact("io.top_writer", {}, "dd (pid 4242)", kP);
    ev.add_metric("io.top_writer_pct", {}, 96, "pct", kP);
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty()) << render_text(v, {});
    const Finding& f = v.findings.front();
    EXPECT_EQ(f.layer, "journal");
    EXPECT_GE(static_cast<int>(f.severity), static_cast<int>(Severity::Warning));
    ASSERT_TRUE(f.share_pct);
    EXPECT_NEAR(*f.share_pct, 75.5, 0.01);
    EXPECT_NE(row(v, "journal").state, LayerState::Unjudged);
}

// A healthy device saturated by another program: the victim's requests are a
// tenth of the device's service time, and its slow time is all device wait.
// The device is busy all the window and completes a request every 100 us of
// it: not slow, so the contention rule names the neighbor.
TEST(Judgement, ADeviceServingMostlyAnotherProgramIsNotTheApplicationsDemand) {
    Evidence ev;
    redis_behind_a_backup(ev);
    ev.add_metric("disk.util_pct", {{"device", "vdb"}}, 100, "pct", kP);
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty()) << render_text(v, {});
    const Finding& f = v.findings.front();
    EXPECT_EQ(f.rule_id, "contention.device_neighbor") << render_text(v, {});
    EXPECT_EQ(f.layer, "device");
    EXPECT_NE(f.title.find("other programs"), std::string::npos) << f.title;
    EXPECT_NE(f.title.find("backup"), std::string::npos) << f.title;
    EXPECT_GE(static_cast<int>(f.severity), static_cast<int>(Severity::Warning));
    EXPECT_EQ(row(v, "device").state, LayerState::Abnormal);
}

// The same without the device's utilisation (whether it is slow for its work
// is unknown, so the contention rule cannot speak): the judgement model still
// finds the device serving mostly another program and names the layer at
// warning level, with the largest other submitter.
TEST(Judgement, AContendedDeviceWithoutItsUtilisationIsStillNamed) {
    Evidence ev;
    redis_behind_a_backup(ev);
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty()) << render_text(v, {});
    const Finding& f = v.findings.front();
    EXPECT_EQ(f.rule_id, "judgement.dominant_layer") << render_text(v, {});
    EXPECT_EQ(f.layer, "device");
    EXPECT_NE(f.title.find("other programs"), std::string::npos) << f.title;
    EXPECT_NE(f.title.find("backup"), std::string::npos) << f.title;
    EXPECT_NE(status_word(v), "ok");
}

// One application keeping a fast device busy alone: its own demand on a
// healthy device. Quiet, and the dominant layer is judged normal with the
// reason, not "not judged".
TEST(Judgement, OwnDemandOnAHealthyDeviceStaysQuietAndIsJudged) {
    Evidence ev;
    device(ev, "vdb", "virtio", 200, 40000, 12);
    sufferer(ev, "fio", {{"device", 90}, {"cpu", 10}}, 3000);
    submitter(ev, "fio", "vdb", 4e6, 3.9e6, 8e6);
    const Verdict v = analyze(ev, shipped_rules());
    EXPECT_EQ(status_word(v), "ok") << render_text(v, {});
    EXPECT_EQ(row(v, "device").state, LayerState::Normal);
    EXPECT_NE(row(v, "device").figures.find("own demand"), std::string::npos) << row(v, "device").figures;
}

// A limit "reached" that cost nobody's slow syscalls anything is a note, and
// whatever has no measured share never ranks above a finding with one.
TEST(Judgement, AFindingThatExplainsNothingNeverOutranksOneThatDoes) {
    Evidence ev;
    stalling_device(ev, "loop3", 256, 4900, 100000, 100);
    sufferer(ev, "fio", {{"device", 97}, {"cpu", 3}}, 20000);
    const Labels cg{{"cgroup", "/batch"}};
    ev.add_metric("cgroup.io_limit_utilisation_pct", cg, 99, "pct", kP);
    ev.add_metric("syscall.cgroup.slow_time_us", {{"cgroup", "/other"}}, 1e6, "us", kP);
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty());
    EXPECT_NE(v.findings.front().rule_id, "cgroup.io_limit_reached");
    EXPECT_EQ(find(v.findings, "cgroup.io_limit_reached"), nullptr) << render_text(v, {});
    EXPECT_NE(find(v.notes, "cgroup.io_limit_reached"), nullptr);
}

TEST(Judgement, RankingPutsMeasuredSharesFirst) {
    Evidence ev;
    stalling_device(ev, "loop3", 256, 4900, 100000, 100);
    sufferer(ev, "fio", {{"device", 97}, {"cpu", 3}}, 20000);
    // A critical NVMe warning has no share of anybody's time: ranked below,
    // although critical.
    ev.add_fact("device.class", {{"device", "nvme0n1"}}, "nvme", kP);
    ev.add_metric("nvme.critical_warning", {{"device", "nvme0n1"}}, 4, "bitmask", kP);
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_NE(find(v.findings, "nvme.critical_warning"), nullptr) << render_text(v, {});
    EXPECT_EQ(v.status, Severity::Critical);
    EXPECT_EQ(v.findings.back().rule_id, "nvme.critical_warning");
    for (size_t i = 1; i < v.findings.size(); ++i)
        if (v.findings[i].share_pct && *v.findings[i].share_pct > 0)
            EXPECT_TRUE(v.findings[i - 1].share_pct && *v.findings[i - 1].share_pct > 0) << v.findings[i].rule_id;
}

// Without the syscall and block layers nothing found means nothing known:
// UNKNOWN, in every output, and `check` exits 3.
TEST(Judgement, WithoutTheLayersThatCarryTheLatencyOkIsUnknown) {
    Evidence ev;
    ev.collectors.push_back({"syscall_bpf", false, "not root (BPF needs CAP_BPF)", {"syscall"}});
    ev.collectors.push_back({"block_bpf", false, "not root (BPF needs CAP_BPF)", {"block_queue"}});
    ev.collectors.push_back({"vmstat", true, "", {"reclaim"}});
    ev.add_metric("vm.pgscan_direct", {}, 0, "pages", kP);
    const Verdict v = analyze(ev, shipped_rules());
    EXPECT_TRUE(v.findings.empty());
    EXPECT_EQ(status_word(v), "unknown");
    EXPECT_NE(render_text(v, {}).find("STATUS: UNKNOWN"), std::string::npos);
    const nlohmann::json j = render_json(v);
    EXPECT_EQ(j.at("status").get<std::string>(), "unknown");
    EXPECT_NE(j.at("blind").get<std::string>().find("not observed"), std::string::npos);
    EXPECT_EQ(plugin_state(v), PluginState::Unknown);
}

TEST(Judgement, TheLayerOfARulePerLayerIsItsInstance) {
    LoadContext ctx;
    const std::string bad =
        "rules:\n  - id: x.y\n    layer: \"{layer}\"\n    severity: warning\n    title: t\n    when: "
        "{metric: judge.share_pct, op: \">\", value: 1}\n    mechanism: m\n";
    const MetricCatalog catalog = [] {
        MetricCatalog c;
        c.add({"judge.share_pct", MetricSpec::Kind::Metric, "pct", "syscall", "layer", ""});
        return c;
    }();
    ctx.catalog = &catalog;
    const RuleSet r = load_rules_from_string(bad, "bad.yaml", ctx);
    bool e008 = false;
    for (const auto& d : r.diagnostics) e008 |= d.code == "E008";
    EXPECT_TRUE(e008);
}

// A lone writer fsyncing every 4 KiB write (seed 48's app_alone control): the
// journal holds most of its slow time, and its fsyncs' p99 is 10x their
// median, but the calls of 10x the median or more hold a twentieth of the
// fsync time: the application's own commits on a healthy journal. The same
// writer whose slow commits hold most of that time is a journal to act on.
TEST(Judgement, AFsyncTailIsAbnormalOnlyWhenItHoldsAMaterialPartOfTheFsyncTime) {
    const auto commit_loop = [](uint64_t slow_commits) {
        Evidence ev;
        sufferer(ev, "fio", {{"journal", 62}, {"device", 35}, {"cpu", 3}}, 3000);
        op_hist(ev, "fsync",
                {{200, 60}, {400, 3800}, {800, 900}, {1500, 530}, {3000, 215}, {6000, 60}, {12000, slow_commits}});
        return analyze(ev, shipped_rules());
    };
    const Verdict healthy = commit_loop(10);
    EXPECT_EQ(row(healthy, "journal").state, LayerState::Normal) << render_text(healthy, {});
    EXPECT_EQ(status_word(healthy), "ok") << render_text(healthy, {});

    const Verdict stalled = commit_loop(400);   // 400 commits of ~12 ms: over half the fsync time
    EXPECT_EQ(row(stalled, "journal").state, LayerState::Abnormal) << render_text(stalled, {});
    ASSERT_FALSE(stalled.findings.empty());
    EXPECT_EQ(stalled.findings.front().layer, "journal");
    EXPECT_NE(stalled.findings.front().title.find("fsyncs of 10x their median or more hold"), std::string::npos)
        << stalled.findings.front().title;
}

// Issue 34, settings as causes. A sequential reader with readahead off: its
// page-cache misses hold most of its time and nearly all of them continued a
// sequential read. The page cache is not "the application's own demand": the
// setting is named at warning, with its share.
namespace {
void reader_readahead(Evidence& ev, const std::string& app, double misses, double sequential, double unwidened,
                      double async, double window_kb) {
    const Labels l{{"device", "loop0"}, {"app", app}};
    ev.add_metric("fs.readahead_misses", l, misses, "count", kP);
    ev.add_metric("fs.readahead_sequential_misses", l, sequential, "count", kP);
    ev.add_metric("fs.readahead_unwidened_misses", l, unwidened, "count", kP);
    ev.add_metric("fs.readahead_async", l, async, "count", kP);
    ev.add_metric("fs.readahead_window_kb", l, window_kb, "KiB", kP);
}

// A reader on loop0 whose slow time is 90 % in the page cache, and 90 % of
// all its syscall time (sufferer(): 200,000 us) its reads' page-cache wait.
void cache_bound_reader(Evidence& ev, const std::string& app) {
    device(ev, "loop0", "loop", 60, 50000, 0.4);
    sufferer(ev, app, {{"page_cache", 90}, {"cpu", 6}, {"filesystem", 4}}, 200);
    ev.add_metric("fs.page_cache_wait_us", {{"device", "loop0"}, {"app", app}}, 180000, "us", kP);
}
}  // namespace

TEST(Judgement, ReadaheadOffUnderASequentialReaderIsTheSettingNamed) {
    Evidence ev;
    cache_bound_reader(ev, "dd if=big of=/dev/null");
    reader_readahead(ev, "dd if=big of=/dev/null", 50000, 49990, 49990, 0, 0);
    ev.add_metric("queue.read_ahead_kb", {{"device", "loop0"}}, 0, "KiB", kP);
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty()) << render_text(v, {});
    const Finding& f = v.findings.front();
    EXPECT_EQ(f.rule_id, "settings.readahead_off_sequential") << render_text(v, {});
    EXPECT_EQ(f.instance, "loop0");
    EXPECT_EQ(f.severity, Severity::Warning);
    ASSERT_TRUE(f.share_pct.has_value());
    EXPECT_NEAR(*f.share_pct, 90.0 * 49990 / 50000, 0.5);
    EXPECT_NE(f.title.find("0 KiB"), std::string::npos) << f.title;
    EXPECT_EQ(find(v.findings, "judgement.dominant_layer"), nullptr) << "the setting's finding covers the layer";
    EXPECT_NE(row(v, "page_cache").figures.find("was sequential, with a window of 0 KiB"), std::string::npos)
        << row(v, "page_cache").figures;
}

// With the reads' whole durations measured (fs.page_cache_read_us), the
// setting's share is them, not their page-cache wait alone: a hit takes
// microseconds, the CPU work and run-queue delay around a miss are the
// miss's too.
TEST(Judgement, ReadaheadShareIsTheWholeDurationOfTheReadsThatWaited) {
    Evidence ev;
    cache_bound_reader(ev, "dd if=big of=/dev/null");
    reader_readahead(ev, "dd if=big of=/dev/null", 50000, 50000, 50000, 0, 0);
    ev.add_metric("fs.page_cache_read_us", {{"device", "loop0"}, {"app", "dd if=big of=/dev/null"}}, 196000, "us", kP);
    const Verdict v = analyze(ev, shipped_rules());
    const Finding* f = find(v.findings, "settings.readahead_off_sequential");
    ASSERT_NE(f, nullptr) << render_text(v, {});
    ASSERT_TRUE(f->share_pct.has_value());
    EXPECT_NEAR(*f->share_pct, 98, 0.5);
}

// A small window (16 KiB) under a sequential reader: the kernel reads ahead
// (asynchronously, nearly no misses), but a window per round trip bounds
// the reader, which waits for it. Named too.
TEST(Judgement, ASmallReadaheadWindowUnderASequentialReaderIsTheSettingNamed) {
    Evidence ev;
    cache_bound_reader(ev, "python3 scan.py");
    reader_readahead(ev, "python3 scan.py", 3, 2, 0, 20000, 16);
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty()) << render_text(v, {});
    EXPECT_EQ(v.findings.front().rule_id, "settings.readahead_off_sequential") << render_text(v, {});
    EXPECT_NE(v.findings.front().title.find("16 KiB"), std::string::npos) << v.findings.front().title;
}

// What the default window would save: one window per device round trip, so
// the round trips shrink with what is read per miss, the larger of the window
// and the reads asked for (a read larger than the window is read whole). A
// reader of 64 KiB requests under a 16 KiB window would save half of them
// (readahead_off 161001: its wait 99.9 % of its time, the ground truth's
// saving against the default 35.9 %); under a 0 KiB window, 4 KiB reads, 97 %.
TEST(Judgement, ReadaheadShareIsWhatTheDefaultWindowWouldSave) {
    auto share = [](double window_kb, double request_kb) {
        Evidence ev;
        cache_bound_reader(ev, "fio --name=seq");
        reader_readahead(ev, "fio --name=seq", 5000, 5000, 0, 0, window_kb);
        const Labels l{{"device", "loop0"}, {"app", "fio --name=seq"}, {"comm", "fio"}, {"cgroup", "/"},
                       {"kind", "process"}};
        ev.add_metric("block.submitter.bytes", l, 5000 * request_kb * 1024, "bytes", kP);
        ev.add_metric("block.submitter.write_bytes", l, 0, "bytes", kP);
        ev.add_metric("block.submitter.requests", l, 5000, "count", kP);
        const Verdict v = analyze(ev, shipped_rules());
        const Finding* f = find(v.findings, "settings.readahead_off_sequential");
        return f && f->share_pct ? *f->share_pct : -1.0;
    };
    EXPECT_NEAR(share(16, 64), 90 * 0.5, 0.5);
    EXPECT_NEAR(share(0, 4), 90 * (1 - 4.0 / 128), 0.5);
    EXPECT_NEAR(share(32, 16), 90 * 0.75, 0.5);
}

// The same reader whose reads each take a tenth of a millisecond (a 16 KiB
// window over a fast device, readahead_off 99000, 5.8x slower than with the
// default): none reaches the exemplars' 1 ms, so its own breakdown is not
// measured (no attr.app.*). The setting is judged for the application the
// verdict names (attr.who.app), from what the kernel counted for every read.
TEST(Judgement, ASmallWindowIsNamedWhenNoReadReachedTheExemplarsMillisecond) {
    Evidence ev;
    cache_bound_reader(ev, "python3 scan.py");
    reader_readahead(ev, "python3 scan.py", 3, 2, 0, 20000, 16);
    std::erase_if(ev.facts, [](const Fact& f) { return f.name == "attr.app.name"; });
    std::erase_if(ev.metrics, [](const Metric& m) { return m.name.rfind("attr.app.", 0) == 0; });
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty()) << render_text(v, {});
    EXPECT_EQ(v.findings.front().rule_id, "settings.readahead_off_sequential") << render_text(v, {});
    EXPECT_NE(v.findings.front().title.find("python3 scan.py reads loop0"), std::string::npos)
        << v.findings.front().title;
}

// A small window under a random reader: its misses are not sequential, and
// a window would not have helped them. No setting named (the control).
TEST(Judgement, ReadaheadOffUnderARandomReaderIsNotTheCause) {
    Evidence ev;
    cache_bound_reader(ev, "fio --rw=randread");
    reader_readahead(ev, "fio --rw=randread", 50000, 12, 12, 0, 0);
    const Verdict v = analyze(ev, shipped_rules());
    EXPECT_EQ(find(v.findings, "settings.readahead_off_sequential"), nullptr) << render_text(v, {});
}

// Issue 34: a filesystem mounted sync. A buffered writer's writes wait for
// the journal and the device one by one (sufferer(): 200,000 us of syscall
// time, 180,000 of it in writes the mount made synchronous, 160,000 their wait).
namespace {
void sync_writer(Evidence& ev, const std::string& app, const std::string& reason, double writes, double fsyncs) {
    device(ev, "loop0", "loop", 60, 50000, 0.4);
    sufferer(ev, app, {{"journal", 74}, {"device", 18}, {"filesystem", 6}, {"cpu", 2}}, 200);
    const Labels l{{"device", "loop0"}, {"app", app}};
    Labels lr = l;
    lr["reason"] = reason;
    ev.add_metric("fs.sync_writes", lr, writes, "count", kP);
    ev.add_metric("fs.sync_write_wait_us", lr, 160000, "us", kP);
    ev.add_metric("fs.sync_write_time_us", lr, 180000, "us", kP);
    ev.add_metric("fs.fsyncs", l, fsyncs, "count", kP);
    ev.add_fact("fs.mount_point", {{"device", "loop0"}}, "/srv/data", kP);
    ev.add_fact("fs.mount_options", {{"device", "loop0"}}, "rw,relatime,rw,sync", kP);
}
}  // namespace

TEST(Judgement, ASyncMountUnderABufferedWriterIsTheSettingNamed) {
    Evidence ev;
    sync_writer(ev, "python3 ingest.py", "mount", 4000, 0);
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty()) << render_text(v, {});
    const Finding& f = v.findings.front();
    EXPECT_EQ(f.rule_id, "settings.sync_writes") << render_text(v, {});
    EXPECT_EQ(f.instance, "loop0");
    EXPECT_EQ(f.severity, Severity::Warning);
    ASSERT_TRUE(f.share_pct.has_value());
    EXPECT_NEAR(*f.share_pct, 90, 0.5);
    EXPECT_NE(f.title.find("mounted sync"), std::string::npos) << f.title;
    EXPECT_NE(f.title.find("/srv/data"), std::string::npos) << f.title;
    EXPECT_EQ(row(v, "journal").state, LayerState::Abnormal) << render_text(v, {});
    EXPECT_NE(row(v, "journal").figures.find("a setting, not its demand"), std::string::npos)
        << row(v, "journal").figures;
    ASSERT_FALSE(f.fixes.empty());
    EXPECT_NE(f.fixes.front().action.find("mount -o remount,async /srv/data"), std::string::npos)
        << f.fixes.front().action;
}

// Four writes per fsync: the commits its fsyncs make it would pay anyway,
// the three others are the mount's (share 90 x 3/4).
TEST(Judgement, ASyncMountCostsTheCommitsAWritersFsyncsWouldNotMake) {
    Evidence ev;
    sync_writer(ev, "sqlite3 app.db", "mount", 4000, 1000);
    const Verdict v = analyze(ev, shipped_rules());
    const Finding* f = find(v.findings, "settings.sync_writes");
    ASSERT_NE(f, nullptr) << render_text(v, {});
    ASSERT_TRUE(f->share_pct.has_value());
    EXPECT_NEAR(*f->share_pct, 90 * 0.75, 0.5);
}

// The controls: a writer that fsyncs after every write loses nothing to the
// mount; one that opened its files O_DSYNC asked for it; neither is the setting.
TEST(Judgement, ASyncMountIsNotTheCauseWhereTheWriterAsksForDurabilityItself) {
    for (const auto& [reason, fsyncs] : std::vector<std::pair<std::string, double>>{{"mount", 4000}, {"o_sync", 0}}) {
        Evidence ev;
        sync_writer(ev, "postgres: wal writer", reason, 4000, fsyncs);
        const Verdict v = analyze(ev, shipped_rules());
        EXPECT_EQ(find(v.findings, "settings.sync_writes"), nullptr) << reason << "\n" << render_text(v, {});
    }
}

// The sync attribute (chattr +S) on the files does what the mount option does.
TEST(Judgement, TheSyncAttributeIsNamedLikeTheMountOption) {
    Evidence ev;
    sync_writer(ev, "rsyslogd", "attribute", 4000, 0);
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty()) << render_text(v, {});
    EXPECT_EQ(v.findings.front().rule_id, "settings.sync_writes") << render_text(v, {});
    EXPECT_NE(v.findings.front().title.find("chattr +S"), std::string::npos) << v.findings.front().title;
}

// Issue 34: a filesystem mounted dirsync under a spool writer: each create
// commits the journal (sufferer(): 200,000 us of syscall time; creates_us of
// it in creates that waited, fsync_us in its fsyncs).
namespace {
void dirsync_writer(Evidence& ev, double creates_us, double fsync_us, bool mounted_dirsync) {
    device(ev, "loop0", "loop", 60, 50000, 0.4);
    sufferer(ev, "python3 spool.py", {{"journal", 80}, {"device", 12}, {"filesystem", 6}, {"cpu", 2}}, 200);
    const Labels l{{"device", "loop0"}, {"app", "python3 spool.py"}};
    Labels lr = l;
    lr["reason"] = "dirsync";
    ev.add_metric("fs.sync_writes", lr, 3000, "count", kP);
    ev.add_metric("fs.sync_write_wait_us", lr, 0.9 * creates_us, "us", kP);
    ev.add_metric("fs.sync_write_time_us", lr, creates_us, "us", kP);
    ev.add_metric("fs.fsyncs", l, fsync_us > 0 ? 3000 : 0, "count", kP);
    ev.add_metric("fs.fsync_time_us", l, fsync_us, "us", kP);
    ev.add_fact("fs.mount_point", {{"device", "loop0"}}, "/var/spool/app", kP);
    ev.add_fact("fs.mount_options", {{"device", "loop0"}}, mounted_dirsync ? "rw,relatime,dirsync" : "rw,relatime", kP);
    ev.add_metric("fs.mount_dirsync", {{"device", "loop0"}}, mounted_dirsync ? 1 : 0, "bool", kP);
}
}  // namespace

TEST(Judgement, ADirsyncMountUnderASpoolWriterIsTheSettingNamed) {
    Evidence ev;
    dirsync_writer(ev, 170000, 0, true);
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty()) << render_text(v, {});
    const Finding& f = v.findings.front();
    EXPECT_EQ(f.rule_id, "settings.dirsync_creates") << render_text(v, {});
    EXPECT_EQ(f.instance, "loop0");
    EXPECT_EQ(f.severity, Severity::Warning);
    ASSERT_TRUE(f.share_pct.has_value());
    EXPECT_NEAR(*f.share_pct, 85, 0.5);
    EXPECT_NE(f.title.find("the mount option dirsync"), std::string::npos) << f.title;
    EXPECT_NE(f.title.find("/var/spool/app"), std::string::npos) << f.title;
    EXPECT_EQ(row(v, "journal").state, LayerState::Abnormal) << render_text(v, {});
    EXPECT_NE(row(v, "journal").figures.find("a setting, not its demand"), std::string::npos)
        << row(v, "journal").figures;
}

// A spool writer that fsyncs each file: half of its durability waits are the
// commits its fsyncs make (its own), the creates' half is the setting's.
// Without the mount option, the directory's attribute is what made them so.
TEST(Judgement, ADirsyncWritersOwnFsyncsAreNotTheSettingsShare) {
    Evidence ev;
    dirsync_writer(ev, 80000, 90000, false);
    const Verdict v = analyze(ev, shipped_rules());
    const Finding* f = find(v.findings, "settings.dirsync_creates");
    ASSERT_NE(f, nullptr) << render_text(v, {});
    ASSERT_TRUE(f->share_pct.has_value());
    EXPECT_NEAR(*f->share_pct, 40, 0.5);
    EXPECT_NE(f->title.find("chattr +D"), std::string::npos) << f->title;
}

// Creates that waited a little (a tenth of its time) beside its own fsyncs:
// not a material loss, no setting named.
TEST(Judgement, ADirsyncMountIsNotTheCauseWhereCreatesCostLittle) {
    Evidence ev;
    dirsync_writer(ev, 20000, 150000, true);
    const Verdict v = analyze(ev, shipped_rules());
    EXPECT_EQ(find(v.findings, "settings.dirsync_creates"), nullptr) << render_text(v, {});
}

// Issue 34: the sufferer in the idle I/O priority class. Its requests on
// loop0 wait in mq-deadline while a backup's are served: 150,000 of its
// 200,000 us of syscall time (sufferer()).
namespace {
void idle_class_reader(Evidence& ev, double idle_requests, double scheduler_wait_us) {
    device(ev, "loop0", "loop", 60, 50000, 0.4);
    sufferer(ev, "fio --name=lookup", {{"device", 80}, {"cpu", 5}, {"filesystem", 15}}, 200);
    ev.add_fact("queue.scheduler", {{"device", "loop0"}}, "mq-deadline", kP);
    const Labels l{{"device", "loop0"}, {"comm", "fio"}, {"app", "fio --name=lookup"}, {"cgroup", "/"},
                   {"kind", "process"}};
    ev.add_metric("block.submitter.requests", l, 1000, "count", kP);
    ev.add_metric("block.submitter.idle_class_requests", l, idle_requests, "count", kP);
    ev.add_metric("block.submitter.scheduler_wait_us", l, scheduler_wait_us, "us", kP);
}
}  // namespace

TEST(Judgement, TheSufferersIdleIoClassIsTheSettingNamed) {
    Evidence ev;
    idle_class_reader(ev, 1000, 150000);
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty()) << render_text(v, {});
    const Finding& f = v.findings.front();
    EXPECT_EQ(f.rule_id, "settings.ioprio_idle") << render_text(v, {});
    EXPECT_EQ(f.severity, Severity::Warning);
    ASSERT_TRUE(f.share_pct.has_value());
    EXPECT_NEAR(*f.share_pct, 75, 0.5);
    EXPECT_NE(f.title.find("idle I/O priority class"), std::string::npos) << f.title;
    EXPECT_NE(f.title.find("mq-deadline"), std::string::npos) << f.title;
}

// A reader starved behind the backup: most of its wait is for requests
// still in the scheduler when the window ends, in no completed request's
// sums (60,000 us of them against 200,000 us of syscall time). Its own wait
// for its requests (95 % of its slow 100,000 us, the syscalls in flight
// included) times the scheduler's part of its completed requests' block time
// (60,000 of 62,000 us) is the share.
TEST(Judgement, TheIdleClassWaitCountsTheRequestsStillInTheScheduler) {
    Evidence ev;
    idle_class_reader(ev, 1000, 60000);
    for (auto& m : ev.metrics)
        if (m.name.rfind("attr.app.", 0) == 0 && m.name.size() > 4 && m.name.compare(m.name.size() - 4, 4, "_pct") == 0)
            m.value = m.name == "attr.app.device_pct" ? 95 : m.name == "attr.app.cpu_pct" ? 5 : 0;
    ev.add_metric("block.submitter.q2c_total_us",
                  {{"device", "loop0"}, {"comm", "fio"}, {"app", "fio --name=lookup"}, {"cgroup", "/"}, {"kind", "process"}},
                  62000, "us", kP);
    const Verdict v = analyze(ev, shipped_rules());
    const Finding* f = find(v.findings, "settings.ioprio_idle");
    ASSERT_NE(f, nullptr) << render_text(v, {});
    ASSERT_TRUE(f->share_pct.has_value());
    EXPECT_NEAR(*f->share_pct, 95.0 * 100000 / 200000 * 60000 / 62000, 0.5);   // not 30 %, the completed ones'
}

// The controls: an idle-class reader alone on its device hardly waits in the
// scheduler; a best-effort reader's scheduler wait is not the class's.
TEST(Judgement, TheIdleIoClassIsNotTheCauseWithoutTheWaitOrTheClass) {
    for (const auto& [idle, wait] : std::vector<std::pair<double, double>>{{1000, 2000}, {0, 150000}}) {
        Evidence ev;
        idle_class_reader(ev, idle, wait);
        const Verdict v = analyze(ev, shipped_rules());
        EXPECT_EQ(find(v.findings, "settings.ioprio_idle"), nullptr) << idle << " " << wait << "\n" << render_text(v, {});
    }
}

// A sequential reader with the default window, on a slow device: the kernel
// reads ahead (its readahead is asynchronous), and the window is not below
// the default, even when another reader on the machine has it off. No
// setting named.
TEST(Judgement, ASequentialReaderWithTheDefaultWindowIsNotTheSetting) {
    Evidence ev;
    cache_bound_reader(ev, "dd if=big of=/dev/null");
    reader_readahead(ev, "dd if=big of=/dev/null", 2, 1, 1, 5000, 128);
    reader_readahead(ev, "other", 5000, 5000, 5000, 0, 0);
    const Verdict v = analyze(ev, shipped_rules());
    EXPECT_EQ(find(v.findings, "settings.readahead_off_sequential"), nullptr) << render_text(v, {});
}

// Issue 34: max_sectors_kb lowered under a large sequential reader. Its 1 MiB
// reads on loop0 are cut into 8 KiB requests: 39,000 of the 40,000 requests
// were split off larger bios. The reader waits for its I/O (device 80 %, its
// tags 10 %).
namespace {
void split_reader(Evidence& ev, double max_kb, double splits, double request_kb, double optimal_bytes = 0) {
    device(ev, "loop0", "loop", 300, 40000, 4);
    sufferer(ev, "fio --name=scan", {{"device", 80}, {"block_queue", 10}, {"cpu", 10}}, 5000);
    const Labels d{{"device", "loop0"}};
    ev.add_metric("queue.max_sectors_kb", d, max_kb, "KiB", kP);
    ev.add_metric("queue.max_hw_sectors_kb", d, 1280, "KiB", kP);
    ev.add_metric("queue.optimal_io_size", d, optimal_bytes, "bytes", kP);
    ev.add_metric("block.splits", d, splits, "count", kP);
    if (splits > 0) ev.add_metric("block.split_kb_mean", d, max_kb, "KiB", kP);
    const Labels l{{"device", "loop0"}, {"comm", "fio"}, {"app", "fio --name=scan"}, {"cgroup", "/"},
                   {"kind", "process"}};
    ev.add_metric("block.submitter.requests", l, 40000, "count", kP);
    ev.add_metric("block.submitter.bytes", l, 40000 * request_kb * 1024, "bytes", kP);
}
}  // namespace

TEST(Judgement, AMaxSectorsLoweredUnderALargeReaderIsTheSettingNamed) {
    Evidence ev;
    split_reader(ev, 8, 39000, 8);
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty()) << render_text(v, {});
    const Finding& f = v.findings.front();
    EXPECT_EQ(f.rule_id, "settings.max_sectors_small") << render_text(v, {});
    EXPECT_EQ(f.instance, "loop0");
    EXPECT_EQ(f.severity, Severity::Warning);
    ASSERT_TRUE(f.share_pct.has_value());
    EXPECT_NEAR(*f.share_pct, 90 * 0.975, 0.5);
    EXPECT_NE(f.title.find("max_sectors_kb is 8 KiB"), std::string::npos) << f.title;
    EXPECT_NE(f.title.find("1280 KiB"), std::string::npos) << f.title;
}

// The controls: a 4 KiB random reader under the same limit is never split;
// a limit at the kernel's value, or at the device's own optimal size, was
// not lowered by anyone; bios cut in two are not the limit's requests
// mostly; small requests beside someone else's split I/O are not the pieces.
TEST(Judgement, AMaxSectorsLimitIsNotTheCauseWhereItCutsNothingOrWasNotLowered) {
    struct Case {
        const char* what;
        double max_kb, splits, request_kb, optimal;
    };
    for (const Case& c : {Case{"never split", 8, 0, 4, 0}, Case{"the kernel's value", 1280, 39000, 1280, 0},
                          Case{"the device's optimal size", 64, 39000, 64, 65536}, Case{"cut in two", 512, 20000, 512, 0},
                          Case{"not its pieces", 64, 39000, 4, 0}}) {
        Evidence ev;
        split_reader(ev, c.max_kb, c.splits, c.request_kb, c.optimal);
        const Verdict v = analyze(ev, shipped_rules());
        EXPECT_EQ(find(v.findings, "settings.max_sectors_small"), nullptr) << c.what << "\n" << render_text(v, {});
    }
}

// Issue 34: ext4 mounted data=journal under a bulk writer. Its buffered
// writes waited for the journal (space, checkpoints) and their block I/O:
// 150,000 of its 200,000 us of syscall time.
namespace {
void data_journal_writer(Evidence& ev, double waited_us, bool data_journal, double writes = 400) {
    ev.window.duration_s = 4;
    device(ev, "loop0", "loop", 300, 20000, 1.5);
    sufferer(ev, "fio --name=bulk", {{"journal", 45}, {"device", 35}, {"filesystem", 15}, {"cpu", 5}}, 200);
    Labels lr{{"device", "loop0"}, {"app", "fio --name=bulk"}, {"reason", "other"}};
    ev.add_metric("fs.sync_writes", lr, writes, "count", kP);
    ev.add_metric("fs.sync_write_time_us", lr, waited_us, "us", kP);
    ev.add_metric("fs.fsyncs", {{"device", "loop0"}, {"app", "fio --name=bulk"}}, 0, "count", kP);
    ev.add_fact("fs.mount_point", {{"device", "loop0"}}, "/srv/data", kP);
    ev.add_fact("fs.type", {{"device", "loop0"}}, "ext4", kP);
    ev.add_fact("fs.mount_options", {{"device", "loop0"}},
                data_journal ? "rw,relatime,rw,nodelalloc,data=journal" : "rw,relatime,rw", kP);
    ev.add_metric("fs.mount_data_journal", {{"device", "loop0"}}, data_journal ? 1 : 0, "bool", kP);
}
}  // namespace

TEST(Judgement, ADataJournalMountUnderAWriterThatWaitsIsTheSettingNamed) {
    Evidence ev;
    data_journal_writer(ev, 150000, true);
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty()) << render_text(v, {});
    const Finding& f = v.findings.front();
    EXPECT_EQ(f.rule_id, "settings.data_journal_writes") << render_text(v, {});
    EXPECT_EQ(f.instance, "loop0");
    EXPECT_EQ(f.severity, Severity::Warning);
    ASSERT_TRUE(f.share_pct.has_value());
    EXPECT_NEAR(*f.share_pct, 95, 0.5);   // its slow time in the write path: journal, device, filesystem
    EXPECT_NE(f.title.find("data=journal"), std::string::npos) << f.title;
    EXPECT_NE(f.title.find("75 % of its time"), std::string::npos) << f.title;
    EXPECT_NE(f.title.find("/srv/data"), std::string::npos) << f.title;
}

// The controls: the same waits on a data=ordered mount are not the mode's;
// on a data=journal mount, writes that hardly waited are not the mode's, nor
// one write that waited for the periodic commit (a light writer).
TEST(Judgement, ADataJournalMountIsNotTheCauseWithoutItOrWithoutTheWaits) {
    struct Case {
        double waited;
        bool mounted;
        double writes;
    };
    for (const auto& [waited, mounted, writes] : {Case{150000, false, 400}, Case{10000, true, 400}, Case{150000, true, 1}}) {
        Evidence ev;
        data_journal_writer(ev, waited, mounted, writes);
        const Verdict v = analyze(ev, shipped_rules());
        EXPECT_EQ(find(v.findings, "settings.data_journal_writes"), nullptr)
            << waited << " " << mounted << " " << writes << "\n" << render_text(v, {});
    }
}

// Issue 34: a filesystem mounted discard on a device whose discards are
// slow, under a writer that frees blocks and fsyncs (its fsyncs wait for the
// commits that send the discards): 180 discards of `discard_us` in a 4 s
// window, on a device busy 95 % of it.
namespace {
void discarding_writer(Evidence& ev, double discard_us, bool mounted) {
    ev.window.duration_s = 4;
    device(ev, "loop0", "loop", 500, 2000, 1.2);
    sufferer(ev, "python3 spool.py", {{"journal", 85}, {"device", 10}, {"cpu", 5}}, 20000);
    const Labels l{{"device", "loop0"}}, op{{"device", "loop0"}, {"op", "discard"}};
    ev.add_metric("block.requests", op, 180, "count", kP);
    ev.add_metric("block.d2c_total_us", op, 180 * discard_us, "us", kP);
    ev.add_metric("disk.util_pct", l, 95, "pct", kP);
    ev.add_metric("fs.fsyncs", {{"device", "loop0"}, {"app", "python3 spool.py"}}, 180, "count", kP);
    ev.add_metric("fs.fsync_time_us", {{"device", "loop0"}, {"app", "python3 spool.py"}}, 3.8e6, "us", kP);
    ev.add_fact("fs.mount_point", l, "/var/spool/q", kP);
    ev.add_fact("fs.type", l, "ext4", kP);
    ev.add_fact("fs.mount_options", l, mounted ? "rw,relatime,rw,discard" : "rw,relatime,rw", kP);
    ev.add_metric("fs.mount_discard", l, mounted ? 1 : 0, "bool", kP);
}
}  // namespace

TEST(Judgement, ADiscardMountOverSlowDiscardsUnderAWriterThatFreesBlocksIsTheSettingNamed) {
    Evidence ev;
    discarding_writer(ev, 20000, true);
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty()) << render_text(v, {});
    const Finding& f = v.findings.front();
    EXPECT_EQ(f.rule_id, "settings.discard_slow") << render_text(v, {});
    EXPECT_EQ(f.instance, "loop0");
    EXPECT_EQ(f.severity, Severity::Warning);
    ASSERT_TRUE(f.share_pct.has_value());
    // Its wait on loop0 (the journal's 85 % and its I/O) x the 90 % of the
    // window a discard was in service.
    EXPECT_GE(*f.share_pct, 0.9 * 85 - 0.5);
    EXPECT_LE(*f.share_pct, 90.5);
    EXPECT_NE(f.title.find("mounted discard"), std::string::npos) << f.title;
    EXPECT_NE(f.title.find("/var/spool/q"), std::string::npos) << f.title;
    EXPECT_EQ(find(v.findings, "syscall.fsync_chain"), nullptr) << "one cause, one finding\n" << render_text(v, {});
}

// The controls: discards that take a fraction of a millisecond are a
// sliver of the window whatever their share of a quiet device's busy time;
// the same slow discards without the mount option are not its (fstrim's).
TEST(Judgement, ADiscardMountIsNotTheCauseWhereDiscardsAreFastOrNotTheOptions) {
    for (const auto& [discard_us, mounted] : {std::pair{300.0, true}, std::pair{20000.0, false}}) {
        Evidence ev;
        discarding_writer(ev, discard_us, mounted);
        const Verdict v = analyze(ev, shipped_rules());
        EXPECT_EQ(find(v.findings, "settings.discard_slow"), nullptr)
            << discard_us << " " << mounted << "\n" << render_text(v, {});
    }
}

// Issue 34: the dirty limit lowered (vm.dirty_bytes 4 MiB on 20 GB of
// dirtyable memory) under buffered writers paused in balance_dirty_pages,
// who dirtied `dirtied` bytes in the window.
namespace {
void paused_writer(Evidence& ev, double limit_bytes, double dirtied) {
    ev.window.duration_s = 4;
    sufferer(ev, "fio --name=ingest", {{"dirty", 95}, {"cpu", 5}}, 20000);
    ev.add_metric("dirty.dirtyable_bytes", {}, 20e9, "bytes", kP);
    ev.add_metric("dirty.limit_bytes", {}, limit_bytes, "bytes", kP);
    ev.add_metric("dirty.background_limit_bytes", {}, limit_bytes / 2, "bytes", kP);
    ev.add_metric("vm.dirty_bytes", {}, limit_bytes < 4e9 ? limit_bytes : 0, "bytes", kP);
    ev.add_metric("vm.dirty_ratio", {}, limit_bytes < 4e9 ? 0 : 20, "pct", kP);
    ev.add_metric("dirty.throttle_events", {}, 1800, "count", kP);
    ev.add_metric("dirty.pause_ms", {}, 8000, "ms", kP);
    ev.add_metric("io.write_bytes_dirtied", {}, dirtied, "bytes", kP);
}
}  // namespace

TEST(Judgement, ALoweredDirtyLimitUnderPausedWritersIsTheSettingNamedWithItsValue) {
    Evidence ev;
    paused_writer(ev, 4 << 20, 2e6);
    const Verdict v = analyze(ev, shipped_rules());
    ASSERT_FALSE(v.findings.empty()) << render_text(v, {});
    const Finding& f = v.findings.front();
    EXPECT_EQ(f.rule_id, "settings.dirty_limit_low") << render_text(v, {});
    EXPECT_EQ(f.severity, Severity::Warning);
    ASSERT_TRUE(f.share_pct.has_value());
    EXPECT_NEAR(*f.share_pct, 95, 0.01);
    EXPECT_NE(f.title.find("vm.dirty_bytes 4 MiB"), std::string::npos) << f.title;
    EXPECT_EQ(find(v.findings, "syscall.dirty_throttling_dominant"), nullptr) << "one cause, one finding";
}

// Not the setting's: the limit at the kernel's default (20 % of the
// dirtyable memory), or a lowered limit under writers that dirtied more in
// the window than the default limits let in unpaused (they would be paced
// under the default too): the pauses stay the throttling rule's.
TEST(Judgement, PausedWritersAreNotALoweredLimitsWhereTheDefaultWouldPauseThemToo) {
    for (const auto& [limit, dirtied] : {std::pair{4e9, 2e6}, std::pair{double(4 << 20), 4e9}}) {
        Evidence ev;
        paused_writer(ev, limit, dirtied);
        const Verdict v = analyze(ev, shipped_rules());
        EXPECT_EQ(find(v.findings, "settings.dirty_limit_low"), nullptr) << limit << " " << dirtied << "\n"
                                                                          << render_text(v, {});
        EXPECT_NE(find(v.findings, "syscall.dirty_throttling_dominant"), nullptr) << render_text(v, {});
    }
}

// Issue 34: a queue declared write through over a device that says it caches
// writes (virtio-blk's cache_type): the kernel sends no flushes, a durability
// risk and no latency, so a note. The queue agreeing with the device, or a
// device whose own mode is not shown (NVMe), is nothing.
TEST(Judgement, AQueueDeclaredWriteThroughOverACachingDeviceIsANoteNotALatencyFinding) {
    auto verdict = [](const char* queue, const char* own) {
        Evidence ev;
        device(ev, "vdb", "virtio", 80, 4000, 0.5);
        ev.add_fact("queue.write_cache", {{"device", "vdb"}}, queue, kP);
        if (own) ev.add_fact("device.cache_type", {{"device", "vdb"}}, own, kP);
        return analyze(ev, shipped_rules());
    };
    const Verdict declared = verdict("write through", "write back");
    EXPECT_EQ(find(declared.findings, "settings.write_cache_declared_through"), nullptr);
    const Finding* note = find(declared.notes, "settings.write_cache_declared_through");
    ASSERT_NE(note, nullptr) << render_text(declared, {});
    EXPECT_EQ(note->instance, "vdb");
    EXPECT_NE(note->title.find("says 'write through' while the device caches writes ('write back')"), std::string::npos)
        << note->title;
    EXPECT_EQ(declared.status, Severity::Info);   // nothing abnormal in the latency
    for (const auto& [queue, own] : {std::pair<const char*, const char*>{"write back", "write back"},
                                     {"write through", "write through"}, {"write through", nullptr}}) {
        const Verdict v = verdict(queue, own);
        EXPECT_EQ(find(v.notes, "settings.write_cache_declared_through"), nullptr) << queue << " " << (own ? own : "-");
    }
}
