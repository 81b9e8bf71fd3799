#include "engine/render/heatmap_select.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "engine/render/report_markup.hpp"

namespace iodiag {

namespace {

uint64_t operations(const HistogramSeries& h) {
    uint64_t n = 0;
    for (const auto& i : h.intervals) n += i.total();
    return n;
}

bool labels_include(const Labels& have, const Labels& want) {
    return std::all_of(want.begin(), want.end(), [&](const auto& kv) {
        auto it = have.find(kv.first);
        return it != have.end() && it->second == kv.second;
    });
}

std::string join(const std::set<std::string>& v, const std::string& sep = ", ") {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
    return s;
}

// Label key -> values, over the series of one name.
std::map<std::string, std::set<std::string>> label_values(const Series& series, const std::string& name) {
    std::map<std::string, std::set<std::string>> out;
    for (const auto& h : series.histograms)
        if (h.name == name)
            for (const auto& [k, v] : h.labels) out[k].insert(v);
    return out;
}

int order_of(const std::string& name) {
    if (name.rfind("syscall.", 0) == 0) return 0;
    if (name.rfind("block.", 0) == 0) return 1;
    return 2;
}

}  // namespace

std::string describe_heatmap_series(const Series& series) {
    std::set<std::string> names;
    for (const auto& h : series.histograms) names.insert(h.name);
    std::string out;
    for (const auto& name : names) {
        out += name;
        const auto values = label_values(series, name);
        if (!values.empty()) {
            out += " {";
            bool first = true;
            for (const auto& [k, vs] : values) {
                out += (first ? "" : "; ") + k + ": " + join(vs);
                first = false;
            }
            out += "}";
        }
        out += "\n";
    }
    return out;
}

HeatmapLookup find_heatmap_series(const Series& series, const HeatmapQuery& query) {
    HeatmapLookup out;
    if (series.histograms.empty()) {
        out.error = series.empty() ? "no per-interval series in this bundle (schema version 1, or recorded with "
                                     "--interval 0): record it again with this iodiag"
                                   : "no histogram series in this bundle (they come from the BPF collectors, "
                                     "block_bpf and syscall_bpf, which need root and BPF)";
        return out;
    }
    std::string metric = query.metric;
    if (metric.empty()) {
        for (const char* preferred : {"block.d2c_us", "syscall.latency_us"})
            if (std::any_of(series.histograms.begin(), series.histograms.end(),
                            [&](const HistogramSeries& h) { return h.name == preferred && labels_include(h.labels, query.labels); })) {
                metric = preferred;
                break;
            }
    }
    std::vector<const HistogramSeries*> named, matching;
    for (const auto& h : series.histograms) {
        if (!metric.empty() && h.name != metric) continue;
        named.push_back(&h);
        if (labels_include(h.labels, query.labels)) matching.push_back(&h);
    }
    if (named.empty()) {
        out.error = "no heatmap series named '" + metric + "'; these exist:\n" + describe_heatmap_series(series);
        return out;
    }
    if (matching.empty()) {
        const std::string what = metric.empty() ? std::string("no heatmap series") : "no series '" + metric + "'";
        out.error = what + " has " + labels_suffix(query.labels) + "; these exist:\n" +
                    (metric.empty() ? describe_heatmap_series(series) : [&] {
                        Series only;
                        for (const auto* h : named) only.histograms.push_back(*h);
                        return describe_heatmap_series(only);
                    }());
        return out;
    }
    // Exact label match first, then the aggregate (fewest labels), then the busiest.
    std::stable_sort(matching.begin(), matching.end(), [&](const HistogramSeries* a, const HistogramSeries* b) {
        const bool ea = a->labels == query.labels, eb = b->labels == query.labels;
        if (ea != eb) return ea;
        if (a->labels.size() != b->labels.size()) return a->labels.size() < b->labels.size();
        return operations(*a) > operations(*b);
    });
    out.series = matching.front();
    if (matching.size() > 1 && matching.front()->labels != query.labels)
        out.note = "chose " + out.series->name + labels_suffix(out.series->labels) + " (" +
                   std::to_string(operations(*out.series)) + " operations) among " + std::to_string(matching.size()) +
                   " matching series; name --metric and --label/--device to pick another";
    return out;
}

std::vector<const HistogramSeries*> report_heatmap_series(const Series& series, size_t per_name,
                                                          std::vector<std::string>* left_out) {
    std::map<std::string, std::vector<const HistogramSeries*>> by_name;
    for (const auto& h : series.histograms) by_name[h.name].push_back(&h);
    std::vector<std::pair<std::string, std::vector<const HistogramSeries*>>> groups(by_name.begin(), by_name.end());
    std::stable_sort(groups.begin(), groups.end(),
                     [](const auto& a, const auto& b) { return order_of(a.first) < order_of(b.first); });
    std::vector<const HistogramSeries*> out;
    for (auto& [name, all] : groups) {
        size_t fewest = SIZE_MAX;
        for (const auto* h : all) fewest = std::min(fewest, h->labels.size());
        std::vector<const HistogramSeries*> keep;
        for (const auto* h : all)
            if (h->labels.size() == fewest) keep.push_back(h);
        std::stable_sort(keep.begin(), keep.end(),
                         [](const HistogramSeries* a, const HistogramSeries* b) { return operations(*a) > operations(*b); });
        for (size_t i = 0; i < keep.size(); ++i) {
            if (i < per_name)
                out.push_back(keep[i]);
            else if (left_out)
                left_out->push_back(keep[i]->name + labels_suffix(keep[i]->labels));
        }
    }
    return out;
}

}  // namespace iodiag
