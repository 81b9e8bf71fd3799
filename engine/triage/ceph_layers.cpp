// The Ceph layers in the triage: which Ceph rules are out of play on a host
// without OSDs, and what the per-layer table shows of a Ceph layer. Reads
// the per-OSD attribution engine/derive/ceph_attribution.cpp derived.
#include "engine/triage/ceph_layers.hpp"

#include <algorithm>
#include <map>

#include "engine/evidence/format.hpp"
#include "engine/evidence/layers.hpp"

namespace iodiag {

namespace {

std::optional<double> osd_value(const Evidence& ev, const std::string& name, const Labels& l) {
    const Metric* m = ev.find_metric(name, l);
    if (!m) return std::nullopt;
    return m->value;
}

}  // namespace

bool ceph_rule_out_of_play(const std::string& rule_layer, const std::string& rule_for_each,
                           const std::vector<std::string>& layers_in_play) {
    auto in_play = [&](const std::string& l) {
        return std::find(layers_in_play.begin(), layers_in_play.end(), l) != layers_in_play.end();
    };
    const bool ceph = std::any_of(layer::ceph().begin(), layer::ceph().end(), in_play);
    if (ceph) return false;
    const bool ceph_layer = std::find(layer::ceph().begin(), layer::ceph().end(), rule_layer) != layer::ceph().end();
    return ceph_layer || rule_for_each == "osd";
}

std::optional<CephLayerShare> ceph_layer_share(const Evidence& ev, const std::string& layer) {
    static const std::map<std::string, std::string> part_of{
        {layer::kBluestore, "bluestore"}, {layer::kOsdOp, "op_queue"}, {layer::kReplication, "replica_wait"}};
    auto it = part_of.find(layer);
    if (it == part_of.end()) return std::nullopt;
    std::string worst;
    double most = 0;
    for (const auto& osd : ev.instances("osd"))
        if (auto t = osd_value(ev, "ceph.osd.client_time_ms", {{"osd", osd}}); t && *t > most) most = *t, worst = osd;
    if (worst.empty()) return std::nullopt;
    auto pct = osd_value(ev, "ceph.osd." + it->second + "_pct", {{"osd", worst}});
    if (!pct) return std::nullopt;
    return CephLayerShare{*pct, "of " + worst + "'s client op time (the OSD with the most)"};
}

std::string ceph_layer_figures(const Evidence& ev, const std::string& layer) {
    std::vector<std::pair<double, std::string>> rows;
    for (const auto& osd : ev.instances("osd")) {
        const Labels l{{"osd", osd}};
        auto cite = [&](const char* label, const std::string& name) -> std::string {
            const Metric* m = ev.find_metric(name, l);
            return m ? std::string(label) + " " + format_value(m->value, m->unit) : "";
        };
        std::string part;
        auto add = [&](const std::string& s) {
            if (!s.empty()) part += (part.empty() ? "" : ", ") + s;
        };
        if (layer == layer::kBluestore) {
            add(cite("commit", "ceph.bluestore.commit_ms"));
            add(cite("kv sync", "ceph.bluestore.kv_sync_ms"));
            add(cite("kv queued", "ceph.bluestore.state_kv_queued_ms"));
        } else if (layer == layer::kOsdOp) {
            add(cite("write", "ceph.osd.client_write_latency_ms"));
            add(cite("read", "ceph.osd.client_read_latency_ms"));
            add(cite("before dequeue", "ceph.osd.before_dequeue_ms"));
            add(cite("slow ops", "ceph.osd.slow_ops"));
        } else if (layer == layer::kReplication) {
            add(cite("replica wait", "ceph.osd.write_replica_wait_ms"));
            add(cite("as replica", "ceph.osd.replica_write_latency_ms"));
        }
        if (const Fact* f = ev.find_fact("ceph.osd.not_observed", l)) add("not observed: " + f->value);
        if (part.empty()) continue;
        rows.push_back({osd_value(ev, "ceph.osd.client_time_ms", l).value_or(0), osd + ": " + part});
    }
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::string out;
    for (size_t i = 0; i < rows.size() && i < 4; ++i) out += (out.empty() ? "" : "; ") + rows[i].second;
    return out;
}

}  // namespace iodiag
