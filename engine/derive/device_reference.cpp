// Reference latencies per device: the class table of seed 000 §3.1, a loop
// device's backing disk, and what class of storage serves a device.
#include "engine/derive/derive_steps.hpp"

#include <map>

namespace iodiag::derive {

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

}  // namespace

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

std::vector<MetricSpec> device_reference_specs() {
    using K = MetricSpec::Kind;
    return {
        {"device.nominal_read_latency_ms", K::Metric, "ms", layer::kDevice, "device",
         "reference 4K random read latency of the device's class (seed 000 §3.1, upper end); "
         "a loop device takes its backing device's class, or, for a class the table lacks, its backing "
         "disk's measured D2C p99 in the window"},
        {"device.nominal_write_latency_ms", K::Metric, "ms", layer::kDevice, "device",
         "reference 4K random write latency of the device's class (seed 000 §3.1, upper end)"},
        {"device.effective_class", K::Fact, "", layer::kDevice, "device",
         "the device's class, a loop device's being what backs it (its backing disk's class, or memory)"},
    };
}

}  // namespace iodiag::derive

namespace iodiag {

std::vector<std::string> reference_classes() {
    std::vector<std::string> out;
    for (const auto& [cls, n] : derive::nominal_by_class()) out.push_back(cls);
    return out;
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
            if (!derive::nominal_by_class().count(klass)) {
                derive::add_measured_backing_reference(ev, labels);
                continue;
            }
        }
        auto it = derive::nominal_by_class().find(klass);
        if (it == derive::nominal_by_class().end()) continue;
        const auto& n = it->second;
        derive::add_reference(ev, "device.nominal_read_latency_ms", labels, n.read_ms,
                              {"reference", std::string(n.source) + via});
        if (n.write_ms >= 0)
            derive::add_reference(ev, "device.nominal_write_latency_ms", labels, n.write_ms,
                                  {"reference", std::string(n.source) + via});
    }
}

}  // namespace iodiag
