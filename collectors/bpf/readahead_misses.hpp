// Synchronous readahead per filesystem device and application (issue 34:
// whether the readahead setting explains a reader's page-cache misses). The
// syscall BPF collector counts every page_cache_sync_ra in the kernel per
// device and process (bpf/syscall.bpf.c ra_misses); this is the pure step
// from those counts to evidence.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"
#include "engine/evidence/metric_catalog.hpp"

namespace iodiag::syscall_bpf {

struct ReadaheadMisses {
    std::string device;         // the disk whose queue holds read_ahead_kb (a partition's disk)
    std::string app;            // the process's application ("" unknown: "pid N" is shown)
    uint32_t pid = 0;
    uint64_t misses = 0;        // synchronous readahead calls: reads that missed and wait
    uint64_t sequential = 0;    // ...continuing the file's previous read (the kernel's own test)
    uint64_t unwidened = 0;     // ...sequential, with a readahead window no larger than the pages asked for
    uint64_t window_pages = 0;  // sum of the file's readahead window at each miss
    uint64_t async = 0;         // asynchronous readaheads: a sequential read reached a window's marked page
    uint64_t async_window_pages = 0;   // sum of the window at each
    uint64_t cache_wait_ns = 0; // its reads' page-cache wait on the device's files (every read, not only slow ones)
    uint64_t cache_read_ns = 0; // those reads' whole duration

    // Adds another process's counts (not its names).
    void add_counts(const ReadaheadMisses& o) {
        misses += o.misses, sequential += o.sequential, unwidened += o.unwidened, window_pages += o.window_pages;
        async += o.async, async_window_pages += o.async_window_pages, cache_wait_ns += o.cache_wait_ns;
        cache_read_ns += o.cache_read_ns;
    }
};

// The device name readahead is set on for a filesystem's kernel dev_t
// (major << 20 | minor): a partition's disk, "MAJ:MIN" when /sys knows none
// (an anonymous device: btrfs over several, a network filesystem).
std::string readahead_device_name(const std::string& root, uint32_t kernel_dev);

// The (device, application) pairs kept with their own values, most misses
// first; the others are summed per device under kOtherApplications.
inline constexpr size_t kReadaheadApplicationsKept = 32;
inline constexpr const char* kOtherApplications = "(other applications)";

std::vector<MetricSpec> readahead_specs();
// fs.readahead_{misses,sequential_misses,unwidened_misses,async},
// fs.readahead_window_kb and fs.page_cache_wait_us per {device, app}, summed over the processes of
// each application (the kReadaheadApplicationsKept with the most misses).
void emit_readahead(const std::vector<ReadaheadMisses>& misses, uint32_t page_bytes, Evidence& ev);

}  // namespace iodiag::syscall_bpf
