// The syscall collector's user-space helpers: kallsyms ranges for the wait
// classifier, the kernel HZ from its config, and snapshot -> evidence (shares,
// exemplars whose parts add up, who suffered), and its rules file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <zlib.h>

#include "bpf/syscall_events.h"
#include "collectors/bpf/kallsyms.hpp"
#include "collectors/procfs/kernel_hz.hpp"
#include "app/catalog.hpp"
#include "collectors/bpf/syscall_bpf_classes.hpp"
#include "collectors/bpf/syscall_bpf_snapshot.hpp"
#include "engine/rules/rules.hpp"
#include "engine/derive/derived_metrics.hpp"
#include "engine/triage/lost_events.hpp"

using namespace iodiag;
using namespace iodiag::syscall_bpf;

TEST(Kallsyms, RangesEndAtTheNextSymbolAndClonesMapToTheirBase) {
    const std::string text =
        "ffffffff81000100 T balance_dirty_pages\n"
        "ffffffff81000100 t balance_dirty_pages_alias\n"
        "ffffffff81000400 t jbd2_log_wait_commit.isra.0\n"
        "ffffffff81000200 T filemap_read\n"
        "ffffffff81000300 D some_data\n"
        "garbage line\n"
        "zzzz T not_hex\n"
        "ffffffff81000500 T last_symbol\n";
    const auto r = resolve_kernel_symbols(
        text, {{"balance_dirty_pages", 1}, {"filemap_read", 2}, {"jbd2_log_wait_commit", 3}, {"last_symbol", 4}});
    ASSERT_EQ(r.size(), 3u);   // last_symbol has no known end
    EXPECT_EQ(r[0].name, "balance_dirty_pages");
    EXPECT_EQ(r[0].start, 0xffffffff81000100ull);
    EXPECT_EQ(r[0].end, 0xffffffff81000200ull);
    EXPECT_EQ(r[1].name, "filemap_read");
    EXPECT_EQ(r[1].end, 0xffffffff81000300ull);   // ends at the data symbol that follows
    EXPECT_EQ(r[2].name, "jbd2_log_wait_commit");
    EXPECT_EQ(r[2].tag, 3);
}

TEST(Kallsyms, ZeroAddressesFromAnUnprivilegedReadGiveNothing) {
    EXPECT_TRUE(resolve_kernel_symbols("0000000000000000 T filemap_read\n0000000000000000 T x\n",
                                       {{"filemap_read", 1}})
                    .empty());
}

TEST(KernelHz, ParsesConfigHz) {
    EXPECT_EQ(parse_config_hz("CONFIG_HZ_250=y\nCONFIG_HZ=250\n"), 250);
    EXPECT_EQ(parse_config_hz("# CONFIG_HZ is not set\n"), std::nullopt);
    EXPECT_EQ(parse_config_hz("CONFIG_HZ=abc\n"), std::nullopt);
}

