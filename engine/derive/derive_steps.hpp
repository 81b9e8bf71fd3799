// The steps of add_derived_metrics (derived_metrics.cpp), one file per layer
// of what they derive, and the few helpers they share. Internal to
// engine/derive: the rest of the engine includes derived_metrics.hpp.
//
//   device_reference.cpp   reference latencies, effective device classes
//   ceph_attribution.cpp   a Ceph OSD's latency split into its layers (ceph_attribution.hpp)
//   device_judgement.cpp   each device's D2C distribution, its share of the wait
//   io_scheduler_part.cpp  the I/O scheduler's part of the applications' wait
//   device_submitters.cpp  who submitted a device's requests, their own wait
//   device_stack.cpp       stacked devices walked top to bottom
//   cgroup.cpp             cgroups joined to lost time and to limits below
//   page_cache.cpp         whether the page cache is losing pages
//   setting_readahead.cpp  whether the readahead setting explains the misses
//   setting_sync_writes.cpp whether a sync mount or attribute explains the write waits
//   setting_ioprio.cpp     whether the idle I/O class explains the scheduler wait
//   sufferer.cpp           the application that suffered most, its shares
//   who.cpp                who suffered most, every field of one process
//   fsync_chain.cpp        fsync -> journal -> the I/O it carries
//   contention*.cpp        who else used the device, the CPUs, the commits
//   slow_floor.cpp         absolute floors under the relative slow set
//   layer_judgement.cpp    whether a layer's time is a fault (the judgement model)
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/derive/derived_metrics.hpp"
#include "engine/evidence/evidence.hpp"
#include "engine/evidence/histogram.hpp"
#include "engine/evidence/layers.hpp"
#include "engine/evidence/metric_catalog.hpp"

