// Whether the readahead setting explains the suffering application's
// page-cache wait (issue 34, docs/settings.md "readahead").
#include "engine/derive/derive_steps.hpp"

#include <algorithm>
#include <map>
#include <optional>


namespace iodiag::derive {

namespace {

// The application's readahead on one filesystem device
// (fs.readahead_*{device, app}, bpf/syscall.bpf.c on_sync_ra/on_async_ra).
struct Readahead {
    double misses = 0, sequential = 0, unwidened = 0, async = 0, cache_wait_us = 0;
    double read_bytes = 0, requests = 0;   // its block requests on the device (block.submitter.*)
    std::optional<double> cache_read_us;   // absent in bundles recorded before it was measured
    double events() const { return misses + async; }
    // An asynchronous readahead happens only in a sequential stream (the
    // reader reached a window's marked page).
    double sequential_events() const { return sequential + async; }
};

std::map<std::string, Readahead> readahead_of(const Evidence& ev, const std::string& app) {
    std::map<std::string, Readahead> out;
    for_each_device_metric_of(ev, "fs.readahead_", app, [&](const std::string& d, const Metric& m) {
        Readahead& r = out[d];
        if (m.name == "fs.readahead_misses") r.misses += m.value;
        else if (m.name == "fs.readahead_sequential_misses") r.sequential += m.value;
        else if (m.name == "fs.readahead_unwidened_misses") r.unwidened += m.value;
        else if (m.name == "fs.readahead_async") r.async += m.value;
    });
    for_each_device_metric_of(ev, "fs.page_cache_wait_us", app,
                              [&](const std::string& d, const Metric& m) { out[d].cache_wait_us += m.value; });
    for_each_device_metric_of(ev, "fs.page_cache_read_us", app, [&](const std::string& d, const Metric& m) {
        out[d].cache_read_us = out[d].cache_read_us.value_or(0) + m.value;
    });
    for_each_device_metric_of(ev, "block.submitter.", app, [&](const std::string& d, const Metric& m) {
        if (!out.count(d)) return;
        if (m.name == "block.submitter.bytes") out[d].read_bytes += m.value;
        else if (m.name == "block.submitter.write_bytes") out[d].read_bytes -= m.value;
        else if (m.name == "block.submitter.requests") out[d].requests += m.value;
    });
    return out;
}


}  // namespace

// A sequential reader normally waits little: its first read of a file starts
// a readahead window, and from then on the kernel reads the next window
// asynchronously as the reader reaches a marked page in the current one. One
// stream has at most a window in flight, so its throughput is bounded by a
// window per device round trip: with the window at 0 every read misses and
// waits for a device read of its own size; with a small one the reader
// catches up with the readahead and waits for it. What is measured here is
// the pattern (how much of the application's readahead on each device was
// sequential, how much of it read no more than asked) and the window the
// kernel used; the rule (rules/settings.yaml) compares the window with the
// kernel's default. The part of its time the window governs is its reads'
// page-cache wait on the device (every read, measured in the kernel) over all
// its syscall time, in the proportion of its readahead events that were
// sequential (each counted alike).
void add_readahead_setting(Evidence& ev) {
    // Judged for the application the verdict names, also where its own
    // breakdown was not measured (a reader of 16 KiB windows waits 0.1 ms a
    // read: readahead_off 99000).
    const Fact* app = judged_application(ev);
    if (!app) return;
    const double app_us = app_syscall_time_us(ev, app->value);
    if (app_us <= 0) return;
    for (const auto& [d, r] : readahead_of(ev, app->value)) {
        if (r.events() <= 0) continue;
        const Labels l{{"device", d}};
        const std::string of = " of " + app->value + "'s readahead on " + d;
        const double seq = r.sequential_events() / r.events();
        ev.add_metric("setting.readahead_sequential_pct", l, 100.0 * seq, "pct",
                      derived("100 x (fs.readahead_sequential_misses + fs.readahead_async) / (fs.readahead_misses + "
                              "fs.readahead_async)" + of));
        ev.add_metric("setting.readahead_unwidened_pct", l, 100.0 * r.unwidened / r.events(), "pct",
                      derived("100 x fs.readahead_unwidened_misses / (fs.readahead_misses + fs.readahead_async)" + of));
        const double wait_pct = std::min(100.0, 100.0 * r.cache_wait_us / app_us);
        ev.add_metric("setting.readahead_cache_wait_pct", l, wait_pct, "pct",
                      derived("100 x fs.page_cache_wait_us of " + app->value + " on " + d +
                              " / its syscall time (syscall.proc.time_us summed)"));
        // What the default window would save: a stream gets one window per
        // device round trip, so its round trips, and its wait where each
        // costs about the same (a device's access time over its transfer),
        // shrink with the window read per miss. That is the larger of the
        // window and the reads it was asked for (a read larger than the
        // window is read whole, mm/readahead.c), which its requests on the
        // device measure: a 64 KiB reader under a 16 KiB window lost half of
        // its wait, not all of it (readahead_off 161001). Where the device
        // moves data slowly for its access time the saving is smaller.
        const Metric* w = ev.find_metric("fs.readahead_window_kb", {{"device", d}, {"app", app->value}});
        const std::optional<double> window_kb = w ? std::optional(w->value) : std::nullopt;
        double saving = 1;
        if (window_kb) {
            const double request_kb = r.requests > 0 ? r.read_bytes / r.requests / 1024 : 0;
            const double read_kb = std::max(*window_kb, request_kb);
            saving = std::clamp(1 - read_kb / kDefaultReadaheadKb, 0.0, 1.0);
            ev.add_metric("setting.readahead_window_kb", l, *window_kb, "KiB",
                          derived("fs.readahead_window_kb of " + app->value + " on " + d +
                                  " (its files' ra_pages, from read_ahead_kb when each was opened)"));
            ev.add_metric("setting.readahead_saving_pct", l, 100 * saving, "pct",
                          derived("1 - the larger of setting.readahead_window_kb and " + app->value +
                                  "'s mean read request on " + d + " (block.submitter.bytes less write_bytes / "
                                  "requests) over the default window of 128 KiB: the part of its round trips "
                                  "the default window would save"));
        }
        // The setting's part: the whole duration of the sequential reads
        // that waited for the page cache (a hit takes microseconds; the wait,
        // and the CPU work and run-queue delay around it, are the miss's),
        // or their wait alone in a bundle without those durations, x the
        // part the default window saves.
        const std::string saved = window_kb ? " x setting.readahead_saving_pct / 100" : "";
        if (r.cache_read_us) {
            const double read_pct = std::min(100.0, 100.0 * *r.cache_read_us / app_us);
            ev.add_metric("setting.readahead_share_pct", l, read_pct * seq * saving, "pct",
                          derived("100 x fs.page_cache_read_us of " + app->value + " on " + d +
                                  " / its syscall time x setting.readahead_sequential_pct / 100" + saved));
        } else {
            ev.add_metric("setting.readahead_share_pct", l, wait_pct * seq * saving, "pct",
                          derived("setting.readahead_cache_wait_pct x setting.readahead_sequential_pct / 100 on " + d +
                                  saved));
        }
    }
}

std::vector<MetricSpec> readahead_setting_specs() {
    using K = MetricSpec::Kind;
    return {
        {"setting.readahead_sequential_pct", K::Metric, "pct", layer::kPageCache, "device",
         "share of the suffering application's readahead events on the device (misses and asynchronous "
         "readaheads) that belonged to sequential reads"},
        {"setting.readahead_unwidened_pct", K::Metric, "pct", layer::kPageCache, "device",
         "share of those events that were sequential misses read no further than the read asked "
         "(read_ahead_kb 0 or no larger than each read)"},
        {"setting.readahead_cache_wait_pct", K::Metric, "pct", layer::kPageCache, "device",
         "share of the suffering application's syscall time its reads waited for the page cache on the device's "
         "files"},
        {"setting.readahead_share_pct", K::Metric, "pct", layer::kPageCache, "device",
         "share of the suffering application's syscall time in its sequential reads of the device that waited "
         "for the page cache (their whole duration): what the readahead window governs"},
        {"setting.readahead_saving_pct", K::Metric, "pct", layer::kPageCache, "device",
         "the part of the reader's round trips (and of its wait, where each costs about the same) that the kernel's "
         "default window would save: the larger of the window and its read requests over 128 KiB, taken from "
         "one (0 at 128 KiB or more)"},
        {"setting.readahead_window_kb", K::Metric, "KiB", layer::kPageCache, "device",
         "the readahead window of the suffering application's files on the device"},
    };
}

}  // namespace iodiag::derive
