// The judgement model (docs/judgement.md): when the time a layer took from the
// application that suffered most is a fault, and when it is that
// application's own demand on a healthy stack. A share says where the time
// went; this says whether that is abnormal, by mechanism and by the layer's
// own distribution, never by a number fitted to a scenario.
//
// A layer is abnormal for the application when the time is material (its slow
// syscalls wait, besides for a CPU, at least one read of the fastest flash
// class: attr.slow.floor_us) and one of these holds:
//   - the wait is not its own demand: for a CPU, a lock, an I/O limit or
//     throttle, dirty-page pacing, reclaim; a journal commit carrying another
//     program's data; its device serving mostly other programs' requests;
//   - the layer's own distribution has a material tail: the requests
//     (or fsyncs) at or above 10x its own median (seed 000 §9.4's alert level,
//     with the median as the baseline) hold a third of its time or more, so
//     without them it would be 1.5x faster (Amdahl);
//   - it is slower than what it should deliver: a device's median above any
//     flash device's (no reference), or above 3x its reference latency.
// Otherwise a dominant layer is the application's own demand on a healthy
// layer: judged normal, and said so.
//
// Emitted per layer (instance label `layer`): judge.share_pct (the layer's
// part of the suffering application's slow time, the I/O scheduler's part of
// its device wait under block_queue, as in the layer table), judge.abnormal
// (1/0) and judge.reason (why); and per device the figures the device rules
// use too: device.d2c_stall_time_pct, device.stalls. Whether a device serves
// mostly other programs is the contention accounting's (device.contended,
// device.others_d2c_share_pct: engine/derive/contention_device.cpp).
#include "engine/derive/derive_steps.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "engine/derive/contention.hpp"   // kOthersMajorityPct, kLostToOthersMinPct
#include "engine/derive/slow_floor.hpp"
#include "engine/evidence/cgroup_labels.hpp"
#include "engine/evidence/format.hpp"

