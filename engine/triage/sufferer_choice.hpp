// Who the verdict is about when nobody said (issue 33): the application that
// lost the most time to other programs, not the one with the most slow time.
//
// A backup streaming 1 MiB reads has the slowest syscalls of the machine
// because its requests are large and many; the 4 KiB reader beside it waits
// behind them. Ranked by slow time, the backup would be judged, and from its
// side the device serves "its own demand". Each application the collector
// broke down (attr.apps.*) is therefore looked at as if it suffered most, and
// what other programs cost it is measured the way the contention findings
// measure it (docs/contention.md): its wait on a device while the device
// served others, its run-queue delay behind others' CPU time, its fsync
// chain carrying others' data. The one that lost most is the victim; a bulk
// job whose time is its own is never chosen over it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/derive/contention.hpp"
#include "engine/evidence/evidence.hpp"

namespace iodiag {

struct SuffererCandidate {
    std::string app;
    double slow_us = 0;     // its slow syscalls' time (attr.app.time_us as if it suffered)
    double lost_pct = 0;    // the part of it other programs cost it
    std::string lost_to;    // where: "device vdb 62 %; cpu 3 %"
    double lost_us() const { return slow_us * lost_pct / 100; }
};

// What other programs cost `app`, read from its evidence derived as if it
// suffered most (attr.app.* its own): the contention shares of its slow time,
// summed over the resources (a device's, the CPU's, the journal's: disjoint
// parts of its time) and capped at all of it.
SuffererCandidate time_lost_to_others(const Evidence& as_if, const std::string& app);

// A candidate must have lost at least kLostToOthersMinPct of its slow time
// to others (engine/derive/contention.hpp) to be chosen over the application
// with the most slow time; below it, who ranks first by slow time stays.
using derive::kLostToOthersMinPct;

// The index of the candidate the verdict should be about, when it is not the
// first (candidates[0], the one with the most slow time): the one that lost
// the most time to others, if it lost more than the first did and at least
// kLostToOthersMinPct of its own slow time. nullopt: keep the first.
std::optional<size_t> choose_sufferer(const std::vector<SuffererCandidate>& candidates);

// Why it was chosen, every candidate's figures, for the provenance.
std::string choice_reason(const std::vector<SuffererCandidate>& candidates, size_t chosen);

}  // namespace iodiag