namespace iodiag::derive {

// ---- shared helpers (derive_support.cpp) ----
Provenance derived(const std::string& formula);
double metric_or(const Evidence& ev, const std::string& name, const Labels& l, double fallback);
// A label's value, "" when the labels have none.
std::string label_of(const Labels& l, const std::string& key);
// The device a device's I/O lands on: a loop device's backing disk, a dm/md
// device's single member. Empty when none is known.
std::string lower_device(const Evidence& ev, const std::string& device);
// Every device that is another device's lower device.
std::set<std::string> lower_devices(const Evidence& ev);
// All of an application's traced syscall time (syscall.proc.time_us summed).
double app_syscall_time_us(const Evidence& ev, const std::string& app);
// The application the verdict judges (attr.who.app, who.cpp: the one that
// suffered most, the one given by --victim, or, where none of its syscalls
// reached the exemplars' 1 ms so that its own breakdown (attr.app.*) was not
// measured, the one with the most syscall time); nullptr without one.
const Fact* judged_application(const Evidence& ev);
// ---- the service an application runs in (application_service.cpp) ----
// The systemd unit, container or pod a cgroup label holds (its cgroup.name,
// where cgroup.kind is one of those), "" for a slice, scope or plain cgroup.
std::string service_of_cgroup(const Evidence& ev, const std::string& cgroup);
// That of a process (its cgroup in syscall.proc.time_us), "" when unknown.
std::string service_of_pid(const Evidence& ev, const std::string& pid);
// That of all of an application's processes, "" when none or several.
std::string service_of_app(const Evidence& ev, const std::string& app);
// The pid in io.top_writer's "APP (pid N)", "" when it has none.
std::string top_writer_pid(const std::string& top_writer);
// The kernel's default readahead window (VM_READAHEAD_PAGES, include/linux/mm.h):
// the readahead setting's reference (setting_readahead.cpp, layer_judgement.cpp).
inline constexpr double kDefaultReadaheadKb = 128;
// fn(device, metric) for each metric whose name starts with `prefix`, of
// application `app` (its app label), with a device label: an application's
// per-device counts, which the settings' steps add up.
void for_each_device_metric_of(const Evidence& ev, const std::string& prefix, const std::string& app,
                               const std::function<void(const std::string&, const Metric&)>& fn);
// The count and time (bucket midpoints) of a log2 histogram's values in
// buckets that start at or above bound_us.
std::pair<double, double> at_or_above(const Log2Histogram& h, double bound_us);
// The window's fsync-family calls (syscall.latency_us of op fsync, which
// counts fdatasync too, and sync_file_range) in one histogram.
Log2Histogram fsync_family_latency(const Evidence& ev);

// ---- the steps, in the order add_derived_metrics runs them ----
void add_effective_classes(Evidence& ev);        // device_reference.cpp
void add_sufferer_shares(Evidence& ev);          // sufferer.cpp
void add_device_judgement(Evidence& ev);         // device_judgement.cpp
void add_submitter_whole_shares(Evidence& ev);   // device_submitters.cpp
void add_cache_eviction(Evidence& ev);           // page_cache.cpp
void add_stack_chains(Evidence& ev);             // device_stack.cpp
void add_cgroup_join(Evidence& ev);              // cgroup.cpp
void add_limits_below(Evidence& ev);             // cgroup.cpp
void add_top_app(Evidence& ev);                  // sufferer.cpp
void add_who(Evidence& ev);                      // who.cpp
void add_fsync_chain(Evidence& ev);              // fsync_chain.cpp
void add_contention(Evidence& ev);               // contention.cpp (contention.hpp)
void add_device_throughput(Evidence& ev);        // device_throughput.cpp
void add_readahead_setting(Evidence& ev);        // setting_readahead.cpp
void add_sync_writes_setting(Evidence& ev);      // setting_sync_writes.cpp
void add_ioprio_setting(Evidence& ev);           // setting_ioprio.cpp
void add_request_size_setting(Evidence& ev);     // setting_request_size.cpp
void add_discard_setting(Evidence& ev);          // setting_discard.cpp
void add_dirty_limit_setting(Evidence& ev);      // setting_dirty_limit.cpp
// (add_slow_floors, slow_floor.cpp, then:)
void add_judgement(Evidence& ev);                // layer_judgement.cpp

// The I/O scheduler's part (io_scheduler_part.cpp), used by the device judgement:
// the part of a device's requests' block time (Q2C) that they spent in its
// I/O scheduler (block_rq_insert -> block_rq_issue), and how that was
// estimated: from the requests at or above the slow syscalls' lower bound
// (the metric `bound_name`) where the histograms allow, else (and for an
// empty name) from the totals.
struct SchedulerPart {
    double fraction;
    std::string how;
};
std::optional<SchedulerPart> scheduler_part(const Evidence& ev, const Labels& l, const std::string& bound_name,
                                            double q2c_total);
void add_io_scheduler_parts(Evidence& ev, const std::map<std::string, double>& q2c_total,
                            const std::set<std::string>& lower, double top_total);

// ---- what each step can emit ----
std::vector<MetricSpec> device_reference_specs();
std::vector<MetricSpec> device_judgement_specs();
std::vector<MetricSpec> io_scheduler_part_specs();
std::vector<MetricSpec> device_submitter_specs();
std::vector<MetricSpec> device_stack_specs();
std::vector<MetricSpec> cgroup_specs();
std::vector<MetricSpec> page_cache_specs();
std::vector<MetricSpec> sufferer_specs();
std::vector<MetricSpec> who_specs();
std::vector<MetricSpec> fsync_chain_specs();
std::vector<MetricSpec> contention_specs();
std::vector<MetricSpec> device_throughput_specs();
std::vector<MetricSpec> readahead_setting_specs();
std::vector<MetricSpec> sync_writes_setting_specs();
std::vector<MetricSpec> ioprio_setting_specs();
std::vector<MetricSpec> request_size_setting_specs();
std::vector<MetricSpec> discard_setting_specs();
std::vector<MetricSpec> dirty_limit_setting_specs();
std::vector<MetricSpec> judgement_specs();

}  // namespace iodiag::derive
