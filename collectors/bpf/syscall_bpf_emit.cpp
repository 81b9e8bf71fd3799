// Snapshot -> Evidence for the syscall BPF collector (pure: no BPF here).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>

#include "bpf/syscall_events.h"
#include "collectors/bpf/syscall_bpf_classes.hpp"
#include "collectors/bpf/bpf_program_stats.hpp"
#include "collectors/interval_series.hpp"
#include "collectors/lost_events.hpp"
#include "collectors/bpf/syscall_bpf_snapshot.hpp"
#include "engine/evidence/layers.hpp"

namespace iodiag::syscall_bpf {

namespace {

// Where the syscalls were timed: Snapshot::attach, the attach mode that ran.
Provenance syscall_tp(const std::string& attach) {
    return {"tracepoint", (attach.empty() ? std::string("raw_syscalls:sys_enter/sys_exit") : attach) +
                              " (read, write, pread64, pwrite64, readv, writev, preadv(2), pwritev(2), fsync, "
                              "fdatasync, sync_file_range, openat, io_uring_enter) on storage files"};
}

Provenance attribution_provenance(const std::string& set) {
    return {"tracepoint",
            "derived per thread in BPF over the " + set +
                " syscalls: sched_switch (+ kernel stack classified with /proc/kallsyms), sched_wakeup, "
                "vmscan direct/memcg reclaim begin/end; each instant charged to exactly one layer, "
                "a read's on-CPU time from page_cache_sync_ra or page_cache_async_ra to a page-cache wait or the return = page cache "
                "(the miss's fill, the next window's submission), "
                "other on-CPU time in no child = filesystem, runnable = cpu, unclassified off-CPU = other"};
}

double jiffies_ms(uint64_t j, int hz) { return hz > 0 ? 1000.0 * static_cast<double>(j) / hz : 0; }

uint64_t counter_of(const std::vector<uint64_t>& counters, int idx) {
    return idx < static_cast<int>(counters.size()) ? counters[idx] : 0;
}
uint64_t counter(const Snapshot& s, int idx) { return counter_of(s.counters, idx); }

Log2Histogram to_hist(const std::vector<uint64_t>& b) {
    Log2Histogram h;
    for (size_t i = 0; i < b.size(); ++i)
        if (b[i]) h.add_bucket(static_cast<int>(i), b[i]);
    return h;
}

uint64_t sum_from(const std::vector<uint64_t>& v, int first) {
    uint64_t s = 0;
    for (size_t i = static_cast<size_t>(std::max(0, first)); i < v.size(); ++i) s += v[i];
    return s;
}

// Fewer syscalls than this, or exemplars covering less than this part of the
// application's slow time (ring buffer full), and its own shares are not given;
// unless one of them was still waiting when the window ended: a thread
// starved that long completes few or none, and its wait is the symptom itself.
constexpr uint64_t kMinAppOps = 10;
constexpr double kMinAppCoverage = 0.5;

// The application that suffered most: the application whose processes (summed: a
// database's backends, a job's workers) spent the most time in slow syscalls,
// those the exemplars cover completely (the log2 buckets at or above
// exemplar_min_us, 1 ms by default: slower than any flash operation); and what
// those syscalls waited for, from every exemplar of its processes (each
// measured in parts). Not the window's p99: on a loaded machine other
// programs' preempted syscalls set it, and a handful of them would outweigh the
// application that waited for I/O all along. These shares are the sufferer's own.
// One application's slow syscalls, in parts (from its processes' exemplars).
struct AppParts {
    std::vector<double> class_ns = std::vector<double>(CLS_COUNT, 0);
    double parts_total = 0, measured = 0;
    uint64_t ops = 0, in_flight = 0;
};

// The application a process is part of; its comm where the snapshot has none.
const std::string& app_of(const ProcessTime& p) { return p.app.empty() ? p.comm : p.app; }
const std::string& app_of(const SlowOp& op) { return op.app.empty() ? op.comm : op.app; }

AppParts app_parts(const Snapshot& s, const std::string& app, int basis) {
    AppParts a;
    for (const auto& p : s.procs) {
        if (app_of(p) != app) continue;
        a.measured += static_cast<double>(sum_from(p.ns_by_bucket, basis));
        const auto it = s.proc_parts.find(p.pid);
        if (it == s.proc_parts.end()) continue;
        a.in_flight += it->second.in_flight;
        for (size_t b = static_cast<size_t>(basis); b < it->second.total_ns.size(); ++b) {
            a.parts_total += static_cast<double>(it->second.total_ns[b]);
            a.ops += it->second.count[b];
            for (size_t c = 0; c < a.class_ns.size() && c < it->second.class_ns[b].size(); ++c)
                a.class_ns[c] += static_cast<double>(it->second.class_ns[b][c]);
        }
    }
    return a;
}

bool measured_enough(const AppParts& a) {
    return (a.ops >= kMinAppOps || a.in_flight > 0) && a.parts_total > 0 && a.parts_total >= kMinAppCoverage * a.measured;
}

// Applications broken down besides the one that suffered most: two programs
// slowed by two different causes at once each get their own shares, and the
// verdict is about the one that lost most to other programs, which need not
// be the one with the most slow time (engine/triage/sufferer_choice.hpp).
constexpr size_t kSufferersBrokenDown = 5;

bool all_digits(const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// Whether a cgroup label (or /proc/PID/cgroup's text) names `unit` as one of
// its paths' components (a systemd unit, a container's scope, a pod's slice),
// in any controller's path.
bool cgroup_names(const std::string& cgroup, const std::string& unit) {
    for (size_t at = cgroup.find(unit); at != std::string::npos; at = cgroup.find(unit, at + 1)) {
        const size_t end = at + unit.size();
        if (at > 0 && cgroup[at - 1] == '/' &&
            (end == cgroup.size() || cgroup[end] == '/' || cgroup[end] == ',' || cgroup[end] == '\n'))
            return true;
    }
    return false;
}

// The application the operator named (--victim), among those that made
// traced syscalls, by how sure the match is: its pid, its application's
// name, its command name, a unit, container or pod in its cgroup path, a part
// of its application's name. Among several at one level, the one with the
// most slow time (`ranked` is in that order). "" when none matches.
std::string given_victim(const Snapshot& s, const std::vector<std::pair<std::string, uint64_t>>& ranked) {
    const std::string& v = s.victim;
    using Match = std::function<bool(const ProcessTime&)>;
    const std::vector<Match> levels = {
        [&](const ProcessTime& p) { return all_digits(v) && std::to_string(p.pid) == v; },
        [&](const ProcessTime& p) { return app_of(p) == v; },
        [&](const ProcessTime& p) { return p.comm == v; },
        [&](const ProcessTime& p) { return cgroup_names(p.cgroup, v) || cgroup_names(p.cgroup_now, v); },
        [&](const ProcessTime& p) { return app_of(p).find(v) != std::string::npos; },
    };
    for (const auto& matches : levels)
        for (const auto& [app, slow] : ranked)
            for (const auto& p : s.procs)
                if (app_of(p) == app && matches(p)) return app;
    return "";
}

void emit_sufferer(const Snapshot& s, Evidence& ev) {
    int basis = 0;
    while (basis < IOD_HIST_BUCKETS - 1 &&
           static_cast<double>(Log2Histogram::bucket_lo(basis)) < s.exemplar_min_us)
        ++basis;
    std::map<std::string, uint64_t> slow_by_app;
    for (const auto& p : s.procs) slow_by_app[app_of(p)] += sum_from(p.ns_by_bucket, basis);
    std::vector<std::pair<std::string, uint64_t>> ranked(slow_by_app.begin(), slow_by_app.end());
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    // The victim the operator gave is judged whatever its rank; the verdict
    // says it was given (attr.victim.*), and whether it was found.
    const std::string given = s.victim.empty() ? "" : given_victim(s, ranked);
    if (!s.victim.empty()) {
        const Provenance told{"config", "--victim " + s.victim + ": given by the operator, not found by iodiag"};
        ev.add_fact("attr.victim.given", {}, s.victim, told);
        ev.add_fact("attr.victim.application", {}, given.empty() ? "(none)" : given,
                    {"derived", given.empty() ? "no process that made a traced syscall in the window matches --victim "
                                                "(pid, application, command, unit/container/pod in its cgroup path)"
                                              : "the application --victim matches (its pid, application, command, "
                                                "cgroup path, or part of its name, in that order)"});
    }
    if (!given.empty()) {
        const auto at = std::find_if(ranked.begin(), ranked.end(), [&](const auto& r) { return r.first == given; });
        std::rotate(ranked.begin(), at, at + 1);
    }
    if (ranked.empty() || ranked.front().second == 0) return;
    const double basis_us = static_cast<double>(Log2Histogram::bucket_lo(basis));
    const auto& layers = class_layers();
    auto provenance = [&](const std::string& app, const std::string& which) {
        return Provenance{"tracepoint", "syscall_bpf ring buffer: every syscall >= " +
                                            std::to_string(static_cast<long>(s.exemplar_min_us)) +
                                            " us with its measured parts, summed over the processes of " + app +
                                            " (" + which + " in syscalls >= " +
                                            std::to_string(static_cast<long>(basis_us)) + " us), syscalls >= " +
                                            std::to_string(static_cast<long>(basis_us)) + " us"};
    };
    // An application's slow syscalls in parts, under `prefix` ("attr.app."
    // or "attr.apps." with its {app} label).
    auto emit_parts = [&](const std::string& prefix, const Labels& l, const AppParts& a, const Provenance& p) {
        ev.add_metric(prefix + "ops", l, static_cast<double>(a.ops), "count", p);
        ev.add_metric(prefix + "time_us", l, a.parts_total / 1000.0, "us", p);
        ev.add_metric(prefix + "coverage_pct", l,
                      a.measured > 0 ? std::min(100.0, 100.0 * a.parts_total / a.measured) : 100, "pct",
                      {"derived", "exemplar time of those syscalls / their time in the per-process sums"});
        for (size_t c = 0; c < layers.size() && c < a.class_ns.size(); ++c)
            ev.add_metric(prefix + layers[c] + "_pct", l, 100.0 * a.class_ns[c] / a.parts_total, "pct", p);
    };
    // The one that suffered most (attr.app.*, what the rules judge first);
    // given only when its exemplars cover it, as before.
    const AppParts top = app_parts(s, ranked.front().first, basis);
    if (measured_enough(top)) {
        const std::string& name = ranked.front().first;
        const Provenance p = provenance(name, given.empty() ? "the application with the most time"
                                                            : "the application given by --victim");
        ev.add_fact("attr.app.name", {}, name, p);
        ev.add_metric("attr.app.basis_us", {}, basis_us, "us", p);
        emit_parts("attr.app.", {}, top, p);
    }
    // The same, per application, for the few that suffered most (labelled
    // {app}, rank 1 included), on the same basis.
    for (size_t i = 0; i < ranked.size() && i < kSufferersBrokenDown; ++i) {
        if (ranked[i].second == 0) break;
        const AppParts a = i == 0 ? top : app_parts(s, ranked[i].first, basis);
        if (!measured_enough(a)) continue;
        const Labels l{{"app", ranked[i].first}};
        const Provenance p = provenance(ranked[i].first, "rank " + std::to_string(i + 1) + " by time");
        ev.add_metric("attr.apps.rank", l, static_cast<double>(i + 1), "count", p);
        emit_parts("attr.apps.", l, a, p);
    }
}

void emit_attribution(const std::string& set, const Attribution& a, Evidence& ev) {
    const Provenance prov = attribution_provenance(set);
    // Every class gets a value (zero included): a layer that was observed and
    // took no time is a measurement, and rules need the metric to exist.
    for (const auto& layer_name : class_layers()) {
        double pct = 0, us = 0;
        for (const auto& sh : a.shares)
            if (sh.layer == layer_name) { pct = sh.pct; us = sh.us; }
        ev.add_metric("attr." + set + "." + layer_name + "_pct", {}, pct, "pct", prov);
        ev.add_metric("attr." + set + "." + layer_name + "_us", {}, us, "us", prov);
    }
    ev.add_metric("attr." + set + ".ops", {}, static_cast<double>(a.ops), "count", prov);
}

std::string file_label(const SlowOp& op) { return op.file.empty() ? "?" : op.file; }

std::vector<BucketSums> bucket_delta(const std::vector<BucketSums>& now, const std::vector<BucketSums>& before) {
    auto sub = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
    std::vector<BucketSums> d(now.size());
    for (size_t b = 0; b < now.size(); ++b) {
        const BucketSums* was = b < before.size() ? &before[b] : nullptr;
        d[b].count = sub(now[b].count, was ? was->count : 0);
        d[b].total_ns = sub(now[b].total_ns, was ? was->total_ns : 0);
        d[b].class_ns.resize(now[b].class_ns.size());
        for (size_t c = 0; c < now[b].class_ns.size(); ++c)
            d[b].class_ns[c] = sub(now[b].class_ns[c], was && c < was->class_ns.size() ? was->class_ns[c] : 0);
    }
    return d;
}

// Per-interval series from the cumulative readings (differences of
// consecutive ones): nothing counted between two readings is lost.
void emit_series(const Snapshot& s, int slow_bucket, const std::string& definition, Evidence& ev) {
    if (s.readings.empty()) return;
    CumulativeSeries hs;
    for (const auto& r : s.readings) {
        std::map<std::pair<std::string, Labels>, Log2Histogram> h;
        std::map<std::pair<std::string, Labels>, double> v;
        for (size_t g = 0; g < r.hist.size() && g < group_names().size(); ++g) {
            const Log2Histogram lat = to_hist(r.hist[g]);
            if (!lat.empty()) h[{"syscall.latency_us", {{"op", group_names()[g]}}}] = lat;
        }
        v[{"dirty.throttle_events", {}}] = double(counter_of(r.counters, CNT_DIRTY_EVENTS));
        v[{"reclaim.direct_events", {}}] = double(counter_of(r.counters, CNT_DIRECT_RECLAIM));
        v[{"reclaim.memcg_events", {}}] = double(counter_of(r.counters, CNT_MEMCG_RECLAIM));
        hs.record(std::move(h), std::move(v));
    }
    for (const auto& g : group_names())
        hs.describe("syscall.latency_us", {{"op", g}}, {"us", {"tracepoint", syscall_tp(s.attach).source + ", per interval"}});
    hs.describe("dirty.throttle_events", {}, {"count", {"tracepoint", "tracepoint:writeback:balance_dirty_pages, per interval"}});
    hs.describe("reclaim.direct_events", {}, {"count", {"tracepoint", "tp_btf:vmscan:mm_vmscan_direct_reclaim_begin, per interval"}});
    hs.describe("reclaim.memcg_events", {}, {"count", {"tracepoint", "tp_btf:vmscan:mm_vmscan_memcg_reclaim_begin, per interval"}});
    hs.emit(ev.series);

    // Attributed time per layer and interval, for all traced syscalls and for
    // the slow set as the window defines it (its first duration bucket).
    const auto& layers = class_layers();
    std::map<std::string, std::vector<double>> all_us, slow_us;
    for (const auto& l : layers) {
        all_us[l].assign(s.readings.size(), 0);
        slow_us[l].assign(s.readings.size(), 0);
    }
    std::vector<BucketSums> prev;
    for (size_t i = 0; i < s.readings.size(); ++i) {
        const auto d = bucket_delta(s.readings[i].buckets, prev);
        prev = s.readings[i].buckets;
        for (const auto& sh : attribute(d, 0, layers).shares) all_us[sh.layer][i] = sh.us;
        for (const auto& sh : attribute(d, slow_bucket, layers).shares) slow_us[sh.layer][i] = sh.us;
    }
    const Provenance pall{"tracepoint", attribution_provenance("all").source + "; per interval"};
    const Provenance pslow{"tracepoint", attribution_provenance("slow").source + "; per interval, slow set = " +
                                             definition + " over the window"};
    for (const auto& l : layers) {
        ev.series.values.push_back({"layer.time_us", {{"layer", l}}, "us", all_us[l], pall});
        ev.series.values.push_back({"layer.slow_time_us", {{"layer", l}}, "us", slow_us[l], pslow});
    }
}

}  // namespace

std::vector<MetricSpec> metric_specs() {
    using K = MetricSpec::Kind;
    std::vector<MetricSpec> v = {
        {"syscall.latency_us", K::Histogram, "us", layer::kSyscall, "op",
         "duration of file syscalls on storage files (regular files on block-backed filesystems, block devices)"},
        {"syscall.ops", K::Metric, "count", layer::kSyscall, "op", "traced syscalls that completed in the window"},
        {"syscall.p99_us", K::Metric, "us", layer::kSyscall, "op", "p99 of syscall.latency_us (bucket interpolation)"},
        {"fs.read_hit_us", K::Histogram, "us", layer::kPageCache, "",
         "reads with no page-cache-miss, block I/O or tag wait (page-cache hits)"},
        {"fs.read_miss_us", K::Histogram, "us", layer::kPageCache, "", "reads that waited for a page-cache miss or block I/O"},
        {"fs.read_miss_pct", K::Metric, "pct", layer::kPageCache, "", "share of reads that missed the page cache"},
        {"fs.readahead_sync_calls", K::Metric, "count", layer::kPageCache, "", "synchronous readahead calls"},
        {"fs.readahead_async_calls", K::Metric, "count", layer::kPageCache, "", "asynchronous readahead calls"},
        {"fs.readahead_pages", K::Metric, "pages", layer::kPageCache, "",
         "pages readahead requested (page_cache_ra_unbounded; large-folio readahead not counted)"},
        {"fs.ext4_fsync_calls", K::Metric, "count", layer::kJournal, "", "ext4_sync_file calls"},
        {"fs.xfs_fsync_calls", K::Metric, "count", layer::kJournal, "", "xfs_file_fsync calls"},
        {"fs.btrfs_fsync_calls", K::Metric, "count", layer::kJournal, "", "btrfs_sync_file calls"},
        {"journal.xfs_log_forces", K::Metric, "count", layer::kJournal, "",
         "XFS log forces (xfs_log_force, xfs_log_force_seq: fsync, sync, pinned buffers)"},
        {"journal.jbd2_wait_us", K::Metric, "us", layer::kJournal, "",
         "traced syscalls' off-CPU time in jbd2 functions (ext4 journal)"},
        {"journal.xfs_log_wait_us", K::Metric, "us", layer::kJournal, "",
         "traced syscalls' off-CPU time in XFS log-force and log-space functions"},
        {"journal.btrfs_log_wait_us", K::Metric, "us", layer::kJournal, "",
         "traced syscalls' off-CPU time in btrfs log-tree and transaction-commit functions"},
        {"attr.slow.threshold_us", K::Metric, "us", layer::kSyscall, "",
         "lower bound of the duration bucket where the slow set starts (p99 bucket or user threshold)"},
        {"attr.all.ops", K::Metric, "count", layer::kSyscall, "", "syscalls in the all-operations attribution"},
        {"attr.slow.ops", K::Metric, "count", layer::kSyscall, "", "syscalls in the slow set"},
        {"dirty.throttle_events", K::Metric, "count", layer::kDirty, "", "balance_dirty_pages throttling events"},
        {"dirty.pause_ms", K::Metric, "ms", layer::kDirty, "", "summed planned pauses of balance_dirty_pages"},
        {"dirty.dirty_pages", K::Metric, "pages", layer::kDirty, "", "dirty pages at the last throttling event"},
        {"dirty.limit_pages", K::Metric, "pages", layer::kDirty, "", "dirty limit at the last throttling event"},
        {"reclaim.direct_events", K::Metric, "count", layer::kReclaim, "", "direct reclaim entries (all tasks)"},
        {"reclaim.memcg_events", K::Metric, "count", layer::kReclaim, "", "memcg reclaim entries (all tasks)"},
        {"reclaim.throttled_events", K::Metric, "count", layer::kReclaim, "", "reclaim throttling sleeps (mm_vmscan_throttled)"},
        {"reclaim.throttled_us", K::Metric, "us", layer::kReclaim, "", "time reclaimers slept throttled"},
        {"journal.commits", K::Metric, "count", layer::kJournal, "", "jbd2 commits (jbd2_run_stats)"},
        {"syscall.cgroup.time_us", K::Metric, "us", layer::kCgroup, "cgroup", "time in traced syscalls per cgroup"},
        {"syscall.cgroup.slow_time_us", K::Metric, "us", layer::kCgroup, "cgroup", "time in slow-set syscalls per cgroup"},
        {"syscall.cgroup.ops", K::Metric, "count", layer::kCgroup, "cgroup", "traced syscalls per cgroup"},
        {"syscall.proc.time_us", K::Metric, "us", layer::kSyscall, "pid", "time in traced syscalls per process (top 20)"},
        {"cgroup.blk_throttled_bios", K::Metric, "count", layer::kCgroup, "",
         "bios blk-throttle held and released in the window (all cgroups)"},
        {"syscall_bpf.waits_unclassified", K::Metric, "count", layer::kSyscall, "", "off-CPU waits no classifier named"},
        {"syscall_bpf.waits_classified", K::Metric, "count", layer::kSyscall, "", "off-CPU waits classified by stack"},
        {"syscall.in_flight_at_end", K::Metric, "count", layer::kSyscall, "",
         "traced syscalls still waiting when the window ended, counted with their time so far"},
        {"syscall.waiting_at_start", K::Metric, "count", layer::kSyscall, "",
         "traced syscalls already waiting when the window started, timed from its start"},
        {"syscall_bpf.wait_stack_rewalks", K::Metric, "count", layer::kSyscall, "",
         "off-CPU waits whose stack was walked a second time, whole (the first, short walk named no class)"},
        {"attr.slow.top_comm", K::Fact, "", layer::kSyscall, "", "process name with the most slow-set time"},
        {"attr.slow.top_pid", K::Fact, "", layer::kSyscall, "", "pid with the most slow-set time"},
        {"attr.slow.top_cgroup", K::Fact, "", layer::kCgroup, "", "cgroup with the most slow-set time"},
        {"attr.slow.top_file", K::Fact, "", layer::kFilesystem, "", "file with the most slow exemplar time"},
        {"attr.slow.definition", K::Fact, "", layer::kSyscall, "", "how the slow set was chosen (p99 or threshold)"},
        {"syscall.attach", K::Fact, "", layer::kSyscall, "",
         "where the syscalls were timed: their own per-syscall tracepoints, or the raw ones (every syscall runs a filter)"},
        {"attr.slow.top_layer", K::Fact, "", layer::kSyscall, "", "layer with the largest slow-set share"},
        {"attr.all.top_layer", K::Fact, "", layer::kSyscall, "", "layer with the largest all-ops share"},
        {"attr.app.name", K::Fact, "", layer::kSyscall, "",
         "application (a program and the processes it forked running the same program, named by its command "
         "line: collectors/procfs/applications.hpp) whose processes spent the most time in syscalls of "
         "exemplar_min_us (1 ms) or more: the application that suffered most"},
        {"attr.app.ops", K::Metric, "count", layer::kSyscall, "", "that application's syscalls its shares are over"},
        {"attr.victim.given", K::Fact, "", layer::kSyscall, "",
         "the application the operator said suffered (--victim), as given"},
        {"attr.victim.application", K::Fact, "", layer::kSyscall, "",
         "the application --victim matched among those that made traced syscalls, (none) when none did"},
        {"attr.app.time_us", K::Metric, "us", layer::kSyscall, "", "those syscalls' summed duration"},
        {"attr.app.basis_us", K::Metric, "us", layer::kSyscall, "",
         "those syscalls' lower bound: the first log2 bucket wholly at or above the exemplars' minimum"},
        {"attr.app.coverage_pct", K::Metric, "pct", layer::kSyscall, "",
         "part of that application's slow time its exemplars cover (less when the ring buffer was full)"},
    };
    for (const auto& l : class_layers())
        v.push_back({"attr.app." + l + "_pct", K::Metric, "pct", l == "other" ? layer::kSyscall : l, "",
                     "share of the suffering application's slow syscall time spent in " + l});
    // The same per application, for the three that suffered most.
    v.push_back({"attr.apps.rank", K::Metric, "count", layer::kSyscall, "app",
                 "1 for the application that suffered most (its time in syscalls >= 1 ms), 2 for the next, ..."});
    v.push_back({"attr.apps.ops", K::Metric, "count", layer::kSyscall, "app", "its syscalls its shares are over"});
    v.push_back({"attr.apps.time_us", K::Metric, "us", layer::kSyscall, "app", "those syscalls' summed duration"});
    v.push_back({"attr.apps.coverage_pct", K::Metric, "pct", layer::kSyscall, "app",
                 "part of its slow time its exemplars cover"});
    for (const auto& l : class_layers())
        v.push_back({"attr.apps." + l + "_pct", K::Metric, "pct", l == "other" ? layer::kSyscall : l, "app",
                     "share of the application's slow syscall time spent in " + l});
    for (const char* ph : {"running", "locked", "flushing", "logging"}) {
        v.push_back({std::string("journal.commit_") + ph + "_ms_avg", K::Metric, "ms", layer::kJournal, "",
                     std::string("mean jbd2 commit ") + ph + " phase (jiffies resolution)"});
        if (std::string(ph) != "running")
            v.push_back({std::string("journal.commit_") + ph + "_ms_max", K::Metric, "ms", layer::kJournal, "",
                         std::string("longest jbd2 commit ") + ph + " phase (jiffies resolution)"});
    }
    for (const auto& spec : lost_events_specs(layer::kSyscall)) v.push_back(spec);
    for (const auto& spec : readahead_specs()) v.push_back(spec);
    for (const auto& spec : sync_writes_specs()) v.push_back(spec);
    for (const char* set : {"slow", "all"})
        for (const auto& l : class_layers()) {
            v.push_back({std::string("attr.") + set + "." + l + "_pct", K::Metric, "pct",
                         l == "other" ? layer::kSyscall : l, "",
                         "share of " + std::string(set) + " syscall time spent in " + l});
            v.push_back({std::string("attr.") + set + "." + l + "_us", K::Metric, "us",
                         l == "other" ? layer::kSyscall : l, "",
                         "summed " + std::string(set) + " syscall time spent in " + l});
        }
    return v;
}

void emit(const Snapshot& s, Evidence& ev) {
    const Provenance timed = syscall_tp(s.attach);
    if (!s.attach.empty()) ev.add_fact("syscall.attach", {}, s.attach, {"probe", "tracefs and the attach itself"});
    // ---- per-op histograms ----
    for (size_t g = 0; g < s.hist.size() && g < group_names().size(); ++g) {
        Log2Histogram h = to_hist(s.hist[g]);
        if (h.empty()) continue;
        const Labels op{{"op", group_names()[g]}};
        ev.histograms.push_back({"syscall.latency_us", op, "us", h, timed});
        ev.add_metric("syscall.ops", op, static_cast<double>(h.total()), "count", timed);
        ev.add_metric("syscall.p99_us", op, h.percentile(99).value, "us",
                      {"derived", "derived: p99 of syscall.latency_us{op=" + group_names()[g] + "}"});
    }
    const Log2Histogram hit = to_hist(s.read_hit), miss = to_hist(s.read_miss);
    if (!hit.empty() || !miss.empty()) {
        const Provenance p{"tracepoint", "syscalls read family; miss = the read waited off-CPU under filemap_* "
                                         "(page-cache miss) or for block I/O / a tag (sched_switch stack)"};
        ev.histograms.push_back({"fs.read_hit_us", {}, "us", hit, p});
        ev.histograms.push_back({"fs.read_miss_us", {}, "us", miss, p});
        ev.add_metric("fs.read_miss_pct", {},
                      100.0 * static_cast<double>(miss.total()) / static_cast<double>(hit.total() + miss.total()),
                      "pct", p);
    }

    // ---- attribution ----
    const auto& layers = class_layers();
    const Attribution all = attribute(s.buckets, 0, layers);
    emit_attribution("all", all, ev);
    const auto first = slow_first_bucket(s.buckets, s.slow_percentile, s.user_threshold_us);
    int slow_bucket = first.value_or(0);
    const Attribution slow = attribute(s.buckets, slow_bucket, layers);
    emit_attribution("slow", slow, ev);
    const std::string definition =
        s.user_threshold_us ? "user threshold " + std::to_string(static_cast<long>(*s.user_threshold_us)) + " us"
                            : "p" + std::to_string(static_cast<int>(s.slow_percentile)) + " of the window";
    ev.add_metric("attr.slow.threshold_us", {}, slow.threshold_us, "us",
                  {"derived", "derived: lower bound of the log2 bucket holding the " + definition});
    ev.add_fact("attr.slow.definition", {}, definition + " (slow set = durations >= " +
                std::to_string(static_cast<long>(slow.threshold_us)) + " us)", {"derived", "derived"});
    auto top_layer = [](const Attribution& a) {
        return a.shares.empty() || a.ops == 0 ? std::string() : a.shares.front().layer;
    };
    if (!top_layer(slow).empty())
        ev.add_fact("attr.slow.top_layer", {}, top_layer(slow), attribution_provenance("slow"));
    if (!top_layer(all).empty())
        ev.add_fact("attr.all.top_layer", {}, top_layer(all), attribution_provenance("all"));

    // ---- who suffered: processes and cgroups ----
    const Provenance pp{"tracepoint", "raw_tracepoint sys_exit: per (process, cgroup) time by duration bucket"};
    std::map<std::string, std::pair<uint64_t, uint64_t>> by_cgroup;   // total ns, slow ns
    std::map<std::string, uint64_t> cg_ops;
    const ProcessTime* top = nullptr;
    uint64_t top_slow = 0;
    std::vector<std::pair<uint64_t, const ProcessTime*>> by_time;
    for (const auto& p : s.procs) {
        const uint64_t tot = sum_from(p.ns_by_bucket, 0), sl = sum_from(p.ns_by_bucket, slow_bucket);
        by_cgroup[p.cgroup].first += tot;
        by_cgroup[p.cgroup].second += sl;
        cg_ops[p.cgroup] += p.ops;
        by_time.push_back({tot, &p});
        if (sl > top_slow) { top_slow = sl; top = &p; }
    }
    for (const auto& [cg, t] : by_cgroup) {
        ev.add_metric("syscall.cgroup.time_us", {{"cgroup", cg}}, t.first / 1000.0, "us", pp);
        ev.add_metric("syscall.cgroup.slow_time_us", {{"cgroup", cg}}, t.second / 1000.0, "us", pp);
        ev.add_metric("syscall.cgroup.ops", {{"cgroup", cg}}, static_cast<double>(cg_ops[cg]), "count", pp);
    }
    std::sort(by_time.begin(), by_time.end(), [](auto& a, auto& b) { return a.first > b.first; });
    for (size_t i = 0; i < by_time.size() && i < 20; ++i) {
        const auto* p = by_time[i].second;
        ev.add_metric("syscall.proc.time_us",
                      {{"pid", std::to_string(p->pid)}, {"comm", p->comm}, {"app", app_of(*p)}, {"cgroup", p->cgroup}},
                      by_time[i].first / 1000.0, "us", pp);
    }
    if (top) {
        ev.add_fact("attr.slow.top_comm", {}, top->comm, pp);
        ev.add_fact("attr.slow.top_pid", {}, std::to_string(top->pid), pp);
        std::string top_cg;
        uint64_t best = 0;
        for (const auto& [cg, t] : by_cgroup)
            if (t.second > best) { best = t.second; top_cg = cg; }
        ev.add_fact("attr.slow.top_cgroup", {}, top_cg, pp);
    }
    emit_sufferer(s, ev);
    {
        std::string best_file;
        uint64_t best = 0;
        for (const auto& [f, v] : s.file_ns_by_bucket) {
            const uint64_t t = sum_from(v, slow_bucket);
            if (t > best) { best = t; best_file = f; }
        }
        if (!best_file.empty())
            ev.add_fact("attr.slow.top_file", {}, best_file,
                        {"tracepoint", "slow exemplars (syscalls >= " +
                                           std::to_string(static_cast<long>(s.exemplar_min_us)) +
                                           " us) in the slow set, summed per file; name from the file's dentry"});
    }

    // ---- children with their own tracepoints ----
    const Provenance pdirty{"tracepoint", "tracepoint:writeback:balance_dirty_pages"};
    ev.add_metric("dirty.throttle_events", {}, counter(s, CNT_DIRTY_EVENTS), "count", pdirty);
    if (s.hz > 0)
        ev.add_metric("dirty.pause_ms", {}, jiffies_ms(counter(s, CNT_DIRTY_PAUSE_JIFFIES), s.hz), "ms",
                      {"tracepoint", "tracepoint:writeback:balance_dirty_pages pause (jiffies x 1000 / HZ, HZ=" +
                                         std::to_string(s.hz) + " from " + s.hz_source + ")"});
    if (counter(s, CNT_DIRTY_EVENTS) && s.gauges.size() >= GAUGE_COUNT) {
        ev.add_metric("dirty.dirty_pages", {}, s.gauges[GAUGE_DIRTY_PAGES], "pages", pdirty);
        ev.add_metric("dirty.limit_pages", {}, s.gauges[GAUGE_DIRTY_LIMIT], "pages", pdirty);
    }
    const Provenance pvm{"tracepoint", "tracepoint:vmscan:mm_vmscan_{direct,memcg}_reclaim_begin, mm_vmscan_throttled"};
    ev.add_metric("reclaim.direct_events", {}, counter(s, CNT_DIRECT_RECLAIM), "count", pvm);
    ev.add_metric("reclaim.memcg_events", {}, counter(s, CNT_MEMCG_RECLAIM), "count", pvm);
    ev.add_metric("reclaim.throttled_events", {}, counter(s, CNT_RECLAIM_THROTTLED), "count", pvm);
    ev.add_metric("reclaim.throttled_us", {}, counter(s, CNT_RECLAIM_THROTTLED_US), "us", pvm);
    const Provenance pra{"tracepoint", "tracepoint:readahead:page_cache_{sync,async}_ra, page_cache_ra_unbounded"};
    ev.add_metric("fs.readahead_sync_calls", {}, counter(s, CNT_RA_SYNC), "count", pra);
    ev.add_metric("fs.readahead_async_calls", {}, counter(s, CNT_RA_ASYNC), "count", pra);
    ev.add_metric("fs.readahead_pages", {}, counter(s, CNT_RA_PAGES), "pages", pra);
    ev.add_metric("fs.ext4_fsync_calls", {}, counter(s, CNT_EXT4_FSYNC), "count",
                  {"tracepoint", "tracepoint:ext4:ext4_sync_file_enter"});
    auto fs_counter = [&](FsTrace t, const char* name, int cnt, const char* event, const char* fs) {
        if (t == FsTrace::Failed) return;   // not counted: no number rather than a false 0
        const Provenance p = t == FsTrace::Attached
            ? Provenance{"tracepoint", std::string("tracepoint:") + event}
            : Provenance{"file", std::string("tracefs events/") + event + " absent: " + fs +
                                     " is not in this kernel, so nothing to count"};
        ev.add_metric(name, {}, t == FsTrace::Attached ? counter(s, cnt) : 0, "count", p);
    };
    fs_counter(s.xfs, "fs.xfs_fsync_calls", CNT_XFS_FSYNC, "xfs:xfs_file_fsync", "xfs");
    fs_counter(s.xfs, "journal.xfs_log_forces", CNT_XFS_LOG_FORCES, "xfs:xfs_log_force", "xfs");
    fs_counter(s.btrfs, "fs.btrfs_fsync_calls", CNT_BTRFS_FSYNC, "btrfs:btrfs_sync_file", "btrfs");
    if (s.journal_waits_split) {
        const Provenance pw{"tracepoint", "tp_btf:sched:sched_switch off-CPU stack, innermost classified frame a "
                                          "journal function of that filesystem (/proc/kallsyms)"};
        ev.add_metric("journal.jbd2_wait_us", {}, counter(s, CNT_JBD2_WAIT_NS) / 1000.0, "us", pw);
        ev.add_metric("journal.xfs_log_wait_us", {}, counter(s, CNT_XFS_LOG_WAIT_NS) / 1000.0, "us", pw);
        ev.add_metric("journal.btrfs_log_wait_us", {}, counter(s, CNT_BTRFS_LOG_WAIT_NS) / 1000.0, "us", pw);
    }
    const uint64_t commits = counter(s, CNT_JBD2_COMMITS);
    const Provenance pj{"tracepoint", "tracepoint:jbd2:jbd2_run_stats (jiffies x 1000 / HZ, HZ=" +
                                          std::to_string(s.hz) + " from " + s.hz_source + ")"};
    ev.add_metric("journal.commits", {}, commits, "count", pj);
    if (commits && s.hz > 0) {
        const struct { const char* name; int sum; int max; } phases[] = {
            {"running", CNT_JBD2_RUNNING, -1}, {"locked", CNT_JBD2_LOCKED, CNT_JBD2_MAX_LOCKED},
            {"flushing", CNT_JBD2_FLUSHING, CNT_JBD2_MAX_FLUSHING}, {"logging", CNT_JBD2_LOGGING, CNT_JBD2_MAX_LOGGING}};
        for (const auto& ph : phases) {
            ev.add_metric(std::string("journal.commit_") + ph.name + "_ms_avg", {},
                          jiffies_ms(counter(s, ph.sum), s.hz) / commits, "ms", pj);
            if (ph.max >= 0)
                ev.add_metric(std::string("journal.commit_") + ph.name + "_ms_max", {},
                              jiffies_ms(counter(s, ph.max), s.hz), "ms", pj);
        }
    }
    emit_readahead(s.readahead, s.page_bytes, ev);
    emit_sync_writes(s.sync_writes, ev);
    ev.add_metric("cgroup.blk_throttled_bios", {}, counter(s, CNT_THROTTLED_BIOS), "count",
                  {"tracepoint", "tp_btf:block:block_bio_queue of bios flagged BIO_BPS_THROTTLED (released by blk-throttle)"});
    const Provenance pself{"tracepoint", "syscall_bpf self-accounting"};
    std::vector<LostEventCount> lost{
        {"exemplars_ringbuf_full", counter(s, CNT_EXEMPLAR_DROPS),
         "shares and histograms are from in-kernel sums and are complete; only those slow-syscall exemplars "
         "(their files and parts) are missing",
         "bpf/syscall.bpf.c counter CNT_EXEMPLAR_DROPS (ring buffer reservation failed at sys_exit)"},
        {"task_storage_unavailable", counter(s, CNT_INFLIGHT_FULL),
         "those syscalls are missing from every figure (not timed); all others are complete",
         "bpf/syscall.bpf.c counter CNT_INFLIGHT_FULL (task local storage could not be created at sys_enter)"},
        {"wait_stack_unavailable", counter(s, CNT_WAIT_STACK_FAILED),
         "every syscall is timed; those off-CPU waits (kernel stack unreadable) are charged to other instead of "
         "their layer",
         "bpf/syscall.bpf.c counter CNT_WAIT_STACK_FAILED (bpf_get_stack failed at sched_switch)"},
        {"process_table_full", counter(s, CNT_PROCS_FULL),
         "shares and histograms are complete; who-suffered (per process and cgroup) misses those processes",
         "bpf/syscall.bpf.c counter CNT_PROCS_FULL (process tables full)"},
        {"readahead_table_full", counter(s, CNT_RA_TABLE_FULL),
         "the page-cache misses of those devices and processes are missing from fs.readahead_* (the readahead "
         "setting's evidence); everything else is complete",
         "bpf/syscall.bpf.c counter CNT_RA_TABLE_FULL (ra_misses hash full)"},
        {"sync_writes_table_full", counter(s, CNT_SYNC_TABLE_FULL),
         "the durability waits of those devices and processes are missing from fs.sync_write* and fs.fsyncs (the "
         "sync mount's evidence); everything else is complete",
         "bpf/syscall.bpf.c counter CNT_SYNC_TABLE_FULL (sync_writes hash full)"}};
    if (s.program_runs_skipped)
        lost.push_back({"program_runs_skipped", *s.program_runs_skipped,
                        "a skipped sys_enter or sys_exit leaves that syscall untimed, a skipped sched_switch "
                        "leaves that wait unclassified; everything whose hooks all ran is complete",
                        kSkippedRunsSource});
    add_lost_events(ev, "syscall_bpf", lost);
    ev.add_metric("syscall_bpf.waits_unclassified", {}, counter(s, CNT_WAITS_UNCLASSIFIED), "count", pself);
    ev.add_metric("syscall_bpf.waits_classified", {}, counter(s, CNT_WAITS_CLASSIFIED), "count", pself);
    ev.add_metric("syscall_bpf.wait_stack_rewalks", {}, counter(s, CNT_WAIT_STACK_REWALKS), "count", pself);
    ev.add_metric("syscall.in_flight_at_end", {}, static_cast<double>(s.in_flight_at_end), "count",
                  {"tracepoint", "each thread's task_state (its syscall in flight, charged per class by the "
                                 "programs) read through a pidfd when they stopped, confirmed by "
                                 "/proc/PID/task/TID/syscall; each counted as a slow syscall with its time so far"});
    ev.add_metric("syscall.waiting_at_start", {}, static_cast<double>(s.waiting_at_start), "count",
                  {"procfs", "threads blocked in a traced syscall on a storage file when the programs attached "
                             "(/proc/PID/task/TID/syscall, the class of the wait from /proc/PID/task/TID/stack), "
                             "given an entry record then: each timed from the window's start"});

    // ---- exemplars ----
    const Provenance pex{"tracepoint", "syscall_bpf ring buffer: syscalls >= " +
                                           std::to_string(static_cast<long>(s.exemplar_min_us)) +
                                           " us; file from the fd's dentry (CO-RE reads of task->files)"};
    for (const auto& op : s.slowest) {
        Exemplar e;
        e.kind = "syscall";
        e.unit = "us";
        const int grp = group_of_syscall(op.sys);
        e.labels = {{"comm", op.comm}, {"app", app_of(op)}, {"pid", std::to_string(op.pid)}, {"cgroup", op.cgroup},
                    {"file", file_label(op)}, {"op", group_names()[grp]},
                    {"syscall", op.sys < static_cast<int>(syscall_names().size()) ? syscall_names()[op.sys] : "?"}};
        e.values["total_us"] = op.total_ns / 1000.0;
        e.values["bytes"] = (grp == GRP_READ || grp == GRP_WRITE) && op.ret > 0 ? static_cast<double>(op.ret) : 0;
        e.values["offset"] = static_cast<double>(op.offset);
        if (op.ret < 0) e.values["error"] = static_cast<double>(-op.ret);
        uint64_t charged = 0;
        for (size_t c = 0; c < layers.size(); ++c) {
            const uint64_t ns = c < op.class_ns.size() ? op.class_ns[c] : 0;
            charged += ns;
            e.values[layers[c] + "_us"] = ns / 1000.0;
        }
        // The kernel's accounting charges every instant; anything left is shown, not hidden.
        if (op.total_ns > charged) e.values["other_us"] += (op.total_ns - charged) / 1000.0;
        // Still waiting when the window ended: its time so far, a lower bound.
        if (op.flags & IOD_F_IN_FLIGHT) e.values["in_flight"] = 1;
        // Already waiting when the window started: timed from its start, a lower bound.
        if (op.flags & IOD_F_BEFORE_WINDOW) e.values["before_window"] = 1;
        e.provenance = pex;
        ev.exemplars.push_back(std::move(e));
    }
    emit_series(s, slow_bucket, definition, ev);
}

}  // namespace iodiag::syscall_bpf