namespace {

// A fixture root whose only file is proc/config.gz with these bytes.
std::filesystem::path hz_fixture(const std::string& name, const std::string& gz_bytes) {
    const auto root = std::filesystem::temp_directory_path() / ("iodiag-hz-" + name + "-" + std::to_string(getpid()));
    std::filesystem::remove_all(root);
    std::filesystem::create_directories(root / "proc");
    std::ofstream(root / "proc/config.gz", std::ios::binary) << gz_bytes;
    return root;
}

std::string gzip_of(const std::string& text) {
    const auto tmp = std::filesystem::temp_directory_path() / ("iodiag-hz-gz-" + std::to_string(getpid()));
    gzFile f = gzopen(tmp.c_str(), "wb");
    gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
    gzclose(f);
    std::ifstream in(tmp, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::filesystem::remove(tmp);
    return bytes;
}

}  // namespace

TEST(KernelHz, ReadsConfigHzFromProcConfigGz) {
    const auto root = hz_fixture("gz", gzip_of("CONFIG_HZ_300=y\nCONFIG_HZ=300\n"));
    const KernelHz hz = find_kernel_hz(root.string());
    EXPECT_EQ(hz.hz, 300);
    EXPECT_EQ(hz.source, "CONFIG_HZ in " + (root / "proc/config.gz").string());
    std::filesystem::remove_all(root);
}

TEST(KernelHz, ACorruptConfigGzIsNotTakenForAConfig) {
    // Truncated: a gzip stream cut before its end (the CONFIG_HZ line is in
    // what would decompress) is refused; with no timer_list either, HZ is unknown.
    const std::string whole = gzip_of(std::string(4096, '#') + "\nCONFIG_HZ=300\n");
    const auto root = hz_fixture("cut", whole.substr(0, whole.size() - 12));
    const KernelHz hz = find_kernel_hz(root.string());
    EXPECT_EQ(hz.hz, 0);
    EXPECT_NE(hz.source.find("unknown"), std::string::npos) << hz.source;
    std::filesystem::remove_all(root);
}

TEST(SyscallClasses, EveryClassHasALayerAndClassifierTargetsAreValid) {
    ASSERT_EQ(class_layers().size(), static_cast<size_t>(CLS_COUNT));
    for (const auto& l : class_layers()) EXPECT_FALSE(l.empty());
    for (const auto& [fn, cls] : wait_classifier_functions()) {
        EXPECT_GE(cls, 0) << fn;
        EXPECT_LT(cls, CLS_COUNT) << fn;
        EXPECT_NE(cls, CLS_FILESYSTEM) << fn << ": on-CPU class cannot be a wait";
    }
    EXPECT_EQ(group_names()[group_of_syscall(SYS_PREADV2)], "read");
    EXPECT_EQ(group_names()[group_of_syscall(SYS_FDATASYNC)], "fsync");
}

namespace {

Snapshot seed000_snapshot() {
    Snapshot s;
    s.hist.assign(GRP_COUNT, std::vector<uint64_t>(IOD_HIST_BUCKETS, 0));
    s.buckets.assign(IOD_HIST_BUCKETS, BucketSums{0, 0, std::vector<uint64_t>(CLS_COUNT, 0)});
    s.read_hit.assign(IOD_HIST_BUCKETS, 0);
    s.read_miss.assign(IOD_HIST_BUCKETS, 0);
    auto put = [&](uint64_t us, uint64_t n, std::map<int, uint64_t> split, bool miss) {
        const int b = Log2Histogram::bucket_of(us);
        s.hist[GRP_READ][b] += n;
        (miss ? s.read_miss : s.read_hit)[b] += n;
        s.buckets[b].count += n;
        s.buckets[b].total_ns += us * 1000 * n;
        for (auto [c, ns] : split) s.buckets[b].class_ns[c] += ns * n;
    };
    put(1, 99000, {{CLS_FILESYSTEM, 1000}}, false);
    put(200000, 100, {{CLS_RECLAIM, 150000000}, {CLS_PAGE_CACHE, 30000000}, {CLS_FILESYSTEM, 20000000}}, true);
    s.counters.assign(CNT_COUNT, 0);
    s.counters[CNT_DIRECT_RECLAIM] = 45;
    s.gauges.assign(GAUGE_COUNT, 0);
    ProcessTime app;
    app.pid = 4242;
    app.comm = "myapp";
    app.cgroup = "/svc/myapp";
    app.ops = 99100;
    app.ns_by_bucket.assign(IOD_HIST_BUCKETS, 0);
    app.ns_by_bucket[0] = 99000ull * 1000;
    app.ns_by_bucket[Log2Histogram::bucket_of(200000)] = 100ull * 200000000;
    ProcessTime other = app;
    other.pid = 7;
    other.comm = "cron";
    other.cgroup = "/";
    other.ns_by_bucket.assign(IOD_HIST_BUCKETS, 0);
    other.ns_by_bucket[3] = 5000000;   // lots of fast time, none slow
    s.procs = {other, app};
    SlowOp op;
    op.comm = "myapp";
    op.pid = 4242;
    op.cgroup = "/svc/myapp";
    op.file = "data/segment-17";
    op.sys = SYS_PREAD64;
    op.ret = 4096;
    op.offset = 8192;
    op.total_ns = 200000000;
    op.class_ns.assign(CLS_COUNT, 0);
    op.class_ns[CLS_RECLAIM] = 150000000;
    op.class_ns[CLS_PAGE_CACHE] = 30000000;
    op.class_ns[CLS_FILESYSTEM] = 19999000;   // 1 us uncharged: shown as other
    s.slowest = {op};
    s.file_ns_by_bucket["data/segment-17"].assign(IOD_HIST_BUCKETS, 0);
    s.file_ns_by_bucket["data/segment-17"][Log2Histogram::bucket_of(200000)] = 200000000;
    s.hz = 250;
    s.hz_source = "test";
    s.slow_percentile = 99.9;
    return s;
}

double metric(const Evidence& ev, const std::string& name) {
    const Metric* m = ev.find_metric(name);
    return m ? m->value : -1;
}

}  // namespace

TEST(SyscallClasses, JournalWaitsKnowTheirFilesystem) {
    EXPECT_EQ(journal_kind_of_function("jbd2_log_wait_commit"), IOD_JOURNAL_JBD2);
    EXPECT_EQ(journal_kind_of_function("xlog_wait_on_iclog"), IOD_JOURNAL_XFS_LOG);
    EXPECT_EQ(journal_kind_of_function("xlog_cil_push_now"), IOD_JOURNAL_XFS_LOG);
    EXPECT_EQ(journal_kind_of_function("wait_log_commit"), IOD_JOURNAL_BTRFS_LOG);
    EXPECT_EQ(journal_kind_of_function("balance_dirty_pages"), IOD_JOURNAL_NONE);
    EXPECT_EQ(journal_kind_of_function("no_such_function"), IOD_JOURNAL_NONE);
    for (const auto& [fn, cls] : wait_classifier_functions())
        if (cls == CLS_JOURNAL) { EXPECT_NE(journal_kind_of_function(fn), IOD_JOURNAL_NONE) << fn; }
}

TEST(SyscallEmit, FilesystemCountersOnlyWhenCountedOrImpossible) {
    Snapshot s = seed000_snapshot();
    s.counters[CNT_XFS_LOG_FORCES] = 7;
    s.xfs = FsTrace::Failed;   // tracepoint there but not attached: no number
    s.btrfs = FsTrace::NotInKernel;   // btrfs absent: none of its files can be fsynced
    s.journal_waits_split = false;
    Evidence ev;
    emit(s, ev);
    EXPECT_EQ(ev.find_metric("journal.xfs_log_forces"), nullptr);
    EXPECT_EQ(metric(ev, "fs.btrfs_fsync_calls"), 0);
    EXPECT_EQ(ev.find_metric("journal.xfs_log_wait_us"), nullptr);

    s.xfs = FsTrace::Attached;
    s.journal_waits_split = true;
    s.counters[CNT_XFS_LOG_WAIT_NS] = 2'500'000;
    Evidence ev2;
    emit(s, ev2);
    EXPECT_EQ(metric(ev2, "journal.xfs_log_forces"), 7);
    EXPECT_EQ(metric(ev2, "journal.xfs_log_wait_us"), 2500);
    EXPECT_EQ(metric(ev2, "journal.jbd2_wait_us"), 0);
}

// Runs the kernel skipped (recursion_misses) are a lost event when the
// kernel reports them, zero included; never invented where it does not.
TEST(SyscallEmit, SkippedRunsAreALostEventOnlyWhereTheKernelReportsThem) {
    Snapshot s = seed000_snapshot();
    Evidence unreported;
    emit(s, unreported);
    EXPECT_EQ(unreported.find_metric("collector.lost_events",
                                     {{"collector", "syscall_bpf"}, {"what", "program_runs_skipped"}}),
              nullptr);

    s.program_runs_skipped = 0;
    Evidence none;
    emit(s, none);
    const Metric* zero =
        none.find_metric("collector.lost_events", {{"collector", "syscall_bpf"}, {"what", "program_runs_skipped"}});
    ASSERT_NE(zero, nullptr);
    EXPECT_EQ(zero->value, 0);

    s.program_runs_skipped = 4;
    Evidence some;
    emit(s, some);
    bool listed = false;
    for (const auto& l : lost_events_of(some))
        if (l.collector == "syscall_bpf" && l.what == "program_runs_skipped") {
            listed = true;
            EXPECT_EQ(l.count, 4u);
            EXPECT_NE(l.source.find("recursion_misses"), std::string::npos) << l.source;
        }
    EXPECT_TRUE(listed);
}

// Where the syscalls were timed is stated: a fact, and the histograms'
// provenance, from the attach mode the collector ran (nothing when unknown,
// as in bundles recorded before it was kept).
TEST(SyscallEmit, TheAttachModeThatRanIsAFactAndTheHistogramsProvenance) {
    Snapshot s = seed000_snapshot();
    Evidence unknown;
    emit(s, unknown);
    EXPECT_EQ(unknown.find_fact("syscall.attach"), nullptr);

    s.attach = "syscalls:sys_enter_<name>/sys_exit_<name> of the traced syscalls";
    Evidence ev;
    emit(s, ev);
    const Fact* f = ev.find_fact("syscall.attach");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->value, s.attach);
    const HistogramMetric* h = ev.find_histogram("syscall.latency_us", {{"op", "read"}});
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(h->provenance.source.rfind(s.attach, 0), 0u) << h->provenance.source;
}

