// Whether a lowered dirty limit explains the writers' pauses (issue 34,
// docs/settings.md "Dirty limits below the kernel's default").
#include "engine/derive/derive_steps.hpp"

namespace iodiag::derive {

namespace {
// The kernel's defaults (mm/page-writeback.c: vm_dirty_ratio = 20,
// dirty_background_ratio = 10), percent of the dirtyable memory.
constexpr double kDefaultDirtyRatioPct = 20;
constexpr double kDefaultBackgroundRatioPct = 10;
}  // namespace

// balance_dirty_pages lets a writer dirty pages freely while the dirty and
// writeback pages stay under the freerun ceiling, halfway between the
// background limit and the limit (dirty_freerun_ceiling), and pauses it above
// that so that it dirties no faster than writeback cleans. A limit someone
// lowered (vm.dirty_bytes, or vm.dirty_ratio below 20) moves that ceiling
// down: a writer whose whole burst would have fitted under the default
// ceiling is paced at the device's speed instead of memory's. What is
// measured: the limit and the dirtyable memory the kernel computes it from
// (collectors/procfs/dirty_limits.cpp), and the bytes the window's writers
// dirtied (/proc/[pid]/io). Those bytes were dirtied under the pauses, so
// they are at most what the writers would have dirtied unpaused: fewer than
// the default ceiling is necessary for the default to have spared them all,
// not proof of it (docs/settings.md says so).
void add_dirty_limit_setting(Evidence& ev) {
    const Metric* dirtyable = ev.find_metric("dirty.dirtyable_bytes");
    const Metric* limit = ev.find_metric("dirty.limit_bytes");
    if (!dirtyable || !limit || dirtyable->value <= 0) return;
    // Copied out: adding metrics below may move the vector these point into.
    const double memory = dirtyable->value, limit_bytes = limit->value;
    const double default_limit = kDefaultDirtyRatioPct / 100 * memory;
    const double default_freerun = (kDefaultDirtyRatioPct + kDefaultBackgroundRatioPct) / 200 * memory;
    ev.add_metric("setting.dirty_limit_default_bytes", {}, default_limit, "bytes",
                  derived("the kernel's default dirty limit: vm_dirty_ratio 20 % (mm/page-writeback.c) x "
                          "dirty.dirtyable_bytes"));
    ev.add_metric("setting.dirty_limit_of_default_pct", {}, 100 * limit_bytes / default_limit, "pct",
                  derived("100 x dirty.limit_bytes / setting.dirty_limit_default_bytes"));
    ev.add_metric("setting.dirty_freerun_default_bytes", {}, default_freerun, "bytes",
                  derived("dirty_freerun_ceiling() under the default ratios: (20 % + 10 %) / 2 x "
                          "dirty.dirtyable_bytes"));
    if (const Metric* dirtied = ev.find_metric("io.write_bytes_dirtied"))
        ev.add_metric("setting.dirtied_of_default_freerun_pct", {}, 100 * dirtied->value / default_freerun, "pct",
                      derived("100 x io.write_bytes_dirtied / setting.dirty_freerun_default_bytes: the window's "
                              "dirtied bytes against the ceiling under which the default limits pause nobody"));
}

std::vector<MetricSpec> dirty_limit_setting_specs() {
    using K = MetricSpec::Kind;
    const std::string d = layer::kDirty;
    return {
        {"setting.dirty_limit_default_bytes", K::Metric, "bytes", d, "",
         "the dirty limit the kernel's default ratio (20 %) gives on this memory"},
        {"setting.dirty_limit_of_default_pct", K::Metric, "pct", d, "",
         "the dirty limit in force as a share of the kernel's default"},
        {"setting.dirty_freerun_default_bytes", K::Metric, "bytes", d, "",
         "the freerun ceiling under the default ratios: dirty pages below it pause no writer"},
        {"setting.dirtied_of_default_freerun_pct", K::Metric, "pct", d, "",
         "the bytes dirtied in the window as a share of the default freerun ceiling"},
    };
}

}  // namespace iodiag::derive
