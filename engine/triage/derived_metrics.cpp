#include "engine/triage/derived_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "engine/evidence/format.hpp"
#include "engine/evidence/layers.hpp"
#include "engine/triage/ceph_attribution.hpp"

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
// up to 300 us) and 10x it, seed 000 §9.4's alert level. A device whose own
// service time stays within both serves at flash speed, whatever its class:
// if it dominates the applications' time, that is how they use it, not the
// device being slow.
constexpr double kFlashMedianUs = 300;
constexpr double kFlashTailUs = 3000;

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

// Per device: its own D2C distribution (median, tail ratio), whether it serves
// at flash speed, whether a reference latency exists, and which share of the
// slow syscalls' device wait is its own. The syscall collector charges waits
// for a thread's own block I/O to one "device" class; it is split over the
// devices the applications submit to (devices that are no other device's lower
// device: a loop device's backing disk serves the loop worker, not the
// application) in proportion to their measured device time (D2C total).
void add_device_judgement(Evidence& ev) {
    const std::set<std::string> lower = lower_devices(ev);
    std::map<std::string, double> d2c_total;
    double top_total = 0;
    for (const auto& d : ev.instances("device")) {
        const Labels l{{"device", d}};
        const Metric* t = ev.find_metric("block.d2c_total_us", l);
        if (!t || t->value <= 0) continue;
        d2c_total[d] = t->value;
        if (!lower.count(d)) top_total += t->value;
    }
    const Metric* slow_dev = ev.find_metric("attr.slow.device_pct");
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
            ev.add_metric("device.at_flash_speed", l, (p50 <= kFlashMedianUs && p99 <= kFlashTailUs) ? 1 : 0, "bool",
                          derived("1 when D2C p50 <= 300 us and p99 <= 3 ms: within the slowest flash class's "
                                   "reference (seed 000 §3.1, SATA SSD) and 10x it (§9.4)"));
        }
    }
    if (!slow_dev || top_total <= 0) return;
    // Shares of the devices the applications submit to, then passed down each
    // stack: a lower device holds the part of its upper device's share that
    // its own service time covers (D2C total below / D2C total above, at most
    // all of it). A loop device over a file on a slow device passes nearly all
    // of it down; one whose backing I/O waits in a throttle above the lower
    // disk passes little (the time is spent in the throttle, not in the disk).
    std::map<std::string, double> share;
    std::map<std::string, std::string> via;
    for (const auto& [d, total] : d2c_total) {
        if (lower.count(d)) continue;
        const double top_share = slow_dev->value * total / top_total;
        share[d] += top_share;
        std::string cur = d;
        double carried = top_share;
        std::set<std::string> seen{d};
        for (int hop = 0; hop < 8; ++hop) {
            const std::string next = lower_device(ev, cur);
            if (next.empty() || seen.count(next) || !d2c_total.count(next) || d2c_total[cur] <= 0) break;
            seen.insert(next);
            carried *= std::min(1.0, d2c_total[next] / d2c_total[cur]);
            share[next] += carried;
            via[next] += (via[next].empty() ? "" : ", ") + d;
            cur = next;
        }
    }
    for (const auto& [d, pct] : share) {
        const Labels l{{"device", d}};
        const auto v = via.find(d);
        ev.add_metric("device.slow_share_pct", l, std::min(100.0, pct), "pct",
                      derived(v == via.end()
                                  ? "attr.slow.device_pct x this device's D2C total / D2C total of the devices "
                                    "applications submit to (lower devices of a stack left out)"
                                  : "passed down from " + v->second +
                                        " (stacked on it): their share x this device's D2C total / theirs"));
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
    for (const auto& d : ev.instances("device")) {
        const Labels l{{"device", d}};
        const Fact* bottom = ev.find_fact("device.bottom_device", l);
        if (!bottom) continue;
        double best = -1;
        std::string best_cg;
        for (const auto& cg : ev.instances("cgroup")) {
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
void add_fsync_chain(Evidence& ev) {
    const Metric* journal = ev.find_metric("attr.slow.journal_pct");
    if (!journal || journal->value <= 0) return;
    double chain = 0;
    for (const char* part : {"journal", "device", "block_queue", "cgroup"})
        chain += metric_or(ev, std::string("attr.slow.") + part + "_pct", {}, 0);
    ev.add_metric("attr.slow.fsync_chain_pct", {}, chain, "pct",
                  derived("attr.slow.journal_pct + device_pct + block_queue_pct + cgroup_pct: the journal commit "
                           "and the I/O it waits for"));
    ev.add_metric("attr.slow.journal_of_chain_pct", {}, chain > 0 ? 100.0 * journal->value / chain : 0, "pct",
                  derived("attr.slow.journal_pct / attr.slow.fsync_chain_pct"));
}

}  // namespace

std::vector<MetricSpec> derived_metric_specs() {
    using K = MetricSpec::Kind;
    std::vector<MetricSpec> specs{
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
        {"device.at_flash_speed", K::Metric, "bool", layer::kDevice, "device",
         "1 when D2C p50 <= 300 us and p99 <= 3 ms (within the slowest flash class's reference)"},
        {"device.slow_share_pct", K::Metric, "pct", layer::kDevice, "device",
         "share of the slow syscalls' time spent waiting for this device's I/O"},
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
         "slow syscall time waiting for the journal and the I/O it carries (journal + device + block queue + cgroup)"},
        {"attr.slow.journal_of_chain_pct", K::Metric, "pct", layer::kJournal, "", "journal part of the fsync chain"},
    };
    auto ceph = ceph_derived_metric_specs();
    specs.insert(specs.end(), ceph.begin(), ceph.end());
    return specs;
}

std::vector<std::string> reference_classes() {
    std::vector<std::string> out;
    for (const auto& [cls, n] : nominal_by_class()) out.push_back(cls);
    return out;
}

void add_derived_metrics(Evidence& ev) {
    ev.add_metric("window.duration_s", {}, ev.window.duration_s, "s",
                  {"derived", "measured length of the observation window"});
    add_nominal_latencies(ev);
    add_device_judgement(ev);
    add_stack_chains(ev);
    add_cgroup_join(ev);
    add_limits_below(ev);
    add_fsync_chain(ev);
}

void add_nominal_latencies(Evidence& ev) {
    for (const auto& device : ev.instances("device")) {
        const Labels labels{{"device", device}};
        // A reference from the site configuration wins (kind "config"):
        // add_reference keeps one already there, so a configured read
        // reference and the class's write reference can meet.
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
