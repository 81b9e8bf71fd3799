#include "engine/derive/derived_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "engine/evidence/format.hpp"
#include "engine/evidence/layers.hpp"
#include "engine/triage/ceph_attribution.hpp"
#include "engine/derive/slow_floor.hpp"

namespace iodiag {

namespace {

// Nominal 4 KiB latency by device class, the upper end of the ranges in seed 000
// §3.1. These are reference values, not measurements: they set the "10x nominal"
// alert level of seed 000 §9.4. Classes the table does not cover (virtio, whose
// latency is whatever the host's storage does; zram; dm; md) get none, so rules
// that need one evaluate as unknown instead of guessing.
struct Nominal {
    double read_ms;
    double write_ms;   // < 0: the table gives no figure
    const char* source;
};

const std::map<std::string, Nominal>& nominal_by_class() {
    static const std::map<std::string, Nominal> table{
        {"nvme", {0.120, 0.030, "seed 000 §3.1: NVMe SSD 4K random read 70-120 us, write 10-30 us"}},
        {"sata_ssd", {0.300, -1, "seed 000 §3.1: SATA SSD 4K random read 100-300 us"}},
        {"hdd", {15.0, 15.0,
                 "seed 000 §3.1: HDD 4K random read 3-15 ms (seek + rotation; a random write "
                 "pays the same)"}},
    };
    return table;
}

// A loop device passes its I/O to a file on its backing disk. When the table
// has no figure for that disk's class (a virtio disk: whatever the host's
// storage does), the backing disk's own measured tail (D2C p99) in the same
// window is the loop device's reference: a loop device whose tail is 10x the
// disk's tail is held somewhere on the way between them (the loop worker's
// cgroup throttle, the backing filesystem, dirty throttling of the backing
// file's page cache). The tail, not the median, because the loop path adds a
// worker hand-off and a page-cache copy to every request, and a healthy disk's
// p99 is itself many times its median. With fewer than 100 backing requests the
// "p99" is the window's slowest one, which only makes the reference larger and
// the rule more reluctant; a handful is still enough for that (a loop device
// whose backing disk is throttled hard sees few backing requests).
constexpr uint64_t kMinBackingSamples = 20;

// The site configuration's reference for a device (added before the analysis)
// wins over any derived one.
void add_reference(Evidence& ev, const char* name, const Labels& labels, double ms, const Provenance& p) {
    if (!ev.find_metric(name, labels)) ev.add_metric(name, labels, ms, "ms", p);
}

void add_measured_backing_reference(Evidence& ev, const Labels& loop_labels) {
    const Fact* backing = ev.find_fact("device.backing_device", loop_labels);
    if (!backing) return;
    const HistogramMetric* d2c = ev.find_histogram("block.d2c_us", {{"device", backing->value}});
    if (!d2c || d2c->unit != "us" || d2c->hist.total() < kMinBackingSamples) return;
    const double p99_ms = d2c->hist.percentile(99).value / 1000.0;
    if (p99_ms <= 0) return;
    const std::string source = "measured: D2C p99 of backing disk " + backing->value + " in this window (" +
                               std::to_string(d2c->hist.total()) +
                               " requests; seed 000 §3.1 has no figure for its class)";
    add_reference(ev, "device.nominal_read_latency_ms", loop_labels, p99_ms, {"derived", source});
    add_reference(ev, "device.nominal_write_latency_ms", loop_labels, p99_ms, {"derived", source});
}


// The slowest flash class's reference (seed 000 §3.1: SATA SSD 4K random read
// up to 300 us). A device whose median service time stays within it serves at
// flash speed, whatever its class:
// if it dominates the applications' time, that is how they use it, not the
// device being slow.
constexpr double kFlashMedianUs = 300;
// Requests a flash device serves at once without queueing inside (its
// channels / dies; an assumption, not a measurement: SSDs have 8 or more).
constexpr double kFlashParallelism = 8;

Provenance derived(const std::string& formula) { return {"derived", formula}; }

double metric_or(const Evidence& ev, const std::string& name, const Labels& l, double fallback) {
    const Metric* m = ev.find_metric(name, l);
    return m ? m->value : fallback;
}

// The device a device's I/O lands on: a loop device's backing disk, a dm/md
// device's single member (device.slaves, one entry). Empty when none is known.
std::string lower_device(const Evidence& ev, const std::string& device) {
    if (const Fact* b = ev.find_fact("device.backing_device", {{"device", device}})) return b->value;
    if (const Fact* s = ev.find_fact("device.slaves", {{"device", device}}))
        if (!s->value.empty() && s->value.find(',') == std::string::npos) return s->value;
    return "";
}

std::set<std::string> lower_devices(const Evidence& ev) {
    std::set<std::string> lower;
    for (const auto& d : ev.instances("device")) {
        if (auto l = lower_device(ev, d); !l.empty()) lower.insert(l);
        if (const Fact* s = ev.find_fact("device.slaves", {{"device", d}})) {
            std::string v = s->value;
            for (size_t b = 0, e; b < v.size(); b = e + 1) {
                e = v.find(',', b);
                if (e == std::string::npos) e = v.size();
                lower.insert(v.substr(b, e - b));
            }
        }
    }
    return lower;
}

}  // namespace

std::map<std::string, double> app_own_q2c(const Evidence& ev, const std::set<std::string>& skip) {
    std::map<std::string, double> own;
    const Fact* app = ev.find_fact("attr.app.name");
    if (!app) return own;
    double total = 0;
    for (const auto& m : ev.metrics) {
        if (m.name != "block.submitter_q2c_total_us" || m.value <= 0) continue;
        const auto dev = m.labels.find("device"), comm = m.labels.find("comm");
        if (dev == m.labels.end() || comm == m.labels.end() || comm->second != app->value || skip.count(dev->second))
            continue;
        own[dev->second] += m.value;
        total += m.value;
    }
    if (total <= 0) own.clear();
    return own;
}

namespace {

// All of a command's traced syscall time: its processes' syscall.proc.time_us
// summed (the top 20 processes of the window).
double comm_syscall_time_us(const Evidence& ev, const std::string& comm) {
    double t = 0;
    for (const auto& m : ev.metrics)
        if (m.name == "syscall.proc.time_us")
            if (const auto c = m.labels.find("comm"); c != m.labels.end() && c->second == comm) t += m.value;
    return t;
}

// Per device: the command that waited on it most (the largest Q2C total of its
// own requests) and that wait as a share of ALL of its traced syscall time,
// not only of its slow syscalls. A synchronous reader of a fast device has
// almost no syscall of 1 ms or more: its slow set is a tail (preemptions,
// run-queue delay) or belongs to another program, and cannot speak for it.
// Whether it is bound by one request at a time (seed 003 §5.2) is a property
// of all its I/O: how much of its time goes to waiting for its own requests.
void add_submitter_whole_shares(Evidence& ev) {
    const std::set<std::string> lower = lower_devices(ev);
    const double window_us = ev.window.duration_s * 1e6;
    std::map<std::string, std::pair<std::string, double>> top;   // device -> (comm, Q2C us)
    for (const auto& m : ev.metrics) {
        if (m.name != "block.submitter_q2c_total_us" || m.value <= 0) continue;
        const auto dev = m.labels.find("device"), comm = m.labels.find("comm");
        if (dev == m.labels.end() || comm == m.labels.end() || comm->second == "?" || lower.count(dev->second))
            continue;
        auto& t = top[dev->second];
        if (m.value > t.second) t = {comm->second, m.value};
    }
    for (const auto& [d, who] : top) {
        const auto& [comm, q2c] = who;
        const double all_us = comm_syscall_time_us(ev, comm);
        // Its requests must be waited for inside its syscalls: more request
        // time than syscall time means they were not (page faults of mapped
        // files, asynchronous I/O, readahead completed later), and its
        // syscalls say nothing of them.
        if (all_us <= 0 || q2c > all_us) continue;
        const Labels l{{"device", d}}, lc{{"comm", comm}, {"device", d}};
        const double d2c = std::min(q2c, metric_or(ev, "block.submitter_d2c_total_us", lc, q2c));
        const std::string of = comm + "'s own requests on " + d;
        ev.add_fact("device.top_submitter", l, comm,
                    derived("command with the largest Q2C total of its own requests on the device "
                            "(block.submitter_q2c_total_us)"));
        ev.add_metric("device.submitter_wait_all_pct", l, std::min(100.0, 100.0 * q2c / all_us), "pct",
                      derived("Q2C total of " + of + " / the time of all its traced syscalls (syscall.proc.time_us "
                              "summed over its processes): its wait for them, queue included, whatever its latency"));
        ev.add_metric("device.submitter_share_all_pct", l, std::min(100.0, 100.0 * d2c / all_us), "pct",
                      derived("D2C total of " + of + " / the time of all its traced syscalls (syscall.proc.time_us "
                              "summed over its processes): the part the device served"));
        if (window_us > 0)
            ev.add_metric("device.submitter_wait_window_pct", l, 100.0 * q2c / window_us, "pct",
                          derived("Q2C total of " + of + " / the window's length: how much of the window one "
                                  "of its threads spent waiting for them"));
    }
}

// Whether the page cache is losing pages in the window: reclaim scanned
// (kswapd or direct) or a memory cgroup hit its limit. A working set that
// does not fit is evicted and read again all the time, so it always comes
// with one of these. Without them the cache's misses are first reads of data
// it never held (a build or a scan reading cold files): no cache is too small
// for them. (Refaults alone do not tell: they count re-reads of pages evicted
// at any time before, hours ago included.)
void add_cache_eviction(Evidence& ev) {
    const Metric* kswapd = ev.find_metric("vm.pgscan_kswapd");
    const Metric* direct = ev.find_metric("vm.pgscan_direct");
    if (!kswapd && !direct) return;   // vmstat not read: unknown
    const double scanned = (kswapd ? kswapd->value : 0) + (direct ? direct->value : 0);
    double limit_hits = 0;
    for (const auto& m : ev.metrics)
        if (m.name == "cgroup.memory_limit_hits_delta") limit_hits += std::max(0.0, m.value);
    ev.add_metric("page_cache.evicting", {}, scanned > 0 || limit_hits > 0 ? 1 : 0, "bool",
                  derived("1 when in the window reclaim scanned pages (vm.pgscan_kswapd + vm.pgscan_direct > 0) or a "
                          "memory cgroup hit its limit (cgroup.memory_limit_hits_delta > 0)"));
}

// The count and time (bucket midpoints) of a log2 histogram's values in
// buckets that start at or above bound_us.
std::pair<double, double> at_or_above(const Log2Histogram& h, double bound_us) {
    double n = 0, t = 0;
    const auto& b = h.buckets();
    for (size_t i = 0; i < b.size(); ++i) {
        const double lo = static_cast<double>(Log2Histogram::bucket_lo(static_cast<int>(i)));
        if (lo < bound_us || !b[i]) continue;
        const double hi = static_cast<double>(Log2Histogram::bucket_hi(static_cast<int>(i)));
        n += static_cast<double>(b[i]);
        t += static_cast<double>(b[i]) * (lo + hi + 1) / 2;
    }
    return {n, t};
}

// The slow syscalls' requests are the device's slow requests: those whose
// Q2C reached the slow syscalls' lower bound. The part of their block time
// spent in the I/O scheduler is estimated from the device's log2 histograms:
// their Q2C time (requests at or above the bound, bucket midpoints), less
// their D2C (the requests whose D2C itself reached the bound, and the device's
// mean D2C of the faster ones for the rest), the remainder split by the
// device's measured queue composition (I2D of Q2G + G2I + I2D). On a device
// whose waits are few and long (a scheduler idling for another process) the
// average request says little of the slow ones. nullopt without histograms
// or slow requests.
std::optional<double> slow_requests_i2d_fraction(const Evidence& ev, const Labels& l, double bound_us) {
    const HistogramMetric* q2c = ev.find_histogram("block.q2c_us", l);
    const HistogramMetric* d2c = ev.find_histogram("block.d2c_us", l);
    const Metric* d2c_total = ev.find_metric("block.d2c_total_us", l);
    const Metric* q2c_total = ev.find_metric("block.q2c_total_us", l);
    const Metric* i2d_total = ev.find_metric("block.i2d_total_us", l);
    if (!q2c || !d2c || !d2c_total || !q2c_total || !i2d_total || bound_us <= 0) return std::nullopt;
    if (q2c->unit != "us" || d2c->unit != "us") return std::nullopt;
    auto above = [&](const Log2Histogram& h) { return at_or_above(h, bound_us); };
    const auto [slow_n, slow_q2c] = above(q2c->hist);
    if (slow_n <= 0 || slow_q2c <= 0) return std::nullopt;
    const auto [slow_d2c_n, slow_d2c] = above(d2c->hist);
    const double all_n = static_cast<double>(d2c->hist.total());
    const double fast_mean = all_n > slow_d2c_n ? std::max(0.0, d2c_total->value - slow_d2c) / (all_n - slow_d2c_n) : 0;
    const double served = std::min(slow_q2c, slow_d2c + std::max(0.0, slow_n - slow_d2c_n) * fast_mean);
    const double queued = q2c_total->value - d2c_total->value;
    if (queued <= 0) return 0.0;
    return (1 - served / slow_q2c) * std::min(1.0, i2d_total->value / queued);
}

// The part of a device's requests' block time (Q2C) that they spent in its
// I/O scheduler (block_rq_insert -> block_rq_issue), and how that was
// estimated: from the requests at or above the slow syscalls' lower bound
// (the metric `bound_name`) where the histograms allow, else (and for an
// empty name) from the totals.
struct SchedulerPart {
    double fraction;
    std::string how;
};

std::optional<SchedulerPart> scheduler_part(const Evidence& ev, const Labels& l, const std::string& bound_name,
                                            double q2c_total) {
    const double bound = bound_name.empty() ? 0 : metric_or(ev, bound_name, {}, 0);
    if (const auto slow = slow_requests_i2d_fraction(ev, l, bound))
        return SchedulerPart{*slow, "the part of its slow requests' block time spent in the I/O scheduler (requests "
                                    "with Q2C >= " + bound_name + ", " + format_number(bound) +
                                        " us: their Q2C less their D2C, from the log2 histograms, times I2D / "
                                        "(Q2C - D2C) totals)"};
    const Metric* i2d = ev.find_metric("block.i2d_total_us", l);
    if (!i2d || q2c_total <= 0) return std::nullopt;
    return SchedulerPart{std::min(1.0, i2d->value / q2c_total),
                         "I2D total / Q2C total (the part its requests waited in the I/O scheduler; no histogram of "
                         "its slow requests)"};
}

// A thread asleep until its own request completes is in the syscall
// collector's "device" class (attr.<basis>.device_pct) also while that
// request waits in the I/O scheduler. That part, for the layer table's block
// queue row: the device class times the part of the block time spent in the
// scheduler on the devices applications submit to. The slow set's part from
// the devices' slow requests where the histograms allow; all syscalls' from
// the I2D and Q2C totals.
void add_io_scheduler_parts(Evidence& ev, const std::map<std::string, double>& q2c_total,
                            const std::set<std::string>& lower, double top_total) {
    if (top_total <= 0) return;
    for (const std::string basis : {"slow", "all"}) {
        const Metric* device = ev.find_metric("attr." + basis + ".device_pct");
        if (!device) continue;
        const double device_pct = device->value;
        // all syscalls: no bound, the totals
        const std::string bound_name = basis == "slow" ? "attr.slow.threshold_us" : "";
        const double bound = bound_name.empty() ? 0 : metric_or(ev, bound_name, {}, 0);
        // Each device weighted by the block time of the requests the basis
        // waited on: for the slow set its requests at or above the bound
        // (a busy disk's many fast requests hold none of the slow set's
        // wait); for all syscalls, or where no request reached the bound,
        // all of its requests.
        std::map<std::string, double> weight, all_requests;
        double weight_total = 0;
        for (const auto& [d, q2c] : q2c_total) {
            if (lower.count(d)) continue;
            all_requests[d] = q2c;
            weight[d] = q2c;
            if (bound > 0)
                if (const HistogramMetric* h = ev.find_histogram("block.q2c_us", {{"device", d}}); h && h->unit == "us")
                    weight[d] = at_or_above(h->hist, bound).second;
            weight_total += weight[d];
        }
        if (weight_total <= 0) {
            weight = all_requests;
            weight_total = top_total;
        }
        double fraction = 0;
        bool measured = false;
        for (const auto& [d, w] : weight)
            if (const auto part = scheduler_part(ev, {{"device", d}}, bound_name, q2c_total.at(d))) {
                fraction += w / weight_total * part->fraction;
                measured = true;
            }
        if (!measured) continue;
        ev.add_metric("attr." + basis + ".io_scheduler_pct", {}, std::min(device_pct, device_pct * fraction), "pct",
                      derived("attr." + basis + ".device_pct x the part of the block time (Q2C) of the devices "
                              "applications submit to that their requests spent in the I/O scheduler (" +
                              (basis == "slow" ? std::string("per device from its requests with Q2C >= "
                                                             "attr.slow.threshold_us, each device weighted by their "
                                                             "Q2C time, where its histograms allow; else I2D total / "
                                                             "Q2C total, weighted by its Q2C total")
                                               : std::string("per device I2D total / Q2C total, weighted by its Q2C "
                                                             "total")) +
                              ")"));
    }
}

// Per device: its own D2C distribution (median, tail ratio), whether it serves
// at flash speed, whether a reference latency exists, and which share of the
// slow syscalls' device wait is its own. The syscall collector charges waits
// for a thread's own block I/O to one "device" class; it is split over the
// devices the applications submit to (devices that are no other device's lower
// device: a loop device's backing disk serves the loop worker, not the
// application) in proportion to their measured device time (D2C total).
void add_device_judgement(Evidence& ev) {
    const std::set<std::string> lower = lower_devices(ev);
    std::map<std::string, double> d2c_total, q2c_total;
    double top_total = 0;
    for (const auto& d : ev.instances("device")) {
        const Labels l{{"device", d}};
        const Metric* t = ev.find_metric("block.d2c_total_us", l);
        if (!t || t->value <= 0) continue;
        d2c_total[d] = t->value;
        q2c_total[d] = std::max(t->value, metric_or(ev, "block.q2c_total_us", l, t->value));
        if (!lower.count(d)) top_total += q2c_total[d];
    }
    // The suffering application's own device wait where measured (the
    // machine's slow set also holds other programs' syscalls).
    const bool sufferer = ev.find_metric("attr.sufferer.device_pct") != nullptr;
    const std::string prefix = sufferer ? "attr.sufferer." : "attr.slow.";
    // Copied out: adding metrics below may move the vector these point into.
    const Metric* found = ev.find_metric(prefix + "device_pct");
    const bool has_device_pct = found != nullptr;
    const double device_pct = found ? found->value : 0.0;
    found = ev.find_metric(prefix + "block_queue_pct");
    const bool has_queue_pct = found != nullptr;
    const double queue_pct = found ? found->value : 0.0;
    // Where the block collector measured each command's own requests, the
    // suffering application's wait is split by its own requests' block time
    // (a disk busy with other programs' I/O holds none of its wait), not by
    // everyone's. Its processes' requests only: the stack below passes the
    // share down as before (a loop device's lower requests are its worker's).
    std::map<std::string, double> weight = q2c_total;
    double weight_total = top_total;
    std::string basis = "Q2C total (all submitters)";
    if (sufferer)
        if (auto own = app_own_q2c(ev, lower); !own.empty()) {
            weight_total = 0;
            for (const auto& [d, us] : own) weight_total += us;
            weight = std::move(own);
            basis = "the Q2C total of " + ev.find_fact("attr.app.name")->value +
                    "'s own requests (block.submitter_q2c_total_us)";
        }
    for (const auto& [d, total] : d2c_total) {
        const Labels l{{"device", d}};
        ev.add_metric("device.reference_known", l, ev.find_metric("device.nominal_read_latency_ms", l) ? 1 : 0, "bool",
                      derived("1 when a reference read latency exists for the device (site configuration, its "
                              "class's nominal value, or a loop device's backing disk), else 0"));
        if (const HistogramMetric* h = ev.find_histogram("block.d2c_us", l); h && h->unit == "us" && h->hist.total()) {
            const double p50 = h->hist.percentile(50).value, p99 = h->hist.percentile(99).value;
            ev.add_metric("device.d2c_p50_us", l, p50, "us", derived("median of block.d2c_us (log2 buckets)"));
            if (p50 > 0)
                ev.add_metric("device.d2c_tail_ratio", l, p99 / p50, "ratio",
                              derived("p99 / p50 of block.d2c_us: how far the tail lies from the median"));
            // Slower than any flash device: a median above 3x the slowest flash
            // class's reference (seed 000 §9.4: await above 3x its baseline is
            // the alert level).
            // A device kept deeper than a flash device serves in parallel (its
            // channels, about 8) queues inside itself: D2C then grows with the
            // depth, not with slowness, so the bar grows with it.
            const double depth = metric_or(ev, "disk.aqu_sz", l, 1);
            const double bar = 3 * kFlashMedianUs * std::max(1.0, depth / kFlashParallelism);
            // The median, not the tail: a fast device's tail can be its
            // driver's CPU waits on a busy machine (a loop worker's).
            const bool slow = p50 >= bar;
            ev.add_metric("device.slower_than_flash", l, slow ? 1 : 0, "bool",
                          derived("1 when D2C p50 >= 0.9 ms (3x the slowest flash class's 4K read reference, seed "
                                  "000 §3.1 SATA SSD 0.3 ms; §9.4's 3x alert level) x max(1, aqu-sz / 8)"));
        }
    }
    add_io_scheduler_parts(ev, q2c_total, lower, top_total);
    if (!has_device_pct || weight_total <= 0) return;
    // Shares of the devices the applications submit to, then passed down each
    // stack: a lower device holds the part of its upper device's share that
    // its own service time covers (D2C total below / D2C total above, at most
    // all of it). A loop device over a file on a slow device passes nearly all
    // of it down; one whose backing I/O waits in a throttle above the lower
    // disk passes little (the time is spent in the throttle, not in the disk).
    std::map<std::string, double> share, wait;
    std::map<std::string, std::string> via;
    for (const auto& [d, q2c] : q2c_total) {
        if (lower.count(d)) continue;
        // The syscalls' wait for their own I/O covers its queueing and its
        // service: the wait on this device, and the part the device served.
        wait[d] += device_pct * weight[d] / weight_total;
        const double top_share = wait[d] * d2c_total[d] / q2c;
        share[d] += top_share;
        std::string cur = d;
        double carried = top_share;   // the upper device's service time, spent below
        std::set<std::string> seen{d};
        for (int hop = 0; hop < 8; ++hop) {
            const std::string next = lower_device(ev, cur);
            if (next.empty() || seen.count(next) || !d2c_total.count(next) || d2c_total[cur] <= 0) break;
            seen.insert(next);
            wait[next] += carried * std::min(1.0, q2c_total[next] / d2c_total[cur]);
            carried *= std::min(1.0, d2c_total[next] / d2c_total[cur]);
            share[next] += carried;
            via[next] += (via[next].empty() ? "" : ", ") + d;
            cur = next;
        }
    }
    // Their wait for a request or tag (blk_mq_get_tag: the syscall's
    // block_queue class) happens before their request exists, on the device
    // they submit to: split the same way, not passed down a stack.
    if (has_queue_pct)
        for (const auto& [d, q2c] : q2c_total)
            if (!lower.count(d))
                ev.add_metric("device.tag_wait_share_pct", {{"device", d}},
                              std::min(100.0, queue_pct * weight[d] / weight_total), "pct",
                              derived(prefix + "block_queue_pct split by " + basis +
                                      " over the devices applications submit to: the slow syscalls' wait for a "
                                      "request or tag on it"));
    for (const auto& [d, pct] : share) {
        const Labels l{{"device", d}};
        const auto v = via.find(d);
        const std::string how =
            v == via.end() ? std::string("the devices applications submit to (lower devices of a stack left out)")
                           : "passed down from " + v->second + " (stacked on it), scaled by this device's block "
                                                               "time against the upper device's service time";
        ev.add_metric("device.io_wait_share_pct", l, std::min(100.0, wait[d]), "pct",
                      derived(prefix + "device_pct split by " + basis + " over " + how +
                              ": the slow syscalls' wait for I/O on it, queue included"));
        ev.add_metric("device.slow_share_pct", l, std::min(100.0, pct), "pct",
                      derived("device.io_wait_share_pct x D2C total / Q2C total (the part the device served); " + how));
        // The part of that wait its requests spent in the I/O scheduler
        // (block_rq_insert -> block_rq_issue), on the device they were
        // submitted to (a lower device's scheduler serves the upper one's
        // worker, whose wait is not the syscalls' own).
        if (v == via.end()) {
            // The lower bound of the syscalls the wait is over: the suffering
            // application's own (when the collector measured it), else the
            // window's slow set.
            const std::string basis_name = ev.find_metric("attr.app.ops") && ev.find_metric("attr.app.basis_us")
                                               ? "attr.app.basis_us"
                                               : "attr.slow.threshold_us";
            if (const auto part = scheduler_part(ev, l, basis_name, q2c_total[d]))
                ev.add_metric("device.scheduler_wait_share_pct", l, std::min(100.0, wait[d] * part->fraction), "pct",
                              derived("device.io_wait_share_pct x " + part->how));
        }
        if (v != via.end())
            ev.add_fact("device.upper_devices", l, v->second,
                        derived("devices stacked on this one (loop backing files, dm/md members)"));
    }
}

// A stacked device's chain, top to bottom: "loop1 -> /mnt/f on loop0 (D2C p99
// 3.1 ms) -> /x/disk.img (no block device)". Each hop's figures are measured;
// the chain says where the upper device's time was spent.
void add_stack_chains(Evidence& ev) {
    for (const auto& d : ev.instances("device")) {
        const Labels l{{"device", d}};
        std::string lower = lower_device(ev, d);
        const Fact* file = ev.find_fact("device.backing_file", l);
        if (lower.empty() && !file) continue;
        std::string chain = d;
        std::string cur = d, bottom = d;
        std::set<std::string> seen{d};
        for (int hop = 0; hop < 8; ++hop) {
            const Labels cl{{"device", cur}};
            const Fact* f = ev.find_fact("device.backing_file", cl);
            std::string next = lower_device(ev, cur);
            if (next.empty() && !f) break;
            chain += " -> ";
            if (f) chain += "file " + f->value + (next.empty() ? " (on no block device the kernel can see into)" : " on ");
            if (next.empty() || seen.count(next)) break;
            seen.insert(next);
            chain += next;
            const Labels nl{{"device", next}};
            if (const Metric* p = ev.find_metric("block.d2c_p99_us", nl))
                chain += " (D2C p99 " + format_value(p->value, p->unit) + ")";
            bottom = next;
            cur = next;
        }
        ev.add_fact("device.stack_chain", l, chain,
                    derived("walked down loop backing files (loop/backing_file, stat st_dev) and dm/md members "
                            "(/sys/block/*/slaves)"));
        if (bottom != d) ev.add_fact("device.bottom_device", l, bottom, derived("last block device of device.stack_chain"));
    }
}

// "memory:/a,blkio:/b" (the syscall collector's name for a v1 task's groups)
// -> the path in the given controller's hierarchy; a v2 path stays as it is.
std::string cgroup_path_for(const std::string& name, const std::string& controller) {
    if (name.empty() || name[0] == '/') return name;
    for (size_t b = 0, e; b < name.size(); b = e + 1) {
        e = name.find(',', b);
        if (e == std::string::npos) e = name.size();
        const std::string part = name.substr(b, e - b);
        const size_t colon = part.find(':');
        if (colon != std::string::npos && part.substr(0, colon) == controller) return part.substr(colon + 1);
    }
    return "";
}

// One cgroup name across collectors: the share of the slow syscalls' time spent
// by the tasks of each cgroup the cgroup collector reports (by its I/O
// controller's path on v1, or its v2 path), so a cgroup's limit and the time
// its tasks lost meet in one place.
void add_cgroup_join(Evidence& ev) {
    std::map<std::string, double> slow_us;
    double all_slow = 0;
    for (const auto& m : ev.metrics) {
        if (m.name != "syscall.cgroup.slow_time_us") continue;
        const auto it = m.labels.find("cgroup");
        if (it == m.labels.end()) continue;
        all_slow += m.value;
        std::set<std::string> paths{cgroup_path_for(it->second, "blkio"), cgroup_path_for(it->second, "io"),
                                    cgroup_path_for(it->second, "memory")};
        for (const auto& p : paths)
            if (!p.empty()) slow_us[p] += m.value;
    }
    if (all_slow <= 0) return;
    for (const auto& cg : ev.instances("cgroup")) {
        const auto it = slow_us.find(cg);
        ev.add_metric("cgroup.slow_share_pct", {{"cgroup", cg}}, it == slow_us.end() ? 0 : 100.0 * it->second / all_slow,
                      "pct",
                      derived("syscall.cgroup.slow_time_us of the tasks in this group (v1: its blkio/memory path "
                              "in the syscall collector's 'controller:/path' name) / all slow-set time"));
    }
}

// A cgroup I/O limit on the disk under a stacked device: the loop worker issues
// the backing I/O on behalf of the submitter's group, so a limit on the lower
// disk slows the upper device. Per upper device: the most used such limit.
void add_limits_below(Evidence& ev) {
    const std::vector<std::string> cgroups = ev.instances("cgroup");   // once: not per device
    for (const auto& d : ev.instances("device")) {
        const Labels l{{"device", d}};
        const Fact* bottom = ev.find_fact("device.bottom_device", l);
        if (!bottom) continue;
        double best = -1;
        std::string best_cg;
        for (const auto& cg : cgroups) {
            const Labels cl{{"cgroup", cg}};
            const Fact* dev = ev.find_fact("cgroup.io_limit_device", cl);
            const Metric* util = ev.find_metric("cgroup.io_limit_utilisation_pct", cl);
            if (!dev || !util) continue;
            // "vda (254:0)": the limit's device by name.
            const Fact* chain = ev.find_fact("device.stack_chain", l);
            const std::string name = dev->value.substr(0, dev->value.find(' '));
            if (!chain || chain->value.find(" " + name) == std::string::npos) continue;
            if (util->value > best) best = util->value, best_cg = cg;
        }
        if (best < 0) continue;
        ev.add_metric("device.lower_limit_utilisation_pct", l, best, "pct",
                      derived("cgroup.io_limit_utilisation_pct of cgroup " + best_cg +
                              ", whose limit is on a device under this one (device.stack_chain)"));
        ev.add_fact("device.lower_limit_cgroup", l, best_cg, derived("cgroup with that limit"));
        if (const Fact* s = ev.find_fact("cgroup.io_limit_setting", {{"cgroup", best_cg}}))
            ev.add_fact("device.lower_limit_setting", l, s->value, s->provenance);
    }
}

// The fsync chain: an fsync waits for the journal commit (or log force), which
// waits for the data it must carry, on the device, through the block queue and
// any I/O control. Summed, these are what a slow fsync waited for; each alone
// may be under its own rule's threshold. Defined only when the journal took
// part (some slow-set time waited for it).
// Share of the slow set's time spent in fsync-family syscalls, estimated from
// the per-operation duration histograms (syscall.latency_us{op}): each bucket
// at or above the slow threshold counts its operations at the bucket's
// midpoint. Both sides of the ratio are estimated alike, so the factor-of-two
// width of a bucket mostly cancels.
std::optional<double> slow_fsync_time_pct(const Evidence& ev) {
    const Metric* thr = ev.find_metric("attr.slow.threshold_us");
    if (!thr) return std::nullopt;
    const int first = thr->value > 0 ? Log2Histogram::bucket_of(static_cast<uint64_t>(thr->value)) : 0;
    double fsync = 0, all = 0;
    for (const auto& h : ev.histograms) {
        if (h.name != "syscall.latency_us") continue;
        const auto op = h.labels.find("op");
        if (op == h.labels.end()) continue;
        const auto& b = h.hist.buckets();
        double t = 0;
        for (size_t i = static_cast<size_t>(std::max(0, first)); i < b.size(); ++i)
            t += static_cast<double>(b[i]) * 1.5 * static_cast<double>(Log2Histogram::bucket_lo(static_cast<int>(i)));
        all += t;
        if (op->second == "fsync" || op->second == "sync_file_range") fsync += t;
    }
    if (all <= 0) return std::nullopt;
    return 100.0 * fsync / all;
}

// The fsyncs' own breakdown, from the slow syscall exemplars (every syscall of
// 1 ms or more is sent with its measured parts; the slowest are kept): the
// part of the fsync-family exemplars' time spent in each class. On a busy
// machine the slow set also holds other processes' preempted syscalls; the
// fsyncs' exemplars say what the fsyncs themselves waited for.
struct FsyncParts {
    size_t n = 0;
    double total = 0;
    std::map<std::string, double> us;   // class -> time
};

FsyncParts fsync_exemplar_parts(const Evidence& ev, const std::string& comm = "") {
    FsyncParts p;
    for (const auto& e : ev.exemplars) {
        if (e.kind != "syscall") continue;
        if (!comm.empty()) {
            const auto c = e.labels.find("comm");
            if (c == e.labels.end() || c->second != comm) continue;
        }
        const auto op = e.labels.find("op");
        if (op == e.labels.end() || (op->second != "fsync" && op->second != "sync_file_range")) continue;
        const auto t = e.values.find("total_us");
        if (t == e.values.end() || t->second <= 0) continue;
        ++p.n;
        p.total += t->second;
        for (const auto& [k, v] : e.values)
            if (k.size() > 3 && k.compare(k.size() - 3, 3, "_us") == 0 && k != "total_us") p.us[k.substr(0, k.size() - 3)] += v;
    }
    return p;
}

// Fewer fsync exemplars than this and their breakdown is not used.
constexpr size_t kMinFsyncExemplars = 5;

// The application with the most time in traced syscalls: its processes'
// times summed by command name (a database's backends, a job's workers), from
// syscall.proc.time_us (the top 20 processes).
void add_top_app(Evidence& ev) {
    std::map<std::string, std::pair<double, int>> by_comm;
    for (const auto& m : ev.metrics) {
        if (m.name != "syscall.proc.time_us") continue;
        const auto c = m.labels.find("comm");
        if (c == m.labels.end()) continue;
        by_comm[c->second].first += m.value;
        by_comm[c->second].second += 1;
    }
    const auto best = std::max_element(by_comm.begin(), by_comm.end(),
                                       [](const auto& a, const auto& b) { return a.second.first < b.second.first; });
    if (best == by_comm.end()) return;
    ev.add_fact("attr.slow.top_app", {}, best->first,
                derived("command with the most time in traced syscalls, its processes summed (" +
                        std::to_string(best->second.second) + " process(es) among the top 20 of syscall.proc.time_us)"));
}

// The share a finding reports: what the application that suffered most
// waited for (attr.app.*, its own slow syscalls) when the collector measured
// it; else the machine's slow set (attr.slow.*), which on a busy machine also
// holds other programs' syscalls.
void add_sufferer_shares(Evidence& ev) {
    const bool own = ev.find_metric("attr.app.ops") != nullptr;
    const Fact* app = ev.find_fact("attr.app.name");
    std::string top;
    double best = 0;
    for (const auto& c : slow_set_classes()) {
        const Metric* m = ev.find_metric((own ? "attr.app." : "attr.slow.") + c + "_pct");
        if (!m) continue;
        if (m->value > best) best = m->value, top = c;
        ev.add_metric("attr.sufferer." + c + "_pct", {}, m->value, "pct",
                      derived(own ? "attr.app." + c + "_pct: the slow syscalls of " + (app ? app->value : "the application") +
                                        ", the application that suffered most"
                                  : "attr.slow." + c + "_pct: the machine's slow set (the application's own was not "
                                                       "measured)"));
    }
    // Run-queue delay per slow syscall (the CPU rule's gate), on the same basis.
    // (Bundles recorded before attr.app.time_us existed: the machine's.)
    const bool own_time = own && ev.find_metric("attr.app.time_us");
    const Metric* cpu = ev.find_metric(own_time ? "attr.app.cpu_pct" : "attr.slow.cpu_pct");
    const Metric* time = ev.find_metric(own_time ? "attr.app.time_us" : "attr.slow.cpu_us");
    const Metric* ops = ev.find_metric(own_time ? "attr.app.ops" : "attr.slow.ops");
    // Copied out: adding metrics may move the vector these point into.
    const std::optional<double> cpu_pct = cpu ? std::optional(cpu->value) : std::nullopt;
    const std::optional<double> slow_us = time ? std::optional(time->value) : std::nullopt;
    if (cpu && time && ops && ops->value > 0)
        ev.add_metric("attr.sufferer.cpu_us_per_op", {},
                      (own_time ? cpu->value / 100 * time->value : time->value) / ops->value, "us",
                      derived(own_time ? "attr.app.cpu_pct x attr.app.time_us / attr.app.ops"
                                       : "attr.slow.cpu_us / attr.slow.ops (the application's own not measured)"));
    // Run-queue delay as a share of ALL of the application's traced syscall
    // time, and how much of that time its slow set covers: a slow set that
    // covers a small part of it (a fast reader preempted now and then)
    // speaks for its tail, not for where its time goes. Its slow syscalls'
    // delay is measured; its faster syscalls' is estimated with the run-queue
    // share of the machine's syscalls below the window's p99 (attr.all less
    // attr.slow), mostly its own when it holds most of the syscall time.
    if (own_time && app && cpu_pct && slow_us && *slow_us > 0)
        if (const double all_us = std::max(*slow_us, comm_syscall_time_us(ev, app->value)); all_us > 0) {
            const std::string from = " / the time of all of " + app->value +
                                     "'s traced syscalls (syscall.proc.time_us summed over its processes)";
            double fast_total = 0, fast_cpu = 0;
            for (const auto& c : slow_set_classes()) {
                const double part = metric_or(ev, "attr.all." + c + "_us", {}, 0) -
                                    metric_or(ev, "attr.slow." + c + "_us", {}, 0);
                fast_total += std::max(0.0, part);
                if (c == "cpu") fast_cpu = std::max(0.0, part);
            }
            const double fast_ratio = fast_total > 0 ? fast_cpu / fast_total : 0;
            ev.add_metric("attr.app.slow_part_pct", {}, 100.0 * *slow_us / all_us, "pct",
                          derived("attr.app.time_us" + from));
            ev.add_metric("attr.sufferer.cpu_all_pct", {},
                          std::min(100.0, (*cpu_pct / 100 * *slow_us + (all_us - *slow_us) * fast_ratio) / all_us * 100),
                          "pct",
                          derived("(run-queue delay in its slow syscalls, attr.app.cpu_pct x attr.app.time_us, + its "
                                  "other syscalls' time x the run-queue share of the machine's syscalls below the "
                                  "window's p99, attr.all.cpu_us - attr.slow.cpu_us over attr.all - attr.slow)" + from));
        }
    if (!top.empty())
        ev.add_fact("attr.sufferer.top_layer", {}, top,
                    derived(std::string("layer with the largest attr.sufferer.<layer>_pct (") +
                            (own ? "the suffering application's own slow syscalls" : "the machine's slow set") + ")"));
}

void add_fsync_chain(Evidence& ev) {
    const auto fsync_pct = slow_fsync_time_pct(ev);
    if (fsync_pct)
        ev.add_metric("attr.slow.fsync_time_pct", {}, *fsync_pct, "pct",
                      derived("fsync/fdatasync/sync_file_range share of the slow set's time, from "
                              "syscall.latency_us{op} buckets at or above attr.slow.threshold_us (bucket midpoints)"));
    const Metric* journal = ev.find_metric("attr.slow.journal_pct");
    // The chain exists when the journal took part, or when the slow set is
    // mostly fsyncs (fdatasync of preallocated data needs no journal commit:
    // it waits for the data and the device's cache flush).
    if (!journal || (journal->value <= 0 && (!fsync_pct || *fsync_pct < 50))) return;
    static const char* kChain[] = {"journal", "device", "block_queue", "cgroup"};
    double chain = 0, journal_part = journal->value;
    std::string how;
    // The application that suffered most (all its processes: a database's
    // backends), when it has enough fsync exemplars of its own; else all.
    FsyncParts parts;
    if (const Fact* app = ev.find_fact("attr.slow.top_app")) parts = fsync_exemplar_parts(ev, app->value);
    if (parts.n < kMinFsyncExemplars) parts = fsync_exemplar_parts(ev);
    if (parts.n >= kMinFsyncExemplars && parts.total > 0) {
        for (const char* c : kChain) chain += parts.us.count(c) ? parts.us.at(c) : 0;
        chain = 100.0 * chain / parts.total;
        journal_part = 100.0 * (parts.us.count("journal") ? parts.us.at("journal") : 0) / parts.total;
        how = "share of the slow fsync-family exemplars' time (" + std::to_string(parts.n) +
              " syscalls of 1 ms or more, each part measured) spent in journal + device + block_queue + cgroup waits";
    } else {
        for (const char* c : kChain) chain += metric_or(ev, std::string("attr.slow.") + c + "_pct", {}, 0);
        // Device waits of other operations (reads) in the slow set are not the
        // chain: at most the fsyncs' own share of it.
        if (fsync_pct && *fsync_pct > 0) chain = std::min(chain, std::max(*fsync_pct, journal->value));
        how = "attr.slow.journal_pct + device_pct + block_queue_pct + cgroup_pct (at most the fsyncs' share of the "
              "slow set)";
    }
    ev.add_metric("attr.slow.fsync_chain_pct", {}, chain, "pct",
                  derived(how + ": the journal commit and the I/O it waits for"));
    ev.add_metric("attr.slow.journal_of_chain_pct", {}, chain > 0 ? 100.0 * journal_part / chain : 0, "pct",
                  derived("journal part of attr.slow.fsync_chain_pct, on the same basis"));
}

}  // namespace

std::vector<MetricSpec> derived_metric_specs() {
    using K = MetricSpec::Kind;
    std::vector<MetricSpec> specs = {
        {"device.nominal_read_latency_ms", K::Metric, "ms", layer::kDevice, "device",
         "reference 4K random read latency of the device's class (seed 000 §3.1, upper end); "
         "a loop device takes its backing device's class, or, for a class the table lacks, its backing "
         "disk's measured D2C p99 in the window"},
        {"device.nominal_write_latency_ms", K::Metric, "ms", layer::kDevice, "device",
         "reference 4K random write latency of the device's class (seed 000 §3.1, upper end)"},
        {"window.duration_s", K::Metric, "s", "", "", "length of the observation window"},
        {"device.reference_known", K::Metric, "bool", layer::kDevice, "device",
         "1 when the device has a reference latency (configuration, class, or backing disk), else 0"},
        {"device.d2c_p50_us", K::Metric, "us", layer::kDevice, "device", "median device service time (D2C)"},
        {"device.d2c_tail_ratio", K::Metric, "ratio", layer::kDevice, "device", "D2C p99 / p50"},
        {"device.slower_than_flash", K::Metric, "bool", layer::kDevice, "device",
         "1 when the device's D2C median or tail is slower than any flash device serves (no reference needed)"},
        {"device.scheduler_wait_share_pct", K::Metric, "pct", layer::kBlockQueue, "device",
         "share of the slow syscalls' time their requests spent in the device's I/O scheduler (I2D part of their "
         "I/O wait)"},
        {"attr.slow.io_scheduler_pct", K::Metric, "pct", layer::kBlockQueue, "",
         "share of the slow syscalls' time they waited for their own requests while those sat in the I/O "
         "scheduler (the I2D part of attr.slow.device_pct; the layer table counts it under the block queue)"},
        {"attr.all.io_scheduler_pct", K::Metric, "pct", layer::kBlockQueue, "",
         "the same over all traced syscalls (the I2D part of attr.all.device_pct)"},
        {"device.effective_class", K::Fact, "", layer::kDevice, "device",
         "the device's class, a loop device's being what backs it (its backing disk's class, or memory)"},
        {"device.slow_share_pct", K::Metric, "pct", layer::kDevice, "device",
         "share of the slow syscalls' time spent in this device's service time (D2C part of their I/O wait)"},
        {"device.io_wait_share_pct", K::Metric, "pct", layer::kDevice, "device",
         "share of the slow syscalls' time spent waiting for I/O on this device (block queue + service)"},
        {"device.tag_wait_share_pct", K::Metric, "pct", layer::kBlockQueue, "device",
         "share of the slow syscalls' time spent waiting to get a request/tag for this device (their block_queue "
         "class, split over the devices they submit to)"},
        {"device.upper_devices", K::Fact, "", layer::kDevice, "device",
         "devices stacked on this one whose time it serves"},
        {"device.stack_chain", K::Fact, "", layer::kDevice, "device",
         "the devices and backing files under a stacked device, top to bottom"},
        {"device.bottom_device", K::Fact, "", layer::kDevice, "device", "last block device under a stacked device"},
        {"device.lower_limit_utilisation_pct", K::Metric, "pct", layer::kCgroup, "device",
         "use of a cgroup I/O limit set on a device under this one"},
        {"device.lower_limit_cgroup", K::Fact, "", layer::kCgroup, "device", "the cgroup with that limit"},
        {"device.lower_limit_setting", K::Fact, "", layer::kCgroup, "device", "that limit's setting"},
        {"cgroup.slow_share_pct", K::Metric, "pct", layer::kCgroup, "cgroup",
         "share of the slow syscalls' time spent by this group's tasks"},
        {"attr.slow.fsync_chain_pct", K::Metric, "pct", layer::kJournal, "",
         "share of the slow fsyncs' time waiting for the journal and the I/O it carries (journal + device + block "
         "queue + cgroup), from their exemplars when there are enough, else from the slow set"},
        {"attr.slow.journal_of_chain_pct", K::Metric, "pct", layer::kJournal, "", "journal part of the fsync chain"},
        {"attr.slow.top_app", K::Fact, "", layer::kSyscall, "",
         "command with the most time in traced syscalls, its processes summed"},
        {"attr.slow.fsync_time_pct", K::Metric, "pct", layer::kSyscall, "",
         "share of the slow set's time spent in fsync-family syscalls (estimated from the duration buckets)"},
    };
    for (auto& spec : slow_floor_specs()) specs.push_back(std::move(spec));
    specs.push_back({"attr.sufferer.cpu_us_per_op", K::Metric, "us", layer::kCpu, "",
                     "mean run-queue delay per slow syscall of the suffering application"});
    specs.push_back({"attr.sufferer.cpu_all_pct", K::Metric, "pct", layer::kCpu, "",
                     "run-queue delay as a share of all of the suffering application's traced syscall time "
                     "(measured in its slow syscalls, estimated from the machine's faster ones in the others)"});
    specs.push_back({"attr.app.slow_part_pct", K::Metric, "pct", layer::kSyscall, "",
                     "share of the suffering application's traced syscall time in its slow syscalls (attr.app.*)"});
    specs.push_back({"page_cache.evicting", K::Metric, "bool", layer::kPageCache, "",
                     "1 when the page cache lost pages in the window (reclaim scanned, a memory cgroup hit its limit)"});
    specs.push_back({"device.top_submitter", K::Fact, "", layer::kDevice, "device",
                     "command that waited on the device most (its own requests' Q2C total)"});
    specs.push_back({"device.submitter_wait_all_pct", K::Metric, "pct", layer::kDevice, "device",
                     "share of all of that command's traced syscall time spent waiting for its own requests on "
                     "the device (queue + service), whatever their latency"});
    specs.push_back({"device.submitter_share_all_pct", K::Metric, "pct", layer::kDevice, "device",
                     "share of all of that command's traced syscall time spent in its requests' device service "
                     "time (D2C)"});
    specs.push_back({"device.submitter_wait_window_pct", K::Metric, "pct", layer::kDevice, "device",
                     "that command's wait for its own requests on the device against the window's length"});
    specs.push_back({"attr.sufferer.top_layer", K::Fact, "", layer::kSyscall, "",
                     "layer with the largest share of the suffering application's slow time"});
    for (const auto& c : slow_set_classes())
        specs.push_back({"attr.sufferer." + c + "_pct", K::Metric, "pct", c == "other" ? layer::kSyscall : c, "",
                         "share of " + c + " in the slow syscalls of the application that suffered most "
                         "(attr.app.*), or of the machine's slow set where that was not measured"});
    auto ceph = ceph_derived_metric_specs();
    specs.insert(specs.end(), ceph.begin(), ceph.end());
    return specs;
}

std::vector<std::string> reference_classes() {
    std::vector<std::string> out;
    for (const auto& [cls, n] : nominal_by_class()) out.push_back(cls);
    return out;
}

namespace {

// What serves a device's requests, for rules that depend on the kind of
// storage (a scheduler's policy): a loop device is as fast and as parallel as
// what backs it. A class from the site configuration is the device's own.
void add_effective_classes(Evidence& ev) {
    for (const auto& device : ev.instances("device")) {
        const Labels l{{"device", device}};
        const Fact* cls = ev.find_fact("device.class", l);
        if (!cls || ev.find_fact("device.effective_class", l)) continue;
        std::string value = cls->value, how = "device.class";
        if (value == "loop")
            if (const Fact* b = ev.find_fact("device.backing_class", l)) {
                value = b->value;
                how = "device.backing_class (a loop device serves its requests from what backs it)";
            }
        ev.add_fact("device.effective_class", l, value, derived(how));
    }
}

}  // namespace

void add_derived_metrics(Evidence& ev) {
    ev.add_metric("window.duration_s", {}, ev.window.duration_s, "s",
                  {"derived", "measured length of the observation window"});
    add_effective_classes(ev);
    add_nominal_latencies(ev);
    add_sufferer_shares(ev);
    add_device_judgement(ev);
    add_submitter_whole_shares(ev);
    add_cache_eviction(ev);
    add_stack_chains(ev);
    add_cgroup_join(ev);
    add_limits_below(ev);
    add_top_app(ev);
    add_fsync_chain(ev);
    add_slow_floors(ev);
}

void add_nominal_latencies(Evidence& ev) {
    for (const auto& device : ev.instances("device")) {
        const Labels labels{{"device", device}};
        // A reference from the site configuration replaces the class table's
        // for the device: its write figure comes from the configuration too,
        // or there is none. Any other reference already there (a replayed
        // bundle's) is kept by add_reference and completed from the class.
        const Metric* configured = ev.find_metric("device.nominal_read_latency_ms", labels);
        if (configured && configured->provenance.kind == "config") continue;
        const Fact* cls = ev.find_fact("device.class", labels);
        if (!cls) continue;
        std::string klass = cls->value;
        std::string via;
        if (klass == "loop") {
            const Fact* backing = ev.find_fact("device.backing_class", labels);
            if (!backing) continue;
            klass = backing->value;
            via = " (loop device: class of its backing device)";
            if (!nominal_by_class().count(klass)) {
                add_measured_backing_reference(ev, labels);
                continue;
            }
        }
        auto it = nominal_by_class().find(klass);
        if (it == nominal_by_class().end()) continue;
        const Nominal& n = it->second;
        add_reference(ev, "device.nominal_read_latency_ms", labels, n.read_ms,
                      {"reference", std::string(n.source) + via});
        if (n.write_ms >= 0)
            add_reference(ev, "device.nominal_write_latency_ms", labels, n.write_ms,
                          {"reference", std::string(n.source) + via});
    }
    add_ceph_derived_metrics(ev);   // after the device references it joins
}

}  // namespace iodiag
