// Whether online discard explains the suffering application's wait for its
// I/O (issue 34, docs/settings.md "Mount option discard").
#include "engine/derive/derive_steps.hpp"

#include <algorithm>
#include <map>

namespace iodiag::derive {

// A filesystem mounted `discard` sends the device a discard for the blocks
// each journal commit freed, right after the commit (ext4's commit callback
// waits for them before the commit is done, btrfs's discard=sync alike; XFS
// sends them after its log write and reuses none of those blocks until they
// are done), so an fsync or a create that waits for that commit waits for the
// discards. A device that serves a discard slowly (a thin volume unmapping,
// an SSD whose trim is not queued and drains its queue) then stretches every
// commit, and the requests behind a discard wait for it. What is measured:
// the discard requests the device served (block_rq_issue -> complete, op
// discard) against the window and the device's busy time (diskstats
// io_ticks), and the judged application's wait for I/O and commits on that
// device. The part of that wait the option governs is taken in the
// proportion of the window a discard was in service: what trimming in a
// batch off the commit path (fstrim) would take out of it.
void add_discard_setting(Evidence& ev) {
    const Fact* app = judged_application(ev);
    if (!app) return;
    // Its waits for commits (fsyncs, writes and creates made durable) by the
    // device of their filesystem: its journal share belongs to those devices.
    std::map<std::string, double> durable_us;
    double durable_total = 0;
    for_each_device_metric_of(ev, "fs.", app->value, [&](const std::string& d, const Metric& m) {
        if (m.name != "fs.fsync_time_us" && m.name != "fs.sync_write_time_us") return;
        durable_us[d] += m.value;
        durable_total += m.value;
    });
    const double window_us = ev.window.duration_s * 1e6;
    for (const std::string& d : ev.instances("device")) {
        const Labels l{{"device", d}}, op{{"device", d}, {"op", "discard"}};
        if (metric_or(ev, "fs.mount_discard", l, 0) != 1) continue;
        const double discards = metric_or(ev, "block.requests", op, 0);
        const double busy_us = metric_or(ev, "disk.util_pct", l, 0) / 100 * window_us;
        if (discards <= 0 || busy_us <= 0 || window_us <= 0) continue;
        const double discard_us = metric_or(ev, "block.d2c_total_us", op, 0);
        ev.add_metric("setting.discards", l, discards, "count",
                      derived("block.requests{op=discard} on " + d + ": the discards the filesystem sent"));
        ev.add_metric("setting.discard_d2c_mean_us", l, discard_us / discards, "us",
                      derived("block.d2c_total_us{op=discard} / block.requests{op=discard} on " + d));
        ev.add_metric("setting.discard_busy_pct", l, std::min(100.0, 100 * discard_us / busy_us), "pct",
                      derived("100 x block.d2c_total_us{op=discard} / (disk.util_pct / 100 x the window) on " + d +
                              " (at most 100): the part of the device's busy time serving discards"));
        // The part of the window a discard was in service: a commit that
        // sends discards is not done before them, so whoever waits on the
        // device's commits and requests through the window waits through
        // that part of it (not through the busy time's part: a device idle
        // between small commits would make fast discards look like most of
        // its work).
        const double in_service = std::min(1.0, discard_us / window_us);
        ev.add_metric("setting.discard_time_pct", l, 100 * in_service, "pct",
                      derived("100 x block.d2c_total_us{op=discard} / the window on " + d +
                              " (at most 100): the part of the window a discard was in service"));
        // Its wait on the device: for its requests and tags, and for the
        // commits of the filesystem on it (its journal share, in the
        // proportion of its durable waits that were on this device).
        const double journal = durable_total > 0 ? metric_or(ev, "attr.sufferer.journal_pct", {}, 0) *
                                                       durable_us[d] / durable_total
                                                 : 0;
        const double wait = std::min(100.0, metric_or(ev, "device.io_wait_share_pct", l, 0) +
                                                metric_or(ev, "device.tag_wait_share_pct", l, 0) + journal);
        ev.add_metric("setting.discard_share_pct", l, wait * in_service, "pct",
                      derived("(device.io_wait_share_pct + device.tag_wait_share_pct on " + d +
                              " + attr.sufferer.journal_pct x the part of fs.fsync_time_us and "
                              "fs.sync_write_time_us on " + d + ", at most 100) x setting.discard_time_pct / 100: " +
                              app->value + "'s wait for I/O and commits on " + d +
                              " in the proportion of the window a discard was in service"));
    }
}

std::vector<MetricSpec> discard_setting_specs() {
    using K = MetricSpec::Kind;
    const std::string f = layer::kFilesystem;
    return {
        {"setting.discards", K::Metric, "count", f, "device", "discard requests the device served in the window"},
        {"setting.discard_d2c_mean_us", K::Metric, "us", f, "device", "mean service time of a discard request"},
        {"setting.discard_busy_pct", K::Metric, "pct", f, "device",
         "share of the device's busy time spent serving discards"},
        {"setting.discard_time_pct", K::Metric, "pct", f, "device",
         "share of the window with a discard in service on the device"},
        {"setting.discard_share_pct", K::Metric, "pct", f, "device",
         "the suffering application's wait for I/O and commits on the device, in the proportion of the window "
         "a discard was in service"},
    };
}

}  // namespace iodiag::derive
