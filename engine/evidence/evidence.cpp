#include "engine/evidence/evidence.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <spdlog/spdlog.h>

namespace iodiag {

namespace {
// A lookup with labels {} matches an entry without labels only; a lookup with
// labels matches the entry whose labels are exactly those.
template <typename T>
const T* find_by(const std::vector<T>& items, const std::string& name, const Labels& labels) {
    for (const auto& item : items)
        if (item.name == name && item.labels == labels) return &item;
    return nullptr;
}
}  // namespace

void Evidence::add_metric(std::string name, Labels labels, double value, std::string unit,
                          Provenance provenance) {
    // NaN or an infinity cannot be true of anything measured (a division by a
    // zero window, a garbage counter): it is left out, so the layer reads as
    // unmeasured rather than as a number, and the bundle stays readable.
    if (!std::isfinite(value)) {
        spdlog::warn("{} from {} is not a finite number: left out of the evidence", name, provenance.source);
        return;
    }
    metrics.push_back({std::move(name), std::move(labels), value, std::move(unit), std::move(provenance)});
}

void Evidence::add_fact(std::string name, Labels labels, std::string value, Provenance provenance) {
    facts.push_back({std::move(name), std::move(labels), std::move(value), std::move(provenance)});
}

const Metric* Evidence::find_metric(const std::string& name, const Labels& labels) const {
    return metric_index.find(metrics, name, labels);
}

const Fact* Evidence::find_fact(const std::string& name, const Labels& labels) const {
    return fact_index.find(facts, name, labels);
}

const HistogramMetric* Evidence::find_histogram(const std::string& name, const Labels& labels) const {
    return histogram_index.find(histograms, name, labels);
}

std::vector<std::string> Evidence::instances(const std::string& label_key) const {
    std::set<std::string> seen;
    auto collect = [&](const Labels& l) {
        if (auto it = l.find(label_key); it != l.end()) seen.insert(it->second);
    };
    for (const auto& m : metrics) collect(m.labels);
    for (const auto& f : facts) collect(f.labels);
    for (const auto& h : histograms) collect(h.labels);
    return {seen.begin(), seen.end()};
}

const HistogramSeries* Series::find_histogram(const std::string& name, const Labels& labels) const {
    return find_by(histograms, name, labels);
}

const ValueSeries* Series::find_values(const std::string& name, const Labels& labels) const {
    return find_by(values, name, labels);
}

bool Evidence::layer_observed(const std::string& layer) const {
    return std::any_of(collectors.begin(), collectors.end(), [&](const CollectorStatus& c) {
        return c.available && std::find(c.layers.begin(), c.layers.end(), layer) != c.layers.end();
    });
}

}  // namespace iodiag
