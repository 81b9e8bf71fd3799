#include "collectors/interval_series.hpp"

#include <algorithm>
#include <set>

namespace iodiag {

Log2Histogram histogram_delta(const Log2Histogram& now, const Log2Histogram& before) {
    const auto& a = now.buckets();
    const auto& b = before.buckets();
    std::vector<uint64_t> d(a.size(), 0);
    for (size_t i = 0; i < a.size(); ++i) {
        const uint64_t was = i < b.size() ? b[i] : 0;
        d[i] = a[i] > was ? a[i] - was : 0;
    }
    Log2Histogram h;
    h.set_buckets(std::move(d));
    return h;
}

void CumulativeSeries::record(std::map<std::pair<std::string, Labels>, Log2Histogram> histograms,
                              std::map<std::pair<std::string, Labels>, double> values) {
    readings_.push_back({std::move(histograms), std::move(values)});
}

void CumulativeSeries::describe(const std::string& name, const Labels& labels, Meta meta) {
    meta_[{name, labels}] = std::move(meta);
}

Log2Histogram CumulativeSeries::last_histogram(const std::string& name, const Labels& labels) const {
    for (auto r = readings_.rbegin(); r != readings_.rend(); ++r)
        if (auto it = r->histograms.find({name, labels}); it != r->histograms.end()) return it->second;
    return {};
}

void CumulativeSeries::emit(Series& out) const {
    std::set<std::pair<std::string, Labels>> hkeys, vkeys;
    for (const auto& r : readings_) {
        for (const auto& [k, h] : r.histograms) hkeys.insert(k);
        for (const auto& [k, v] : r.values) vkeys.insert(k);
    }
    auto meta_of = [&](const std::pair<std::string, Labels>& k) {
        auto it = meta_.find(k);
        return it == meta_.end() ? Meta{} : it->second;
    };
    for (const auto& k : hkeys) {
        const Meta m = meta_of(k);
        HistogramSeries s{k.first, k.second, m.unit, {}, m.provenance};
        Log2Histogram prev;
        for (const auto& r : readings_) {
            auto it = r.histograms.find(k);
            const Log2Histogram& cur = it == r.histograms.end() ? prev : it->second;
            s.intervals.push_back(histogram_delta(cur, prev));
            prev = cur;
        }
        out.histograms.push_back(std::move(s));
    }
    for (const auto& k : vkeys) {
        const Meta m = meta_of(k);
        ValueSeries s{k.first, k.second, m.unit, {}, m.provenance};
        double prev = 0;
        for (const auto& r : readings_) {
            auto it = r.values.find(k);
            const double cur = it == r.values.end() ? prev : it->second;
            s.intervals.push_back(std::max(0.0, cur - prev));
            prev = cur;
        }
        out.values.push_back(std::move(s));
    }
}

}  // namespace iodiag
