#include "engine/triage/triage_graph.hpp"

#include <algorithm>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/filtered_graph.hpp>

#include "engine/evidence/layers.hpp"

namespace iodiag {

namespace {

using S = LayerState;

struct VertexProps {
    std::string layer;
};
struct EdgeProps {
    const TriageEdge* edge = nullptr;
};
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, VertexProps, EdgeProps>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;
using Edge = boost::graph_traits<Graph>::edge_descriptor;

const std::set<S> kAny{S::Abnormal, S::Normal, S::Unjudged, S::NotObserved};
// A layer that was not observed, or not judged, cannot rule its causes out.
const std::set<S> kNotNormal{S::Abnormal, S::Unjudged, S::NotObserved};

// Keeps the edges whose source is in a state that follows them.
struct FollowEdge {
    const Graph* g = nullptr;
    const std::map<Vertex, S>* states = nullptr;
    bool operator()(const Edge& e) const {
        const TriageEdge* te = (*g)[e].edge;
        return te->when.count(states->at(boost::source(e, *g))) > 0;
    }
};

struct RecordOrder : boost::default_bfs_visitor {
    std::vector<Vertex>* order;
    explicit RecordOrder(std::vector<Vertex>* o) : order(o) {}
    template <typename G>
    void discover_vertex(Vertex v, const G&) const { order->push_back(v); }
};

}  // namespace

const std::vector<TriageEdge>& triage_edges() {
    using namespace layer;
    // Seed 000 §8.7: block device first; if it is normal the problem is in the
    // software stack, so look higher. An abnormal layer is drilled into (its
    // findings) and the walk still goes on, because causes stack: a dirty-page
    // storm saturates the device *and* throttles writers.
    static const std::vector<TriageEdge> edges{
        {kDevice, kBlockQueue, kAny, "the device's service time is only part of block latency: check the queue above it"},
        {kBlockQueue, kFilesystem, kAny, "block layer explains only block time: look higher, at the filesystem"},
        {kFilesystem, kJournal, kAny, "fsync latency lives in the journal commit"},
        {kFilesystem, kPageCache, kAny, "reads split into page-cache hits and misses"},
        {kFilesystem, kSyscall, kAny, "compare with what the application waits for: the syscall"},
        {kSyscall, kDirty, kNotNormal, "syscall slow or unseen: are writers throttled on dirty pages?"},
        {kSyscall, kReclaim, kNotNormal, "syscall slow or unseen: is memory reclaimed on the I/O path?"},
        {kSyscall, kLocks, kNotNormal, "syscall slow or unseen: do threads wait on inode locks?"},
        {kSyscall, kCgroup, kNotNormal, "syscall slow or unseen: is a cgroup limit holding the I/O?"},
        // Run-queue delay is measured inside the syscalls too, so the CPU is
        // looked at whatever the syscall's state; when the syscalls are normal
        // it is where the walk ends ("the storage stack is not what is slow").
        {kSyscall, kCpu, kAny, "runnable but not running: application locks or CPU scheduling?"},
        // A Ceph OSD (seed 004): above its device, BlueStore's commit (kv sync
        // of RocksDB); above that, the OSD's op path (dispatch, op queue, PG
        // lock); then the replicas and the network between them.
        {kBlockQueue, kBluestore, kAny, "an OSD's writes wait for BlueStore's commit, itself waiting for this device"},
        {kBluestore, kOsdOp, kAny, "BlueStore explains only the commit: look at the OSD's op queue above it"},
        {kOsdOp, kReplication, kAny, "a client write also waits for its replicas: peers and network"},
        {kOsdOp, kCpu, kNotNormal, "op path slow or unseen: are the OSD's threads starved of CPU?"},
    };
    return edges;
}

std::vector<std::string> layers_in_play(const Evidence& ev) {
    std::vector<std::string> out = layer::all();
    for (const auto& l : layer::ceph())
        for (const auto& c : ev.collectors)
            if (std::find(c.layers.begin(), c.layers.end(), l) != c.layers.end()) {
                out.push_back(l);
                break;
            }
    return out;
}

WalkResult walk_triage(const std::function<LayerState(const std::string&)>& state_of,
                       const std::function<std::string(const std::string&)>& summary_of,
                       const std::vector<std::string>& layers) {
    Graph g;
    std::map<std::string, Vertex> vertex_of;
    for (const auto& l : layers) vertex_of[l] = boost::add_vertex(VertexProps{l}, g);
    for (const auto& e : triage_edges())
        if (vertex_of.count(e.from) && vertex_of.count(e.to))
            boost::add_edge(vertex_of.at(e.from), vertex_of.at(e.to), EdgeProps{&e}, g);

    std::map<Vertex, S> states;
    for (const auto& [name, v] : vertex_of) states[v] = state_of(name);

    FollowEdge follow{&g, &states};
    boost::filtered_graph<Graph, FollowEdge> walkable(g, follow);
    std::vector<Vertex> order;
    boost::breadth_first_search(walkable, vertex_of.at(layer::kDevice), boost::visitor(RecordOrder(&order)));

    WalkResult result;
    for (Vertex v : order) {
        const std::string& name = g[v].layer;
        result.visited.insert(name);
        TrailStep step{name, states.at(v), summary_of(name), ""};
        for (auto [it, end] = boost::out_edges(v, walkable); it != end; ++it) {
            const TriageEdge* te = g[*it].edge;
            if (!step.next.empty()) step.next += "; ";
            step.next += te->to + " (" + te->reason + ")";
        }
        result.trail.push_back(std::move(step));
    }
    return result;
}

}  // namespace iodiag
