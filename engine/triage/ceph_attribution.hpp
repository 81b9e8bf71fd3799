// Where a Ceph OSD's client latency goes (seed 004 §1): the device under it,
// the block queue above that device, BlueStore's commit (the kv sync of
// RocksDB), the OSD's op path (messenger dispatch, op queue, PG lock, op
// execution) and waiting for the replicas. Joins the Ceph collector's per-OSD
// figures with the block collectors' figures for the OSD's device.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"
#include "engine/evidence/metric_catalog.hpp"

namespace iodiag {

// Adds, per OSD (label "osd"): the joined device figures
// (ceph.osd.device_await_ms, ...), the decomposition of its mean client write
// and read latency (ceph.osd.write_<part>_ms / _pct, read_..., and the
// time-weighted ceph.osd.<part>_pct over both), its CPU-wait estimate and,
// for replica waits, its slowest local peer. Parts: device, block_queue,
// bluestore, op_queue, replica_wait, other.
void add_ceph_derived_metrics(Evidence& ev);
std::vector<MetricSpec> ceph_derived_metric_specs();

// True for a rule about Ceph (per OSD, or on a Ceph layer) when no Ceph
// collector reported: such a host has no OSDs, and the Ceph rules say nothing
// there, not even "not evaluated".
bool ceph_rule_out_of_play(const std::string& rule_layer, const std::string& rule_for_each,
                           const std::vector<std::string>& layers_in_play);

// For the per-layer table: the share of the layer in the client latency of
// the OSD with the most client time (the one an operator looks at first), and
// what it is a share of; nullopt when no OSD had client ops.
struct CephLayerShare {
    double pct = 0;
    std::string basis;   // "of osd.1's client op time"
};
std::optional<CephLayerShare> ceph_layer_share(const Evidence& ev, const std::string& layer);
// Key figures of a Ceph layer, per OSD (worst first).
std::string ceph_layer_figures(const Evidence& ev, const std::string& layer);

}  // namespace iodiag
