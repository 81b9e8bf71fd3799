// Whether a device that holds the suffering application's time is streaming
// that application's large requests at the rate it can deliver (issue 33: a
// bulk job alone on a throughput-capped volume is its own demand, not a
// latency fault).
#include "engine/derive/derive_steps.hpp"

#include <map>
#include <set>
#include <vector>

#include "engine/derive/contention.hpp"   // kOthersMajorityPct
#include "engine/evidence/application_label.hpp"

namespace iodiag::derive {

namespace {

// The size from which a request's transfer outweighs its access even on the
// slowest flash class: its 4 KiB access (0.3 ms, seed 000 §3.1, SATA SSD)
// times the SATA link's 600 MB/s (the constants of device.flash_request_us,
// contention_device.cpp). Such a request's time is its bytes over the rate
// the device delivers: a throughput, not a latency.
constexpr double kTransferDominatedBytes = 300 * 600;
// Busy this much of the window, the device gives the application all it can
// deliver: its pace is the device's rate (device.saturated's bar).
constexpr double kSaturatedUtilPct = 90;

struct OwnRequests {
    double bytes = 0, requests = 0;
};

// Per device without a judged application: the share of its busy time
// (block.submitter.service_total_us) held by others than the verdict's
// application (attr.who.app), where that application submitted requests there.
// Everything not its own counts as others', the kernel's work included: a
// device is called the application's stream only when it is.
std::map<std::string, double> others_busy_of_who(const Evidence& ev,
                                                 const std::map<std::string, std::string>& judged) {
    std::map<std::string, double> out;
    const Fact* who = judged_application(ev);
    if (!who) return out;
    std::map<std::string, std::pair<double, double>> own_all;   // device -> (own, all) busy time
    for (const auto& m : ev.metrics) {
        if (m.name != "block.submitter.service_total_us") continue;
        const auto d = m.labels.find("device");
        if (d == m.labels.end() || judged.count(d->second)) continue;
        auto& [own, all] = own_all[d->second];
        all += m.value;
        if (application_label(m.labels) == who->value) own += m.value;
    }
    for (const auto& [d, t] : own_all)
        if (t.first > 0 && t.second > 0) out[d] = 100 * (1 - t.first / t.second);
    return out;
}

}  // namespace

void add_device_throughput(Evidence& ev) {
    // The application judged on each device (device.sufferer, contention_device.cpp:
    // the one that suffered most, else the device's top submitter) and its
    // own requests there.
    std::map<std::string, std::string> sufferer;
    for (const auto& f : ev.facts)
        if (f.name == "device.sufferer")
            if (const auto d = f.labels.find("device"); d != f.labels.end()) sufferer[d->second] = f.value;
    // Devices nobody was judged on because the verdict's application waited
    // for only some of its requests inside its syscalls (a dd loop whose
    // writeback starts at close and is waited for by the next pass's O_TRUNC
    // open): judged for that application, the others' part read from the
    // submitters themselves.
    const std::map<std::string, double> others_of_who = others_busy_of_who(ev, sufferer);
    for (const auto& [d, pct] : others_of_who) sufferer[d] = judged_application(ev)->value;
    std::map<std::string, OwnRequests> own;
    for (const auto& m : ev.metrics) {
        if (m.name != "block.submitter.bytes" && m.name != "block.submitter.requests") continue;
        const auto d = m.labels.find("device");
        if (d == m.labels.end()) continue;
        const auto app = sufferer.find(d->second);
        if (app == sufferer.end() || application_label(m.labels) != app->second) continue;
        (m.name == "block.submitter.bytes" ? own[d->second].bytes : own[d->second].requests) += m.value;
    }
    const double window_us = ev.window.duration_s * 1e6;
    // Every device judged on its speed gets the flag (0 where the above does
    // not hold or was not measured), so that the rules reading it are decided.
    std::set<std::string> flagged;
    std::vector<std::string> unflagged;   // added after the walk: ev.metrics grows
    for (const auto& [d, r] : own) {
        const Labels l{{"device", d}};
        const Metric* util = ev.find_metric("disk.util_pct", l);
        const Metric* others = ev.find_metric("device.others_busy_share_pct", l);
        if (!others) others = ev.find_metric("device.others_d2c_share_pct", l);
        const auto fallback = others_of_who.find(d);
        if (!util || (!others && fallback == others_of_who.end()) || r.requests <= 0 || window_us <= 0) continue;
        // Copied out: adding metrics may move the vector these point into.
        const double util_pct = util->value, others_pct = others ? others->value : fallback->second;
        if (!others) {
            ev.add_fact("device.sufferer", l, sufferer[d],
                        derived("attr.who.app: the application the verdict judges, a submitter on " + d +
                                " whose requests are not all waited for inside its syscalls (so not "
                                "device.top_submitter)"));
            ev.add_metric("device.others_busy_share_pct", l, others_pct, "pct",
                          derived("busy time given to other submitters' requests (block.submitter.service_total_us; "
                                  "kernel work included) / all of the device's"));
        }
        const double mean_bytes = r.bytes / r.requests;
        const double busy_us = util_pct / 100 * window_us;
        const std::string of = sufferer[d] + "'s own requests on " + d;
        ev.add_metric("device.sufferer_request_bytes", l, mean_bytes, "bytes",
                      derived("block.submitter.bytes / block.submitter.requests of " + of));
        if (const double own_busy_s = busy_us / 1e6 * (100 - others_pct) / 100; own_busy_s > 0)
            ev.add_metric("device.sufferer_bytes_per_s", l, r.bytes / own_busy_s, "bytes/s",
                          derived("block.submitter.bytes of " + of + " / the busy time the device gave them "
                                  "(disk.util_pct x window x their share of it): the rate it delivered to them"));
        const bool bound = mean_bytes >= kTransferDominatedBytes && util_pct >= kSaturatedUtilPct &&
                           others_pct < kOthersMajorityPct;
        flagged.insert(d);
        ev.add_metric("device.throughput_bound", l, bound ? 1 : 0, "bool",
                      derived("1 when " + of + " average 180 KB or more (transfer outweighs access even on the "
                              "slowest flash: 0.3 ms x 600 MB/s), the device was busy 90 % of the window or more, and "
                              "other programs held under half of it: it streams them at the rate it delivers"));
    }
    for (const auto& m : ev.metrics)
        if (m.name == "device.slower_than_flash")
            if (const auto d = m.labels.find("device"); d != m.labels.end() && !flagged.count(d->second))
                flagged.insert(d->second), unflagged.push_back(d->second);
    for (const auto& d : unflagged)
        ev.add_metric("device.throughput_bound", {{"device", d}}, 0, "bool",
                      derived("0: no application's own large requests were measured streaming on " + d));
}

std::vector<MetricSpec> device_throughput_specs() {
    using K = MetricSpec::Kind;
    const std::string d = layer::kDevice;
    return {
        {"device.sufferer_request_bytes", K::Metric, "bytes", d, "device",
         "the suffering application's mean request size on the device"},
        {"device.sufferer_bytes_per_s", K::Metric, "bytes/s", d, "device",
         "the rate the device delivered to the suffering application's requests over the busy time it gave them"},
        {"device.throughput_bound", K::Metric, "bool", d, "device",
         "1 when the device streams the suffering application's large requests, busy nearly all the window with "
         "them: its requests take their transfer time at the rate it delivers"},
    };
}

}  // namespace iodiag::derive