TEST(SyscallEmit, Seed000ComesOutAsReclaimOnTheReadPathWithWhoSuffered) {
    Evidence ev;
    emit(seed000_snapshot(), ev);
    EXPECT_NEAR(metric(ev, "attr.slow.reclaim_pct"), 75.0, 1e-9);
    EXPECT_EQ(ev.find_fact("attr.slow.top_layer")->value, "reclaim");
    EXPECT_EQ(ev.find_fact("attr.slow.top_comm")->value, "myapp");
    EXPECT_EQ(ev.find_fact("attr.slow.top_pid")->value, "4242");
    EXPECT_EQ(ev.find_fact("attr.slow.top_cgroup")->value, "/svc/myapp");
    EXPECT_EQ(ev.find_fact("attr.slow.top_file")->value, "data/segment-17");
    for (const std::string set : {"slow", "all"}) {
        double sum = 0;
        for (const auto& m : ev.metrics)
            if (m.name.rfind("attr." + set + ".", 0) == 0 && m.unit == "pct") sum += m.value;
        EXPECT_NEAR(sum, 100.0, 1e-9) << set;
    }
    ASSERT_EQ(ev.exemplars.size(), 1u);
    const Exemplar& e = ev.exemplars[0];
    EXPECT_EQ(e.kind, "syscall");
    EXPECT_EQ(e.labels.at("op"), "read");
    EXPECT_EQ(e.labels.at("file"), "data/segment-17");
    double parts = 0;
    for (const auto& [k, v] : e.values)
        if (k.size() > 3 && k.substr(k.size() - 3) == "_us" && k != "total_us") parts += v;
    EXPECT_NEAR(parts, e.values.at("total_us"), 1e-6);
    EXPECT_NEAR(e.values.at("other_us"), 1.0, 1e-9);
    EXPECT_NE(ev.find_histogram("syscall.latency_us", {{"op", "read"}}), nullptr);
    EXPECT_NE(ev.find_histogram("fs.read_miss_us"), nullptr);
    // Everything emitted is declared.
    MetricCatalog cat;
    cat.add_all(metric_specs());
    for (const auto& m : ev.metrics) EXPECT_NE(cat.find(m.name), nullptr) << m.name;
    for (const auto& f : ev.facts) EXPECT_NE(cat.find(f.name), nullptr) << f.name;
    for (const auto& h : ev.histograms) EXPECT_NE(cat.find(h.name), nullptr) << h.name;
}

