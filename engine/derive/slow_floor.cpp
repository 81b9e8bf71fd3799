#include "engine/derive/slow_floor.hpp"

#include <algorithm>
#include <string>

#include "engine/derive/derive_steps.hpp"
#include "engine/evidence/histogram.hpp"
#include "engine/evidence/layers.hpp"

namespace iodiag {

namespace {

Provenance derived(const std::string& formula) { return {"derived", formula}; }

// A slow syscall must wait, besides for a CPU, at least as long as one read of
// the fastest flash class takes: seed 000 §3.1 puts an NVMe 4K read at 70-120
// us, while everything in memory (page-cache hit 200-500 ns, cached metadata
// 1-10 us, the block layer at low load 1-5 us) is far below. A slow set whose
// syscalls wait less than that on average is a fast device's ordinary work;
// run-queue delay is left out (preemption is not storage; its own rule judges it).
constexpr double kFloorUs = kFastestFlashReadUs;
// fsync floors, seed 000 §3.1: an SSD fsync takes 50-500 us, an HDD's 5-15 ms.
constexpr double kFlashFsyncUs = 500;
constexpr double kDiskFsyncUs = 15000;

// The device the slow syscalls waited on most (device.io_wait_share_pct), or "".
std::string waited_device(const Evidence& ev) {
    std::string best;
    double top = 0;
    for (const auto& d : ev.instances("device"))
        if (const Metric* w = ev.find_metric("device.io_wait_share_pct", {{"device", d}}); w && w->value > top)
            top = w->value, best = d;
    return best;
}

// The device's class, a loop device's being its backing device's.
std::string class_of(const Evidence& ev, const std::string& device) {
    const Labels l{{"device", device}};
    const Fact* cls = ev.find_fact("device.class", l);
    if (!cls) return "";
    if (cls->value == "loop")
        if (const Fact* b = ev.find_fact("device.backing_class", l)) return b->value;
    return cls->value;
}

void add_mean_and_floor(Evidence& ev, const std::string& device) {
    const Metric* ops = ev.find_metric("attr.slow.ops");
    if (!ops || ops->value <= 0) return;
    double wait = 0;
    for (const auto& c : slow_set_classes()) {
        const Metric* m = ev.find_metric("attr.slow." + c + "_us");
        if (!m) return;   // an incomplete attribution: no mean
        if (c != "cpu") wait += m->value;
    }
    ev.add_metric("attr.slow.mean_wait_us", {}, wait / ops->value, "us",
                  derived("sum of attr.slow.<class>_us but cpu (run-queue delay) / attr.slow.ops: what the slow "
                          "syscalls waited for on average, besides a CPU"));
    double floor = kFloorUs;
    std::string why = "120 us: one 4K read of the fastest flash class (seed 000 §3.1: NVMe 70-120 us; a page-cache "
                      "hit 200-500 ns, cached metadata 1-10 us)";
    // A class's or the site configuration's reference only: a loop device's
    // reference measured on its backing disk in this window is that disk's
    // tail, slow precisely when something is wrong.
    if (!device.empty())
        if (const Metric* ref = ev.find_metric("device.nominal_read_latency_ms", {{"device", device}});
            ref && (ref->provenance.kind == "reference" || ref->provenance.kind == "config") &&
            ref->value * 1000 > floor) {
            floor = ref->value * 1000;
            why = "reference read latency of " + device + ", the device the slow syscalls waited on most (" +
                  ref->provenance.source + "): one read of it is not slow";
        }
    ev.add_metric("attr.slow.floor_us", {}, floor, "us", derived(why));
}

void add_fsync_floor(Evidence& ev, const std::string& device) {
    double floor = kDiskFsyncUs;
    std::string why = "15 ms: an HDD's fsync takes 5-15 ms (seed 000 §3.1), the slowest healthy device class";
    const std::string cls = device.empty() ? "" : class_of(ev, device);
    const Metric* configured =
        device.empty() ? nullptr : ev.find_metric("device.nominal_write_latency_ms", {{"device", device}});
    if (configured && configured->provenance.kind == "config") {
        floor = std::max(kFlashFsyncUs, 2000 * configured->value);
        why = "2x the configured write reference of " + device + " (" + configured->provenance.source +
              "): an fsync writes its data and then flushes the device's cache";
    } else if (cls == "nvme" || cls == "sata_ssd") {
        floor = kFlashFsyncUs;
        why = "0.5 ms: " + device + " is flash (" + cls + "); an SSD fsync takes 50-500 us (seed 000 §3.1)";
    } else {
        why += device.empty() ? "" : (cls.empty() ? "; " + device + "'s class is unknown"
                                                  : "; " + device + "'s class (" + cls + ") has no fsync figure");
        why += ", so nothing faster can be expected";
    }
    const Log2Histogram all = derive::fsync_family_latency(ev);
    const double n = static_cast<double>(all.total());
    // Whole buckets at or above the floor only: the count is a lower bound.
    const double over = derive::at_or_above(all, floor).first;
    ev.add_metric("attr.slow.fsync_floor_us", {}, floor, "us", derived(why));
    if (n > 0)
        ev.add_metric("attr.slow.fsync_over_floor_pct", {}, 100.0 * over / n, "pct",
                      derived("share of the window's fsync/fdatasync/sync_file_range calls (syscall.latency_us{op}) "
                              "in log2 buckets wholly at or above attr.slow.fsync_floor_us"));
    // The fsyncs against their own normal: where no absolute floor fits (a
    // device of unknown class, 15 ms is an HDD's), a commit tail far above the
    // same application's median commit is what the application pays; a healthy
    // device's fsyncs stay within a few times their median.
    if (all.total() > 0)
        if (const double p50 = all.percentile(50).value; p50 > 0)
            ev.add_metric("attr.slow.fsync_tail_ratio", {}, all.percentile(99).value / p50, "ratio",
                          derived("p99 / p50 of the window's fsync-family calls (syscall.latency_us{op}, log2 "
                                  "buckets): how far the slow commits lie above the median one"));
    // Whose data the commits carry: a flush writes everything dirty before it,
    // so commits beside another program's big writes wait for that data.
    // Measured per submitter where the block collector saw the writes
    // (journal.others_data_share_pct, contention_journal.cpp: what each
    // process wrote itself, the kernel threads' writes split by who dirtied
    // the window's data); else the largest dirtier's part of the dirtied
    // data, which names a program whose own writes may have gone elsewhere
    // and misses one that exited (a script's cp, whose data its sync then
    // wrote itself: seed 103's shell_writer_neighbor 103001).
    if (const Metric* measured = ev.find_metric("journal.others_data_share_pct")) {
        ev.add_metric("attr.slow.fsync_foreign_data_pct", {}, measured->value, "pct",
                      derived("journal.others_data_share_pct: others' part of the data written to the device the "
                              "application's own writes went to"));
        return;
    }
    const Fact* app = ev.find_fact("attr.app.name");
    const Fact* writer = ev.find_fact("io.top_writer");
    const Metric* writer_pct = ev.find_metric("io.top_writer_pct");
    // Another program's: not the application, nor a program of the unit,
    // container or pod it runs in (application_service.cpp).
    const std::string service = app ? derive::service_of_app(ev, app->value) : "";
    if (app && writer && writer_pct && writer->value.rfind(app->value + " ", 0) != 0 &&
        !(!service.empty() && derive::service_of_pid(ev, derive::top_writer_pid(writer->value)) == service))
        ev.add_metric("attr.slow.fsync_foreign_data_pct", {}, writer_pct->value, "pct",
                      derived("io.top_writer_pct when io.top_writer is not attr.app.name: the share of the data "
                              "dirtied in the window that another program wrote"));
}

}  // namespace

const std::vector<std::string>& slow_set_classes() {
    static const std::vector<std::string> v{"filesystem", "cpu",     "page_cache", "device", "block_queue", "dirty",
                                            "reclaim",    "journal", "locks",      "cgroup", "other"};
    return v;
}

std::vector<MetricSpec> slow_floor_specs() {
    using K = MetricSpec::Kind;
    return {
        {"attr.slow.mean_wait_us", K::Metric, "us", layer::kSyscall, "",
         "mean time the slow set's syscalls waited, run-queue delay left out"},
        {"attr.slow.floor_us", K::Metric, "us", layer::kSyscall, "",
         "mean wait a slow set must reach to be slow in absolute terms: 120 us (one read of the fastest flash "
         "class), or the reference read latency of the device it waits on when higher"},
        {"attr.slow.fsync_floor_us", K::Metric, "us", layer::kJournal, "",
         "an fsync slower than this is slow on the device it waits on: 0.5 ms on flash, 15 ms (an HDD's) on a "
         "device of unknown class, 2x a configured write reference"},
        {"attr.slow.waited_device", K::Fact, "", layer::kDevice, "",
         "the device the slow syscalls waited on most (largest device.io_wait_share_pct)"},
        {"attr.slow.fsync_over_floor_pct", K::Metric, "pct", layer::kJournal, "",
         "share of the window's fsync-family calls slower than attr.slow.fsync_floor_us"},
        {"attr.slow.fsync_tail_ratio", K::Metric, "ratio", layer::kJournal, "",
         "p99 / p50 of the window's fsync-family calls"},
        {"attr.slow.fsync_foreign_data_pct", K::Metric, "pct", layer::kJournal, "",
         "share of the window's dirtied data written by a program other than the suffering application"},
    };
}

void add_slow_floors(Evidence& ev) {
    const std::string device = waited_device(ev);
    if (!device.empty())
        ev.add_fact("attr.slow.waited_device", {}, device,
                    derived("the device with the largest device.io_wait_share_pct: the slow syscalls waited on it most"));
    add_mean_and_floor(ev, device);
    add_fsync_floor(ev, device);
}

}  // namespace iodiag
