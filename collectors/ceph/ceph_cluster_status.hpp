// Cluster-level facts from the monitors: `health detail` (slow ops, clock
// skew, degraded data), `status` (PG states: recovery and backfill eat the
// disks' and the network's bandwidth, seed 004's opening incident) and
// `time-sync-status` (clock skew per monitor). Asked through librados, loaded
// at run time (dlopen), only on a host with local OSDs and a readable client
// keyring: iodiag neither links nor needs Ceph's libraries elsewhere.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace iodiag {

struct HealthCheck {
    std::string severity;   // HEALTH_WARN / HEALTH_ERR
    std::string summary;
    double count = 0;       // the check's own count (slow ops, PGs, ...)
};
struct ClusterHealth {
    std::string status;                        // HEALTH_OK / HEALTH_WARN / HEALTH_ERR
    std::map<std::string, HealthCheck> checks; // SLOW_OPS, MON_CLOCK_SKEW, PG_DEGRADED, ...
};
struct PgSummary {
    double pgs = 0;
    std::map<std::string, double> by_state;   // "active+clean" -> n
    double degraded = 0, recovering = 0, backfilling = 0, peering = 0, undersized = 0;   // PGs in such a state
    std::optional<double> recovering_bytes_per_s;
    std::optional<double> monitors;   // monmap.num_mons
};

struct ClusterStatusParse {
    std::optional<ClusterHealth> health;
    std::optional<PgSummary> pgs;
    std::optional<double> max_clock_skew_s;   // largest |skew| over the monitors
    std::string error;
};
// Pure parsers of the three commands' JSON replies.
std::optional<ClusterHealth> parse_health_detail(std::string_view json);
std::optional<PgSummary> parse_status_pgmap(std::string_view json);
std::optional<double> parse_time_sync_max_skew(std::string_view json);

struct ClusterQueryOptions {
    std::string conf;      // ceph.conf; "" = $CEPH_CONF or /etc/ceph/<cluster>.conf
    std::string keyring;   // "" = $CEPH_KEYRING or /etc/ceph/<cluster>.client.admin.keyring
    std::string cluster = "ceph";
    int timeout_s = 5;     // connect and each command
};
// Connects as client.admin and asks the three commands; error says why not
// (no librados, no readable keyring, the monitors did not answer).
ClusterStatusParse query_cluster_status(const ClusterQueryOptions& opts);

}  // namespace iodiag
