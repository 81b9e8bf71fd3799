#include "engine/triage/history_metrics.hpp"

#include <algorithm>

#include "engine/evidence/format.hpp"
#include "engine/evidence/layers.hpp"

namespace iodiag {

namespace {

constexpr double kSecondsPerDay = 86400;

std::optional<double> metric(const Evidence& ev, const std::string& name, const Labels& l = {}) {
    const Metric* m = ev.find_metric(name, l);
    return m ? std::optional<double>(m->value) : std::nullopt;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string smart_key(const Evidence& ev, const std::string& device) {
    const Fact* serial = ev.find_fact("nvme.serial", {{"device", device}});
    return serial && !serial->value.empty() ? serial->value : "device:" + device;
}

std::string names(const std::vector<const RunSummary*>& runs) {
    std::string s;
    for (const auto* r : runs) s += (s.empty() ? "" : ", ") + r->name;
    return s;
}

std::string times(const std::vector<const RunSummary*>& runs) {
    std::string s;
    for (const auto* r : runs) s += (s.empty() ? "" : ", ") + format_utc(r->start_unix);
    return s;
}

// The last `n` runs (newest first in time order of the result: oldest first)
// for which `has` holds.
template <typename Has>
std::vector<const RunSummary*> last_runs(const std::vector<const RunSummary*>& by_time, size_t n, Has has) {
    std::vector<const RunSummary*> out;
    for (auto it = by_time.rbegin(); it != by_time.rend() && out.size() < n; ++it)
        if (has(**it)) out.push_back(*it);
    std::reverse(out.begin(), out.end());
    return out;
}

class Adder {
public:
    Adder(Evidence& ev, const HistoryContext& ctx) : ev_(ev), ctx_(ctx) {}

    void metric(const std::string& name, const Labels& l, double v, const std::string& unit, const std::string& source) {
        std::erase_if(ev_.metrics, [&](const Metric& m) { return m.name == name && m.labels == l; });
        ev_.add_metric(name, l, v, unit, {"history", source});
    }
    void fact(const std::string& name, const Labels& l, const std::string& v, const std::string& source) {
        std::erase_if(ev_.facts, [&](const Fact& f) { return f.name == name && f.labels == l; });
        ev_.add_fact(name, l, v, {"history", source});
    }
    const std::string& where() const { return ctx_.where; }
    std::string median_source(const std::string& what, const std::vector<const RunSummary*>& runs) const {
        return "history: " + what + " over the last " + std::to_string(runs.size()) + " run(s) in " + ctx_.where +
               ": " + names(runs);
    }

private:
    Evidence& ev_;
    const HistoryContext& ctx_;
};

void device_latency(Evidence& ev, Adder& add, const std::vector<const RunSummary*>& by_time, size_t nights) {
    for (const auto& device : ev.instances("device")) {
        const auto runs = last_runs(by_time, nights, [&](const RunSummary& r) {
            auto it = r.devices.find(device);
            return it != r.devices.end() && it->second.requests >= kHistoryMinRequests && it->second.d2c_p99_us;
        });
        if (runs.empty()) continue;
        const Labels l{{"device", device}};
        const std::string which = names(runs);
        add.metric("history.device_nights", l, static_cast<double>(runs.size()), "count",
                   add.median_source("runs with at least " + format_number(kHistoryMinRequests) + " requests on " +
                                         device,
                                     runs));
        add.fact("history.device_nights_compared", l, times(runs), add.median_source("the runs compared", runs));
        for (const auto& [stage, field] : {std::pair{"d2c", &RunSummary::Device::d2c_p99_us},
                                           std::pair{"q2c", &RunSummary::Device::q2c_p99_us}}) {
            std::vector<double> values;
            for (const auto* r : runs)
                if (auto v = r->devices.at(device).*field) values.push_back(*v);
            if (values.empty()) continue;
            const std::string s = stage;
            const double med = median(values);
            const double max = *std::max_element(values.begin(), values.end());
            add.metric("history." + s + "_p99_median_us", l, med, "us",
                       add.median_source("median of block." + s + "_p99_us on " + device, runs));
            add.metric("history." + s + "_p99_max_us", l, max, "us",
                       add.median_source("highest block." + s + "_p99_us on " + device, runs));
            if (auto tonight = metric(ev, "block." + s + "_p99_us", l); tonight && med > 0)
                add.metric("history." + s + "_p99_ratio", l, *tonight / med, "x",
                           "history: tonight's block." + s + "_p99_us (" + format_value(*tonight, "us") +
                               ") / its median over " + which + " (" + format_value(med, "us") + ")");
        }
    }
}

// An operation against its own normal: tonight's p99 of each traced syscall
// op against its median over the last runs with enough of them. Latency far
// above its own normal is abnormal even when no layer's share crosses a rule's
// threshold (issue 13 §0).
void op_latency(Evidence& ev, Adder& add, const std::vector<const RunSummary*>& by_time, size_t nights) {
    // Tonight's figures copied out first: the metrics added below grow the
    // vector this would otherwise iterate.
    std::vector<std::pair<std::string, double>> tonight;
    for (const auto& m : ev.metrics)
        if (m.name == "syscall.p99_us" && m.labels.size() == 1 && m.labels.count("op"))
            tonight.emplace_back(m.labels.at("op"), m.value);
    for (const auto& entry : tonight) {
        // Named copies, not a structured binding: clang 14 cannot capture one in a lambda.
        const std::string& op = entry.first;
        const double p99 = entry.second;
        const auto runs = last_runs(by_time, nights, [&](const RunSummary& r) {
            auto it = r.ops.find(op);
            return it != r.ops.end() && it->second.count >= kHistoryMinOps && it->second.p99_us;
        });
        if (runs.empty()) continue;
        std::vector<double> values;
        for (const auto* r : runs) values.push_back(*r->ops.at(op).p99_us);
        const double med = median(values);
        const double max = *std::max_element(values.begin(), values.end());
        const Labels l{{"op", op}};
        add.metric("history.op_nights", l, static_cast<double>(runs.size()), "count",
                   add.median_source("runs with at least " + format_number(kHistoryMinOps) + " " + op + " syscalls",
                                     runs));
        add.fact("history.op_nights_compared", l, times(runs), add.median_source("the runs compared", runs));
        add.metric("history.op_p99_median_us", l, med, "us", add.median_source("median of syscall.p99_us{op=" + op + "}", runs));
        add.metric("history.op_p99_max_us", l, max, "us", add.median_source("highest syscall.p99_us{op=" + op + "}", runs));
        if (med > 0)
            add.metric("history.op_p99_ratio", l, p99 / med, "x",
                       "history: tonight's syscall.p99_us{op=" + op + "} (" + format_value(p99, "us") +
                           ") / its median over " + names(runs) + " (" + format_value(med, "us") + ")");
    }
}

void layer_shares(Evidence& ev, Adder& add, const std::vector<const RunSummary*>& by_time, size_t nights) {
    for (const auto& layer : layer::all()) {
        const auto tonight = metric(ev, "attr.slow." + layer + "_pct");
        if (!tonight) continue;
        const auto runs = last_runs(by_time, nights,
                                    [&](const RunSummary& r) { return r.layer_share_pct.count(layer) > 0; });
        if (runs.empty()) continue;
        std::vector<double> values;
        for (const auto* r : runs) values.push_back(r->layer_share_pct.at(layer));
        const double med = median(values);
        const Labels l{{"layer", layer}};
        const std::string src = add.median_source("attr.slow." + layer + "_pct", runs);
        add.metric("history.layer_nights", l, static_cast<double>(runs.size()), "count", src);
        add.metric("history.layer_share_median_pct", l, med, "pct", "median of " + src);
        add.metric("history.layer_share_change_pct", l, *tonight - med, "pct",
                   "tonight's attr.slow." + layer + "_pct (" + format_value(*tonight, "pct") + ") minus the median of " +
                       src);
    }
}

// Growth from the oldest run that had the counter to tonight: SMART counters
// move slowly (percentage used by whole points), so the longest span gives
// the steadiest rate.
void smart_growth(Evidence& ev, Adder& add, const std::vector<const RunSummary*>& by_time) {
    for (const auto& device : ev.instances("device")) {
        const Labels l{{"device", device}};
        const auto used = metric(ev, "nvme.percent_used", l);
        const auto errors = metric(ev, "nvme.media_errors", l);
        if (!used && !errors) continue;
        const std::string key = smart_key(ev, device);
        const std::string who = key.rfind("device:", 0) == 0 ? device : device + " (serial " + key + ")";
        for (const auto& [counter, field, tonight] :
             {std::tuple{"percent_used", &RunSummary::Smart::percent_used, used},
              std::tuple{"media_errors", &RunSummary::Smart::media_errors, errors}}) {
            if (!tonight) continue;
            const RunSummary* oldest = nullptr;
            size_t runs = 0;
            for (const auto* r : by_time) {
                auto it = r->nvme.find(key);
                if (it == r->nvme.end() || !(it->second.*field)) continue;
                if (!oldest) oldest = r;
                ++runs;
            }
            if (!oldest) continue;
            const double then = *(oldest->nvme.at(key).*field);
            const double days = (ev.window.start_unix - oldest->start_unix) / kSecondsPerDay;
            const std::string c = counter;
            const std::string unit = c == "percent_used" ? "pct" : "count";
            const std::string source = "history: nvme." + c + " of " + who + " was " + format_value(then, unit) +
                                       " in " + oldest->name + " (" + format_utc(oldest->start_unix) + "), " +
                                       format_value(*tonight, unit) + " tonight, " + format_number(days) +
                                       " days later (" + std::to_string(runs) + " run(s) with it in " + add.where() + ")";
            add.metric("history.nvme_span_days", l, days, "days", source);
            add.metric("history.nvme_" + c + "_change", l, *tonight - then, unit, source);
            if (days <= 0) continue;
            const double per_day = (*tonight - then) / days;
            add.metric("history.nvme_" + c + "_per_day", l, per_day, unit == "pct" ? "pct" : "count", source);
            if (c == "percent_used" && per_day > 0)
                add.metric("history.nvme_days_to_rated_life", l, std::max(0.0, (100 - *tonight) / per_day), "days",
                           "derived: (100 % - " + format_value(*tonight, "pct") + ") / " + format_number(per_day) +
                               " points per day; " + source);
        }
    }
}

}  // namespace

RunSummary summarize_run(const Evidence& ev, const std::string& name) {
    RunSummary r;
    r.name = name;
    r.host = ev.host;
    r.start_unix = ev.window.start_unix;
    for (const auto& device : ev.instances("device")) {
        const Labels l{{"device", device}};
        RunSummary::Device d;
        d.requests = metric(ev, "block.requests", l).value_or(0);
        d.d2c_p99_us = metric(ev, "block.d2c_p99_us", l);
        d.q2c_p99_us = metric(ev, "block.q2c_p99_us", l);
        if (d.requests > 0) r.devices[device] = d;
        RunSummary::Smart s{device, metric(ev, "nvme.percent_used", l), metric(ev, "nvme.media_errors", l)};
        if (s.percent_used || s.media_errors) r.nvme[smart_key(ev, device)] = s;
    }
    for (const auto& layer : layer::all())
        if (auto v = metric(ev, "attr.slow." + layer + "_pct")) r.layer_share_pct[layer] = *v;
    for (const auto& m : ev.metrics)
        if (m.name == "syscall.ops" && m.labels.size() == 1 && m.labels.count("op"))
            r.ops[m.labels.at("op")] = {m.value, metric(ev, "syscall.p99_us", m.labels)};
    return r;
}

void add_history_metrics(Evidence& tonight, const std::vector<RunSummary>& past, const HistoryContext& ctx) {
    std::vector<const RunSummary*> by_time;
    for (const auto& r : past)
        if (r.host == tonight.host && r.start_unix < tonight.window.start_unix) by_time.push_back(&r);
    std::stable_sort(by_time.begin(), by_time.end(),
                     [](const RunSummary* a, const RunSummary* b) { return a->start_unix < b->start_unix; });
    Adder add(tonight, ctx);
    const auto recent = last_runs(by_time, ctx.nights, [](const RunSummary&) { return true; });
    add.metric("history.nights", {}, static_cast<double>(recent.size()), "count",
               recent.empty() ? "history: no earlier run of " + tonight.host + " in " + ctx.where
                              : add.median_source("runs of " + tonight.host, recent));
    device_latency(tonight, add, by_time, ctx.nights);
    layer_shares(tonight, add, by_time, ctx.nights);
    op_latency(tonight, add, by_time, ctx.nights);
    smart_growth(tonight, add, by_time);
}

std::vector<MetricSpec> history_metric_specs() {
    using K = MetricSpec::Kind;
    const std::string dev = layer::kDevice, q = layer::kBlockQueue, sys = layer::kSyscall;
    return {
        {"history.nights", K::Metric, "count", "", "", "earlier runs of this host compared (at most the last N)"},
        {"history.device_nights", K::Metric, "count", dev, "device",
         "earlier runs in which the device completed enough requests for a p99 (the runs its medians are over)"},
        {"history.device_nights_compared", K::Fact, "", dev, "device", "when those runs were (UTC)"},
        {"history.d2c_p99_median_us", K::Metric, "us", dev, "device", "median of the device's D2C p99 over those runs"},
        {"history.d2c_p99_max_us", K::Metric, "us", dev, "device", "highest D2C p99 of those runs"},
        {"history.d2c_p99_ratio", K::Metric, "x", dev, "device", "tonight's D2C p99 / its median over those runs"},
        {"history.q2c_p99_median_us", K::Metric, "us", q, "device", "median of the device's Q2C p99 over those runs"},
        {"history.q2c_p99_max_us", K::Metric, "us", q, "device", "highest Q2C p99 of those runs"},
        {"history.q2c_p99_ratio", K::Metric, "x", q, "device", "tonight's Q2C p99 / its median over those runs"},
        {"history.layer_nights", K::Metric, "count", sys, "layer",
         "earlier runs with a measured share of slow syscall time for the layer"},
        {"history.layer_share_median_pct", K::Metric, "pct", sys, "layer",
         "median of the layer's share of slow syscall time over those runs"},
        {"history.layer_share_change_pct", K::Metric, "pct", sys, "layer",
         "tonight's share minus that median, in percentage points"},
        {"history.op_nights", K::Metric, "count", sys, "op",
         "earlier runs with enough syscalls of the op for a p99 (the runs its medians are over)"},
        {"history.op_nights_compared", K::Fact, "", sys, "op", "when those runs were (UTC)"},
        {"history.op_p99_median_us", K::Metric, "us", sys, "op", "median of the op's syscall p99 over those runs"},
        {"history.op_p99_max_us", K::Metric, "us", sys, "op", "highest syscall p99 of the op in those runs"},
        {"history.op_p99_ratio", K::Metric, "x", sys, "op", "tonight's syscall p99 of the op / its median over those runs"},
        {"history.nvme_span_days", K::Metric, "days", dev, "device",
         "days between the oldest kept run with the drive's SMART log and tonight"},
        {"history.nvme_percent_used_change", K::Metric, "pct", dev, "device",
         "NVMe percentage used, tonight minus the oldest kept run (points; the drive matched by serial)"},
        {"history.nvme_percent_used_per_day", K::Metric, "pct", dev, "device", "percentage used gained per day"},
        {"history.nvme_days_to_rated_life", K::Metric, "days", dev, "device",
         "days until percentage used reaches 100 % at that rate"},
        {"history.nvme_media_errors_change", K::Metric, "count", dev, "device",
         "NVMe media errors, tonight minus the oldest kept run"},
        {"history.nvme_media_errors_per_day", K::Metric, "count", dev, "device", "media errors gained per day"},
    };
}

}  // namespace iodiag
