#include "collectors/ceph/ceph_collector.hpp"

#include <chrono>
#include <cstdlib>
#include <set>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "collectors/ceph/ceph_admin_socket.hpp"
#include "collectors/text_file.hpp"
#include "engine/evidence/layers.hpp"

namespace iodiag {

namespace {

const std::vector<std::string>& ceph_layers() { return layer::ceph(); }

double monotonic_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double unix_now() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string version_of(const std::string& reply) {
    const auto j = nlohmann::json::parse(reply, nullptr, false);
    if (j.is_object() && j.contains("version") && j["version"].is_string()) return j["version"].get<std::string>();
    return "";
}

// Runs fn(i) for every index at once and waits for all: a hung socket costs
// one timeout, not one per OSD.
template <typename Fn>
void for_each_parallel(size_t n, Fn fn) {
    std::vector<std::future<void>> done;
    done.reserve(n);
    for (size_t i = 0; i < n; ++i) done.push_back(std::async(std::launch::async, [&fn, i] { fn(i); }));
    for (auto& d : done) d.get();
}

}  // namespace

CephCollector::CephCollector(CephCollectorOptions opts) : opts_(std::move(opts)) {}

CephCollector::~CephCollector() {
    if (cluster_.valid()) cluster_.wait();
}

OsdSnapshot CephCollector::snapshot(const Osd& osd, bool with_ops) const {
    OsdSnapshot s;
    const int timeout = opts_.socket_timeout_ms;
    auto ask = [&](const char* prefix) { return admin_socket_command(osd.sock.path, std::string(R"({"prefix": ")") + prefix + "\"}", timeout); };
    const AdminSocketReply perf = ask("perf dump");
    s.taken_at_s = monotonic_s();
    s.taken_unix = unix_now();
    if (!perf.ok) {
        s.error = perf.error;
        return s;
    }
    PerfDumpParse parsed = parse_perf_dump(perf.body);
    if (!parsed.dump) {
        s.error = osd.sock.path + ": " + parsed.error;
        return s;
    }
    if (!parsed.dump->find("osd.op_w_latency") || !parsed.dump->find("osd.op_latency")) {
        s.error = osd.sock.path + ": perf dump has no osd.op_w_latency / osd.op_latency (not an OSD of a Ceph version iodiag knows)";
        return s;
    }
    s.perf = std::move(*parsed.dump);
    s.pid = perf.peer_pid;
    s.threads = read_thread_cpu(root_, s.pid);
    // Versions without `perf histogram dump` answer with an error text: then
    // there are no histograms, the rest stands.
    if (const AdminSocketReply h = ask("perf histogram dump"); h.ok) {
        PerfHistogramParse ph = parse_perf_histogram_dump(h.body);
        if (!ph.histograms.empty()) s.histograms = std::move(ph);
    } else {
        s.error = h.error;   // it answered perf dump a moment ago: now it hangs or refuses
        return s;
    }
    if (!with_ops) return s;
    // Threshold 0: every peer's ping times, not only those above the warning
    // level. A version without the command answers with an error text: then
    // there are no ping figures, the rest stands.
    if (const AdminSocketReply n = admin_socket_command(osd.sock.path, R"({"prefix": "dump_osd_network", "value": 0})", timeout);
        n.ok) {
        s.pings = parse_osd_network(n.body).pings;
    } else {
        s.error = n.error;
        return s;
    }
    std::set<std::pair<std::string, double>> seen;
    for (const char* prefix : {"dump_ops_in_flight", "dump_historic_slow_ops", "dump_historic_ops"}) {
        const AdminSocketReply r = ask(prefix);
        if (!r.ok) {
            s.error = r.error;
            return s;
        }
        TrackedOpsParse ops = parse_tracked_ops(r.body);
        if (!ops.error.empty()) continue;   // that dump alone is unusable: the counters stand
        const bool in_flight = std::string(prefix) == "dump_ops_in_flight";
        for (auto& op : ops.ops) {
            if (in_flight) {
                ++s.in_flight;
                s.oldest_in_flight_s = std::max(s.oldest_in_flight_s, op.duration_s);
                op.in_flight = true;
            }
            if (!seen.insert({op.description, op.initiated_unix}).second) continue;
            s.ops.push_back(std::move(op));
        }
    }
    return s;
}

CollectorStatus CephCollector::start(const CollectOptions& opts) {
    root_ = opts.root;
    std::string run_dir = opts_.run_dir;
    if (run_dir.empty()) {
        const char* env = std::getenv("IODIAG_CEPH_RUN_DIR");
        run_dir = env && *env ? env : under_root(root_, "/var/run/ceph");
    }
    const std::vector<OsdSocket> sockets = find_osd_sockets(run_dir);
    if (sockets.empty()) {
        applicable_ = false;
        return {name(), false, "not a Ceph node (no OSD admin socket in " + run_dir + ")", ceph_layers()};
    }
    applicable_ = true;
    window_start_unix_ = unix_now();
    osds_.clear();
    for (const auto& s : sockets) osds_.push_back({s, {}, {}, ""});

    for_each_parallel(osds_.size(), [&](size_t i) {
        Osd& osd = osds_[i];
        const int timeout = opts_.socket_timeout_ms;
        const AdminSocketReply version = admin_socket_command(osd.sock.path, R"({"prefix": "version"})", timeout);
        if (!version.ok) {
            osd.error = version.error;
            return;
        }
        const AdminSocketReply config = admin_socket_command(osd.sock.path, R"({"prefix": "config show"})", timeout);
        if (!config.ok) {
            osd.error = config.error;
            return;
        }
        auto cfg = parse_osd_config(config.body, std::nullopt);
        if (!cfg) {
            osd.error = osd.sock.path + ": config show: not a JSON object";
            return;
        }
        OsdDevices devices = cfg->osd_data.empty() ? OsdDevices{} : resolve_osd_devices(root_, cfg->osd_data);
        std::optional<bool> rotational;
        if (!devices.block.empty())
            if (auto r = try_read_first_line(under_root(root_, "/sys/block/" + devices.block + "/queue/rotational")))
                rotational = *r == "1";
        cfg = parse_osd_config(config.body, rotational);
        cfg->devices = devices;
        cfg->version = version_of(version.body);
        osd.config = *cfg;
        osd.before = snapshot(osd, false);
        osd.error = osd.before.error;
    });

    std::string reason;
    size_t observed = 0;
    for (const auto& o : osds_) {
        if (o.error.empty())
            ++observed;
        else
            reason += (reason.empty() ? "" : "; ") + o.sock.name() + " not observed: " + o.error;
    }
    if (observed > 0 && opts_.query_cluster) {
        ClusterQueryOptions q;
        q.cluster = osds_.front().sock.cluster;
        cluster_ = std::async(std::launch::async, [q] { return query_cluster_status(q); });
    }
    spdlog::debug("ceph: {} OSD socket(s) in {}, {} observed", osds_.size(), run_dir, observed);
    return {name(), observed > 0, observed > 0 ? reason : "no OSD observed: " + reason, ceph_layers()};
}

void CephCollector::finish(Evidence& ev) {
    std::vector<OsdSnapshot> after(osds_.size());
    for_each_parallel(osds_.size(), [&](size_t i) {
        if (osds_[i].error.empty()) after[i] = snapshot(osds_[i], true);
    });
    std::string reason;
    for (size_t i = 0; i < osds_.size(); ++i) {
        Osd& osd = osds_[i];
        if (osd.error.empty() && !after[i].error.empty()) osd.error = after[i].error;
        if (!osd.error.empty()) {
            reason += (reason.empty() ? "" : "; ") + osd.sock.name() + " not observed: " + osd.error;
            ev.add_fact("ceph.osd.not_observed", {{"osd", osd.sock.name()}}, osd.error,
                        {"admin_socket", osd.sock.path});
            continue;
        }
        add_osd_evidence(osd.sock, osd.config, osd.before, after[i], window_start_unix_, ev);
    }
    ev.add_metric("ceph.host.osds", {}, double(osds_.size()), "count",
                  {"file", "OSD admin sockets (<cluster>-osd.<id>.asok) in the run directory"});
    if (auto rx = nic_rx_queues(root_))
        ev.add_metric("ceph.host.nic_rx_queues", {}, *rx, "count", {"file", "/sys/class/net/*/queues/rx-*"});

    if (cluster_.valid()) {
        const ClusterStatusParse c = cluster_.get();
        const Provenance mon{"mon_command", "librados: health detail, status, time-sync-status"};
        if (c.health) {
            ev.add_fact("ceph.cluster.health", {}, c.health->status, mon);
            std::string checks;
            for (const auto& [n, chk] : c.health->checks) checks += (checks.empty() ? "" : ", ") + n;
            ev.add_fact("ceph.cluster.checks", {}, checks.empty() ? "none" : checks, mon);
            auto it = c.health->checks.find("SLOW_OPS");
            ev.add_metric("ceph.cluster.slow_ops", {}, it == c.health->checks.end() ? 0 : it->second.count, "count",
                          {"mon_command", "health detail: SLOW_OPS count"});
        }
        if (c.pgs) {
            const Provenance st{"mon_command", "status: pgmap.pgs_by_state"};
            ev.add_metric("ceph.cluster.pgs", {}, c.pgs->pgs, "count", st);
            ev.add_metric("ceph.cluster.pgs_degraded", {}, c.pgs->degraded, "count", st);
            ev.add_metric("ceph.cluster.pgs_recovering", {}, c.pgs->recovering, "count", st);
            ev.add_metric("ceph.cluster.pgs_backfilling", {}, c.pgs->backfilling, "count", st);
            if (c.pgs->recovering_bytes_per_s)
                ev.add_metric("ceph.cluster.recovering_bytes_per_s", {}, *c.pgs->recovering_bytes_per_s, "bytes/s",
                              {"mon_command", "status: pgmap.recovering_bytes_per_sec"});
        }
        if (c.max_clock_skew_s)
            ev.add_metric("ceph.cluster.max_clock_skew_ms", {}, *c.max_clock_skew_s * 1000.0, "ms",
                          {"mon_command", "time-sync-status: largest |skew| of a monitor"});
        else if (c.pgs && c.pgs->monitors == 1.0)
            // One monitor runs no time checks: there is no other clock to drift from.
            ev.add_metric("ceph.cluster.max_clock_skew_ms", {}, 0, "ms",
                          {"mon_command", "status: monmap.num_mons = 1 (no time checks between monitors)"});
        if (!c.error.empty()) reason += (reason.empty() ? "" : "; ") + c.error;
    }
    for (auto& st : ev.collectors)
        if (st.name == name()) {
            const bool any = std::any_of(osds_.begin(), osds_.end(), [](const Osd& o) { return o.error.empty(); });
            st.available = any;
            st.reason = any ? reason : "no OSD observed: " + reason;
        }
}

}  // namespace iodiag
