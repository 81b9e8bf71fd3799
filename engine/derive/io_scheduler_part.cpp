// The part of the applications' wait for their requests spent in the I/O
// scheduler (I2D), which the layer table counts under the block queue.
#include "engine/derive/derive_steps.hpp"

#include <algorithm>

#include "engine/evidence/format.hpp"

namespace iodiag::derive {

namespace {

// The slow syscalls' requests are the device's slow requests: those whose
// Q2C reached the slow syscalls' lower bound. The part of their block time
// spent in the I/O scheduler is estimated from the device's log2 histograms:
// their Q2C time (requests at or above the bound, bucket midpoints), less
// their D2C (the requests whose D2C itself reached the bound, and the device's
// mean D2C of the faster ones for the rest), the remainder split by the
// device's measured queue composition (I2D of Q2G + G2I + I2D). On a device
// whose waits are few and long (a scheduler idling for another process) the
// average request says little of the slow ones. nullopt without histograms
// or slow requests.
std::optional<double> slow_requests_i2d_fraction(const Evidence& ev, const Labels& l, double bound_us) {
    const HistogramMetric* q2c = ev.find_histogram("block.q2c_us", l);
    const HistogramMetric* d2c = ev.find_histogram("block.d2c_us", l);
    const Metric* d2c_total = ev.find_metric("block.d2c_total_us", l);
    const Metric* q2c_total = ev.find_metric("block.q2c_total_us", l);
    const Metric* i2d_total = ev.find_metric("block.i2d_total_us", l);
    if (!q2c || !d2c || !d2c_total || !q2c_total || !i2d_total || bound_us <= 0) return std::nullopt;
    if (q2c->unit != "us" || d2c->unit != "us") return std::nullopt;
    auto above = [&](const Log2Histogram& h) { return at_or_above(h, bound_us); };
    const auto [slow_n, slow_q2c] = above(q2c->hist);
    if (slow_n <= 0 || slow_q2c <= 0) return std::nullopt;
    const auto [slow_d2c_n, slow_d2c] = above(d2c->hist);
    const double all_n = static_cast<double>(d2c->hist.total());
    const double fast_mean = all_n > slow_d2c_n ? std::max(0.0, d2c_total->value - slow_d2c) / (all_n - slow_d2c_n) : 0;
    const double served = std::min(slow_q2c, slow_d2c + std::max(0.0, slow_n - slow_d2c_n) * fast_mean);
    const double queued = q2c_total->value - d2c_total->value;
    if (queued <= 0) return 0.0;
    return (1 - served / slow_q2c) * std::min(1.0, i2d_total->value / queued);
}

}  // namespace

std::optional<SchedulerPart> scheduler_part(const Evidence& ev, const Labels& l, const std::string& bound_name,
                                            double q2c_total) {
    const double bound = bound_name.empty() ? 0 : metric_or(ev, bound_name, {}, 0);
    if (const auto slow = slow_requests_i2d_fraction(ev, l, bound))
        return SchedulerPart{*slow, "the part of its slow requests' block time spent in the I/O scheduler (requests "
                                    "with Q2C >= " + bound_name + ", " + format_number(bound) +
                                        " us: their Q2C less their D2C, from the log2 histograms, times I2D / "
                                        "(Q2C - D2C) totals)"};
    const Metric* i2d = ev.find_metric("block.i2d_total_us", l);
    if (!i2d || q2c_total <= 0) return std::nullopt;
    return SchedulerPart{std::min(1.0, i2d->value / q2c_total),
                         "I2D total / Q2C total (the part its requests waited in the I/O scheduler; no histogram of "
                         "its slow requests)"};
}

// A thread asleep until its own request completes is in the syscall
// collector's "device" class (attr.<basis>.device_pct) also while that
// request waits in the I/O scheduler. That part, for the layer table's block
// queue row: the device class times the part of the block time spent in the
// scheduler on the devices applications submit to. The slow set's part from
// the devices' slow requests where the histograms allow; all syscalls' from
// the I2D and Q2C totals.
void add_io_scheduler_parts(Evidence& ev, const std::map<std::string, double>& q2c_total,
                            const std::set<std::string>& lower, double top_total) {
    if (top_total <= 0) return;
    for (const std::string basis : {"slow", "all"}) {
        const Metric* device = ev.find_metric("attr." + basis + ".device_pct");
        if (!device) continue;
        const double device_pct = device->value;
        // all syscalls: no bound, the totals
        const std::string bound_name = basis == "slow" ? "attr.slow.threshold_us" : "";
        const double bound = bound_name.empty() ? 0 : metric_or(ev, bound_name, {}, 0);
        // Each device weighted by the block time of the requests the basis
        // waited on: for the slow set its requests at or above the bound
        // (a busy disk's many fast requests hold none of the slow set's
        // wait); for all syscalls, or where no request reached the bound,
        // all of its requests.
        std::map<std::string, double> weight, all_requests;
        double weight_total = 0;
        for (const auto& [d, q2c] : q2c_total) {
            if (lower.count(d)) continue;
            all_requests[d] = q2c;
            weight[d] = q2c;
            if (bound > 0)
                if (const HistogramMetric* h = ev.find_histogram("block.q2c_us", {{"device", d}}); h && h->unit == "us")
                    weight[d] = at_or_above(h->hist, bound).second;
            weight_total += weight[d];
        }
        if (weight_total <= 0) {
            weight = all_requests;
            weight_total = top_total;
        }
        double fraction = 0;
        bool measured = false;
        for (const auto& [d, w] : weight)
            if (const auto part = scheduler_part(ev, {{"device", d}}, bound_name, q2c_total.at(d))) {
                fraction += w / weight_total * part->fraction;
                measured = true;
            }
        if (!measured) continue;
        ev.add_metric("attr." + basis + ".io_scheduler_pct", {}, std::min(device_pct, device_pct * fraction), "pct",
                      derived("attr." + basis + ".device_pct x the part of the block time (Q2C) of the devices "
                              "applications submit to that their requests spent in the I/O scheduler (" +
                              (basis == "slow" ? std::string("per device from its requests with Q2C >= "
                                                             "attr.slow.threshold_us, each device weighted by their "
                                                             "Q2C time, where its histograms allow; else I2D total / "
                                                             "Q2C total, weighted by its Q2C total")
                                               : std::string("per device I2D total / Q2C total, weighted by its Q2C "
                                                             "total")) +
                              ")"));
    }
}

std::vector<MetricSpec> io_scheduler_part_specs() {
    using K = MetricSpec::Kind;
    return {
        {"device.scheduler_wait_share_pct", K::Metric, "pct", layer::kBlockQueue, "device",
         "share of the slow syscalls' time their requests spent in the device's I/O scheduler (I2D part of their "
         "I/O wait)"},
        {"attr.slow.io_scheduler_pct", K::Metric, "pct", layer::kBlockQueue, "",
         "share of the slow syscalls' time they waited for their own requests while those sat in the I/O "
         "scheduler (the I2D part of attr.slow.device_pct; the layer table counts it under the block queue)"},
        {"attr.all.io_scheduler_pct", K::Metric, "pct", layer::kBlockQueue, "",
         "the same over all traced syscalls (the I2D part of attr.all.device_pct)"},
    };
}

}  // namespace iodiag::derive
