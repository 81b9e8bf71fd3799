// Where the device is judged: each device's own D2C distribution and the
// share of the slow syscalls' wait that was spent on it.
#include "engine/derive/derive_steps.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace iodiag::derive {

namespace {

// The slowest flash class's reference (seed 000 §3.1: SATA SSD 4K random read
// up to 300 us). A device whose median service time stays within it serves at
// flash speed, whatever its class:
// if it dominates the applications' time, that is how they use it, not the
// device being slow.
constexpr double kFlashMedianUs = 300;
// Requests a flash device serves at once without queueing inside (its
// channels / dies; an assumption, not a measurement: SSDs have 8 or more).
constexpr double kFlashParallelism = 8;

// Per device: what one cache flush costs against one of its writes (mean D2C
// of each, from the exact per-op sums). A flush that writes a volatile cache
// out to the media costs a media write per flush, an order of magnitude over
// a write the cache absorbed; a device with power-loss protection (or a
// hypervisor that absorbs flushes) completes one in about a write's time.
void add_flush_cost(Evidence& ev) {
    for (const auto& d : ev.instances("device")) {
        const Labels flush{{"device", d}, {"op", "flush"}}, write{{"device", d}, {"op", "write"}};
        const double flushes = metric_or(ev, "block.requests", flush, 0);
        const double writes = metric_or(ev, "block.requests", write, 0);
        const double flush_us = metric_or(ev, "block.d2c_total_us", flush, 0);
        const double write_us = metric_or(ev, "block.d2c_total_us", write, 0);
        if (flushes <= 0 || writes <= 0 || write_us <= 0) continue;
        const Labels l{{"device", d}};
        const double flush_mean = flush_us / flushes, write_mean = write_us / writes;
        ev.add_metric("device.flush_d2c_mean_us", l, flush_mean, "us",
                      derived("block.d2c_total_us{op=flush} / block.requests{op=flush}"));
        ev.add_metric("device.flush_cost_x_write", l, flush_mean / write_mean, "ratio",
                      derived("mean D2C of a flush / mean D2C of a write (block.d2c_total_us / block.requests "
                              "per op)"));
    }
}

// Requests a depth class needs before its median says anything: at least
// this many, and this share of the device's requests.
constexpr double kMinDepthClassRequests = 20;
constexpr double kMinDepthClassShare = 0.01;

struct Unloaded {
    double us;
    std::string how;
};

// A device's service time with nothing else in flight (block.d2c_by_depth_us).
// Its D2C median alone cannot say it: Little's law gives a device that
// serves one request at a time in 0.5 ms, kept 4 deep, the same median and
// busy time as one that serves 4 at once in 2 ms. What tells them apart is
// how D2C grows with the depth at issue: the first holds each request for
// the ones ahead of it, the second does not. The median of the requests
// issued onto an idle device where there are enough of them; else the line
// through the lowest and highest depth classes' medians taken back to depth
// 1 (at most the lowest class's median, at least that median over its
// depth: a device serving one at a time). Nothing when one class holds
// every request (a closed loop of N jobs keeps the depth at N): then the
// depth does not tell, and the caller keeps its older bar.
std::optional<Unloaded> unloaded_d2c(const Evidence& ev, const std::string& d) {
    struct Class {
        std::string name;
        double depth, median;
    };
    std::vector<Class> classes;
    double requests = 0;
    for (const auto& h : ev.histograms)
        if (h.name == "block.d2c_by_depth_us" && h.unit == "us" && label_of(h.labels, "device") == d)
            requests += double(h.hist.total());
    for (const auto& h : ev.histograms) {
        if (h.name != "block.d2c_by_depth_us" || h.unit != "us" || label_of(h.labels, "device") != d) continue;
        const double n = double(h.hist.total());
        const Metric* mean = ev.find_metric("block.depth_class_mean", h.labels);
        if (!mean || n < kMinDepthClassRequests || n < kMinDepthClassShare * requests) continue;
        classes.push_back({label_of(h.labels, "depth"), mean->value, h.hist.percentile(50).value});
    }
    if (classes.empty()) return std::nullopt;
    std::sort(classes.begin(), classes.end(), [](const Class& a, const Class& b) { return a.depth < b.depth; });
    const Class& a = classes.front();
    if (a.name == "1")
        return Unloaded{a.median, "median D2C of the " + d + " requests issued onto an idle device"};
    const Class& b = classes.back();
    if (classes.size() < 2 || b.depth <= a.depth) return std::nullopt;
    const double slope = (b.median - a.median) / (b.depth - a.depth);
    const double at_one = std::clamp(a.median - slope * (a.depth - 1), a.median / a.depth, a.median);
    return Unloaded{at_one, "D2C medians of " + d + "'s requests issued at depth " + a.name + " (" +
                                format_value(a.median, "us") + ") and " + b.name + " (" + format_value(b.median, "us") +
                                ") taken back to depth 1"};
}

// The requests each direction completed in the window (/proc/diskstats: its
// rate x the window): what a mean await stands on. Two writes of 4 ms beside a
// reader's 31,000 reads made loop0 "slower than its class" (a dirsync_own
// control, seed 181000).
void add_window_request_counts(Evidence& ev) {
    const double window_s = ev.window.duration_s;
    if (window_s <= 0) return;
    for (const auto& d : ev.instances("device"))
        for (const char* dir : {"read", "write"}) {
            const Labels l{{"device", d}};
            const Metric* iops = ev.find_metric(std::string("disk.") + dir + "_iops", l);
            if (!iops) continue;
            const double n = iops->value * window_s;   // copied out: adding a metric may move it
            ev.add_metric(std::string("disk.") + dir + "_requests", l, n, "count",
                          derived(std::string("disk.") + dir + "_iops x window: the " + dir +
                                  " requests completed in the window"));
        }
}

}  // namespace

