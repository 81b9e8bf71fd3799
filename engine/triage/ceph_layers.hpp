// The Ceph layers in the triage. Reads the per-OSD attribution that
// engine/derive/ceph_attribution.hpp derived (ceph.osd.*_pct,
// ceph.osd.client_time_ms); derives nothing itself.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"

namespace iodiag {

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