namespace {
RuleSet load_syscall_rules() {
    MetricCatalog cat = full_catalog();
    std::vector<std::string> playbooks;
    for (const auto& e : std::filesystem::directory_iterator(std::string(IODIAG_SOURCE_DIR) + "/playbooks"))
        if (e.path().extension() == ".yaml") playbooks.push_back(e.path().stem().string());
    return load_rules({std::string(IODIAG_SOURCE_DIR) + "/rules/syscall.yaml"}, {&cat, playbooks});
}
}  // namespace

TEST(SyscallRules, LoadWithoutDiagnostics) {
    const RuleSet rs = load_syscall_rules();
    for (const auto& d : rs.diagnostics) ADD_FAILURE() << d.to_string();
    EXPECT_GE(rs.rules.size(), 7u);
}

TEST(SyscallRules, Seed000FiresReclaimOnTheIoPathAndNotTheOthers) {
    const RuleSet rs = load_syscall_rules();
    ASSERT_TRUE(rs.ok());
    Evidence ev;
    emit(seed000_snapshot(), ev);
    ev.collectors.push_back({"syscall_bpf", true, "", {"syscall", "filesystem", "reclaim", "page_cache", "dirty",
                                                        "journal", "locks", "cpu"}});
    add_derived_metrics(ev);   // as the analysis does: the slow set's floors, the sufferer's shares
    for (const auto& r : evaluate_rules(rs, ev)) {
        if (r.rule->id == "syscall.reclaim_on_io_path") {
            EXPECT_EQ(r.outcome, Tri::True);
            ASSERT_TRUE(r.share_pct.has_value());
            EXPECT_NEAR(*r.share_pct, 75.0, 1e-9);
        } else if (r.rule->id == "syscall.dirty_throttling_dominant" || r.rule->id == "syscall.lock_contention" ||
                   r.rule->id == "syscall.runqueue_delay") {
            EXPECT_EQ(r.outcome, Tri::False) << r.rule->id;
        }
    }
}