namespace iodiag::derive {

namespace {

// A layer holding more than all others together is where the time went.
constexpr double kDominantPct = 50;
// Seed 000 §9.4: 10x the baseline is the alert level for block latency. With
// no other baseline, a layer's own median is its baseline.
constexpr double kTailFactor = 10;
// The tail's part of a layer's time at which removing it makes the layer 1.5x
// faster: a material slowdown, not a wobble.
constexpr double kMaterialTailPct = 100.0 / 3.0;
// A layer holding less of the slow time than this is not judged: removing all
// of it would make the slow syscalls faster by less than a twentieth (the
// engine's bar for a cause anybody felt, engine/triage/analysis.cpp).
constexpr double kJudgedSharePct = 5;
// A thread that blocks for less than this per syscall did not wait at all:
// a sleep and a wake-up cost a few microseconds each way. Its run-queue delay
// is time slicing of CPU-bound work (rules/syscall.yaml, syscall.runqueue_delay).
constexpr double kSleepAndWakeUs = 10;
// A wait for a CPU is a fault when it costs the application a quarter of all
// its syscall time at least (a third slower than without it; the device
// rules' bar for "the applications really wait on it"): less is time sharing
// in its tail (rules/syscall.yaml, syscall.runqueue_delay, same bar).
constexpr double kCpuWaitMaterialPct = 25;
// A p99 (and a tail's share of the time) needs a hundred samples to be more
// than the window's maximum (rules/block.yaml's bar).
constexpr double kMinRequests = 100;

struct Judged {
    bool abnormal = false;
    std::string reason;
};

std::string pct_text(double v) { return format_value(v, "pct"); }
std::string us_text(double v) { return format_value(v, "us"); }

// A log2 histogram's time (bucket midpoints) in buckets that start at or
// above kTailFactor x its median (and one flash read), and its whole time;
// nullopt with too few values.
struct Tail {
    double tail_us = 0, all_us = 0;
};
std::optional<Tail> tail_of(const Log2Histogram& h) {
    if (static_cast<double>(h.total()) < kMinRequests) return std::nullopt;
    const double p50 = h.percentile(50).value;
    if (p50 <= 0) return std::nullopt;
    // A request faster than one read of the fastest flash class is no stall,
    // however far above a memory-fast median (a loop device over tmpfs).
    const double bound = std::max(kTailFactor * p50, kFastestFlashReadUs);
    const Tail t{at_or_above(h, bound).second, at_or_above(h, 0).second};
    return t.all_us > 0 ? std::optional(t) : std::nullopt;
}

// The device's stall tail: per operation, its requests given 10x that
// operation's median busy time or more (reads and writes are not one
// distribution). The busy time given to a request (block.service_us: each
// stretch between completions shared by the requests in flight) is what the
// device spent on it; its D2C also holds its wait behind the others inside a
// device that queues (a capped volume's burst of readahead requests 60 deep:
// D2C 10x the median, busy time 3x), which is no stall. Bundles recorded
// before it was measured: D2C. A cache flush is slow by nature and is not
// judged against the writes; where flushes are 1 % of the requests or more
// (rules/block.yaml's bar), writes wait behind them inside the device, so
// their tail is the application's own flush demand and the reads alone are
// judged. Bundles without per-operation histograms: the device's whole
// distribution.
struct Stall {
    double pct = 0;
    uint64_t requests = 0;
    std::string ops;
    std::string basis;      // the histogram judged
    double median_us = 0;   // its median, of the operation with the most requests
};
std::optional<Stall> stall_of(const Evidence& ev, const std::string& d) {
    const Labels l{{"device", d}};
    const double requests = metric_or(ev, "block.requests", l, 0);
    const bool flush_heavy = requests > 0 && metric_or(ev, "block.flushes", l, 0) / requests >= 0.01;
    Tail sum;
    Stall s;
    s.basis = "block.d2c_us";
    for (const char* op : {"read", "write"})
        if (ev.find_histogram("block.service_us", {{"device", d}, {"op", op}})) s.basis = "block.service_us";
    uint64_t most = 0;
    for (const char* op : {"read", "write"}) {
        if (flush_heavy && std::string(op) == "write") continue;
        const HistogramMetric* h = ev.find_histogram(s.basis, {{"device", d}, {"op", op}});
        if (!h || h->unit != "us") continue;
        if (const auto t = tail_of(h->hist)) {
            sum.tail_us += t->tail_us, sum.all_us += t->all_us;
            s.requests += h->hist.total();
            s.ops += (s.ops.empty() ? "" : " and ") + std::string(op) + "s";
            if (h->hist.total() > most) most = h->hist.total(), s.median_us = h->hist.percentile(50).value;
        }
    }
    if (s.ops.empty() && !flush_heavy)
        if (const HistogramMetric* h = ev.find_histogram("block.d2c_us", l); h && h->unit == "us")
            if (const auto t = tail_of(h->hist)) {
                sum = *t;
                s.requests = h->hist.total();
                s.ops = "requests";
                s.basis = "block.d2c_us";
                s.median_us = h->hist.percentile(50).value;
            }
    if (s.ops.empty()) return std::nullopt;
    s.pct = 100.0 * sum.tail_us / sum.all_us;
    return s;
}

// Per device: the stall tail of its busy time (D2C in older bundles).
void add_device_distribution(Evidence& ev) {
    for (const auto& d : ev.instances("device")) {
        const Labels l{{"device", d}};
        if (const auto stall = stall_of(ev, d)) {
            const bool busy = stall->basis == "block.service_us";
            const std::string what = busy ? "busy time given to them" : "D2C";
            ev.add_metric("device.d2c_stall_time_pct", l, stall->pct, "pct",
                          derived("share of the device's " + what + " (" + stall->basis +
                                  "{op}, log2 bucket midpoints) of " + stall->ops + " in requests of 10x their "
                                  "operation's median or more (and 120 us at least: one flash read)"));
            ev.add_metric("device.stall_median_us", l, stall->median_us, "us",
                          derived("median of " + stall->basis + "{op} of the operation with the most requests: the " +
                                  what + " of most requests"));
            ev.add_metric("device.stalls", l, stall->pct >= kMaterialTailPct ? 1 : 0, "bool",
                          derived("1 when device.d2c_stall_time_pct >= 33 %: without its stalls the device would "
                                  "serve its " + stall->ops + " 1.5x faster (" + std::to_string(stall->requests) +
                                  " requests)"));
        }
    }
}

// The fsyncs' stall tail, judged as a device's is: the time of the window's
// fsync-family calls of 10x their median or more. A count-based p99 / p50
// called a healthy commit loop's tail abnormal (a lone fio writer fsyncing
// each 4 KiB write on ext4: p99 10.3x its median, those calls 4.8 % of its
// fsync time).
void add_fsync_distribution(Evidence& ev) {
    if (const auto t = tail_of(fsync_family_latency(ev)))
        ev.add_metric("attr.slow.fsync_stall_time_pct", {}, 100.0 * t->tail_us / t->all_us, "pct",
                      derived("share of the window's fsync-family time (syscall.latency_us{op=fsync|sync_file_range}, "
                              "log2 bucket midpoints) in calls of 10x their median or more"));
}

// Who held most of a contended device (contention_device.cpp): ", the largest
// backup (pid 4242, cgroup ...)", or nothing when no other was named.
std::string largest_other(const Evidence& ev, const Labels& l) {
    const Fact* comm = ev.find_fact("device.neighbor_comm", l);
    if (!comm) return "";
    const Fact* pid = ev.find_fact("device.neighbor_pid", l);
    const Fact* cgroup = ev.find_fact("device.neighbor_cgroup", l);
    std::string in;
    if (pid) in = "pid " + pid->value;
    if (cgroup) in += (in.empty() ? "" : ", ") + std::string("cgroup ") + cgroup_shown(ev, cgroup->value);
    return ", the largest " + comm->value + (in.empty() ? "" : " (" + in + ")");
}

std::string queue_occupancy(const Evidence& ev, const Labels& l) {
    const Metric* q = ev.find_metric("device.others_q2c_share_pct", l);
    return q ? ", " + pct_text(q->value) + " of its queue occupancy" : "";
}

std::optional<Judged> judge_device(const Evidence& ev, const std::string& d) {
    if (d.empty()) return std::nullopt;
    const Labels l{{"device", d}};
    // Others held most of it, and that cost the application a quarter of
    // its slow time at least: a bulk job whose large requests were mostly
    // being served did not wait behind the reader beside it, whatever share
    // of the busy time the reader's many small requests took.
    if (metric_or(ev, "device.contended", l, 0) == 1 &&
        metric_or(ev, "device.contention_lost_pct", l, 100) >= kLostToOthersMinPct)
        return Judged{true, d + " serves mostly other programs' requests (" +
                                pct_text(metric_or(ev, "device.others_d2c_share_pct", l, 0)) +
                                " of its service time" + largest_other(ev, l) +
                                "): the application waits behind them"};
    if (metric_or(ev, "device.stalls", l, 0) == 1)
        return Judged{true, d + " stalls: requests of 10x its median or more hold " +
                                pct_text(metric_or(ev, "device.d2c_stall_time_pct", l, 0)) + " of its time serving them"};
    // Its median is a large request's transfer at the rate it delivers, not
    // an access time: a latency reference (a 4 KiB read's) does not judge it
    // (device_throughput.cpp).
    if (metric_or(ev, "device.throughput_bound", l, 0) == 1)
        return Judged{false, d + " streams the application's own " +
                                 format_value(metric_or(ev, "device.sufferer_request_bytes", l, 0), "bytes") +
                                 " requests at the rate it delivers (" +
                                 format_value(metric_or(ev, "device.sufferer_bytes_per_s", l, 0), "bytes/s") +
                                 "), busy " + pct_text(metric_or(ev, "disk.util_pct", l, 0)) +
                                 " of the window: the application's own demand"};
    const Metric* ref = ev.find_metric("device.nominal_read_latency_ms", l);
    const Metric* p50 = ev.find_metric("device.d2c_p50_us", l);
    if (ref && p50 && p50->value > 3 * 1000 * ref->value)
        return Judged{true, d + "'s median service time (" + us_text(p50->value) + ") is over 3x its reference (" +
                                format_value(ref->value, "ms") + ")"};
    if (!ref && metric_or(ev, "device.slower_than_flash", l, 0) == 1) {
        if (const Metric* u = ev.find_metric("device.d2c_unloaded_us", l))
            return Judged{true, d + "'s service time with nothing else in flight (" + us_text(u->value) +
                                    ") is slower than any flash device serves, and it has no reference"};
        return Judged{true, d + "'s median service time (" + us_text(p50 ? p50->value : 0) +
                                ") is slower than any flash device serves, and it has no reference"};
    }
    // Judged normal only where its distribution and its users were measured.
    std::string why;
    if (const Metric* stall = ev.find_metric("device.d2c_stall_time_pct", l))
        why = d + " serves at its own pace: its stall tail holds " + pct_text(stall->value) + " of its time serving requests";
    else if (const double requests = metric_or(ev, "block.requests", l, 0);
             requests > 0 && metric_or(ev, "block.flushes", l, 0) / requests >= 0.01)
        why = d + " serves the application's cache flushes (" +
              pct_text(100 * metric_or(ev, "block.flushes", l, 0) / requests) +
              " of its requests), and its writes wait behind them";
    else
        return std::nullopt;
    if (const Metric* o = ev.find_metric("device.others_d2c_share_pct", l))
        why += ", other programs " + pct_text(o->value) + " of it";
    return Judged{false, why + ": the application's own demand"};
}

std::optional<Judged> judge_block_queue(const Evidence& ev, const std::string& d) {
    if (d.empty()) return std::nullopt;
    const Labels l{{"device", d}};
    if (metric_or(ev, "device.contended", l, 0) == 1) {
        const Metric* overlap = ev.find_metric("device.others_overlap_pct", l);
        const std::string held = overlap ? pct_text(overlap->value) + " of the device's time while its requests were in it"
                                         : pct_text(metric_or(ev, "device.others_d2c_share_pct", l, 0)) +
                                               " of the device's service time";
        return Judged{true, "its requests queue on " + d + " behind other programs' (" + held + queue_occupancy(ev, l) +
                                largest_other(ev, l) + ")"};
    }
    if (!ev.find_metric("device.others_d2c_share_pct", l)) return std::nullopt;
    return Judged{false, "its requests queue behind its own on " + d + ": the application's own demand"};
}

// The journal: commits carrying another program's data, or fsyncs whose tail
// lies far above their median or above what the device allows.
std::optional<Judged> judge_journal(const Evidence& ev) {
    const Metric* foreign = ev.find_metric("attr.slow.fsync_foreign_data_pct");
    if (foreign && foreign->value >= kOthersMajorityPct)
        return Judged{true, "its commits carry another program's data (" + pct_text(foreign->value) +
                                " of the data dirtied in the window)"};
    const Metric* over = ev.find_metric("attr.slow.fsync_over_floor_pct");
    if (over && over->value >= 1)
        return Judged{true, pct_text(over->value) + " of the fsyncs took longer than a healthy fsync on the device can"};
    const Metric* stall = ev.find_metric("attr.slow.fsync_stall_time_pct");
    if (stall && stall->value >= kMaterialTailPct)
        return Judged{true, "fsyncs of 10x their median or more hold " + pct_text(stall->value) + " of the fsync time"};
    if (!over && !stall) return std::nullopt;
    std::string why = "the fsyncs' stall tail (10x their median or more) holds " +
                      (stall ? pct_text(stall->value) + " of their time" : std::string("too few of them to judge"));
    if (over) why += ", and " + pct_text(over->value) + " of them took longer than a healthy fsync on the device";
    return Judged{false, why};
}

// Waits a setting makes: most of the application's readahead on a device
// was sequential, with a window below the kernel's default
// (docs/settings.md, rules/settings.yaml).
std::optional<Judged> readahead_setting(const Evidence& ev) {
    std::string worst;
    double most = 0;
    for (const auto& d : ev.instances("device")) {
        const Labels l{{"device", d}};
        const Metric* seq = ev.find_metric("setting.readahead_sequential_pct", l);
        const Metric* window = ev.find_metric("setting.readahead_window_kb", l);
        if (seq && window && window->value < kDefaultReadaheadKb && seq->value >= kOthersMajorityPct &&
            seq->value > most) {
            most = seq->value;
            worst = d;
        }
    }
    if (worst.empty()) return std::nullopt;
    return Judged{true, pct_text(most) + " of its readahead on " + worst + " was sequential, with a window of " +
                            format_value(metric_or(ev, "setting.readahead_window_kb", {{"device", worst}}, 0), "KiB") +
                            " (the kernel's default is 128 KiB): a setting, not its demand"};
}

// Waits a setting makes: the application's writes waited for durability
// because its filesystem is mounted sync (or its files have the sync
// attribute), and took most of its time (the dominance bar), and a quarter of its
// time at least is what its own fsyncs would not have paid (the bar of a
// material loss, kLostToOthersMinPct, contention.hpp).
// rules/settings.yaml settings.sync_writes names it.
std::optional<Judged> sync_writes_setting(const Evidence& ev) {
    for (const auto& d : ev.instances("device")) {
        const Labels l{{"device", d}};
        const Metric* time = ev.find_metric("setting.sync_writes_time_pct", l);
        const Metric* share = ev.find_metric("setting.sync_writes_share_pct", l);
        const Fact* cause = ev.find_fact("setting.sync_writes_cause", l);
        if (time && share && cause && time->value >= kDominantPct && share->value >= kLostToOthersMinPct)
            return Judged{true, "its writes on " + d + " wait until durable because the filesystem is " + cause->value +
                                    " (" + pct_text(time->value) + " of its syscall time): a setting, not its demand"};
    }
    return std::nullopt;
}

// Waits a setting makes: the application's waits for durability took most
// of its time (the dominance bar), and the commits of its creates that its
// own fsyncs would not have made (its filesystem mounted dirsync, or the
// directory with the attribute) a quarter at least (kLostToOthersMinPct,
// engine/derive/setting_sync_writes.cpp).
// rules/settings.yaml settings.dirsync_creates names it.
std::optional<Judged> dirsync_setting(const Evidence& ev) {
    for (const auto& d : ev.instances("device")) {
        const Labels l{{"device", d}};
        const Metric* time = ev.find_metric("setting.dirsync_time_pct", l);
        const Metric* share = ev.find_metric("setting.dirsync_share_pct", l);
        const Metric* durable = ev.find_metric("setting.durability_time_pct", l);
        const Fact* cause = ev.find_fact("setting.dirsync_cause", l);
        if (time && share && durable && cause && durable->value >= kDominantPct && share->value >= kLostToOthersMinPct)
            return Judged{true, "its file creates on " + d + " wait for the journal because of " + cause->value + " (" + pct_text(time->value) +
                                    " of its syscall time): a setting, not its demand"};
    }
    return std::nullopt;
}

// Waits a setting makes: most of the application's requests on a device were
// of the idle I/O priority class, and their wait in the I/O scheduler cost it
// a quarter of its time at least (kLostToOthersMinPct). rules/settings.yaml
// settings.ioprio_idle names it.
std::optional<Judged> idle_class_setting(const Evidence& ev) {
    for (const auto& d : ev.instances("device")) {
        const Labels l{{"device", d}};
        const Metric* idle = ev.find_metric("setting.idle_class_pct", l);
        const Metric* wait = ev.find_metric("setting.idle_class_wait_pct", l);
        if (idle && wait && idle->value >= kDominantPct && wait->value >= kLostToOthersMinPct)
            return Judged{true, "its requests on " + d + " are of the idle I/O priority class (" +
                                    pct_text(idle->value) + " of them): the scheduler serves them only when no "
                                    "other class waits, a setting, not its demand"};
    }
    return std::nullopt;
}

// A cache that loses pages, misses a setting makes, or misses served by an
// abnormal device.
std::optional<Judged> judge_page_cache(const Evidence& ev, const std::string& d) {
    if (metric_or(ev, "page_cache.evicting", {}, 0) == 1)
        return Judged{true, "the page cache loses pages in the window (reclaim or a memory limit): reads miss "
                            "what it held"};
    if (auto setting = readahead_setting(ev)) return setting;
    if (const auto dev = judge_device(ev, d)) {
        if (dev->abnormal) return Judged{true, "its misses are read from " + dev->reason};
        return Judged{false, "first reads of data never cached, from a device that " + dev->reason};
    }
    return std::nullopt;
}

// The I/O layers by their own distribution and users.
std::optional<Judged> judge_io_layer(const Evidence& ev, const std::string& layer, const std::string& device) {
    if (layer == layer::kDevice) return judge_device(ev, device);
    if (layer == layer::kBlockQueue) return judge_block_queue(ev, device);
    if (layer == layer::kJournal) return judge_journal(ev);
    if (layer == layer::kPageCache) return judge_page_cache(ev, device);
    return std::nullopt;
}

std::optional<Judged> judge_layer(const Evidence& ev, const std::string& layer, bool material,
                                  const std::string& device) {
    const std::string not_material = "its slow syscalls wait less than one flash read besides a CPU";
    // Waits that are never the application's own I/O demand.
    static const std::map<std::string, std::string> not_own_demand = {
        {layer::kLocks, "waiting for a sleeping lock another task holds"},
        {layer::kDirty, "paused by the kernel's dirty-page throttling"},
        {layer::kReclaim, "reclaiming memory on the I/O path"},
        {layer::kCgroup, "held by an I/O limit or throttle"},
    };
    if (const auto it = not_own_demand.find(layer); it != not_own_demand.end())
        return material ? Judged{true, it->second + ", not the application's own I/O"}
                        : Judged{false, it->second + ", but " + not_material};
    if (layer == layer::kCpu) {
        const Metric* per_op = ev.find_metric("attr.sufferer.cpu_us_per_op");
        const Metric* floor = ev.find_metric("attr.slow.floor_us");
        const Metric* blocked = ev.find_metric("attr.sufferer.blocked_us_per_op");
        if (!per_op || !floor || !blocked) return std::nullopt;
        if (blocked->value < kSleepAndWakeUs)
            return Judged{false, "run-queue delay of threads that hardly block (" + us_text(blocked->value) +
                                     " per slow syscall off CPU besides it): CPU-bound work time-sliced inside "
                                     "its syscalls, not a wait that follows its I/O"};
        const Metric* all = ev.find_metric("attr.sufferer.cpu_all_pct");
        if (!all) return std::nullopt;
        if (all->value < kCpuWaitMaterialPct)
            return Judged{false, "run-queue delay in its slow tail, " + pct_text(all->value) +
                                     " of all its syscall time: time sharing, less than a quarter of its time"};
        if (per_op->value >= floor->value)
            return Judged{true, "waiting for a CPU, " + us_text(per_op->value) +
                                    " per slow syscall: longer than the storage's own read (" +
                                    us_text(floor->value) + ")"};
        return Judged{false, "run-queue delay of " + us_text(per_op->value) +
                                 " per slow syscall, shorter than one flash read: ordinary time sharing"};
    }
    // A write's wait for durability (its block I/O, the journal) that a
    // setting imposed is judged by the setting first.
    const bool durability = layer == layer::kDevice || layer == layer::kJournal || layer == layer::kBlockQueue;
    std::optional<Judged> j = durability ? sync_writes_setting(ev) : std::nullopt;
    if (!j && durability) j = dirsync_setting(ev);
    if (!j && layer == layer::kBlockQueue) j = idle_class_setting(ev);
    if (!j) j = judge_io_layer(ev, layer, device);
    // The filesystem's on-CPU time and "other" have no distribution of their
    // own per application: the model does not judge them (the layer table
    // says so), rather than guess.
    if (j && j->abnormal && !material) return Judged{false, j->reason + ", but " + not_material};
    return j;
}

// The device that serves the suffering application: the one its slow
// syscalls waited on most (attr.slow.waited_device, add_slow_floors), else,
// for waits the syscall collector charges elsewhere (a buffered read's page,
// the page cache's), the one its own requests spent the most time on.
std::string served_device(const Evidence& ev) {
    if (const Fact* waited = ev.find_fact("attr.slow.waited_device")) return waited->value;
    const auto own = app_own_q2c(ev, lower_devices(ev));
    const auto top = std::max_element(own.begin(), own.end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
    return top == own.end() ? "" : top->first;
}

// The suffering application's slow syscalls wait, besides for a CPU, at least
// attr.slow.floor_us on average (one read of the fastest flash class, or of
// the device they wait on when slower).
std::optional<bool> material_wait(const Evidence& ev) {
    const bool own = ev.find_metric("attr.app.ops") && ev.find_metric("attr.app.time_us");
    const Metric* ops = ev.find_metric(own ? "attr.app.ops" : "attr.slow.ops");
    const Metric* time = ev.find_metric(own ? "attr.app.time_us" : "attr.slow.cpu_us");
    const Metric* cpu = ev.find_metric("attr.sufferer.cpu_pct");
    const Metric* floor = ev.find_metric("attr.slow.floor_us");
    if (!floor) return std::nullopt;
    if (!own) {
        const Metric* mean = ev.find_metric("attr.slow.mean_wait_us");
        if (!mean) return std::nullopt;
        return mean->value >= floor->value;
    }
    if (!ops || ops->value <= 0 || !time || !cpu) return std::nullopt;
    return time->value / ops->value * (1 - cpu->value / 100) >= floor->value;
}

// The suffering application's share of slow time per layer, as the layer
// table splits it: the part of its device wait its requests spent in the I/O
// scheduler counts under the block queue.
std::map<std::string, double> sufferer_layer_shares(const Evidence& ev) {
    std::map<std::string, double> share;
    for (const auto& c : slow_set_classes())
        if (const Metric* m = ev.find_metric("attr.sufferer." + c + "_pct")) share[c] = m->value;
    double scheduler = 0;
    for (const auto& d : ev.instances("device"))
        scheduler += metric_or(ev, "device.scheduler_wait_share_pct", {{"device", d}}, 0);
    if (share.count(layer::kDevice)) {
        scheduler = std::min(scheduler, share[layer::kDevice]);
        share[layer::kDevice] -= scheduler;
        share[layer::kBlockQueue] += scheduler;
    }
    return share;
}

}  // namespace

void add_judgement(Evidence& ev) {
    add_device_distribution(ev);
    add_fsync_distribution(ev);
    const std::map<std::string, double> share = sufferer_layer_shares(ev);
    if (share.empty()) return;
    const Fact* app = ev.find_fact("attr.app.name");
    const std::string whose = app ? app->value + "'s slow syscalls" : "the slow syscalls (machine-wide)";
    const std::optional<bool> material = material_wait(ev);
    const std::string device = served_device(ev);
    for (const auto& [layer, pct] : share) {
        const Labels l{{"layer", layer}};
        ev.add_metric("judge.share_pct", l, pct, "pct",
                      derived("attr.sufferer." + layer + "_pct (" + whose +
                              "), the I/O scheduler's part of the device wait (device.scheduler_wait_share_pct) "
                              "under block_queue"));
        if (!material || pct < kJudgedSharePct) continue;
        const auto j = judge_layer(ev, layer, *material, device);
        if (!j) continue;
        ev.add_metric("judge.abnormal", l, j->abnormal ? 1 : 0, "bool",
                      derived("the judgement model (docs/judgement.md): not the application's own demand, a "
                              "material tail of the layer's own distribution, or slower than it should be"));
        ev.add_fact("judge.reason", l, j->reason, derived("the judgement model's criterion for this layer"));
    }
    const auto top = std::max_element(share.begin(), share.end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
    if (top->second >= kDominantPct)
        ev.add_fact("judge.dominant_layer", {}, top->first,
                    derived("the layer holding 50 % or more of " + whose + "' time (judge.share_pct)"));
}

std::vector<MetricSpec> judgement_specs() {
    using K = MetricSpec::Kind;
    return {
        {"attr.slow.fsync_stall_time_pct", K::Metric, "pct", layer::kJournal, "",
         "share of the window's fsync-family time in calls of 10x their median or more"},
        {"judge.share_pct", K::Metric, "pct", layer::kSyscall, "layer",
         "the layer's share of the suffering application's slow syscall time (the I/O scheduler's part of its "
         "device wait under block_queue)"},
        {"judge.abnormal", K::Metric, "bool", layer::kSyscall, "layer",
         "1 when the judgement model finds the layer's time abnormal for the suffering application, 0 when it is "
         "that application's own demand on a healthy layer"},
        {"judge.reason", K::Fact, "", layer::kSyscall, "layer", "why the layer was judged so"},
        {"judge.dominant_layer", K::Fact, "", layer::kSyscall, "",
         "the layer holding 50 % or more of the suffering application's slow time"},
        {"device.d2c_stall_time_pct", K::Metric, "pct", layer::kDevice, "device",
         "share of the device's busy time (D2C in bundles before block.service_us) in requests given 10x its median "
         "or more"},
        {"device.stall_median_us", K::Metric, "us", layer::kDevice, "device",
         "median busy time given to a request (D2C in bundles before block.service_us), of the operation with the "
         "most requests"},
        {"device.stalls", K::Metric, "bool", layer::kDevice, "device",
         "1 when requests given 10x the median busy time or more hold a third of the device's busy time"},
    };
}

}  // namespace iodiag::derive
