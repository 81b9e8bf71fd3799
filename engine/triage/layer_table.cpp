#include "engine/triage/layer_table.hpp"

#include <algorithm>
#include <map>

#include "engine/evidence/format.hpp"
#include "engine/evidence/layers.hpp"
#include "engine/triage/ceph_layers.hpp"

namespace iodiag {

namespace {

std::optional<double> metric(const Evidence& ev, const std::string& name, const Labels& l = {}) {
    const Metric* m = ev.find_metric(name, l);
    if (!m) return std::nullopt;
    return m->value;
}

void append(std::string& out, const std::string& part) {
    if (part.empty()) return;
    if (!out.empty()) out += "; ";
    out += part;
}

// "name value" if present.
std::string cite(const Evidence& ev, const std::string& label, const std::string& name, const Labels& l = {}) {
    const Metric* m = ev.find_metric(name, l);
    return m ? label + " " + format_value(m->value, m->unit) : "";
}

std::string device_figures(const Evidence& ev) {
    std::string out;
    for (const auto& d : busy_devices(ev)) {
        const Labels l{{"device", d}};
        std::string part;
        append(part, cite(ev, "r_await", "disk.read_await_ms", l));
        append(part, cite(ev, "w_await", "disk.write_await_ms", l));
        append(part, cite(ev, "util", "disk.util_pct", l));
        append(part, cite(ev, "aqu-sz", "disk.aqu_sz", l));
        append(part, cite(ev, "D2C p99", "block.d2c_p99_us", l));
        if (!ev.find_metric("device.nominal_read_latency_ms", l))
            append(part, ev.find_metric("device.d2c_stall_time_pct", l)
                             ? "no reference latency for its class: judged on its own distribution"
                             : "no reference latency for its class: its speed is not judged");
        else
            append(part, cite(ev, "reference read", "device.nominal_read_latency_ms", l));
        if (!part.empty()) append(out, d + ": " + part);
    }
    return out;
}

std::string block_queue_figures(const Evidence& ev) {
    std::string out;
    for (const auto& d : busy_devices(ev)) {
        const Labels l{{"device", d}};
        std::string part;
        append(part, cite(ev, "queueing", "block.queue_share_pct", l));
        append(part, cite(ev, "Q2G", "block.q2g_share_pct", l));
        append(part, cite(ev, "I2D", "block.i2d_share_pct", l));
        append(part, cite(ev, "Q2C p99", "block.q2c_p99_us", l));
        if (const Fact* f = ev.find_fact("queue.scheduler", l)) append(part, "scheduler " + f->value);
        append(part, cite(ev, "nr_requests", "queue.nr_requests", l));
        if (!part.empty()) append(out, d + ": " + part);
    }
    return out;
}

}  // namespace

std::vector<std::string> busy_devices(const Evidence& ev) {
    std::vector<std::pair<double, std::string>> busy;
    for (const auto& d : ev.instances("device")) {
        const Labels l{{"device", d}};
        double ios = metric(ev, "disk.ios_per_s", l).value_or(0);
        if (auto n = metric(ev, "block.requests", l)) ios = std::max(ios, *n);
        if (ios > 0) busy.push_back({ios, d});
    }
    std::sort(busy.begin(), busy.end(), [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    std::vector<std::string> out;
    for (size_t i = 0; i < busy.size() && i < 3; ++i) out.push_back(busy[i].second);
    return out;
}

std::optional<double> layer_share_pct(const Evidence& ev, const std::string& basis, const std::string& layer) {
    const std::string prefix = "attr." + basis + ".";
    const auto own = metric(ev, prefix + layer + "_pct");
    const auto scheduler = metric(ev, prefix + "io_scheduler_pct");
    if (!scheduler) return own;
    if (layer == layer::kDevice) return own ? std::optional<double>(std::max(0.0, *own - *scheduler)) : std::nullopt;
    if (layer == layer::kBlockQueue) return own.value_or(0) + *scheduler;
    return own;
}

namespace {

// The judgement model's verdict on a layer (judge.reason), when it judged it.
std::string judged(const Evidence& ev, const std::string& layer) {
    const Fact* why = ev.find_fact("judge.reason", {{"layer", layer}});
    const Metric* abnormal = ev.find_metric("judge.abnormal", {{"layer", layer}});
    if (!why || !abnormal) return "";
    return (abnormal->value == 1 ? "abnormal: " : "judged normal: ") + why->value;
}

std::string layer_figures_measured(const Evidence& ev, const std::string& layer);

}  // namespace

std::string layer_figures(const Evidence& ev, const std::string& layer) {
    std::string out = layer_figures_measured(ev, layer);
    append(out, judged(ev, layer));
    return out;
}

namespace {

// The layer's measured figures, without the model's verdict.
std::string layer_figures_measured(const Evidence& ev, const std::string& layer) {
    using namespace layer;
    std::string out;
    if (layer == kDevice) {
        std::string figures = device_figures(ev);
        if (figures.empty() && !ev.instances("device").empty()) return "no I/O completed on any device in the window";
        if (const Metric* m = ev.find_metric("attr.slow.io_scheduler_pct"))
            append(figures, "the slow syscalls' I/O wait less its I/O scheduler part (" + format_value(m->value, m->unit) +
                                ", under block_queue)");
        return figures;
    }
    if (layer == kBlockQueue) {
        std::string figures = block_queue_figures(ev);
        if (ev.find_metric("attr.slow.io_scheduler_pct")) {
            append(figures, cite(ev, "I/O scheduler wait", "attr.slow.io_scheduler_pct"));
            append(figures, cite(ev, "tag/request wait", "attr.slow.block_queue_pct"));
        }
        return figures;
    }
    if (std::find(ceph().begin(), ceph().end(), layer) != ceph().end()) return ceph_layer_figures(ev, layer);
    append(out, cite(ev, "time", "attr.slow." + layer + "_us"));
    if (layer == kDirty) {
        append(out, cite(ev, "dirty+writeback at", "dirty.pct_of_limit"));
        append(out, cite(ev, "of limit", "dirty.limit_bytes"));
    } else if (layer == kReclaim) {
        append(out, cite(ev, "allocstall", "vm.allocstall"));
        append(out, cite(ev, "pgscan_direct", "vm.pgscan_direct"));
        append(out, cite(ev, "memory PSI some", "psi.memory_some_pct"));
    } else if (layer == kPageCache) {
        append(out, cite(ev, "major faults", "vm.pgmajfault"));
        append(out, cite(ev, "refaults", "vm.workingset_refault"));
    } else if (layer == kSyscall) {
        // Where the slow operations' time went, largest shares first.
        std::vector<std::pair<double, std::string>> shares;
        for (const auto& l : all())
            if (auto v = layer_share_pct(ev, "slow", l); v && l != kSyscall) shares.push_back({*v, l});
        if (auto v = metric(ev, "attr.slow.other_pct")) shares.push_back({*v, "other"});
        std::sort(shares.rbegin(), shares.rend());
        std::string top;
        for (size_t i = 0; i < shares.size() && i < 3; ++i)
            top += (i ? ", " : "") + shares[i].second + " " + format_number(shares[i].first) + " %";
        if (!top.empty()) append(out, "slow ops spent their time in " + top);
        append(out, cite(ev, "slow ops", "attr.slow.ops"));
        append(out, cite(ev, "slow threshold", "attr.slow.threshold_us"));
        append(out, cite(ev, "I/O PSI some", "psi.io_some_pct"));
    }
    return out;
}

}  // namespace

std::string layer_observer(const Evidence& ev, const std::string& layer) {
    std::string by, could_not_run;
    for (const auto& c : ev.collectors) {
        if (std::find(c.layers.begin(), c.layers.end(), layer) == c.layers.end()) continue;
        if (c.available)
            append(by, c.name);
        else
            append(could_not_run, c.name + " could not run: " + (c.reason.empty() ? "no reason given" : c.reason));
    }
    if (!by.empty()) return by;
    // The collector that measures this layer was there but did not run (not
    // root, no BTF, a program the verifier refused): say so and why, so that
    // nobody reads it as a gap in iodiag.
    if (!could_not_run.empty()) return "not observed: " + could_not_run;
    return "not observed: no collector that ran measures its latency";
}

std::vector<LayerRow> build_layer_table(const Evidence& ev,
                                        const std::vector<std::pair<std::string, LayerState>>& states) {
    std::vector<LayerRow> rows;
    std::string slow_basis = "of slow syscall time";
    if (const Metric* t = ev.find_metric("attr.slow.threshold_us"))
        slow_basis += " (ops >= " + format_value(t->value, t->unit) + ")";
    const auto busy = busy_devices(ev);
    for (const auto& [layer, state] : states) {
        LayerRow row;
        row.layer = layer;
        row.state = state;
        row.share_slow_pct = layer_share_pct(ev, "slow", layer);
        row.share_all_pct = layer_share_pct(ev, "all", layer);
        if (row.share_slow_pct || row.share_all_pct) {
            row.share_basis = slow_basis;
        } else if (auto c = ceph_layer_share(ev, layer)) {
            row.share_all_pct = c->pct;
            row.share_basis = c->basis;
        } else if (!busy.empty() && (layer == layer::kDevice || layer == layer::kBlockQueue)) {
            // Without syscall attribution the block collector still splits block
            // time between the device (D2C) and the queue above it.
            const Labels l{{"device", busy.front()}};
            const std::string name = layer == layer::kDevice ? "block.d2c_share_pct" : "block.queue_share_pct";
            if (auto v = metric(ev, name, l)) {
                row.share_all_pct = v;
                row.share_basis = "of block-layer time (Q2C) on " + busy.front();
            }
        }
        row.figures = layer_figures(ev, layer);
        row.observed_by = layer_observer(ev, layer);
        rows.push_back(std::move(row));
    }
    return rows;
}

}  // namespace iodiag