#include <sys/stat.h>

#include <fstream>

#include "collectors/cgroup/cgroup_ids.hpp"

// cgroup ids are directory inode numbers; labels name the v1 memory and blkio
// cgroups (both, when the task is in non-root ones) or fall back to v2.
TEST(CgroupIdNames, LabelsV1MemoryAndBlkioAndV2) {
    namespace fs = std::filesystem;
    const fs::path root = fs::temp_directory_path() / ("iodiag-cgids-" + std::to_string(getpid()));
    fs::create_directories(root / "proc/self");
    for (const char* d : {"sys/fs/cgroup/memory/app", "sys/fs/cgroup/blkio/slow", "sys/fs/cgroup/unified/svc/a"})
        fs::create_directories(root / d);
    std::ofstream(root / "proc/self/mounts") << "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n"
                                                "cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n"
                                                "cgroup /sys/fs/cgroup/blkio cgroup rw,relatime,blkio 0 0\n";
    auto ino = [&](const char* d) {
        struct stat st {};
        stat((root / d).c_str(), &st);
        return static_cast<uint64_t>(st.st_ino);
    };
    CgroupIdNames names(root.string());
    EXPECT_EQ(names.label(ino("sys/fs/cgroup/unified/svc/a"), ino("sys/fs/cgroup/memory/app"),
                          ino("sys/fs/cgroup/blkio/slow")),
              "memory:/app,blkio:/slow");
    EXPECT_EQ(names.label(ino("sys/fs/cgroup/unified/svc/a"), ino("sys/fs/cgroup/memory"), ino("sys/fs/cgroup/blkio")),
              "/svc/a");
    EXPECT_EQ(names.label(ino("sys/fs/cgroup/unified"), 0, ino("sys/fs/cgroup/blkio/slow")), "blkio:/slow");
    EXPECT_EQ(names.label(999999999, 0, 0), "cgroup-id:999999999");
    fs::remove_all(root);
}

// Series from cumulative readings: the seed-000 window read twice, the fast
// reads before the first reading and the reclaim-bound slow reads between the
// two; each interval holds only what completed in it, the slow set is the
// window's, and the intervals add up to the window's figures.
TEST(SyscallEmit, SeriesAreDifferencesOfReadingsWithTheWindowsSlowSet) {
    Snapshot s = seed000_snapshot();
    Reading first;
    first.hist = s.hist;
    first.buckets = s.buckets;
    first.counters = s.counters;
    const int slow_b = Log2Histogram::bucket_of(200000);
    first.hist[GRP_READ][slow_b] = 0;
    first.buckets[slow_b] = BucketSums{0, 0, std::vector<uint64_t>(CLS_COUNT, 0)};
    first.counters[CNT_DIRECT_RECLAIM] = 0;
    Reading last{s.hist, s.buckets, s.counters};
    s.readings = {first, last};
    Evidence ev;
    emit(s, ev);
    const ValueSeries* reclaim = ev.series.find_values("layer.slow_time_us", {{"layer", "reclaim"}});
    const ValueSeries* fs_all = ev.series.find_values("layer.time_us", {{"layer", "filesystem"}});
    const ValueSeries* events = ev.series.find_values("reclaim.direct_events");
    const HistogramSeries* reads = ev.series.find_histogram("syscall.latency_us", {{"op", "read"}});
    ASSERT_NE(reclaim, nullptr);
    ASSERT_NE(fs_all, nullptr);
    ASSERT_NE(events, nullptr);
    ASSERT_NE(reads, nullptr);
    EXPECT_EQ(reclaim->intervals, (std::vector<double>{0, 100 * 150000.0}));
    EXPECT_EQ(fs_all->intervals, (std::vector<double>{99000 * 1.0, 100 * 20000.0}));
    EXPECT_EQ(events->intervals, (std::vector<double>{0, 45}));
    ASSERT_EQ(reads->intervals.size(), 2u);
    EXPECT_EQ(reads->intervals[0].total(), 99000u);
    EXPECT_EQ(reads->intervals[1].total(), 100u);
    double slow_sum = 0;
    for (double v : reclaim->intervals) slow_sum += v;
    EXPECT_DOUBLE_EQ(slow_sum, metric(ev, "attr.slow.reclaim_us"));
}

