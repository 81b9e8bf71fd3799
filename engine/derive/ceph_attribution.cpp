#include "engine/derive/ceph_attribution.hpp"

#include <algorithm>
#include <map>

#include "engine/evidence/layers.hpp"

namespace iodiag {

namespace {

const char* const kParts[] = {"device", "block_queue", "bluestore", "op_queue", "replica_wait", "other"};

std::optional<double> metric(const Evidence& ev, const std::string& name, const Labels& l) {
    const Metric* m = ev.find_metric(name, l);
    if (!m) return std::nullopt;
    return m->value;
}

// Time requests of the given ops spent in the block layer (Q2C) and in the
// device (D2C) on `device` over the window, in ms: from the block tracer, or,
// without it, the diskstats await x completions (queue and device together).
struct BlockTime {
    double q2c_ms = 0;
    std::optional<double> d2c_ms;   // absent: only diskstats, the split is unknown
    std::string source;
};
std::optional<BlockTime> block_time(const Evidence& ev, const std::string& device, const std::vector<std::string>& ops) {
    BlockTime t;
    bool traced = false;
    double d2c = 0;
    for (const auto& op : ops) {
        const Labels l{{"device", device}, {"op", op}};
        if (auto q = metric(ev, "block.q2c_total_us", l)) {
            traced = true;
            t.q2c_ms += *q / 1000.0;
            d2c += metric(ev, "block.d2c_total_us", l).value_or(0) / 1000.0;
        }
    }
    std::string names;
    for (const auto& op : ops) names += (names.empty() ? "" : "+") + op;
    if (traced || metric(ev, "block.requests", {{"device", device}})) {
        t.d2c_ms = d2c;
        t.source = "block tracer: Σ Q2C and Σ D2C of " + names + " requests on " + device;
        return t;
    }
    // diskstats: Δticks = await x completions; no split between queue and device.
    const double window = ev.window.duration_s;
    if (window <= 0) return std::nullopt;
    bool any = false;
    for (const auto& op : ops) {
        const std::string dir = op == "flush" ? "flush" : op;
        auto await = metric(ev, "disk." + dir + "_await_ms", {{"device", device}});
        auto iops = metric(ev, "disk." + dir + "_iops", {{"device", device}});
        if (await && iops) {
            t.q2c_ms += *await * *iops * window;
            any = true;
        }
    }
    if (!any) return std::nullopt;
    t.source = "diskstats: await x completions of " + names + " on " + device + " (no block tracer: queue and device not split)";
    return t;
}

struct Parts {
    std::map<std::string, double> ms;   // part -> ms per op
    double total_ms = 0;                // the measured mean latency
    double ops = 0;
    std::string formula;
};

void put_parts(Evidence& ev, const Labels& l, const std::string& dir, const Parts& p) {
    double sum = 0;
    for (const auto& [k, v] : p.ms) sum += v;
    // The parts are means of different counters; when they add up to more
    // than the measured latency (a window edge, overlapping stages), they are
    // scaled to it rather than claiming more than 100 %.
    const double denom = std::max(p.total_ms, sum);
    for (const char* part : kParts) {
        double v = 0;
        if (std::string(part) == "other")
            v = std::max(0.0, p.total_ms - sum);
        else if (auto it = p.ms.find(part); it != p.ms.end())
            v = it->second;
        const Provenance prov{"derived", "derived: ceph " + dir + " attribution: " + p.formula};
        ev.add_metric("ceph.osd." + dir + "_" + part + "_ms", l, v * (denom > 0 ? p.total_ms / denom : 0), "ms", prov);
        ev.add_metric("ceph.osd." + dir + "_" + part + "_pct", l, denom > 0 ? 100.0 * v / denom : 0, "pct", prov);
    }
}

std::optional<Parts> write_parts(Evidence& ev, const Labels& l, const std::string& device) {
    const auto ops = metric(ev, "ceph.osd.client_write_ops", l);
    const auto w = metric(ev, "ceph.osd.client_write_latency_ms", l);
    const auto p = metric(ev, "ceph.osd.client_write_process_ms", l);
    if (!ops || *ops <= 0 || !w || !p) return std::nullopt;
    Parts parts;
    parts.ops = *ops;
    parts.total_ms = *w;
    const double prep = std::min(*p, metric(ev, "ceph.osd.client_write_prepare_ms", l).value_or(0));
    parts.ms["op_queue"] = std::max(0.0, *w - *p) + prep;
    parts.formula = "op_queue = (op_w_latency - op_w_process_latency) + op_w_prepare_latency";
    const auto commit = metric(ev, "ceph.bluestore.commit_ms", l);
    if (!commit) {
        // No BlueStore figures: the rest of the process time is not split.
        parts.ms["replica_wait"] = 0;
        return parts;
    }
    const double c = *commit;
    const double aio = metric(ev, "ceph.bluestore.state_aio_wait_ms", l).value_or(0);
    const double kv = metric(ev, "ceph.bluestore.state_kv_queued_ms", l).value_or(0) +
                      metric(ev, "ceph.bluestore.state_kv_committing_ms", l).value_or(0);
    const double kv_total = metric(ev, "ceph.bluestore.kv_sync_total_ms", l).value_or(0);
    double io = 0;
    std::optional<double> d2c_frac;
    std::string io_source = "no device joined";
    if (!device.empty()) {
        if (auto bt = block_time(ev, device, {"write", "flush"})) {
            // A transaction waits for the kv sync running now, then for its
            // own: it spends in the block layer the share of the kv sync
            // thread's syncing time that the thread spent waiting for its WAL
            // writes and flushes. Two bounds on that share: the block layer's
            // total time on the device (requests overlap, so it may exceed
            // it), and the time the thread was neither running nor waiting
            // for a CPU (schedstat; it may also be blocked on a lock).
            double f_blk = kv_total > 0 ? std::min(1.0, bt->q2c_ms / kv_total) : 1.0;
            std::string bound = "min(1, Σ block time of write+flush requests (" + bt->source + ") / Σ bluestore.kv_sync_lat";
            if (auto on_cpu = metric(ev, "ceph.osd.kv_sync_thread_cpu_ms", l); on_cpu && kv_total > 0) {
                f_blk = std::min(f_blk, std::max(0.0, 1.0 - *on_cpu / kv_total));
                bound += ", 1 - kv sync thread's run time and run-queue wait / Σ bluestore.kv_sync_lat";
            }
            io = std::min(c, aio + kv * f_blk);
            if (bt->d2c_ms && bt->q2c_ms > 0) d2c_frac = std::min(1.0, *bt->d2c_ms / bt->q2c_ms);
            io_source = bt->source;
            ev.add_metric("ceph.osd.kv_sync_block_pct", l, 100.0 * f_blk, "pct", {"derived", "derived: " + bound + ")"});
        }
    }
    const double device_ms = d2c_frac ? io * *d2c_frac : io;
    parts.ms["device"] = device_ms;
    parts.ms["block_queue"] = io - device_ms;
    parts.ms["bluestore"] = c - io;
    parts.ms["replica_wait"] = std::max(0.0, *p - prep - c);
    parts.formula += "; bluestore commit C = commit_lat split into block time io = state_aio_wait + "
                     "(state_kv_queued + state_kv_commiting) x kv_sync_block_pct (" + io_source +
                     "), device = io x ΣD2C/ΣQ2C" + (d2c_frac ? "" : " (no D2C: all of io)") +
                     ", block_queue = io - device, bluestore = C - io; replica_wait = max(0, op_w_process_latency - "
                     "prepare - C); other = what is left";
    return parts;
}

std::optional<Parts> read_parts(Evidence& ev, const Labels& l, const std::string& device) {
    const auto ops = metric(ev, "ceph.osd.client_read_ops", l);
    const auto w = metric(ev, "ceph.osd.client_read_latency_ms", l);
    const auto p = metric(ev, "ceph.osd.client_read_process_ms", l);
    if (!ops || *ops <= 0 || !w || !p) return std::nullopt;
    Parts parts;
    parts.ops = *ops;
    parts.total_ms = *w;
    const double read_total = metric(ev, "ceph.bluestore.read_total_ms", l).value_or(0) / *ops;
    const double aio = std::min(read_total, metric(ev, "ceph.bluestore.read_wait_aio_total_ms", l).value_or(0) / *ops);
    std::optional<double> d2c_frac;
    std::string source = "no device joined";
    if (!device.empty())
        if (auto bt = block_time(ev, device, {"read"}); bt && bt->d2c_ms && bt->q2c_ms > 0) {
            d2c_frac = std::min(1.0, *bt->d2c_ms / bt->q2c_ms);
            source = bt->source;
        }
    const double device_ms = d2c_frac ? aio * *d2c_frac : aio;
    parts.ms["device"] = device_ms;
    parts.ms["block_queue"] = aio - device_ms;
    parts.ms["bluestore"] = read_total - aio;
    parts.ms["op_queue"] = std::max(0.0, *w - *p) + std::max(0.0, *p - read_total);
    parts.ms["replica_wait"] = 0;
    parts.formula = "per client read: device/block_queue = Σ bluestore read_wait_aio_lat / reads split by ΣD2C/ΣQ2C (" +
                    source + "), bluestore = Σ (read_lat - read_wait_aio_lat) / reads, op_queue = (op_r_latency - "
                    "op_r_process_latency) + the rest of the process time";
    return parts;
}

void join_device(Evidence& ev, const Labels& l, const std::string& device) {
    const Labels d{{"device", device}};
    const std::pair<const char*, const char*> metrics[] = {
        {"disk.await_ms", "ceph.osd.device_await_ms"},
        {"disk.write_await_ms", "ceph.osd.device_write_await_ms"},
        {"disk.read_await_ms", "ceph.osd.device_read_await_ms"},
        {"disk.util_pct", "ceph.osd.device_util_pct"},
        {"disk.aqu_sz", "ceph.osd.device_aqu_sz"},
        {"block.d2c_p99_us", "ceph.osd.device_d2c_p99_us"},
        {"block.queue_share_pct", "ceph.osd.device_queue_share_pct"},
    };
    for (const auto& [from, to] : metrics)
        if (const Metric* m = ev.find_metric(from, d))
            ev.add_metric(to, l, m->value, m->unit,
                          {m->provenance.kind, m->provenance.source + " (" + device + ", the device under " +
                                                   l.at("osd") + ")"});
    // iostat's await of the direction that is worse (seed 004 §3.1 reads it
    // per disk): only directions that completed I/O in the window count.
    std::optional<double> worst;
    for (const char* dir : {"read", "write"})
        if (metric(ev, std::string("disk.") + dir + "_iops", d).value_or(0) > 0)
            if (auto a = metric(ev, std::string("disk.") + dir + "_await_ms", d)) worst = std::max(worst.value_or(0), *a);
    if (worst)
        ev.add_metric("ceph.osd.device_worst_await_ms", l, *worst, "ms",
                      {"derived", "derived: max(disk.read_await_ms, disk.write_await_ms) of " + device +
                                      ", directions with I/O in the window"});
    const std::pair<const char*, const char*> facts[] = {{"device.class", "ceph.osd.device_class"},
                                                         {"queue.scheduler", "ceph.osd.device_scheduler"}};
    for (const auto& [from, to] : facts)
        if (const Fact* f = ev.find_fact(from, d))
            ev.add_fact(to, l, f->value, {f->provenance.kind, f->provenance.source + " (" + device + ")"});
}

}  // namespace

void add_ceph_derived_metrics(Evidence& ev) {
    const std::vector<std::string> osds = ev.instances("osd");
    for (const auto& osd : osds) {
        const Labels l{{"osd", osd}};
        const Fact* dev = ev.find_fact("ceph.osd.device", l);
        const std::string device = dev ? dev->value : "";
        if (!device.empty()) join_device(ev, l, device);
        const auto w = write_parts(ev, l, device);
        const auto r = read_parts(ev, l, device);
        if (w) put_parts(ev, l, "write", *w);
        if (r) put_parts(ev, l, "read", *r);
        // Both directions, weighted by the time each took (ops x mean).
        const double tw = w ? w->ops * w->total_ms : 0, tr = r ? r->ops * r->total_ms : 0;
        if (tw + tr > 0) {
            for (const char* part : kParts) {
                double t = 0;
                if (w) t += w->ops * metric(ev, std::string("ceph.osd.write_") + part + "_ms", l).value_or(0);
                if (r) t += r->ops * metric(ev, std::string("ceph.osd.read_") + part + "_ms", l).value_or(0);
                ev.add_metric(std::string("ceph.osd.") + part + "_pct", l, 100.0 * t / (tw + tr), "pct",
                              {"derived", std::string("derived: (writes x ceph.osd.write_") + part +
                                              "_ms + reads x ceph.osd.read_" + part +
                                              "_ms) / client op time (ops x mean latency, both directions)"});
            }
            ev.add_metric("ceph.osd.client_time_ms", l, tw + tr, "ms",
                          {"derived", "derived: client_write_ops x client_write_latency_ms + client_read_ops x client_read_latency_ms"});
        }
        // CPU: the OSD's own software time (op path and BlueStore outside its
        // I/O waits) stretches with its threads' run-queue wait.
        if (auto wait = metric(ev, "ceph.osd.cpu_wait_pct", l))
            if (auto op = metric(ev, "ceph.osd.op_queue_pct", l)) {
                const double soft = *op + metric(ev, "ceph.osd.bluestore_pct", l).value_or(0);
                ev.add_metric("ceph.osd.cpu_wait_share_pct", l, soft * *wait / 100.0, "pct",
                              {"derived", "derived: (ceph.osd.op_queue_pct + ceph.osd.bluestore_pct) x "
                                          "ceph.osd.cpu_wait_pct / 100 (software time spent runnable, not running; an estimate)"});
                const double ops = (w ? w->ops : 0) + (r ? r->ops : 0);
                if (ops > 0)
                    ev.add_metric("ceph.osd.cpu_wait_ms", l, soft / 100.0 * (tw + tr) / ops * *wait / 100.0, "ms",
                                  {"derived", "derived: ceph.osd.cpu_wait_share_pct x mean client op latency (an estimate)"});
            }
    }
    // Replica waits. A primary acknowledges a write when every replica has
    // committed it, so it always waits for its peers: on one host whose OSDs
    // share the load and the disks, that wait is the normal cost of
    // replication (its copies are written on the same kind of disk, at the
    // same pace), not a fault. A peer explains the wait only by how much
    // slower it commits a replica than this host's OSDs normally do: the
    // excess of its replica write latency (subop_w_latency: its queue, its
    // BlueStore commit, its device) over the median of all local OSDs' (one
    // straggler does not move the median of three or more).
    std::vector<double> replica_ms;
    for (const auto& osd : osds)
        if (metric(ev, "ceph.osd.replica_write_ops", {{"osd", osd}}).value_or(0) > 0)
            if (auto ms = metric(ev, "ceph.osd.replica_write_latency_ms", {{"osd", osd}})) replica_ms.push_back(*ms);
    std::optional<double> normal;
    if (replica_ms.size() >= 2) {
        std::sort(replica_ms.begin(), replica_ms.end());
        const size_t n = replica_ms.size();
        normal = n % 2 ? replica_ms[n / 2] : (replica_ms[n / 2 - 1] + replica_ms[n / 2]) / 2;
    }
    for (const auto& osd : osds) {
        const Labels l{{"osd", osd}};
        const Fact* peers = ev.find_fact("ceph.osd.replica_peers", l);
        const auto wait = metric(ev, "ceph.osd.write_replica_wait_ms", l);
        if (!peers || !wait) continue;
        std::vector<std::string> peer_list;
        for (size_t at = 0; at <= peers->value.size();) {
            size_t end = peers->value.find(',', at);
            if (end == std::string::npos) end = peers->value.size();
            peer_list.push_back(peers->value.substr(at, end - at));
            at = end + 1;
        }
        const double replica_share = metric(ev, "ceph.osd.replica_wait_pct", l).value_or(0);
        // The network: every replica write costs the primary a round trip to
        // the replica at least; the OSD's heartbeats measure that round trip
        // to each peer, local or not. The slowest one bounds what the network
        // adds to a write that waits for all its replicas.
        std::string far;
        double far_ms = -1;
        for (const auto& peer : peer_list)
            if (auto ms = metric(ev, "ceph.osd.peer_ping_ms", {{"osd", osd}, {"peer", peer}}); ms && *ms > far_ms)
                far_ms = *ms, far = peer;
        if (!far.empty()) {
            const Provenance net{"derived", "derived: the highest ceph.osd.peer_ping_ms of " + osd +
                                                " to a peer in ceph.osd.replica_peers"};
            ev.add_fact("ceph.osd.slowest_ping_peer", l, far, net);
            ev.add_metric("ceph.osd.replica_ping_ms", l, far_ms, "ms", net);
            // A replica write is the round trip plus the replica's own commit
            // (receipt to commit, measured on the peer when it is on this
            // host), so the network's part of this window's writes is at most
            // the wait that commit leaves. The heartbeats reach back up to a
            // minute and their newest one may have waited behind a burst of
            // CPU (the OSDs starved a minute ago, iodiag's own start): this
            // window's writes bound what they can claim.
            double network_ms = far_ms;
            std::string how = "min(1, ceph.osd.replica_ping_ms / ceph.osd.write_replica_wait_ms)";
            const Labels fl{{"osd", far}};
            if (metric(ev, "ceph.osd.replica_write_ops", fl).value_or(0) > 0)
                if (auto commit = metric(ev, "ceph.osd.replica_write_latency_ms", fl)) {
                    network_ms = std::min(network_ms, std::max(0.0, *wait - *commit));
                    how = "min(1, min(ceph.osd.replica_ping_ms, ceph.osd.write_replica_wait_ms - " + far +
                          "'s ceph.osd.replica_write_latency_ms) / ceph.osd.write_replica_wait_ms)";
                }
            const double explained = *wait > 0 ? std::min(1.0, network_ms / *wait) : 0.0;
            ev.add_metric("ceph.osd.replica_wait_network_pct", l, replica_share * explained, "pct",
                          {"derived", "derived: ceph.osd.replica_wait_pct x " + how +
                                          " (one round trip per replica write)"});
        }
        std::string best;
        double best_ms = -1;
        for (const auto& peer : peer_list)
            if (auto ms = metric(ev, "ceph.osd.replica_write_latency_ms", {{"osd", peer}}); ms && *ms > best_ms) {
                best_ms = *ms;
                best = peer;
            }
        if (best.empty()) continue;   // no peer on this host: only the wait and the round trips are known
        const Labels p{{"osd", best}};
        const Provenance prov{"derived", "derived: the peer in ceph.osd.replica_peers with the highest "
                                         "ceph.osd.replica_write_latency_ms (peers on this host)"};
        ev.add_fact("ceph.osd.slowest_peer", l, best, prov);
        ev.add_metric("ceph.osd.slowest_peer_replica_ms", l, best_ms, "ms", prov);
        if (auto c = metric(ev, "ceph.bluestore.commit_ms", p))
            ev.add_metric("ceph.osd.slowest_peer_commit_ms", l, *c, "ms",
                          {"derived", "derived: ceph.bluestore.commit_ms of the slowest peer " + best});
        if (const Fact* d = ev.find_fact("ceph.osd.device", p))
            ev.add_fact("ceph.osd.slowest_peer_device", l, d->value, prov);
        if (auto share = metric(ev, "ceph.osd.write_device_pct", p))
            ev.add_metric("ceph.osd.slowest_peer_device_pct", l, *share, "pct", prov);
        if (auto a = metric(ev, "ceph.osd.device_write_await_ms", p))
            ev.add_metric("ceph.osd.slowest_peer_device_await_ms", l, *a, "ms",
                          {"derived", "derived: write await of the slowest peer " + best + "'s device (diskstats)"});
        if (!normal) continue;   // one OSD with replica writes: nothing to compare it with
        const Provenance nprov{"derived", "derived: median of ceph.osd.replica_write_latency_ms over this host's " +
                                              std::to_string(replica_ms.size()) + " OSDs with replica writes"};
        ev.add_metric("ceph.osd.normal_replica_ms", l, *normal, "ms", nprov);
        const double excess = std::max(0.0, best_ms - *normal);
        ev.add_metric("ceph.osd.slowest_peer_excess_ms", l, excess, "ms",
                      {"derived", "derived: max(0, ceph.osd.slowest_peer_replica_ms - ceph.osd.normal_replica_ms)"});
        const double explained = *wait > 0 ? std::min(100.0, 100.0 * excess / *wait) : 0.0;
        ev.add_metric("ceph.osd.replica_wait_explained_pct", l, explained, "pct",
                      {"derived", "derived: min(100, ceph.osd.slowest_peer_excess_ms / ceph.osd.write_replica_wait_ms)"});
        if (metric(ev, "ceph.osd.replica_wait_pct", l))
            ev.add_metric("ceph.osd.replica_wait_peer_pct", l, replica_share * explained / 100.0, "pct",
                          {"derived", "derived: ceph.osd.replica_wait_pct x ceph.osd.replica_wait_explained_pct / 100 "
                                      "(the client op time the slowest peer's excess costs)"});
    }
}

std::vector<MetricSpec> ceph_derived_metric_specs() {
    using K = MetricSpec::Kind;
    std::vector<MetricSpec> v;
    auto m = [&](std::string name, std::string unit, std::string l, std::string desc) {
        v.push_back({std::move(name), K::Metric, std::move(unit), std::move(l), "osd", std::move(desc)});
    };
    const std::map<std::string, std::string> part_layer{
        {"device", layer::kDevice}, {"block_queue", layer::kBlockQueue}, {"bluestore", layer::kBluestore},
        {"op_queue", layer::kOsdOp}, {"replica_wait", layer::kReplication}, {"other", ""}};
    for (const char* part : kParts) {
        const std::string& l = part_layer.at(part);
        for (const char* dir : {"write", "read"}) {
            m(std::string("ceph.osd.") + dir + "_" + part + "_ms", "ms", l,
              std::string("Part of the OSD's mean client ") + dir + " latency in " + part);
            m(std::string("ceph.osd.") + dir + "_" + part + "_pct", "pct", l,
              std::string("Share of the OSD's mean client ") + dir + " latency in " + part);
        }
        m(std::string("ceph.osd.") + part + "_pct", "pct", l,
          std::string("Share of the OSD's client op time (writes and reads) in ") + part);
    }
    m("ceph.osd.client_time_ms", "ms", layer::kOsdOp, "Client op time of the window: ops x mean latency, both directions");
    m("ceph.osd.kv_sync_block_pct", "pct", layer::kBluestore, "Share of the kv sync thread's time spent waiting in the block layer");
    m("ceph.osd.cpu_wait_share_pct", "pct", layer::kCpu, "Estimated share of the OSD's client op time spent waiting for a CPU");
    m("ceph.osd.cpu_wait_ms", "ms", layer::kCpu, "Estimated time a client op of the OSD waited for a CPU");
    m("ceph.osd.device_worst_await_ms", "ms", layer::kDevice, "The worse of read and write await of the OSD's device (diskstats)");
    m("ceph.osd.device_await_ms", "ms", layer::kDevice, "await of the OSD's device (diskstats)");
    m("ceph.osd.device_write_await_ms", "ms", layer::kDevice, "Write await of the OSD's device (diskstats)");
    m("ceph.osd.device_read_await_ms", "ms", layer::kDevice, "Read await of the OSD's device (diskstats)");
    m("ceph.osd.device_util_pct", "pct", layer::kDevice, "Utilisation of the OSD's device (diskstats)");
    m("ceph.osd.device_aqu_sz", "requests", layer::kDevice, "Mean queue depth of the OSD's device (diskstats)");
    m("ceph.osd.device_d2c_p99_us", "us", layer::kDevice, "D2C p99 of the OSD's device (block tracer)");
    m("ceph.osd.device_queue_share_pct", "pct", layer::kBlockQueue, "Share of block time in the queue on the OSD's device");
    m("ceph.osd.slowest_peer_replica_ms", "ms", layer::kReplication, "Replica write latency of the slowest local peer");
    m("ceph.osd.slowest_peer_device_pct", "pct", layer::kReplication, "Share of the slowest peer's own write latency in its device");
    m("ceph.osd.slowest_peer_commit_ms", "ms", layer::kReplication, "BlueStore commit latency of the slowest local peer");
    m("ceph.osd.slowest_peer_device_await_ms", "ms", layer::kReplication, "Write await of the slowest local peer's device");
    m("ceph.osd.normal_replica_ms", "ms", layer::kReplication,
      "Median replica write latency of this host's OSDs: the normal cost of a replica write here");
    m("ceph.osd.slowest_peer_excess_ms", "ms", layer::kReplication,
      "How much slower the slowest local peer writes a replica than this host's OSDs normally do");
    m("ceph.osd.replica_wait_explained_pct", "pct", layer::kReplication,
      "Share of the replica wait explained by the slowest peer's excess over the normal replica write");
    m("ceph.osd.replica_wait_peer_pct", "pct", layer::kReplication,
      "Share of the OSD's client op time that the slowest peer's excess costs");
    m("ceph.osd.replica_ping_ms", "ms", layer::kReplication,
      "Heartbeat round trip to the replica peer farthest away (the lower of the 1-minute average and the last one)");
    m("ceph.osd.replica_wait_network_pct", "pct", layer::kReplication,
      "Share of the OSD's client op time its replica writes spend in round trips to the farthest peer");
    for (const auto& [name, l, desc] : std::initializer_list<std::tuple<const char*, std::string, const char*>>{
             {"ceph.osd.device_class", layer::kDevice, "Class of the OSD's device (device.class)"},
             {"ceph.osd.device_scheduler", layer::kBlockQueue, "I/O scheduler of the OSD's device"},
             {"ceph.osd.slowest_peer", layer::kReplication, "The local peer whose replica writes took longest"},
             {"ceph.osd.slowest_peer_device", layer::kReplication, "The device under the slowest peer"},
             {"ceph.osd.slowest_ping_peer", layer::kReplication, "The replica peer with the longest heartbeat round trip"}})
        v.push_back({name, K::Fact, "", l, "osd", desc});
    return v;
}

}  // namespace iodiag
