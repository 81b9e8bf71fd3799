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
    uint64_t window_pages = 0;  // sum of the file's readahead window at each call
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
// fs.readahead_{misses,sequential_misses,unwidened_misses} and
// fs.readahead_window_kb per {device, app}, summed over the processes of
// each application (the kReadaheadApplicationsKept with the most misses).
void emit_readahead(const std::vector<ReadaheadMisses>& misses, uint32_t page_bytes, Evidence& ev);

}  // namespace iodiag::syscall_bpf
