// Who else used the devices the suffering application waited on: each
// submitter's share of the device's service time (D2C) and of its queue
// occupancy (Q2C: by Little's law, sum of Q2C / window = mean requests in
// flight), and the part of the application's slow time that the others'
// share explains.
#include "engine/derive/contention.hpp"

#include <algorithm>
#include <map>

#include "engine/evidence/format.hpp"

namespace iodiag::derive {

namespace {

// One submitter group of a device, as the block collector emits it
// (block.submitter.* {device, comm, cgroup, kind}).
struct Submitter {
    std::string comm, cgroup, kind, pid;
    double d2c = 0, q2c = 0, bytes = 0, requests = 0;
};

std::map<std::string, std::vector<Submitter>> submitters_by_device(const Evidence& ev) {
    std::map<std::string, std::vector<Submitter>> out;
    for (const auto& m : ev.metrics) {
        if (m.name != "block.submitter.d2c_total_us") continue;
        const auto dev = m.labels.find("device");
        if (dev == m.labels.end()) continue;
        Submitter s;
        auto label = [&](const char* k) {
            const auto it = m.labels.find(k);
            return it == m.labels.end() ? std::string() : it->second;
        };
        s.comm = label("comm");
        s.cgroup = label("cgroup");
        s.kind = label("kind");
        s.d2c = m.value;
        s.q2c = metric_or(ev, "block.submitter.q2c_total_us", m.labels, 0);
        s.bytes = metric_or(ev, "block.submitter.bytes", m.labels, 0);
        s.requests = metric_or(ev, "block.submitter.requests", m.labels, 0);
        if (const Fact* p = ev.find_fact("block.submitter.top_pid", m.labels)) s.pid = p->value;
        out[dev->second].push_back(std::move(s));
    }
    return out;
}

}  // namespace

double sufferer_dirtied_fraction(const Evidence& ev, const std::string& app) {
    const Metric* all = ev.find_metric("io.write_bytes_dirtied");
    if (!all || all->value <= 0) return -1;
    double mine = 0;
    for (const auto& m : ev.metrics)
        if (m.name == "io.proc_write_bytes")
            if (const auto c = m.labels.find("comm"); c != m.labels.end() && c->second == app) mine += m.value;
    return std::min(1.0, mine / all->value);
}

// Per device the suffering application (attr.app.name) submitted requests
// to: the others' share of its service time and queue occupancy, the largest
// other submitter, and the part of the application's slow time that explains.
//
// Whose a request is: the submitter's command against the application's
// name (as the syscall collector names an application: its processes summed
// by command). Writeback by the kernel's flusher threads is the dirtiers':
// the kernel records the cgroup it charged (cgroup v2 with the io and memory
// controllers: the dirtier's; v1: the root), not the process, so it is split
// by who dirtied the window's data (/proc/PID/io write_bytes): the
// application's part is its own load, the rest the others'. Other kernel work
// (a journal thread, a block-layer flush request, a process gone before it was
// named) is in the device's total but nobody's: it is not counted as others'.
void add_device_contention(Evidence& ev) {
    const Fact* app_fact = ev.find_fact("attr.app.name");
    if (!app_fact) return;
    const std::string app = app_fact->value;
    const double window_us = ev.window.duration_s * 1e6;
    const double dirtied_by_app = sufferer_dirtied_fraction(ev, app);
    for (const auto& [dev, subs] : submitters_by_device(ev)) {
        double total_d2c = 0, total_q2c = 0, own_d2c = 0, own_q2c = 0, other_d2c = 0, other_q2c = 0;
        std::vector<Submitter> others;
        for (const auto& s : subs) {
            total_d2c += s.d2c;
            total_q2c += s.q2c;
            if (s.comm == app) {
                own_d2c += s.d2c;
                own_q2c += s.q2c;
            } else if (s.kind == "writeback" && dirtied_by_app >= 0) {
                own_d2c += s.d2c * dirtied_by_app;
                own_q2c += s.q2c * dirtied_by_app;
                Submitter o = s;
                o.d2c *= 1 - dirtied_by_app;
                o.q2c *= 1 - dirtied_by_app;
                others.push_back(std::move(o));
            } else if (s.kind == "process") {
                others.push_back(s);
            } else if (s.kind == "rest") {
                // Groups beyond the largest the collector lists: none of them
                // is the application (it waited on the device, its requests
                // are among the largest), but they have no single name.
                other_d2c += s.d2c;
                other_q2c += s.q2c;
            }
        }
        // Only where the application's own requests were measured: on a
        // stack's lower device its requests are its upper device's worker's.
        if (own_q2c <= 0 || total_d2c <= 0) continue;
        for (const auto& o : others) other_d2c += o.d2c, other_q2c += o.q2c;
        const Labels l{{"device", dev}};
        const std::string basis = "block.submitter.*{device=" + dev + "}: each submitter's own completed requests";
        ev.add_metric("device.others_d2c_share_pct", l, 100.0 * other_d2c / total_d2c, "pct",
                      derived("D2C total of the requests of submitters other than " + app +
                              " / all requests' D2C total on the device (" + basis +
                              "; writeback split by who dirtied the data, io.proc_write_bytes; kernel work "
                              "counted as nobody's)"));
        if (total_q2c > 0)
            ev.add_metric("device.others_q2c_share_pct", l, 100.0 * other_q2c / total_q2c, "pct",
                          derived("Q2C total of the others' requests / all requests' Q2C total: their part of "
                                  "the device's queue occupancy (" + basis + ")"));
        if (window_us > 0) {
            ev.add_metric("device.others_in_flight", l, other_q2c / window_us, "requests",
                          derived("others' Q2C total / window (Little's law: their mean requests in flight)"));
            ev.add_metric("device.sufferer_in_flight", l, own_q2c / window_us, "requests",
                          derived(app + "'s own Q2C total / window (Little's law: its mean requests in flight)"));
        }
        if (const Metric* wait = ev.find_metric("device.io_wait_share_pct", l)) {
            const double w = wait->value;
            ev.add_metric("device.contention_share_pct", l, w * other_d2c / total_d2c, "pct",
                          derived("device.io_wait_share_pct (" + app + "'s slow syscalls' wait for its I/O on " +
                                  dev + ") x device.others_d2c_share_pct: the part of its slow time spent while "
                                  "the device served others"));
        }
        if (others.empty()) continue;
        // The largest other (by service time), and the few after it.
        std::sort(others.begin(), others.end(), [](const Submitter& a, const Submitter& b) { return a.d2c > b.d2c; });
        const Submitter& top = others.front();
        const std::string how = "the submitter group (command, cgroup) with the largest D2C total on " + dev +
                                " among those other than " + app + " (" + basis + ")";
        ev.add_fact("device.neighbor_comm", l, top.comm, derived(how));
        if (!top.pid.empty()) ev.add_fact("device.neighbor_pid", l, top.pid, derived(how + "; its process with the most"));
        ev.add_fact("device.neighbor_cgroup", l, top.cgroup.empty() ? "?" : top.cgroup,
                    derived(how + "; the cgroup its I/O was charged to (bio blkcg) with its process's own"));
        ev.add_metric("device.neighbor_d2c_share_pct", l, 100.0 * top.d2c / total_d2c, "pct",
                      derived("its D2C total / all requests' D2C total on " + dev));
        ev.add_metric("device.neighbor_bytes", l, top.bytes, "bytes", derived("bytes of its completed requests"));
        ev.add_metric("device.neighbor_requests", l, top.requests, "count", derived("its completed requests"));
        std::string list;
        for (size_t i = 0; i < others.size() && i < 3; ++i) {
            const auto& o = others[i];
            list += (i ? "; " : "") + o.comm + (o.pid.empty() ? "" : " (pid " + o.pid + ")") + " in " +
                    (o.cgroup.empty() ? "?" : o.cgroup) + ": " + format_number(100.0 * o.d2c / total_d2c) +
                    " % of service time, " + format_value(o.bytes, "bytes");
        }
        ev.add_fact("device.neighbors", l, list, derived("the largest other submitters on " + dev + " by D2C total"));
        // The flusher writes what others dirtied: who, from /proc/PID/io.
        if (top.kind == "writeback")
            if (const Fact* w = ev.find_fact("io.top_writer"))
                ev.add_fact("device.neighbor_dirtier", l, w->value,
                            {"derived", "inferred, not recorded by the kernel: the process that dirtied the most data "
                                        "in the window (io.top_writer, /proc/PID/io write_bytes), whose pages the "
                                        "flusher wrote back; the kernel charged the bios to cgroup " +
                                            (top.cgroup.empty() ? std::string("?") : top.cgroup)});
    }
}

std::vector<MetricSpec> device_contention_specs() {
    using K = MetricSpec::Kind;
    const std::string d = layer::kDevice;
    return {
        {"device.others_d2c_share_pct", K::Metric, "pct", d, "device",
         "share of the device's service time (D2C total) spent on requests of submitters other than the suffering "
         "application (writeback split by who dirtied the data)"},
        {"device.others_q2c_share_pct", K::Metric, "pct", d, "device",
         "share of the device's queue occupancy (Q2C total) held by the others' requests"},
        {"device.others_in_flight", K::Metric, "requests", d, "device",
         "the others' mean requests in flight (Q2C total / window, Little's law)"},
        {"device.sufferer_in_flight", K::Metric, "requests", d, "device",
         "the suffering application's own mean requests in flight"},
        {"device.contention_share_pct", K::Metric, "pct", d, "device",
         "part of the suffering application's slow time it waited on the device while the device served others "
         "(device.io_wait_share_pct x device.others_d2c_share_pct)"},
        {"device.neighbor_comm", K::Fact, "", d, "device", "the other submitter with the most service time"},
        {"device.neighbor_pid", K::Fact, "", d, "device", "its process with the most service time"},
        {"device.neighbor_cgroup", K::Fact, "", d, "device", "its cgroup (the label as the evidence prints it)"},
        {"device.neighbor_d2c_share_pct", K::Metric, "pct", d, "device", "its share of the device's service time"},
        {"device.neighbor_bytes", K::Metric, "bytes", d, "device", "bytes of its completed requests"},
        {"device.neighbor_requests", K::Metric, "count", d, "device", "its completed requests"},
        {"device.neighbors", K::Fact, "", d, "device", "the largest other submitters, with their shares and bytes"},
        {"device.neighbor_dirtier", K::Fact, "", d, "device",
         "when the neighbor is the writeback flusher: who dirtied the data (inferred from /proc/PID/io)"},
    };
}

}  // namespace iodiag::derive
