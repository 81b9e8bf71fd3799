// Hand-built evidence for the rule and judgement tests: devices with a
// service-time distribution, a slow set split by layer, per-op latency
// histograms, a command's own requests on a device.
#pragma once

#include <map>
#include <string>

#include "engine/evidence/evidence.hpp"
#include "engine/evidence/histogram.hpp"

namespace iodiag::testing {

inline const Provenance kP{"file", "test"};

// A device whose requests all took about `d2c_us` (one log2 bucket), `n` of them.
inline void device(Evidence& ev, const std::string& dev, const std::string& cls, double d2c_us, uint64_t n, double aqu) {
    const Labels l{{"device", dev}};
    ev.add_fact("device.class", l, cls, kP);
    HistogramMetric h;
    h.name = "block.d2c_us";
    h.labels = l;
    h.unit = "us";
    h.provenance = kP;
    h.hist.add_bucket(Log2Histogram::bucket_of(static_cast<uint64_t>(d2c_us)), n);
    ev.histograms.push_back(h);
    ev.add_metric("block.requests", l, static_cast<double>(n), "count", kP);
    ev.add_metric("block.d2c_total_us", l, d2c_us * static_cast<double>(n), "us", kP);
    ev.add_metric("block.d2c_p99_us", l, d2c_us * 1.5, "us", kP);
    ev.add_metric("block.d2c_share_pct", l, 99, "pct", kP);
    ev.add_metric("block.queue_share_pct", l, 1, "pct", kP);
    ev.add_metric("disk.aqu_sz", l, aqu, "requests", kP);
    ev.add_metric("disk.ios_per_s", l, static_cast<double>(n) / 4, "1/s", kP);
}

// The slow set: 500 syscalls of `mean_us` on average, split by `pct`.
inline void slow_set(Evidence& ev, const std::map<std::string, double>& pct, double mean_us = 20000) {
    ev.add_metric("attr.slow.ops", {}, 500, "count", kP);
    std::string top;
    double best = -1;
    for (const char* l : {"device", "block_queue", "filesystem", "journal", "page_cache", "dirty", "reclaim", "cgroup",
                          "locks", "cpu", "other"}) {
        const double v = pct.count(l) ? pct.at(l) : 0;
        ev.add_metric(std::string("attr.slow.") + l + "_pct", {}, v, "pct", kP);
        ev.add_metric(std::string("attr.slow.") + l + "_us", {}, v / 100 * 500 * mean_us, "us", kP);
        if (v > best) best = v, top = l;
    }
    ev.add_fact("attr.slow.top_layer", {}, top, kP);
}

// Syscalls of one op: `count` of them in the log2 bucket of each duration.
inline void op_hist(Evidence& ev, const std::string& op, const std::map<double, uint64_t>& by_us) {
    HistogramMetric h;
    h.name = "syscall.latency_us";
    h.labels = {{"op", op}};
    h.unit = "us";
    h.provenance = kP;
    for (const auto& [us, n] : by_us) h.hist.add_bucket(Log2Histogram::bucket_of(static_cast<uint64_t>(us)), n);
    ev.histograms.push_back(h);
}

// A slow set that is all fsyncs waiting for their data on the device (no
// journal part: the fdatasync chain), fsync durations as given.
inline void fsync_chain_evidence(Evidence& ev, const std::map<double, uint64_t>& fsync_us) {
    slow_set(ev, {{"device", 80}, {"cpu", 15}, {"filesystem", 5}}, 6000);
    ev.add_metric("attr.slow.threshold_us", {}, 4096, "us", kP);
    op_hist(ev, "fsync", fsync_us);
    op_hist(ev, "read", {{20, 10000}});
}

// A command that spent `all_us` in traced syscalls, `q2c_us` of it waiting for
// its own requests on `dev` (`d2c_us` of that in the device), in a 4 s window.
inline void submitter(Evidence& ev, const std::string& comm, const std::string& dev, double all_us, double q2c_us,
               double d2c_us) {
    ev.window.duration_s = 4;
    ev.add_metric("syscall.proc.time_us", {{"comm", comm}, {"pid", "100"}, {"cgroup", "/"}}, all_us, "us", kP);
    ev.add_metric("block.submitter_q2c_total_us", {{"device", dev}, {"comm", comm}}, q2c_us, "us", kP);
    ev.add_metric("block.submitter_d2c_total_us", {{"device", dev}, {"comm", comm}}, d2c_us, "us", kP);
}

}  // namespace iodiag::testing