// The machine's slow set holds every program's slow syscalls; the shares a
// finding reports are the suffering application's own, from every exemplar of
// its processes (summed by command), over the buckets the exemplars cover.
TEST(SyscallEmit, SuffererSharesAreTheApplicationsOwnNotTheMachines) {
    Snapshot s = seed000_snapshot();
    s.exemplar_min_us = 1000;
    const int b = Log2Histogram::bucket_of(200000);
    auto parts = [&](uint64_t n, std::map<int, uint64_t> split) {
        ProcParts p;
        p.class_ns.assign(IOD_HIST_BUCKETS, std::vector<uint64_t>(CLS_COUNT, 0));
        p.total_ns.assign(IOD_HIST_BUCKETS, 0);
        p.count.assign(IOD_HIST_BUCKETS, 0);
        for (auto [c, ns] : split) p.class_ns[b][c] += ns * n, p.total_ns[b] += ns * n;
        p.count[b] = n;
        return p;
    };
    s.proc_parts[4242] = parts(100, {{CLS_RECLAIM, 150000000}, {CLS_PAGE_CACHE, 30000000}, {CLS_FILESYSTEM, 20000000}});
    // A second process of the same command, and another program preempted in the slow set.
    ProcessTime twin = s.procs[1];
    twin.pid = 4343;
    s.procs.push_back(twin);
    s.proc_parts[4343] = parts(100, {{CLS_RECLAIM, 50000000}, {CLS_CPU, 150000000}});
    ProcessTime busy = s.procs[1];
    busy.pid = 99;
    busy.comm = "ld";
    busy.ns_by_bucket.assign(IOD_HIST_BUCKETS, 0);
    busy.ns_by_bucket[b] = 10ull * 200000000;   // less slow time than myapp's two processes
    s.procs.push_back(busy);
    s.proc_parts[99] = parts(10, {{CLS_CPU, 200000000}});
    Evidence ev;
    emit(s, ev);
    const Fact* app = ev.find_fact("attr.app.name");
    ASSERT_NE(app, nullptr);
    EXPECT_EQ(app->value, "myapp");
    EXPECT_EQ(metric(ev, "attr.app.ops"), 200);
    EXPECT_NEAR(metric(ev, "attr.app.reclaim_pct"), 50, 1e-9);   // (150 + 50) / 400
    EXPECT_NEAR(metric(ev, "attr.app.cpu_pct"), 37.5, 1e-9);     // ld's 2 s of CPU wait are not in it
    EXPECT_NEAR(metric(ev, "attr.app.page_cache_pct"), 7.5, 1e-9);
    EXPECT_NEAR(metric(ev, "attr.app.time_us"), 4e7, 1e-3);   // 200 syscalls of 200 ms
    add_derived_metrics(ev);
    EXPECT_EQ(ev.find_fact("attr.sufferer.top_layer")->value, "reclaim");
    EXPECT_NEAR(metric(ev, "attr.sufferer.cpu_us_per_op"), 75000, 1e-6);   // 37.5 % of 200 ms

    // Exemplars that cover too little of the application's slow time (the
    // ring buffer was full) give no shares of its own.
    s.proc_parts.erase(4343);
    s.proc_parts[4242] = parts(5, {{CLS_RECLAIM, 200000000}});
    Evidence thin;
    emit(s, thin);
    EXPECT_EQ(thin.find_fact("attr.app.name"), nullptr);
}

