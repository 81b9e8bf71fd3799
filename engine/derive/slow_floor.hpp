// Absolute floors under the slow set. The slow set is relative: the slowest
// syscalls of the window (its p99), whatever they cost. On a healthy machine
// its slowest operations are ordinary page-cache misses of tens of
// microseconds, or the tail of fsyncs that are fast on the whole; a layer
// holding most of that time is not a fault. The rules that judge the slow set
// at warning level also require that it is slow in absolute terms, against
// the reference of the device it waits on or a documented floor.
#pragma once

#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"
#include "engine/evidence/metric_catalog.hpp"

namespace iodiag {

// One 4K read of the fastest flash class (seed 000 §3.1: NVMe 70-120 us):
// what a slow set must wait on average besides for a CPU, and what a
// device's request must take at least to be a stall.
inline constexpr double kFastestFlashReadUs = 120;

// The syscall collector's classes (attr.slow.<class>_us / _pct).
const std::vector<std::string>& slow_set_classes();

std::vector<MetricSpec> slow_floor_specs();
// Adds attr.slow.mean_wait_us, attr.slow.floor_us, attr.slow.fsync_floor_us,
// attr.slow.fsync_over_floor_pct and attr.slow.waited_device where their inputs are measured. Needs the
// device references and shares (add_derived_metrics runs it after them).
void add_slow_floors(Evidence& ev);

}  // namespace iodiag
