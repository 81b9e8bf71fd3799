// One OSD seen through its admin socket at one instant, and what two such
// snapshots (the window's start and end) put into the evidence: the window's
// deltas of the OSD's latency counters, its op timelines, its threads' CPU and
// run-queue wait, its devices and its op-queue configuration.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "collectors/ceph/ceph_op_tracker.hpp"
#include "collectors/ceph/ceph_osd_host.hpp"
#include "collectors/ceph/ceph_osd_network.hpp"
#include "collectors/ceph/ceph_perf_counters.hpp"
#include "engine/evidence/evidence.hpp"
#include "engine/evidence/metric_catalog.hpp"

namespace iodiag {

struct OsdSnapshot {
    std::string error;   // non-empty: this OSD was not observed, and why
    PerfDump perf;
    std::optional<PerfHistogramParse> histograms;   // absent on versions without `perf histogram dump`
    std::optional<ThreadCpuByGroup> threads;
    int pid = 0;
    double taken_at_s = 0;   // CLOCK_MONOTONIC, for the window length
    double taken_unix = 0;   // wall clock of the same instant, to line the counters up with other sources
    // End snapshot only: the op tracker's dumps.
    std::vector<TrackedOp> ops;   // historic + historic slow + in flight, de-duplicated
    int in_flight = 0;
    double oldest_in_flight_s = 0;
    // End snapshot only: heartbeat round trips to its peers (dump_osd_network 0).
    std::vector<OsdPing> pings;
};

// Configuration read once at the start (`config show`, `version`).
struct OsdConfig {
    std::string version;       // "16.2.15"
    std::string osd_data;      // data directory
    std::string op_queue;      // wpq / mclock_scheduler
    std::string mclock_profile;
    double op_shards = 0, op_threads_per_shard = 0;   // effective for the OSD's device type
    double complaint_time_s = 30;
    double recovery_max_active = 0, max_backfills = 0;
    OsdDevices devices;
    std::optional<bool> rotational;   // of the block device, from sysfs
};

// Parses `config show` JSON into the fields above (devices and rotational are
// filled by the caller); nullopt when it is not a JSON object.
std::optional<OsdConfig> parse_osd_config(std::string_view json, std::optional<bool> rotational);

// Appends one OSD's window to the evidence. window_start_unix bounds which
// tracked ops belong to the window.
void add_osd_evidence(const OsdSocket& sock, const OsdConfig& cfg, const OsdSnapshot& before,
                      const OsdSnapshot& after, double window_start_unix, Evidence& ev);

// Every name add_osd_evidence (and the collector's cluster facts) may emit.
std::vector<MetricSpec> ceph_metric_specs();

}  // namespace iodiag
