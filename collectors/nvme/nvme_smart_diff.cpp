#include "collectors/nvme/nvme_smart_diff.hpp"

#include <optional>

#include "collectors/nvme/nvme_smart_log.hpp"

namespace iodiag::nvme {

namespace {

std::optional<u128> parse_exact(const std::string& s) {
    if (s.empty() || s.size() > 39) return std::nullopt;
    u128 v = 0;
    const u128 max = ~static_cast<u128>(0);
    for (char ch : s) {
        if (ch < '0' || ch > '9') return std::nullopt;
        const unsigned d = static_cast<unsigned>(ch - '0');
        if (v > (max - d) / 10) return std::nullopt;
        v = v * 10 + d;
    }
    return v;
}

std::string fact_value(const Evidence& ev, const std::string& name, const std::string& device) {
    const Fact* f = ev.find_fact(name, {{"device", device}});
    return f ? f->value : "";
}

// The device in `after` that is the same drive as `device` in `before`.
std::string matching_device(const Evidence& before, const Evidence& after, const std::string& device) {
    const std::string serial = fact_value(before, "nvme.serial", device);
    if (!serial.empty()) {
        for (const auto& f : after.facts)
            if (f.name == "nvme.serial" && f.value == serial) {
                auto it = f.labels.find("device");
                if (it != f.labels.end()) return it->second;
            }
    }
    return device;
}

struct Watched {
    const char* field;
    const char* meaning;
};

const Watched kCounters[] = {
    {"media_errors", "unrecovered data integrity errors grew: the media is failing; back up and "
                     "plan the replacement"},
    {"unsafe_shutdowns", "power was lost without a shutdown notification: check power and "
                         "PLP; each one risks lost writes and forces a longer recovery"},
    {"num_err_log_entries", "the controller logged new errors (nvme error-log shows them)"},
};

}  // namespace

std::vector<SmartChange> compare_smart(const Evidence& before, const Evidence& after) {
    std::vector<SmartChange> out;
    for (const auto& f : before.facts) {
        if (f.name != "nvme.controller") continue;
        auto it = f.labels.find("device");
        if (it == f.labels.end()) continue;
        const std::string dev_before = it->second;
        const std::string dev_after = matching_device(before, after, dev_before);
        const std::string serial = fact_value(before, "nvme.serial", dev_before);
        for (const auto& w : kCounters) {
            const std::string name = std::string("nvme.") + w.field + ".exact";
            auto b = parse_exact(fact_value(before, name, dev_before));
            auto a = parse_exact(fact_value(after, name, dev_after));
            if (!a || !b || *a <= *b) continue;
            out.push_back({dev_after, serial, w.field, to_decimal(*b), to_decimal(*a),
                           to_decimal(*a - *b), w.meaning});
        }
        const Metric* cw_b = before.find_metric("nvme.critical_warning", {{"device", dev_before}});
        const Metric* cw_a = after.find_metric("nvme.critical_warning", {{"device", dev_after}});
        if (cw_b && cw_a) {
            const auto vb = static_cast<unsigned>(cw_b->value);
            const auto va = static_cast<unsigned>(cw_a->value);
            const unsigned added = va & ~vb;
            if (added != 0)
                out.push_back({dev_after, serial, "critical_warning",
                               critical_warning_names(static_cast<uint8_t>(vb)),
                               critical_warning_names(static_cast<uint8_t>(va)), "",
                               "new Critical Warning bits: " +
                                   critical_warning_names(static_cast<uint8_t>(added))});
        }
        const Metric* sp_b = before.find_metric("nvme.avail_spare", {{"device", dev_before}});
        const Metric* sp_a = after.find_metric("nvme.avail_spare", {{"device", dev_after}});
        if (sp_b && sp_a && sp_a->value < sp_b->value)
            out.push_back({dev_after, serial, "avail_spare", std::to_string(int(sp_b->value)),
                           std::to_string(int(sp_a->value)), "",
                           "spare blocks are being consumed: the media is retiring blocks"});
    }
    return out;
}

}  // namespace iodiag::nvme
