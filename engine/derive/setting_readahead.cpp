// Whether the readahead setting explains the suffering application's
// page-cache misses (issue 34, docs/settings.md "readahead").
#include "engine/derive/derive_steps.hpp"

#include <algorithm>
#include <map>

#include "engine/evidence/application_label.hpp"

namespace iodiag::derive {

namespace {

struct Misses {
    double all = 0, sequential = 0, unwidened = 0;
};

// The application's synchronous misses per filesystem device
// (fs.readahead_*{device, app}, bpf/syscall.bpf.c on_sync_ra).
std::map<std::string, Misses> misses_of(const Evidence& ev, const std::string& app) {
    std::map<std::string, Misses> out;
    for (const auto& m : ev.metrics) {
        if (m.name.rfind("fs.readahead_", 0) != 0 || application_label(m.labels) != app) continue;
        const auto d = m.labels.find("device");
        if (d == m.labels.end()) continue;
        if (m.name == "fs.readahead_misses") out[d->second].all += m.value;
        else if (m.name == "fs.readahead_sequential_misses") out[d->second].sequential += m.value;
        else if (m.name == "fs.readahead_unwidened_misses") out[d->second].unwidened += m.value;
    }
    return out;
}

}  // namespace

// A sequential reader's misses are normally rare: the first read of a file
// starts a readahead window, and from then on the kernel reads ahead
// asynchronously as the reader reaches the window's marked page, so the
// reader finds its pages in the cache. With the window at 0 (or no larger
// than what each read asks for) every read of a sequential stream misses,
// and waits for a synchronous device read of its own size: the setting, not
// the application's demand, makes the page cache's time. The share it
// explains is the application's page-cache share in the proportion of its
// misses that were such (each miss counted alike: one device read each).
void add_readahead_setting(Evidence& ev) {
    const Fact* app = ev.find_fact("attr.app.name");
    const Metric* cache_pct = ev.find_metric("attr.sufferer.page_cache_pct");
    if (!app || !cache_pct) return;
    const auto by_device = misses_of(ev, app->value);
    double all = 0;
    for (const auto& [d, m] : by_device) all += m.all;
    if (all <= 0) return;
    for (const auto& [d, m] : by_device) {
        if (m.all <= 0) continue;
        const Labels l{{"device", d}};
        const std::string of = " of " + app->value + "'s page-cache misses on " + d;
        ev.add_metric("setting.readahead_unwidened_pct", l, 100.0 * m.unwidened / m.all, "pct",
                      derived("100 x fs.readahead_unwidened_misses / fs.readahead_misses" + of));
        ev.add_metric("setting.readahead_sequential_pct", l, 100.0 * m.sequential / m.all, "pct",
                      derived("100 x fs.readahead_sequential_misses / fs.readahead_misses" + of));
        ev.add_metric("setting.readahead_share_pct", l, cache_pct->value * m.unwidened / all, "pct",
                      derived("attr.sufferer.page_cache_pct x fs.readahead_unwidened_misses on " + d +
                              " / all its fs.readahead_misses (each miss one synchronous device read)"));
        if (const Metric* w = ev.find_metric("fs.readahead_window_kb", {{"device", d}, {"app", app->value}}))
            ev.add_metric("setting.readahead_window_kb", l, w->value, "KiB",
                          derived("fs.readahead_window_kb of " + app->value + " on " + d +
                                  " (the file's ra_pages when it was opened, from read_ahead_kb then)"));
    }
}

std::vector<MetricSpec> readahead_setting_specs() {
    using K = MetricSpec::Kind;
    return {
        {"setting.readahead_unwidened_pct", K::Metric, "pct", layer::kPageCache, "device",
         "share of the suffering application's page-cache misses on the device that continued a sequential read "
         "with a readahead window no larger than the read (read_ahead_kb 0 or tiny)"},
        {"setting.readahead_sequential_pct", K::Metric, "pct", layer::kPageCache, "device",
         "share of the suffering application's page-cache misses on the device that continued a sequential read"},
        {"setting.readahead_share_pct", K::Metric, "pct", layer::kPageCache, "device",
         "share of the suffering application's slow syscall time the readahead setting explains: its page-cache "
         "share in the proportion of its misses readahead did not widen"},
        {"setting.readahead_window_kb", K::Metric, "KiB", layer::kPageCache, "device",
         "the readahead window of the suffering application's files at its misses on the device"},
    };
}

}  // namespace iodiag::derive
