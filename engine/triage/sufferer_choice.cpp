#include "engine/triage/sufferer_choice.hpp"

#include <algorithm>

#include "engine/evidence/format.hpp"

namespace iodiag {

namespace {

double metric_or_zero(const Evidence& ev, const std::string& name, const Labels& l = {}) {
    const Metric* m = ev.find_metric(name, l);
    return m ? m->value : 0;
}

}  // namespace

SuffererCandidate time_lost_to_others(const Evidence& as_if, const std::string& app) {
    SuffererCandidate c;
    c.app = app;
    c.slow_us = metric_or_zero(as_if, "attr.app.time_us");
    // A device: its wait there x the others' share of the device's busy
    // time, of the part its requests waited rather than were served
    // (device.contention_lost_pct: a bulk job whose large requests were
    // mostly being served lost little to the reader beside it). The largest
    // device only: a stack's devices carry the same wait twice (a loop device
    // and the disk under it).
    double device = 0;
    std::string device_name;
    for (const auto& m : as_if.metrics)
        if (m.name == "device.contention_lost_pct" && m.value > device) {
            device = m.value;
            const auto d = m.labels.find("device");
            device_name = d == m.labels.end() ? "?" : d->second;
        }
    // The CPU and the journal on the same basis, its slow syscalls: its
    // run-queue delay x the others' share of the CPU time it competed with;
    // its wait for the commit chain x the others' share of the data the
    // commits carried.
    const double cpu = metric_or_zero(as_if, "attr.sufferer.cpu_pct") *
                       metric_or_zero(as_if, "cpu.others_share_pct") / 100;
    const double journal = metric_or_zero(as_if, "attr.sufferer.journal_pct") *
                           metric_or_zero(as_if, "journal.others_data_share_pct") / 100;
    c.lost_pct = std::min(100.0, device + cpu + journal);
    auto part = [&](const std::string& what, double pct) {
        if (pct <= 0) return;
        c.lost_to += (c.lost_to.empty() ? "" : ", ") + what + " " + format_number(pct) + " %";
    };
    part("device " + device_name, device);
    part("cpu", cpu);
    part("journal", journal);
    return c;
}

std::optional<size_t> choose_sufferer(const std::vector<SuffererCandidate>& candidates) {
    if (candidates.size() < 2) return std::nullopt;
    size_t best = 0;
    for (size_t i = 1; i < candidates.size(); ++i)
        if (candidates[i].lost_us() > candidates[best].lost_us()) best = i;
    if (best == 0 || candidates[best].lost_pct < kLostToOthersMinPct) return std::nullopt;
    return best;
}

std::string choice_reason(const std::vector<SuffererCandidate>& candidates, size_t chosen) {
    std::string out = "the application that lost the most time to other programs (contention shares of its own slow "
                      "syscalls, as if it suffered most), not the one with the most slow time:";
    for (size_t i = 0; i < candidates.size(); ++i) {
        const auto& c = candidates[i];
        out += std::string(i ? ";" : "") + " " + c.app + (i == chosen ? " (chosen)" : "") + " lost " +
               format_value(c.lost_us(), "us") + " of " + format_value(c.slow_us, "us") +
               (c.lost_to.empty() ? "" : " (" + c.lost_to + ")");
    }
    return out;
}

}  // namespace iodiag
