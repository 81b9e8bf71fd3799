#include "collectors/ceph/ceph_osd_snapshot.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "engine/evidence/layers.hpp"

namespace iodiag {

using nlohmann::json;

namespace {

double config_number(const json& j, const char* key, double fallback) {
    auto it = j.find(key);
    if (it == j.end()) return fallback;
    // `config show` prints every value as a string.
    if (it->is_number()) return it->get<double>();
    if (!it->is_string()) return fallback;
    const std::string s = it->get<std::string>();
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    return end && end != s.c_str() && std::isfinite(v) ? v : fallback;
}

std::string config_string(const json& j, const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

std::optional<OsdConfig> parse_osd_config(std::string_view text, std::optional<bool> rotational) {
    const json j = json::parse(text.begin(), text.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    OsdConfig c;
    c.rotational = rotational;
    c.osd_data = config_string(j, "osd_data");
    c.op_queue = config_string(j, "osd_op_queue");
    c.mclock_profile = config_string(j, "osd_mclock_profile");
    c.complaint_time_s = config_number(j, "osd_op_complaint_time", 30);
    // The OSD picks the _hdd or _ssd variant by its store's rotational flag
    // unless the plain option is set (OSD::get_num_op_shards / _threads).
    const bool rot = rotational.value_or(true);
    const double shards = config_number(j, "osd_op_num_shards", 0);
    c.op_shards = shards > 0 ? shards : config_number(j, rot ? "osd_op_num_shards_hdd" : "osd_op_num_shards_ssd", 0);
    const double threads = config_number(j, "osd_op_num_threads_per_shard", 0);
    c.op_threads_per_shard =
        threads > 0 ? threads
                    : config_number(j, rot ? "osd_op_num_threads_per_shard_hdd" : "osd_op_num_threads_per_shard_ssd", 0);
    const double active = config_number(j, "osd_recovery_max_active", 0);
    c.recovery_max_active =
        active > 0 ? active : config_number(j, rot ? "osd_recovery_max_active_hdd" : "osd_recovery_max_active_ssd", 0);
    c.max_backfills = config_number(j, "osd_max_backfills", 0);
    return c;
}

std::vector<MetricSpec> ceph_metric_specs() {
    using K = MetricSpec::Kind;
    const std::string op = layer::kOsdOp, bs = layer::kBluestore, rep = layer::kReplication, cpu = layer::kCpu;
    auto m = [](std::string name, std::string unit, std::string l, std::string desc) {
        return MetricSpec{std::move(name), K::Metric, std::move(unit), std::move(l), "osd", std::move(desc)};
    };
    auto f = [](std::string name, std::string l, std::string desc) {
        return MetricSpec{std::move(name), K::Fact, "", std::move(l), "osd", std::move(desc)};
    };
    auto g = [](std::string name, std::string unit, std::string desc) {
        return MetricSpec{std::move(name), K::Metric, std::move(unit), "", "", std::move(desc)};
    };
    return {
        // The OSD's op path (perf dump "osd" section; window deltas).
        m("ceph.osd.client_write_ops", "count", op, "Client writes completed with this OSD as primary (Δop_w)"),
        m("ceph.osd.client_write_latency_ms", "ms", op, "Mean client write latency, receipt to commit reply, replicas included (Δop_w_latency)"),
        m("ceph.osd.client_write_process_ms", "ms", op, "Mean client write time from dequeue to commit reply (Δop_w_process_latency)"),
        m("ceph.osd.client_write_prepare_ms", "ms", op, "Mean client write execution before the transaction is submitted (Δop_w_prepare_latency)"),
        m("ceph.osd.client_read_ops", "count", op, "Client reads completed (Δop_r)"),
        m("ceph.osd.client_read_latency_ms", "ms", op, "Mean client read latency (Δop_r_latency)"),
        m("ceph.osd.client_read_process_ms", "ms", op, "Mean client read time from dequeue to reply (Δop_r_process_latency)"),
        m("ceph.osd.before_queue_ms", "ms", op, "Mean time of an op from receipt to the op queue, all ops (Δop_before_queue_op_lat)"),
        m("ceph.osd.before_dequeue_ms", "ms", op, "Mean time of an op from receipt to dequeue with its PG locked, all ops (Δop_before_dequeue_op_lat)"),
        m("ceph.osd.ops_in_flight", "count", op, "Ops in flight at the end of the window (dump_ops_in_flight)"),
        m("ceph.osd.oldest_op_in_flight_s", "s", op, "Age of the oldest op in flight at the end of the window"),
        m("ceph.osd.slow_ops", "count", op, "Ops of the window (tracked or in flight) older than osd_op_complaint_time"),
        m("ceph.osd.complaint_time_s", "s", op, "osd_op_complaint_time: age at which Ceph reports an op as slow"),
        m("ceph.osd.tracked_client_ops", "count", op, "Client ops of the window in the op tracker's history (a sample: osd_op_history_size)"),
        m("ceph.osd.tracked_queue_wait_ms", "ms", op, "Mean queued_for_pg -> reached_pg of the tracked client ops (op queue and PG lock)"),
        m("ceph.osd.tracked_replica_wait_ms", "ms", rep, "Mean 'waiting for subops' -> last sub_op_commit_rec of the tracked client writes"),
        m("ceph.osd.tracked_local_commit_ms", "ms", bs, "Mean 'waiting for subops' -> op_commit of the tracked client writes"),
        m("ceph.osd.rw_lock_wait_ops", "count", op, "Tracked ops of the window that waited for an object's rw lock"),
        m("ceph.osd.rw_lock_wait_pct", "pct", op, "Share of the tracked client ops that waited for an object's rw lock"),
        m("ceph.osd.rw_lock_wait_ms", "ms", op, "Mean wait for the rw lock of the ops that waited"),
        m("ceph.osd.client_throttle_wait_ms", "ms", op, "Time client messages waited for the OSD's client message/byte throttles in the window"),
        m("ceph.osd.op_shards", "count", op, "Op queue shards in effect (osd_op_num_shards, or its _hdd/_ssd variant)"),
        m("ceph.osd.op_threads", "count", op, "Op worker threads in effect (shards x osd_op_num_threads_per_shard[_hdd/_ssd])"),
        m("ceph.osd.recovery_ops", "count", op, "Recovery ops on this OSD in the window (Δrecovery_ops)"),
        m("ceph.osd.recovery_bytes_per_s", "bytes/s", op, "Recovery bytes per second on this OSD (Δrecovery_bytes / window)"),
        m("ceph.osd.counters_start_unix", "s", op, "Wall-clock time (Unix seconds) of the perf dump that opens this OSD's counter window"),
        m("ceph.osd.counters_window_s", "s", op, "Time between the two perf dumps whose deltas are this OSD's counters (the iodiag window, give or take the dumps' own time)"),
        m("ceph.osd.recovery_max_active", "count", op, "osd_recovery_max_active in effect (or its _hdd/_ssd variant)"),
        m("ceph.osd.max_backfills", "count", op, "osd_max_backfills"),
        f("ceph.osd.op_queue", op, "osd_op_queue: wpq or mclock_scheduler"),
        f("ceph.osd.mclock_profile", op, "osd_mclock_profile (used with mclock_scheduler)"),
        f("ceph.osd.version", op, "Ceph version of the OSD"),
        f("ceph.osd.pid", op, "Process id of the OSD (the admin socket's peer), to join the syscall tracer's processes"),
        f("ceph.osd.not_observed", op, "Why this OSD's admin socket gave no usable figures"),
        {"ceph.osd.client_write_latency_us", K::Histogram, "us", op, "osd",
         "Client write latency of the window (perf histogram dump, re-bucketed to log2)"},
        {"ceph.osd.client_read_latency_us", K::Histogram, "us", op, "osd",
         "Client read latency of the window (perf histogram dump, re-bucketed to log2)"},
        // BlueStore and RocksDB.
        m("ceph.bluestore.txcs", "count", bs, "BlueStore transactions committed in the window (Δcommit_lat count)"),
        m("ceph.bluestore.commit_ms", "ms", bs, "Mean BlueStore transaction time, submit to kv commit (Δcommit_lat)"),
        m("ceph.bluestore.throttle_ms", "ms", bs, "Mean wait of a transaction for BlueStore's byte throttle (Δthrottle_lat)"),
        m("ceph.bluestore.state_aio_wait_ms", "ms", bs, "Mean wait of a transaction for its data writes (Δstate_aio_wait_lat)"),
        m("ceph.bluestore.state_kv_queued_ms", "ms", bs, "Mean wait of a transaction for the kv sync thread (Δstate_kv_queued_lat)"),
        m("ceph.bluestore.state_kv_committing_ms", "ms", bs, "Mean time of a transaction in the kv sync (Δstate_kv_commiting_lat)"),
        m("ceph.bluestore.kv_syncs", "count", bs, "kv sync batches in the window (Δkv_sync_lat count)"),
        m("ceph.bluestore.kv_sync_ms", "ms", bs, "Mean kv sync batch: device flush + RocksDB synchronous commit (Δkv_sync_lat)"),
        m("ceph.bluestore.kv_sync_total_ms", "ms", bs, "Time the kv sync thread spent syncing in the window (Δkv_sync_lat sum)"),
        m("ceph.bluestore.kv_flush_ms", "ms", bs, "Mean device flush before a kv commit (Δkv_flush_lat)"),
        m("ceph.bluestore.kv_commit_ms", "ms", bs, "Mean RocksDB synchronous commit of a batch (Δkv_commit_lat)"),
        m("ceph.bluestore.kv_sync_busy_pct", "pct", bs, "Share of the window the kv sync thread spent syncing"),
        m("ceph.bluestore.deferred_queued_ms", "ms", bs, "Mean wait of deferred writes before they are applied (Δstate_deferred_queued_lat)"),
        m("ceph.bluestore.reads", "count", bs, "BlueStore reads in the window (Δread_lat count)"),
        m("ceph.bluestore.read_total_ms", "ms", bs, "Time BlueStore spent reading in the window (Δread_lat sum)"),
        m("ceph.bluestore.read_wait_aio_total_ms", "ms", bs, "Time BlueStore reads waited for their device I/O in the window (Δread_wait_aio_lat sum)"),
        m("ceph.rocksdb.submit_sync_ms", "ms", bs, "Mean RocksDB synchronous submit: WAL write and sync (Δsubmit_sync_latency)"),
        f("ceph.osd.device", bs, "Whole disk under the OSD's main device (data dir `block` link)"),
        f("ceph.osd.db_device", bs, "Whole disk under block.db, when RocksDB has its own device"),
        f("ceph.osd.wal_device", bs, "Whole disk under block.wal, when the WAL has its own device"),
        f("ceph.osd.separate_db", bs, "yes when RocksDB's DB or WAL is on another device than the data"),
        f("ceph.osd.device_rotational", bs, "The main device's rotational flag as BlueStore sees it (sysfs)"),
        f("ceph.osd.objectstore", bs, "bluestore, or what the perf dump shows instead"),
        // Replication (this OSD as a replica for others).
        m("ceph.osd.replica_write_ops", "count", rep, "Replica writes this OSD served for other primaries (Δsubop_w)"),
        m("ceph.osd.replica_write_latency_ms", "ms", rep, "Mean replica write on this OSD, receipt to commit (Δsubop_w_latency)"),
        f("ceph.osd.replica_peers", rep, "Peers this OSD's tracked client writes waited for ('waiting for subops from')"),
        m("ceph.osd.peer_ping_ms", "ms", rep, "Heartbeat round trip from this OSD to a peer (label peer), the lower of the 1-minute average and the last one (dump_osd_network)"),
        // CPU of the OSD's threads (/proc/PID/task/*/schedstat).
        m("ceph.osd.cpu_used_cores", "cores", cpu, "CPU time of the OSD's threads per second of window"),
        m("ceph.osd.cpu_wait_pct", "pct", cpu, "Share of the OSD threads' runnable time spent waiting for a CPU (run queue)"),
        m("ceph.osd.op_threads_cpu_wait_pct", "pct", cpu, "Same, op worker threads (tp_osd_tp)"),
        m("ceph.osd.msgr_cpu_wait_pct", "pct", cpu, "Same, messenger threads (msgr-worker)"),
        m("ceph.osd.kv_sync_cpu_wait_pct", "pct", cpu, "Same, BlueStore's kv sync thread"),
        m("ceph.osd.kv_sync_thread_cpu_ms", "ms", cpu, "Run time + run-queue wait of BlueStore's kv sync thread in the window"),
        // Host and cluster (global).
        g("ceph.host.nic_rx_queues", "count", "Receive (RSS) queues of the host's NIC with the most"),
        g("ceph.host.osds", "count", "OSD admin sockets found on this host"),
        g("ceph.cluster.slow_ops", "count", "Slow ops the monitors report (health check SLOW_OPS)"),
        g("ceph.cluster.pgs", "count", "PGs in the cluster"),
        g("ceph.cluster.pgs_degraded", "count", "PGs degraded"),
        g("ceph.cluster.pgs_recovering", "count", "PGs recovering"),
        g("ceph.cluster.pgs_backfilling", "count", "PGs backfilling or waiting for backfill"),
        g("ceph.cluster.recovering_bytes_per_s", "bytes/s", "Recovery throughput of the cluster"),
        g("ceph.cluster.max_clock_skew_ms", "ms", "Largest clock skew of a monitor (time-sync-status)"),
        {"ceph.cluster.health", K::Fact, "", "", "", "HEALTH_OK / HEALTH_WARN / HEALTH_ERR"},
        {"ceph.cluster.checks", K::Fact, "", "", "", "Health checks raised (names)"},
    };
}

namespace {

double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0; }

}  // namespace

void add_osd_evidence(const OsdSocket& sock, const OsdConfig& cfg, const OsdSnapshot& a, const OsdSnapshot& b,
                      double window_start_unix, Evidence& ev) {
    const Labels l{{"osd", sock.name()}};
    const double window_s = std::max(1e-3, b.taken_at_s - a.taken_at_s);
    const std::string src = sock.path + " perf dump";
    auto prov = [&](const std::string& what) { return Provenance{"admin_socket", src + ": " + what}; };
    // The counters' own window: the OSD answers perf dump while iodiag's other
    // collectors start and finish, so its edges are not exactly the window's.
    ev.add_metric("ceph.osd.counters_start_unix", l, a.taken_unix, "s", prov("answered at (wall clock)"));
    ev.add_metric("ceph.osd.counters_window_s", l, window_s, "s", prov("time between the window's two dumps"));
    // A mean latency of the window, in ms, and its event count.
    auto mean_ms = [&](const char* metric, const char* counter, const char* count_metric = nullptr) {
        const auto w = perf_window(a.perf, b.perf, counter);
        if (!w) return;
        if (count_metric) ev.add_metric(count_metric, l, w->count, "count", prov(std::string("Δ") + counter + ".avgcount"));
        if (w->count > 0)
            ev.add_metric(metric, l, w->mean() * 1000.0, "ms",
                          prov(std::string("Δ") + counter + ".sum / Δ" + counter + ".avgcount"));
    };
    mean_ms("ceph.osd.client_write_latency_ms", "osd.op_w_latency", "ceph.osd.client_write_ops");
    mean_ms("ceph.osd.client_write_process_ms", "osd.op_w_process_latency");
    mean_ms("ceph.osd.client_write_prepare_ms", "osd.op_w_prepare_latency");
    mean_ms("ceph.osd.client_read_latency_ms", "osd.op_r_latency", "ceph.osd.client_read_ops");
    mean_ms("ceph.osd.client_read_process_ms", "osd.op_r_process_latency");
    mean_ms("ceph.osd.before_queue_ms", "osd.op_before_queue_op_lat");
    mean_ms("ceph.osd.before_dequeue_ms", "osd.op_before_dequeue_op_lat");
    mean_ms("ceph.osd.replica_write_latency_ms", "osd.subop_w_latency", "ceph.osd.replica_write_ops");
    if (auto n = perf_increase(a.perf, b.perf, "osd.recovery_ops"))
        ev.add_metric("ceph.osd.recovery_ops", l, *n, "count", prov("Δosd.recovery_ops"));
    if (auto n = perf_increase(a.perf, b.perf, "osd.recovery_bytes"))
        ev.add_metric("ceph.osd.recovery_bytes_per_s", l, *n / window_s, "bytes/s", prov("Δosd.recovery_bytes / window"));
    double throttle_wait = 0;
    bool throttle_seen = false;
    for (const char* t : {"throttle-osd_client_messages.wait", "throttle-osd_client_bytes.wait"})
        if (auto w = perf_window(a.perf, b.perf, t)) {
            throttle_wait += w->sum;
            throttle_seen = true;
        }
    if (throttle_seen)
        ev.add_metric("ceph.osd.client_throttle_wait_ms", l, throttle_wait * 1000.0, "ms",
                      prov("Δthrottle-osd_client_messages.wait.sum + Δthrottle-osd_client_bytes.wait.sum"));

    const bool bluestore = b.perf.find("bluestore.commit_lat") != nullptr;
    ev.add_fact("ceph.osd.objectstore", l, bluestore ? "bluestore" : "not bluestore (no bluestore section)", prov("sections"));
    if (bluestore) {
        mean_ms("ceph.bluestore.commit_ms", "bluestore.commit_lat", "ceph.bluestore.txcs");
        mean_ms("ceph.bluestore.throttle_ms", "bluestore.throttle_lat");
        mean_ms("ceph.bluestore.state_aio_wait_ms", "bluestore.state_aio_wait_lat");
        mean_ms("ceph.bluestore.state_kv_queued_ms", "bluestore.state_kv_queued_lat");
        mean_ms("ceph.bluestore.state_kv_committing_ms", "bluestore.state_kv_commiting_lat");
        mean_ms("ceph.bluestore.kv_sync_ms", "bluestore.kv_sync_lat", "ceph.bluestore.kv_syncs");
        mean_ms("ceph.bluestore.kv_flush_ms", "bluestore.kv_flush_lat");
        mean_ms("ceph.bluestore.kv_commit_ms", "bluestore.kv_commit_lat");
        mean_ms("ceph.bluestore.deferred_queued_ms", "bluestore.state_deferred_queued_lat");
        mean_ms("ceph.rocksdb.submit_sync_ms", "rocksdb.submit_sync_latency");
        if (auto w = perf_window(a.perf, b.perf, "bluestore.kv_sync_lat")) {
            ev.add_metric("ceph.bluestore.kv_sync_total_ms", l, w->sum * 1000.0, "ms", prov("Δbluestore.kv_sync_lat.sum"));
            ev.add_metric("ceph.bluestore.kv_sync_busy_pct", l, std::min(100.0, pct(w->sum, window_s)), "pct",
                          prov("Δbluestore.kv_sync_lat.sum / window"));
        }
        if (auto w = perf_window(a.perf, b.perf, "bluestore.read_lat")) {
            ev.add_metric("ceph.bluestore.reads", l, w->count, "count", prov("Δbluestore.read_lat.avgcount"));
            ev.add_metric("ceph.bluestore.read_total_ms", l, w->sum * 1000.0, "ms", prov("Δbluestore.read_lat.sum"));
        }
        if (auto w = perf_window(a.perf, b.perf, "bluestore.read_wait_aio_lat"))
            ev.add_metric("ceph.bluestore.read_wait_aio_total_ms", l, w->sum * 1000.0, "ms",
                          prov("Δbluestore.read_wait_aio_lat.sum"));
    }

    // Latency histograms of the window.
    if (a.histograms && b.histograms) {
        const std::pair<const char*, const char*> hs[] = {
            {"osd.op_w_latency_in_bytes_histogram", "ceph.osd.client_write_latency_us"},
            {"osd.op_r_latency_out_bytes_histogram", "ceph.osd.client_read_latency_us"}};
        for (const auto& [key, name] : hs) {
            auto ia = a.histograms->histograms.find(key), ib = b.histograms->histograms.find(key);
            if (ia == a.histograms->histograms.end() || ib == b.histograms->histograms.end()) continue;
            if (auto h = perf_histogram_window_us(ia->second, ib->second); h && !h->empty())
                ev.histograms.push_back({name, l, "us", *h,
                                         {"admin_socket", sock.path + " perf histogram dump: Δ" + key +
                                                              " summed over request sizes, buckets at their midpoints"}});
        }
    }

    // Configuration and devices.
    if (!cfg.version.empty()) ev.add_fact("ceph.osd.version", l, cfg.version, {"admin_socket", sock.path + " version"});
    if (b.pid > 0)
        ev.add_fact("ceph.osd.pid", l, std::to_string(b.pid), {"admin_socket", sock.path + " peer credentials (SO_PEERCRED)"});
    const Provenance conf{"admin_socket", sock.path + " config show"};
    if (!cfg.op_queue.empty()) ev.add_fact("ceph.osd.op_queue", l, cfg.op_queue, conf);
    if (!cfg.mclock_profile.empty()) ev.add_fact("ceph.osd.mclock_profile", l, cfg.mclock_profile, conf);
    if (cfg.op_shards > 0) ev.add_metric("ceph.osd.op_shards", l, cfg.op_shards, "count", conf);
    if (cfg.op_shards > 0 && cfg.op_threads_per_shard > 0)
        ev.add_metric("ceph.osd.op_threads", l, cfg.op_shards * cfg.op_threads_per_shard, "count", conf);
    ev.add_metric("ceph.osd.complaint_time_s", l, cfg.complaint_time_s, "s", conf);
    ev.add_metric("ceph.osd.recovery_max_active", l, cfg.recovery_max_active, "count", conf);
    ev.add_metric("ceph.osd.max_backfills", l, cfg.max_backfills, "count", conf);
    const Provenance devp{"file", cfg.devices.how.empty() ? cfg.osd_data + "/block" : cfg.devices.how};
    if (!cfg.devices.block.empty()) {
        ev.add_fact("ceph.osd.device", l, cfg.devices.block, devp);
        if (!cfg.devices.db.empty()) ev.add_fact("ceph.osd.db_device", l, cfg.devices.db, devp);
        if (!cfg.devices.wal.empty()) ev.add_fact("ceph.osd.wal_device", l, cfg.devices.wal, devp);
        const bool separate = (!cfg.devices.db.empty() && cfg.devices.db != cfg.devices.block) ||
                              (!cfg.devices.wal.empty() && cfg.devices.wal != cfg.devices.block);
        ev.add_fact("ceph.osd.separate_db", l, separate ? "yes" : "no", devp);
        if (cfg.rotational)
            ev.add_fact("ceph.osd.device_rotational", l, *cfg.rotational ? "yes" : "no",
                        {"file", "/sys/block/" + cfg.devices.block + "/queue/rotational"});
    }

    // The op tracker: ops of the window (initiated inside it).
    int client = 0, rw_waited = 0, queue_n = 0, rep_n = 0, commit_n = 0, slow = 0;
    double queue_sum = 0, rep_sum = 0, commit_sum = 0, rw_sum = 0;
    std::vector<int> peers;
    for (const auto& op : b.ops) {
        const bool in_window = op.initiated_unix >= window_start_unix;
        // Slow: tracked ops of the window, and ops still in flight (however
        // old: an op blocked since before the window is the worst of them).
        if (op.duration_s >= cfg.complaint_time_s && (in_window || op.in_flight)) ++slow;
        if (!in_window) continue;
        const bool is_client = op.kind == TrackedOp::Kind::ClientWrite || op.kind == TrackedOp::Kind::ClientRead ||
                               op.kind == TrackedOp::Kind::ClientOther;
        if (!is_client) continue;
        ++client;
        if (op.waited_for_rw_locks()) {
            ++rw_waited;
            rw_sum += op.rw_lock_wait();
        }
        if (auto q = op.queue_wait()) queue_sum += *q, ++queue_n;
        if (op.kind == TrackedOp::Kind::ClientWrite) {
            if (auto r = op.replica_wait()) rep_sum += *r, ++rep_n;
            if (auto c = op.local_commit()) commit_sum += *c, ++commit_n;
            for (int p : op.peers)
                if (std::find(peers.begin(), peers.end(), p) == peers.end()) peers.push_back(p);
        }
    }
    const Provenance tracker{"admin_socket", sock.path + " dump_historic_ops + dump_historic_slow_ops + dump_ops_in_flight"};
    ev.add_metric("ceph.osd.tracked_client_ops", l, client, "count", tracker);
    ev.add_metric("ceph.osd.slow_ops", l, slow, "count",
                  {"admin_socket", tracker.source + ": ops lasting >= osd_op_complaint_time"});
    ev.add_metric("ceph.osd.rw_lock_wait_ops", l, rw_waited, "count", tracker);
    if (client > 0) ev.add_metric("ceph.osd.rw_lock_wait_pct", l, pct(rw_waited, client), "pct", tracker);
    if (rw_waited > 0) ev.add_metric("ceph.osd.rw_lock_wait_ms", l, rw_sum / rw_waited * 1000.0, "ms", tracker);
    if (queue_n > 0) ev.add_metric("ceph.osd.tracked_queue_wait_ms", l, queue_sum / queue_n * 1000.0, "ms", tracker);
    if (rep_n > 0) ev.add_metric("ceph.osd.tracked_replica_wait_ms", l, rep_sum / rep_n * 1000.0, "ms", tracker);
    if (commit_n > 0) ev.add_metric("ceph.osd.tracked_local_commit_ms", l, commit_sum / commit_n * 1000.0, "ms", tracker);
    if (!peers.empty()) {
        std::sort(peers.begin(), peers.end());
        std::string list;
        for (int p : peers) list += (list.empty() ? "" : ",") + ("osd." + std::to_string(p));
        ev.add_fact("ceph.osd.replica_peers", l, list, tracker);
    }
    // Heartbeat round trips: per peer, the slower of its interfaces. Per
    // interface the lower of the 1-minute average and the newest round trip:
    // the average reaches back up to a minute before a window of a few
    // seconds, so a stall that has passed (the OSDs starved of CPU a minute
    // ago) still weighs in it; a link slow now is slow in both.
    std::map<int, double> ping;
    for (const auto& p : b.pings) {
        const double ms = p.last_ms >= 0 ? std::min(p.avg_1min_ms, p.last_ms) : p.avg_1min_ms;
        ping[p.to_osd] = std::max(ping[p.to_osd], ms);
    }
    for (const auto& [peer, ms] : ping)
        ev.add_metric("ceph.osd.peer_ping_ms", {{"osd", sock.name()}, {"peer", "osd." + std::to_string(peer)}}, ms, "ms",
                      {"admin_socket", sock.path + " dump_osd_network 0: heartbeat round trip, the lower of the "
                                                   "1-minute average and the last one, the slower of the front and "
                                                   "back interfaces"});
    ev.add_metric("ceph.osd.ops_in_flight", l, b.in_flight, "count", {"admin_socket", sock.path + " dump_ops_in_flight"});
    ev.add_metric("ceph.osd.oldest_op_in_flight_s", l, b.oldest_in_flight_s, "s",
                  {"admin_socket", sock.path + " dump_ops_in_flight"});

    // The OSD's threads: CPU used and run-queue wait over the window.
    if (a.threads && b.threads) {
        const std::string tsrc = "/proc/" + std::to_string(b.pid) + "/task/*/schedstat (run time, run-queue wait)";
        auto delta = [&](const std::string& group) -> std::optional<std::pair<double, double>> {
            auto ia = a.threads->find(group), ib = b.threads->find(group);
            if (ib == b.threads->end()) return std::nullopt;
            const double cpu0 = ia == a.threads->end() ? 0 : double(ia->second.cpu_ns);
            const double wait0 = ia == a.threads->end() ? 0 : double(ia->second.wait_ns);
            // Threads that exited take their counts with them: clamp at zero.
            return std::pair<double, double>{std::max(0.0, double(ib->second.cpu_ns) - cpu0),
                                             std::max(0.0, double(ib->second.wait_ns) - wait0)};
        };
        double cpu = 0, wait = 0;
        for (const auto& [group, t] : *b.threads)
            if (auto d = delta(group)) cpu += d->first, wait += d->second;
        ev.add_metric("ceph.osd.cpu_used_cores", l, cpu / 1e9 / window_s, "cores", {"file", tsrc + ": Σrun time / window"});
        if (cpu + wait > 0)
            ev.add_metric("ceph.osd.cpu_wait_pct", l, pct(wait, cpu + wait), "pct",
                          {"file", tsrc + ": Σwait / (Σwait + Σrun), all threads"});
        const std::pair<const char*, const char*> groups[] = {{"tp_osd_tp", "ceph.osd.op_threads_cpu_wait_pct"},
                                                              {"msgr-worker", "ceph.osd.msgr_cpu_wait_pct"},
                                                              {"bstore_kv_sync", "ceph.osd.kv_sync_cpu_wait_pct"}};
        for (const auto& [group, name] : groups)
            if (auto d = delta(group); d && d->first + d->second > 0)
                ev.add_metric(name, l, pct(d->second, d->first + d->second), "pct",
                              {"file", tsrc + ": threads " + group});
        // The kv sync thread's time on or waiting for a CPU: what of its
        // syncs was not spent blocked (on its I/O, mostly).
        if (auto d = delta("bstore_kv_sync"))
            ev.add_metric("ceph.osd.kv_sync_thread_cpu_ms", l, (d->first + d->second) / 1e6, "ms",
                          {"file", tsrc + ": threads bstore_kv_sync, run time + run-queue wait"});
    }
}

}  // namespace iodiag
