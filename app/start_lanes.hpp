// The slow starters' start() calls (BPF loads and attaches), scheduled on the
// CPUs this process may use.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "collectors/collector.hpp"

namespace iodiag::cli {

// CPUs this process may run on (1 if unknown).
size_t usable_cpus();

// Calls start_one(i) for every slow starter i of `collectors` and returns once
// all have returned. The BPF collectors load independent objects: the kernel
// verifies them in parallel, so the start costs the slowest lane, not their
// sum. Starters that mostly wait (start_cpu_weight 0) get a thread each; the
// CPU-bound ones share `lanes` threads, heaviest first: on two cores the
// heaviest then has a core to itself instead of a third of two, and a lane's
// second load reuses the heap its first one freed (fewer page faults). A start
// that throws does not stop the others: once all have returned, a CPU-bound
// one's exception is rethrown first, then a waiting one's.
void start_slow_starters(const std::vector<std::unique_ptr<Collector>>& collectors,
                         const std::function<void(size_t)>& start_one, size_t lanes);

// Calls fn(item) for every item, on up to `lanes` threads (the caller's one
// of them), each taking the next item not yet taken. An item that throws does
// not stop the others; the first such exception, in the items' order, is
// rethrown once all have returned.
void run_on_lanes(const std::vector<size_t>& items, const std::function<void(size_t)>& fn, size_t lanes);

// Calls start_one(i) for every other collector (the snapshots: /proc walks,
// sysfs and procfs reads) on run_on_lanes: called once the slow starters are
// done, right before the window, when the cores are free again.
void start_fast_starters(const std::vector<std::unique_ptr<Collector>>& collectors,
                         const std::function<void(size_t)>& start_one, size_t lanes);

}  // namespace iodiag::cli
