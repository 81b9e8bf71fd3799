#include "collectors/ceph/ceph_cluster_status.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>

#include <dlfcn.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace iodiag {

using nlohmann::json;

namespace {

json parse(std::string_view text) { return json::parse(text.begin(), text.end(), nullptr, false); }

double number_or(const json& j, const char* key, double fallback) {
    if (!j.is_object()) return fallback;
    auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string string_or(const json& j, const char* key) {
    if (!j.is_object()) return "";
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

bool readable(const std::string& path) { return !path.empty() && ::access(path.c_str(), R_OK) == 0; }

}  // namespace

std::optional<ClusterHealth> parse_health_detail(std::string_view text) {
    const json j = parse(text);
    if (j.is_discarded() || !j.is_object() || !j.contains("status") || !j["status"].is_string()) return std::nullopt;
    ClusterHealth h;
    h.status = j["status"].get<std::string>();
    if (auto c = j.find("checks"); c != j.end() && c->is_object()) {
        for (const auto& [name, check] : c->items()) {
            if (!check.is_object()) continue;
            HealthCheck hc;
            hc.severity = string_or(check, "severity");
            if (auto s = check.find("summary"); s != check.end() && s->is_object()) {
                hc.summary = string_or(*s, "message");
                hc.count = number_or(*s, "count", 0);
            }
            h.checks[name] = hc;
        }
    }
    return h;
}

std::optional<PgSummary> parse_status_pgmap(std::string_view text) {
    const json j = parse(text);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    auto pm = j.find("pgmap");
    if (pm == j.end() || !pm->is_object()) return std::nullopt;
    PgSummary s;
    s.pgs = number_or(*pm, "num_pgs", 0);
    if (auto by = pm->find("pgs_by_state"); by != pm->end() && by->is_array()) {
        for (const auto& e : *by) {
            const std::string state = string_or(e, "state_name");
            const double n = number_or(e, "count", 0);
            if (state.empty() || n < 0) continue;
            s.by_state[state] += n;
            auto has = [&](const char* what) { return state.find(what) != std::string::npos; };
            if (has("degraded")) s.degraded += n;
            if (has("recover")) s.recovering += n;
            if (has("backfill")) s.backfilling += n;
            if (has("peering")) s.peering += n;
            if (has("undersized")) s.undersized += n;
        }
    }
    if (pm->contains("recovering_bytes_per_sec")) s.recovering_bytes_per_s = number_or(*pm, "recovering_bytes_per_sec", 0);
    if (auto mm = j.find("monmap"); mm != j.end() && mm->is_object() && mm->contains("num_mons"))
        s.monitors = number_or(*mm, "num_mons", 0);
    return s;
}

std::optional<double> parse_time_sync_max_skew(std::string_view text) {
    const json j = parse(text);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    auto st = j.find("time_skew_status");
    if (st == j.end() || !st->is_object()) return std::nullopt;
    double worst = 0;
    for (const auto& [mon, v] : st->items()) worst = std::max(worst, std::fabs(number_or(v, "skew", 0)));
    return worst;
}

namespace {

// The part of librados' C API iodiag uses (librados.h, stable since 0.x).
using rados_t = void*;
struct Rados {
    void* lib = nullptr;
    int (*create2)(rados_t*, const char*, const char*, uint64_t) = nullptr;
    int (*conf_read_file)(rados_t, const char*) = nullptr;
    int (*conf_set)(rados_t, const char*, const char*) = nullptr;
    int (*connect)(rados_t) = nullptr;
    int (*mon_command)(rados_t, const char**, size_t, const char*, size_t, char**, size_t*, char**, size_t*) = nullptr;
    void (*buffer_free)(char*) = nullptr;
    void (*shutdown)(rados_t) = nullptr;

    std::string load() {
        lib = ::dlopen("librados.so.2", RTLD_NOW | RTLD_LOCAL);
        if (!lib) return std::string("librados.so.2 not loadable (package librados2): ") + ::dlerror();
        auto sym = [&](auto& fn, const char* name) {
            fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
            return fn != nullptr;
        };
        if (!sym(create2, "rados_create2") || !sym(conf_read_file, "rados_conf_read_file") ||
            !sym(conf_set, "rados_conf_set") || !sym(connect, "rados_connect") ||
            !sym(mon_command, "rados_mon_command") || !sym(buffer_free, "rados_buffer_free") ||
            !sym(shutdown, "rados_shutdown"))
            return "librados.so.2 lacks a function iodiag needs";
        return "";
    }
    // librados keeps threads and static state; it is never unloaded.
};

}  // namespace

ClusterStatusParse query_cluster_status(const ClusterQueryOptions& opts) {
    ClusterStatusParse out;
    std::string conf = opts.conf;
    if (conf.empty()) {
        const char* env = std::getenv("CEPH_CONF");
        conf = env && *env ? env : "/etc/ceph/" + opts.cluster + ".conf";
    }
    if (!readable(conf)) {
        out.error = "cluster facts not observed: " + conf + " not readable";
        return out;
    }
    std::string keyring = opts.keyring;
    if (keyring.empty()) {
        const char* env = std::getenv("CEPH_KEYRING");
        keyring = env && *env ? env : "/etc/ceph/" + opts.cluster + ".client.admin.keyring";
    }
    if (!readable(keyring)) {
        out.error = "cluster facts not observed: no readable client keyring (" + keyring +
                    "; set CEPH_KEYRING)";
        return out;
    }
    static Rados rados;
    static const std::string load_error = rados.load();
    if (!load_error.empty()) {
        out.error = "cluster facts not observed: " + load_error;
        return out;
    }
    rados_t cluster = nullptr;
    if (rados.create2(&cluster, opts.cluster.c_str(), "client.admin", 0) < 0) {
        out.error = "cluster facts not observed: rados_create2 failed";
        return out;
    }
    const std::string timeout = std::to_string(opts.timeout_s);
    int rc = rados.conf_read_file(cluster, conf.c_str());
    // No admin socket, no log file, nothing on stderr: iodiag reads, it leaves
    // no trace in /var/run/ceph or /var/log/ceph.
    for (const auto& [k, v] : std::initializer_list<std::pair<const char*, std::string>>{
             {"keyring", keyring}, {"admin_socket", ""}, {"log_file", ""}, {"log_to_stderr", "false"},
             {"err_to_stderr", "false"}, {"log_to_file", "false"}, {"client_mount_timeout", timeout},
             {"rados_mon_op_timeout", timeout}, {"ms_connection_idle_timeout", timeout}})
        rados.conf_set(cluster, k, v.c_str());
    if (rc >= 0) rc = rados.connect(cluster);
    if (rc < 0) {
        rados.shutdown(cluster);
        out.error = "cluster facts not observed: connecting to the monitors failed (" + std::to_string(rc) +
                    ", within " + timeout + " s)";
        return out;
    }
    auto command = [&](const std::string& cmd) -> std::optional<std::string> {
        const char* argv[] = {cmd.c_str()};
        char *outbuf = nullptr, *outs = nullptr;
        size_t outlen = 0, outslen = 0;
        const int r = rados.mon_command(cluster, argv, 1, "", 0, &outbuf, &outlen, &outs, &outslen);
        std::optional<std::string> reply;
        if (r >= 0 && outbuf) reply = std::string(outbuf, outlen);
        if (outbuf) rados.buffer_free(outbuf);
        if (outs) rados.buffer_free(outs);
        return reply;
    };
    if (auto r = command(R"({"prefix": "health", "detail": "detail", "format": "json"})")) out.health = parse_health_detail(*r);
    if (auto r = command(R"({"prefix": "status", "format": "json"})")) out.pgs = parse_status_pgmap(*r);
    if (auto r = command(R"({"prefix": "time-sync-status", "format": "json"})")) out.max_clock_skew_s = parse_time_sync_max_skew(*r);
    rados.shutdown(cluster);
    if (!out.health && !out.pgs) out.error = "cluster facts not observed: the monitors gave no parseable health or status";
    return out;
}

}  // namespace iodiag
