// Helpers every derivation step uses (derive_steps.hpp).
#include "engine/derive/derive_steps.hpp"

#include <algorithm>

#include "engine/evidence/application_label.hpp"

namespace iodiag::derive {

Provenance derived(const std::string& formula) { return {"derived", formula}; }

std::string label_of(const Labels& l, const std::string& key) {
    const auto it = l.find(key);
    return it == l.end() ? "" : it->second;
}

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

// All of an application's traced syscall time: its processes'
// syscall.proc.time_us summed (the top 20 processes of the window).
double app_syscall_time_us(const Evidence& ev, const std::string& app) {
    double t = 0;
    for (const auto& m : ev.metrics)
        if (m.name == "syscall.proc.time_us" && application_label(m.labels) == app) t += m.value;
    return t;
}

const Fact* judged_application(const Evidence& ev) { return ev.find_fact("attr.who.app"); }

void for_each_device_metric_of(const Evidence& ev, const std::string& prefix, const std::string& app,
                               const std::function<void(const std::string&, const Metric&)>& fn) {
    for (const auto& m : ev.metrics) {
        if (m.name.rfind(prefix, 0) != 0 || application_label(m.labels) != app) continue;
        if (const auto d = m.labels.find("device"); d != m.labels.end()) fn(d->second, m);
    }
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

Log2Histogram fsync_family_latency(const Evidence& ev) {
    Log2Histogram all;
    for (const auto& h : ev.histograms) {
        if (h.name != "syscall.latency_us") continue;
        const auto op = h.labels.find("op");
        if (op != h.labels.end() && (op->second == "fsync" || op->second == "sync_file_range")) all.merge(h.hist);
    }
    return all;
}

}  // namespace iodiag::derive
