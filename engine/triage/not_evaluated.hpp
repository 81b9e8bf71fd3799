// Rules that could not be evaluated (their evidence was missing), summarised
// for the verdict: every one in Verdict::not_evaluated (JSON, Markdown, the
// report, `-v` text), and for the text verdict only those that matter for
// this window, the rest as a count.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"
#include "engine/rules/rules.hpp"
#include "engine/triage/verdict.hpp"

namespace iodiag {

// The devices and cgroups that did I/O in the window: a device that completed
// requests (diskstats or the block tracer), a cgroup whose tasks did I/O or
// were throttled (cgroup v2 io.stat, v1 blkio counters). Global rules and
// instances of other kinds (OSDs, ops, pids) are always in play. An idle loop
// device's missing SMART log or reference latency says nothing about this
// window.
struct InstancesInPlay {
    explicit InstancesInPlay(const Evidence& ev);
    bool contains(const RuleResult& r) const;
    std::set<std::string> devices, cgroups;
};

// Fills v.not_evaluated (every unknown evaluation, one line per rule),
// v.not_evaluated_active (the same for the evaluations whose instance did
// I/O) and v.not_evaluated_idle (how many evaluations the second leaves out).
void summarize_not_evaluated(Verdict& v, const std::vector<const RuleResult*>& unknown, const Evidence& ev);

}  // namespace iodiag
