#include "collectors/bpf/syscall_bpf_attribution.hpp"

#include <algorithm>

namespace iodiag::syscall_bpf {

Log2Histogram duration_histogram(const std::vector<BucketSums>& buckets) {
    Log2Histogram h;
    for (size_t b = 0; b < buckets.size(); ++b)
        if (buckets[b].count) h.add_bucket(static_cast<int>(b), buckets[b].count);
    return h;
}

std::optional<int> slow_first_bucket(const std::vector<BucketSums>& buckets, double pct,
                                     std::optional<double> user_threshold_us) {
    const Log2Histogram h = duration_histogram(buckets);
    if (h.empty()) return std::nullopt;
    if (user_threshold_us) return Log2Histogram::bucket_of(static_cast<uint64_t>(*user_threshold_us));
    // The bucket that holds the wanted rank.
    const double rank = pct / 100.0 * static_cast<double>(h.total());
    double seen = 0;
    const auto& b = h.buckets();
    for (size_t i = 0; i < b.size(); ++i) {
        seen += static_cast<double>(b[i]);
        if (b[i] && seen >= rank) return static_cast<int>(i);
    }
    return static_cast<int>(b.size()) - 1;
}

Attribution attribute(const std::vector<BucketSums>& buckets, int first_bucket,
                      const std::vector<std::string>& layers) {
    Attribution a;
    a.threshold_us = first_bucket <= 0 ? 0 : static_cast<double>(Log2Histogram::bucket_lo(first_bucket));
    std::vector<double> ns(layers.size(), 0);
    double total_ns = 0;
    for (size_t b = std::max(0, first_bucket); b < buckets.size(); ++b) {
        a.ops += buckets[b].count;
        total_ns += static_cast<double>(buckets[b].total_ns);
        for (size_t c = 0; c < layers.size() && c < buckets[b].class_ns.size(); ++c)
            ns[c] += static_cast<double>(buckets[b].class_ns[c]);
    }
    a.total_us = total_ns / 1000.0;
    size_t other = layers.size();
    for (size_t c = 0; c < layers.size(); ++c)
        if (layers[c] == "other") other = c;
    double charged = 0;
    for (double v : ns) charged += v;
    double unaccounted = total_ns - charged;
    if (other == layers.size()) {
        ns.push_back(0);
        other = ns.size() - 1;
    }
    ns[other] += unaccounted > 0 ? unaccounted : 0;
    // If charged time exceeds the total (clock skew between CPUs), share over charged.
    const double denom = std::max(total_ns, charged);
    for (size_t c = 0; c < ns.size(); ++c) {
        const std::string& name = c < layers.size() ? layers[c] : std::string("other");
        if (ns[c] <= 0 && c != other) continue;
        a.shares.push_back({name, denom > 0 ? 100.0 * ns[c] / denom : 0.0, ns[c] / 1000.0});
    }
    std::stable_sort(a.shares.begin(), a.shares.end(),
                     [](const LayerShare& x, const LayerShare& y) { return x.pct > y.pct; });
    return a;
}

}  // namespace iodiag::syscall_bpf
