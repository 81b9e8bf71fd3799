// The bottom-up triage flowchart of seed 000 §8.7 as a Boost.Graph decision
// graph. Vertices are layers; each edge carries the states of its source under
// which the walk continues along it ("layer normal -> look higher", "abnormal
// -> drill down"). The walk visits vertices breadth-first from the device and
// records a trail so the verdict can show how it was reached.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/evidence/layers.hpp"
#include "engine/triage/verdict.hpp"

namespace iodiag {

struct TriageEdge {
    std::string from;
    std::string to;
    std::set<LayerState> when;   // source states that follow this edge
    std::string reason;          // shown in the trail
};

// The graph's edges (bottom-up), exposed for tests and `--explain`.
const std::vector<TriageEdge>& triage_edges();

struct WalkResult {
    std::vector<TrailStep> trail;
    std::set<std::string> visited;
};

// Walks from the device layer. state_of gives each layer's state and summary.
// `layers` are the vertices (edges to a layer not among them are left out).
WalkResult walk_triage(const std::function<LayerState(const std::string&)>& state_of,
                       const std::function<std::string(const std::string&)>& summary_of,
                       const std::vector<std::string>& layers = layer::all());

// The layers a verdict speaks about: the I/O stack's, and Ceph's where a
// collector of the evidence claims them (a host without Ceph has no such rows).
std::vector<std::string> layers_in_play(const Evidence& ev);

}  // namespace iodiag
