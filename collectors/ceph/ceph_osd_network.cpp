#include "collectors/ceph/ceph_osd_network.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

namespace iodiag {

using nlohmann::json;

OsdNetworkParse parse_osd_network(std::string_view text) {
    OsdNetworkParse out;
    const json j = json::parse(text.begin(), text.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        out.error = "dump_osd_network: not a JSON object";
        return out;
    }
    const auto entries = j.find("entries");
    if (entries == j.end() || !entries->is_array()) {
        out.error = "dump_osd_network: no \"entries\" list";
        return out;
    }
    for (const auto& e : *entries) {
        if (!e.is_object()) continue;
        const auto stale = e.find("stale");
        if (stale != e.end() && stale->is_boolean() && stale->get<bool>()) continue;
        const auto to = e.find("to osd");
        const auto iface = e.find("interface");
        const auto avg = e.find("average");
        if (to == e.end() || !to->is_number_integer() || iface == e.end() || !iface->is_string() || avg == e.end() ||
            !avg->is_object())
            continue;
        const auto one = avg->find("1min");
        if (one == avg->end() || !one->is_number()) continue;
        const double ms = one->get<double>();
        const long long id = to->get<long long>();
        if (!std::isfinite(ms) || ms < 0 || id < 0 || id > 1'000'000) continue;
        const auto last = e.find("last");
        const double last_ms =
            last != e.end() && last->is_number() && std::isfinite(last->get<double>()) && last->get<double>() >= 0
                ? last->get<double>()
                : -1;
        out.pings.push_back({static_cast<int>(id), iface->get<std::string>(), ms, last_ms});
    }
    return out;
}

}  // namespace iodiag
