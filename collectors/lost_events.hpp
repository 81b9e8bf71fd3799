// Events a BPF collector saw but could not account (a full ring buffer, a full
// map, a busy in-flight slot), reported under one name for every collector:
// metric collector.lost_events {collector, what} (unit count, 0 included, so
// "nothing lost" is a measurement), and for each non-zero one the fact
// collector.lost_events_note {collector, what} saying what stays complete
// despite the loss. The verdict renders both (engine/triage/lost_events.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"
#include "engine/evidence/metric_catalog.hpp"

namespace iodiag {

struct LostEventCount {
    std::string what;       // e.g. "exemplars_ringbuf_full"
    uint64_t count = 0;
    std::string complete;   // what stays complete, e.g. "the histograms and stage sums (in-kernel)"
    std::string source;     // where the count was read, e.g. "BPF .bss lost[] of bpf/block.bpf.c"
};

std::vector<MetricSpec> lost_events_specs(const std::string& layer);
void add_lost_events(Evidence& ev, const std::string& collector, const std::vector<LostEventCount>& counts);

}  // namespace iodiag
