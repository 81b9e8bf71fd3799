// Who submitted the requests a device served, and how much of their own time
// they waited for them.
#include "engine/derive/derive_steps.hpp"

#include <algorithm>

#include "engine/evidence/application_label.hpp"

namespace iodiag::derive {

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
    // device -> its submitter with the most Q2C; copies: adding metrics below
    // may move the vector they were found in.
    std::map<std::string, Metric> top;
    for (const auto& m : ev.metrics) {
        if (m.name != "block.submitter_q2c_total_us" || m.value <= 0) continue;
        const auto dev = m.labels.find("device");
        const std::string app = application_label(m.labels);
        if (dev == m.labels.end() || app.empty() || app == "?" || lower.count(dev->second)) continue;
        const auto t = top.find(dev->second);
        if (t == top.end() || m.value > t->second.value) top[dev->second] = m;
    }
    for (const auto& [d, m] : top) {
        const std::string comm = application_label(m.labels);
        const double q2c = m.value;
        const double all_us = app_syscall_time_us(ev, comm);
        // Its requests must be waited for inside its syscalls: more request
        // time than syscall time means they were not (page faults of mapped
        // files, asynchronous I/O, readahead completed later), and its
        // syscalls say nothing of them.
        if (all_us <= 0 || q2c > all_us) continue;
        const Labels l{{"device", d}};
        const double d2c = std::min(q2c, metric_or(ev, "block.submitter_d2c_total_us", m.labels, q2c));
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

std::vector<MetricSpec> device_submitter_specs() {
    using K = MetricSpec::Kind;
    return {
        {"device.top_submitter", K::Fact, "", layer::kDevice, "device",
         "command that waited on the device most (its own requests' Q2C total)"},
        {"device.submitter_wait_all_pct", K::Metric, "pct", layer::kDevice, "device",
         "share of all of that command's traced syscall time spent waiting for its own requests on "
         "the device (queue + service), whatever their latency"},
        {"device.submitter_share_all_pct", K::Metric, "pct", layer::kDevice, "device",
         "share of all of that command's traced syscall time spent in its requests' device service "
         "time (D2C)"},
        {"device.submitter_wait_window_pct", K::Metric, "pct", layer::kDevice, "device",
         "that command's wait for its own requests on the device against the window's length"},
    };
}

}  // namespace iodiag::derive

namespace iodiag {

std::map<std::string, double> app_own_q2c(const Evidence& ev, const std::set<std::string>& skip) {
    std::map<std::string, double> own;
    const Fact* app = ev.find_fact("attr.app.name");
    if (!app) return own;
    double total = 0;
    for (const auto& m : ev.metrics) {
        if (m.name != "block.submitter_q2c_total_us" || m.value <= 0) continue;
        const auto dev = m.labels.find("device");
        if (dev == m.labels.end() || application_label(m.labels) != app->value || skip.count(dev->second)) continue;
        own[dev->second] += m.value;
        total += m.value;
    }
    if (total <= 0) own.clear();
    return own;
}

}  // namespace iodiag
