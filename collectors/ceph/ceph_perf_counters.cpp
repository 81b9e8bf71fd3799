#include "collectors/ceph/ceph_perf_counters.hpp"

#include <nlohmann/json.hpp>

namespace iodiag {

using nlohmann::json;

const PerfCounter* PerfDump::find(const std::string& key) const {
    auto it = counters.find(key);
    return it == counters.end() ? nullptr : &it->second;
}

namespace {

json parse_or_discard(std::string_view text) {
    return json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
}

}  // namespace

PerfDumpParse parse_perf_dump(std::string_view text) {
    PerfDumpParse out;
    const json j = parse_or_discard(text);
    if (j.is_discarded()) {
        out.error = "perf dump: not JSON";
        return out;
    }
    if (!j.is_object()) {
        out.error = "perf dump: not a JSON object of sections";
        return out;
    }
    PerfDump dump;
    for (const auto& [section, counters] : j.items()) {
        if (!counters.is_object()) continue;
        for (const auto& [name, v] : counters.items()) {
            PerfCounter c;
            if (v.is_number()) {
                c.value = v.get<double>();
            } else if (v.is_object() && v.contains("avgcount") && v.contains("sum") && v["avgcount"].is_number() &&
                       v["sum"].is_number()) {
                c.is_average = true;
                c.avgcount = v["avgcount"].get<double>();
                c.sum = v["sum"].get<double>();
            } else {
                continue;   // a shape this version does not know
            }
            dump.counters[section + "." + name] = c;
        }
    }
    if (dump.counters.empty()) {
        out.error = "perf dump: no counters";
        return out;
    }
    out.dump = std::move(dump);
    return out;
}

std::optional<PerfWindow> perf_window(const PerfDump& before, const PerfDump& after, const std::string& key) {
    const PerfCounter* a = before.find(key);
    const PerfCounter* b = after.find(key);
    if (!a || !b || !a->is_average || !b->is_average) return std::nullopt;
    if (b->avgcount < a->avgcount || b->sum < a->sum) return std::nullopt;
    return PerfWindow{b->avgcount - a->avgcount, b->sum - a->sum};
}

std::optional<double> perf_increase(const PerfDump& before, const PerfDump& after, const std::string& key) {
    const PerfCounter* a = before.find(key);
    const PerfCounter* b = after.find(key);
    if (!a || !b || a->is_average || b->is_average || b->value < a->value) return std::nullopt;
    return b->value - a->value;
}

PerfHistogramParse parse_perf_histogram_dump(std::string_view text) {
    PerfHistogramParse out;
    const json j = parse_or_discard(text);
    if (j.is_discarded() || !j.is_object()) {
        out.error = "perf histogram dump: not a JSON object";
        return out;
    }
    for (const auto& [section, hists] : j.items()) {
        if (!hists.is_object()) continue;
        for (const auto& [name, h] : hists.items()) {
            if (!h.is_object() || !h.contains("axes") || !h.contains("values")) continue;
            const json& axes = h["axes"];
            const json& values = h["values"];
            if (!axes.is_array() || axes.empty() || !axes[0].is_object() || !values.is_array()) continue;
            const json& ranges = axes[0].value("ranges", json());
            if (!ranges.is_array() || ranges.size() != values.size()) continue;
            PerfLatencyHistogram lh;
            bool ok = true;
            for (size_t i = 0; i < ranges.size() && ok; ++i) {
                const json& r = ranges[i];
                if (!r.is_object()) {
                    ok = false;
                    break;
                }
                const json mn = r.value("min", json(-1)), mx = r.value("max", json(-1));
                if (!mn.is_number() || !mx.is_number()) {
                    ok = false;
                    break;
                }
                lh.lo_ns.push_back(mn.get<double>());
                lh.hi_ns.push_back(mx.get<double>());
                uint64_t n = 0;
                const json& row = values[i];
                if (!row.is_array()) {
                    ok = false;
                    break;
                }
                for (const auto& cell : row) {
                    if (!cell.is_number_unsigned() && !cell.is_number_integer()) {
                        ok = false;
                        break;
                    }
                    const auto c = cell.get<int64_t>();
                    if (c < 0) {
                        ok = false;
                        break;
                    }
                    n += static_cast<uint64_t>(c);
                }
                lh.counts.push_back(n);
            }
            if (ok) out.histograms[section + "." + name] = std::move(lh);
        }
    }
    if (out.histograms.empty()) out.error = "perf histogram dump: no histogram of a known layout";
    return out;
}

std::optional<Log2Histogram> perf_histogram_window_us(const PerfLatencyHistogram& before,
                                                      const PerfLatencyHistogram& after) {
    if (before.counts.size() != after.counts.size() || before.lo_ns != after.lo_ns || before.hi_ns != after.hi_ns)
        return std::nullopt;
    Log2Histogram h;
    for (size_t i = 0; i < after.counts.size(); ++i) {
        if (after.counts[i] < before.counts[i]) return std::nullopt;
        const uint64_t n = after.counts[i] - before.counts[i];
        if (n == 0) continue;
        const double lo = std::max(0.0, after.lo_ns[i]);
        // The open-ended last bucket counts at its lower bound.
        const double mid_ns = after.hi_ns[i] < 0 ? lo : (lo + after.hi_ns[i]) / 2;
        const double us = mid_ns / 1000.0;
        h.add(us >= 1.8e19 ? UINT64_MAX / 2 : static_cast<uint64_t>(us), n);
    }
    return h;
}

}  // namespace iodiag