namespace {

// Two processes' slow syscalls of 200 ms each, `n` of them, all waiting in
// `cls`: the parts the exemplars measured.
ProcParts slow_parts(uint64_t n, int cls) {
    const int b = Log2Histogram::bucket_of(200000);
    ProcParts p;
    p.class_ns.assign(IOD_HIST_BUCKETS, std::vector<uint64_t>(CLS_COUNT, 0));
    p.total_ns.assign(IOD_HIST_BUCKETS, 0);
    p.count.assign(IOD_HIST_BUCKETS, 0);
    p.class_ns[b][cls] = p.total_ns[b] = n * 200000000ull;
    p.count[b] = n;
    return p;
}

ProcessTime slow_process(uint32_t pid, const std::string& comm, const std::string& app, uint64_t n) {
    ProcessTime p;
    p.pid = pid;
    p.comm = comm;
    p.app = app;
    p.cgroup = "/";
    p.ops = n;
    p.ns_by_bucket.assign(IOD_HIST_BUCKETS, 0);
    p.ns_by_bucket[Log2Histogram::bucket_of(200000)] = n * 200000000ull;
    return p;
}

// Two python3 programs: ingest.py waiting 40 x 200 ms on the journal,
// bulk_load.py 100 x 200 ms on the page cache.
Snapshot two_python_programs() {
    Snapshot s = seed000_snapshot();
    s.exemplar_min_us = 1000;
    s.proc_parts.clear();
    s.procs = {slow_process(10, "python3", "python3 ingest.py", 40),
               slow_process(20, "python3", "python3 bulk_load.py", 100)};
    s.proc_parts[10] = slow_parts(40, CLS_JOURNAL);
    s.proc_parts[20] = slow_parts(100, CLS_PAGE_CACHE);
    return s;
}

}  // namespace

// Two programs with one command name are two applications (issue 33): the
// bulk loader's slow time is not the ingester's.
TEST(SyscallEmit, TwoProgramsWithOneCommAreJudgedApart) {
    const Snapshot s = two_python_programs();
    Evidence ev;
    emit(s, ev);
    ASSERT_NE(ev.find_fact("attr.app.name"), nullptr);
    EXPECT_EQ(ev.find_fact("attr.app.name")->value, "python3 bulk_load.py");
    EXPECT_NEAR(metric(ev, "attr.app.page_cache_pct"), 100, 1e-9);   // none of ingest.py's journal wait
    const Metric* theirs = ev.find_metric("attr.apps.journal_pct", {{"app", "python3 ingest.py"}});
    ASSERT_NE(theirs, nullptr);
    EXPECT_NEAR(theirs->value, 100, 1e-9);
}

// --victim: the operator's application is judged whatever its rank, and the
// evidence says it was given.
TEST(SyscallEmit, AGivenVictimIsJudgedWhateverItsRank) {
    Snapshot s = two_python_programs();
    s.procs[0].cgroup = "/system.slice/ingest.service";
    for (const std::string given : {"10", "python3 ingest.py", "ingest.service", "ingest"}) {
        s.victim = given;
        Evidence ev;
        emit(s, ev);
        ASSERT_NE(ev.find_fact("attr.app.name"), nullptr) << given;
        EXPECT_EQ(ev.find_fact("attr.app.name")->value, "python3 ingest.py") << given;
        EXPECT_NEAR(metric(ev, "attr.app.journal_pct"), 100, 1e-9) << given;
        EXPECT_EQ(ev.find_fact("attr.victim.given")->value, given);
        EXPECT_EQ(ev.find_fact("attr.victim.application")->value, "python3 ingest.py") << given;
    }
    // A unit it was moved into after it started (its first-seen cgroup is
    // another): read from /proc/PID/cgroup as the window ends.
    s.procs[0].cgroup = "/user.slice";
    s.procs[0].cgroup_now = "1:name=systemd:/system.slice/ingest.service\n0::/system.slice/ingest.service\n";
    s.victim = "ingest.service";
    Evidence moved;
    emit(s, moved);
    EXPECT_EQ(moved.find_fact("attr.victim.application")->value, "python3 ingest.py");
    // One that matches nothing is said so; the one that suffered most is judged.
    s.victim = "postgres";
    Evidence none;
    emit(s, none);
    EXPECT_EQ(none.find_fact("attr.victim.application")->value, "(none)");
    EXPECT_EQ(none.find_fact("attr.app.name")->value, "python3 bulk_load.py");
}