// Per device: its own D2C distribution (median, tail ratio), whether it serves
// at flash speed, whether a reference latency exists, and which share of the
// slow syscalls' device wait is its own. The syscall collector charges waits
// for a thread's own block I/O to one "device" class; it is split over the
// devices the applications submit to (devices that are no other device's lower
// device: a loop device's backing disk serves the loop worker, not the
// application) in proportion to their measured device time (D2C total).
void add_device_judgement(Evidence& ev) {
    add_window_request_counts(ev);
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
            const std::string level = "0.9 ms (3x the slowest flash class's 4K read reference, seed 000 §3.1 SATA "
                                      "SSD 0.3 ms; §9.4's 3x alert level)";
            // The service time with nothing else in flight where the depth
            // at issue varied enough to measure it; else the median, not the
            // tail (a fast device's tail can be its driver's CPU waits on a
            // busy machine, a loop worker's).
            if (const auto u = unloaded_d2c(ev, d)) {
                ev.add_metric("device.d2c_unloaded_us", l, u->us, "us", derived(u->how));
                ev.add_metric("device.slower_than_flash", l, u->us >= 3 * kFlashMedianUs ? 1 : 0, "bool",
                              derived("1 when device.d2c_unloaded_us >= " + level));
            } else {
                ev.add_metric("device.slower_than_flash", l, p50 >= bar ? 1 : 0, "bool",
                              derived("1 when D2C p50 >= " + level + " x max(1, aqu-sz / 8)"));
            }
        }
    }
    add_flush_cost(ev);
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

std::vector<MetricSpec> device_judgement_specs() {
    using K = MetricSpec::Kind;
    return {
        {"disk.read_requests", K::Metric, "count", layer::kDevice, "device",
         "read requests the device completed in the window (disk.read_iops x window)"},
        {"disk.write_requests", K::Metric, "count", layer::kDevice, "device",
         "write requests the device completed in the window (disk.write_iops x window)"},
        {"device.reference_known", K::Metric, "bool", layer::kDevice, "device",
         "1 when the device has a reference latency (configuration, class, or backing disk), else 0"},
        {"device.d2c_p50_us", K::Metric, "us", layer::kDevice, "device", "median device service time (D2C)"},
        {"device.d2c_tail_ratio", K::Metric, "ratio", layer::kDevice, "device", "D2C p99 / p50"},
        {"device.d2c_unloaded_us", K::Metric, "us", layer::kDevice, "device",
         "the device's service time with nothing else in flight: D2C of requests issued onto an idle device, or "
         "the D2C medians by depth at issue taken back to depth 1"},
        {"device.slower_than_flash", K::Metric, "bool", layer::kDevice, "device",
         "1 when the device's D2C median or tail is slower than any flash device serves (no reference needed)"},
        {"device.slow_share_pct", K::Metric, "pct", layer::kDevice, "device",
         "share of the slow syscalls' time spent in this device's service time (D2C part of their I/O wait)"},
        {"device.io_wait_share_pct", K::Metric, "pct", layer::kDevice, "device",
         "share of the slow syscalls' time spent waiting for I/O on this device (block queue + service)"},
        {"device.tag_wait_share_pct", K::Metric, "pct", layer::kBlockQueue, "device",
         "share of the slow syscalls' time spent waiting to get a request/tag for this device (their block_queue "
         "class, split over the devices they submit to)"},
        {"device.flush_d2c_mean_us", K::Metric, "us", layer::kDevice, "device",
         "mean service time (D2C) of one cache flush request"},
        {"device.flush_cost_x_write", K::Metric, "ratio", layer::kDevice, "device",
         "mean D2C of a flush / mean D2C of a write: how much more a flush costs the device than a write"},
        {"device.upper_devices", K::Fact, "", layer::kDevice, "device",
         "devices stacked on this one whose time it serves"},
    };
}

}  // namespace iodiag::derive
