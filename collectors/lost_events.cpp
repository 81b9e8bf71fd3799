#include "collectors/lost_events.hpp"

namespace iodiag {

std::vector<MetricSpec> lost_events_specs(const std::string& layer) {
    using K = MetricSpec::Kind;
    return {{"collector.lost_events", K::Metric, "count", layer, "collector",
             "events a collector saw but could not account, labels {collector, what} (ring buffer full, map full, "
             "slot busy); 0 = nothing lost"},
            {"collector.lost_events_note", K::Fact, "", layer, "collector",
             "what stays complete despite collector.lost_events {collector, what}"}};
}

void add_lost_events(Evidence& ev, const std::string& collector, const std::vector<LostEventCount>& counts) {
    for (const auto& c : counts) {
        const Labels l{{"collector", collector}, {"what", c.what}};
        ev.add_metric("collector.lost_events", l, static_cast<double>(c.count), "count", {"tracepoint", c.source});
        if (c.count > 0) ev.add_fact("collector.lost_events_note", l, c.complete, {"tracepoint", c.source});
    }
}

}  // namespace iodiag
