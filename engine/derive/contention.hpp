// Contention: who else used what the suffering application waited for — the
// device's service time, the CPUs, the data in the journal commits — and
// which part of its slow time that explains (rules/contention.yaml). One file
// per resource; add_contention (contention.cpp) runs them in order, after the
// device judgement (it needs device.io_wait_share_pct).
#pragma once

#include <string>
#include <vector>

#include "engine/derive/derive_steps.hpp"

namespace iodiag::derive {

// Others hold most of a resource the application waited on: most of the
// device service time its requests queued behind, or of the data the journal
// commits it waited for carried, was another program's (below half, its own
// load is the larger part; one application keeping a fast device busy alone
// is healthy). The one bar of "contended", for the contention rules, the
// device rules and the judgement model alike.
inline constexpr double kOthersMajorityPct = 50;

// What others cost an application on a device is judged on the device's time
// while its own requests were in it (device.others_overlap_pct): there, others
// served a third of that time or more means its requests took 1.5x what their
// own service needed or longer, the slowdown at which a victim suffers (issue
// 33's bar). Over the whole window's busy time a paced bulk job's bursts are
// averaged away (a backup at 30 % of a volume's cap: 33 % of the busy time,
// 49 % of the time a depth-1 reader's requests were in the device).
inline constexpr double kOthersCostlyPct = 100.0 / 3;

// The part of its slow time an application must lose to others (or to a
// setting) for that loss to be its cause: the bar at which the judgement
// model says an application really waits (a quarter of its time,
// docs/judgement.md). The sufferer choice (engine/triage/sufferer_choice.hpp)
// and the settings' judgement (layer_judgement.cpp) use it alike.
inline constexpr double kLostToOthersMinPct = 25;

void add_device_contention(Evidence& ev);         // contention_device.cpp
void add_cpu_contention(Evidence& ev);            // contention_cpu.cpp
void add_journal_contention(Evidence& ev);        // contention_journal.cpp
// The names people use for the neighbors' cgroups (cgroup.name, cgroup.kind
// of the cgroup label), copied next to each neighbor fact (contention_names.cpp).
void add_neighbor_cgroup_names(Evidence& ev);

// The part of the window's dirtied data (/proc/PID/io write_bytes) the
// application's processes dirtied, 0..1; -1 when not measured.
double sufferer_dirtied_fraction(const Evidence& ev, const std::string& app);

std::vector<MetricSpec> device_contention_specs();
std::vector<MetricSpec> cpu_contention_specs();
std::vector<MetricSpec> journal_contention_specs();
std::vector<MetricSpec> neighbor_name_specs();

}  // namespace iodiag::derive
