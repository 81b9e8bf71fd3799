#include "engine/triage/lost_events.hpp"

#include <algorithm>

namespace iodiag {

std::vector<LostEvents> lost_events_of(const Evidence& ev) {
    std::vector<LostEvents> out;
    for (const auto& m : ev.metrics) {
        if (m.name != "collector.lost_events" || m.value <= 0) continue;
        LostEvents l;
        auto at = [&](const char* k) {
            auto it = m.labels.find(k);
            return it == m.labels.end() ? std::string() : it->second;
        };
        l.collector = at("collector");
        l.what = at("what");
        l.count = static_cast<uint64_t>(m.value);
        l.source = m.provenance.source;
        if (const Fact* f = ev.find_fact("collector.lost_events_note", m.labels)) l.complete = f->value;
        out.push_back(std::move(l));
    }
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return std::tie(a.collector, a.what) < std::tie(b.collector, b.what); });
    return out;
}

}  // namespace iodiag
