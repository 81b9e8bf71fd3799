// Events the collectors saw but could not account (metric collector.lost_events
// {collector, what}, with the fact collector.lost_events_note saying what
// stays complete), gathered for the verdict: a reader must know when a figure
// misses something, and which figures do not.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"

namespace iodiag {

struct LostEvents {
    std::string collector;   // e.g. "syscall_bpf"
    std::string what;        // e.g. "exemplars_ringbuf_full"
    uint64_t count = 0;
    std::string complete;    // what stays complete despite the loss
    std::string source;      // where the count was read
};

// The non-zero ones, by collector then cause.
std::vector<LostEvents> lost_events_of(const Evidence& ev);

}  // namespace iodiag
