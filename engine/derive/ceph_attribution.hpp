// Where a Ceph OSD's client latency goes (seed 004 §1): the device under it,
// the block queue above that device, BlueStore's commit (the kv sync of
// RocksDB), the OSD's op path (messenger dispatch, op queue, PG lock, op
// execution) and waiting for the replicas. Joins the Ceph collector's per-OSD
// figures with the block collectors' figures for the OSD's device. A step of
// add_derived_metrics (derived_metrics.cpp), after the device references it
// joins; the triage reads what it adds (engine/triage/ceph_layers.hpp).
#pragma once

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

}  // namespace iodiag
