// Whether a lowered max_sectors_kb explains the suffering application's wait
// for its I/O (issue 34, docs/settings.md "max_sectors_kb").
#include "engine/derive/derive_steps.hpp"

#include <algorithm>
#include <map>

namespace iodiag::derive {

namespace {

// BLK_DEF_MAX_SECTORS_CAP (BLK_DEF_MAX_SECTORS before): 2560 sectors, the
// most the kernel gives a queue by default unless the device asks for larger
// requests (its optimal I/O size); the value since Linux 4.4 (commit
// d2be537c3ba3, "block: bump BLK_DEF_MAX_SECTORS to 2560").
constexpr double kDefaultCapKb = 1280;

struct Submitted {
    double requests = 0, bytes = 0;
};

std::map<std::string, Submitted> submitted_by(const Evidence& ev, const std::string& app) {
    std::map<std::string, Submitted> out;
    for_each_device_metric_of(ev, "block.submitter.", app, [&](const std::string& d, const Metric& m) {
        if (m.name == "block.submitter.requests") out[d].requests += m.value;
        else if (m.name == "block.submitter.bytes") out[d].bytes += m.value;
    });
    return out;
}

}  // namespace

// The block layer cuts a bio larger than the queue's max_sectors_kb into
// requests of that size; each is a request of its own for the device (its
// command, its completion, its tag), so a large read or write costs the
// per-request work many times over. What is measured: the splits at that
// limit on each device the judged application submitted to (block_split),
// its own requests' size, and the limit against what the kernel itself sets
// (blk_validate_limits: the device's hardware limit, at most
// BLK_DEF_MAX_SECTORS_CAP unless the device's optimal I/O size is larger).
// The part of its time the limit governs is its wait for I/O on the device
// (its requests and their tags) in the proportion of the device's requests
// that were split-off parts: the requests the limit made.
void add_request_size_setting(Evidence& ev) {
    const Fact* app = judged_application(ev);
    if (!app) return;
    for (const auto& [d, s] : submitted_by(ev, app->value)) {
        const Labels l{{"device", d}};
        const Metric* max = ev.find_metric("queue.max_sectors_kb", l);
        const Metric* hw = ev.find_metric("queue.max_hw_sectors_kb", l);
        const double requests = metric_or(ev, "block.requests", l, 0);
        if (!max || !hw || s.requests <= 0 || requests <= 0 || !ev.find_metric("block.splits", l)) continue;
        const double opt_kb = metric_or(ev, "queue.optimal_io_size", l, 0) / 1024;
        const double default_kb = opt_kb > kDefaultCapKb ? std::min(hw->value, opt_kb) : std::min(hw->value, kDefaultCapKb);
        // A bare number (count): the fix writes it to sysfs as it prints.
        ev.add_metric("setting.max_sectors_default_kb", l, default_kb, "count",
                      derived("what the kernel sets for " + d + ": min(queue.max_hw_sectors_kb, 1280 KiB "
                              "BLK_DEF_MAX_SECTORS_CAP), or min(max_hw_sectors_kb, queue.optimal_io_size) where "
                              "the device's optimal size is larger"));
        // Lowered by someone: below the kernel's value, and not the
        // device's own optimal size (a driver that sets the limit to it).
        const bool lowered = max->value < default_kb && max->value != opt_kb;
        ev.add_metric("setting.max_sectors_lowered", l, lowered ? 1 : 0, "bool",
                      derived("1 when queue.max_sectors_kb < setting.max_sectors_default_kb and is not the "
                              "device's queue.optimal_io_size"));
        const double split_kb = metric_or(ev, "block.split_kb_mean", l, 0);
        ev.add_metric("setting.splits_at_limit", l, split_kb >= 0.9 * max->value && split_kb <= max->value ? 1 : 0,
                      "bool",
                      derived("1 when block.split_kb_mean is max_sectors_kb (within 10 %): the bios were cut at "
                              "that limit, not at a segment or boundary limit"));
        ev.add_metric("setting.app_request_kb", l, s.bytes / s.requests / 1024, "KiB",
                      derived("block.submitter.bytes / block.submitter.requests of " + app->value + " on " + d));
        const double split_fraction = std::min(1.0, metric_or(ev, "block.splits", l, 0) / requests);
        ev.add_metric("setting.split_requests_pct", l, 100 * split_fraction, "pct",
                      derived("100 x block.splits / block.requests on " + d + " (at most 100): the requests "
                              "that were parts split off a larger bio"));
        const double wait = metric_or(ev, "device.io_wait_share_pct", l, 0) +
                            metric_or(ev, "device.tag_wait_share_pct", l, 0);
        ev.add_metric("setting.max_sectors_share_pct", l, std::min(100.0, wait) * split_fraction, "pct",
                      derived("(device.io_wait_share_pct + device.tag_wait_share_pct, at most 100) x "
                              "setting.split_requests_pct / 100 on " + d));
    }
}

std::vector<MetricSpec> request_size_setting_specs() {
    using K = MetricSpec::Kind;
    const std::string q = layer::kBlockQueue;
    return {
        {"setting.max_sectors_default_kb", K::Metric, "count", q, "device",
         "the largest request the kernel itself would let the block layer build on the device, in KiB"},
        {"setting.max_sectors_lowered", K::Metric, "bool", q, "device",
         "1 when max_sectors_kb is below the kernel's value for the device and not its optimal I/O size"},
        {"setting.splits_at_limit", K::Metric, "bool", q, "device",
         "1 when the device's bios were split at max_sectors_kb"},
        {"setting.app_request_kb", K::Metric, "KiB", q, "device",
         "mean size of the suffering application's requests on the device"},
        {"setting.split_requests_pct", K::Metric, "pct", q, "device",
         "share of the device's requests that were parts split off a larger bio"},
        {"setting.max_sectors_share_pct", K::Metric, "pct", q, "device",
         "the suffering application's wait for I/O on the device, in the proportion of its requests the "
         "limit made"},
    };
}

}  // namespace iodiag::derive
