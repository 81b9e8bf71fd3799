#include "collectors/ceph_osd_network.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

namespace iodiag {

using nlohmann::json;

namespace {

// A round trip in ms, or -1 when it is not a finite non-negative number.
double non_negative_ms(const json& v) {
    if (!v.is_number()) return -1;
    const double ms = v.get<double>();
    return std::isfinite(ms) && ms >= 0 ? ms : -1;
}

}  // namespace

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
        double min_ms = -1;
        if (const auto mins = e.find("min"); mins != e.end() && mins->is_object())
            if (const auto minute = mins->find("1min"); minute != mins->end()) min_ms = non_negative_ms(*minute);
        const auto last = e.find("last");
        out.pings.push_back({static_cast<int>(id), iface->get<std::string>(), ms, min_ms,
                             last != e.end() ? non_negative_ms(*last) : -1});
    }
    return out;
}

}  // namespace iodiag
