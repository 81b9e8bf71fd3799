#include "engine/evidence/histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace iodiag {

int Log2Histogram::bucket_of(uint64_t value) {
    if (value <= 1) return 0;
    return 63 - std::countl_zero(value);
}

uint64_t Log2Histogram::bucket_lo(int bucket) { return bucket == 0 ? 0 : (uint64_t{1} << bucket); }

uint64_t Log2Histogram::bucket_hi(int bucket) {
    if (bucket == 0) return 1;
    if (bucket >= 63) return UINT64_MAX;
    return (uint64_t{1} << (bucket + 1)) - 1;
}

void Log2Histogram::add(uint64_t value, uint64_t count) { add_bucket(bucket_of(value), count); }

void Log2Histogram::add_bucket(int bucket, uint64_t count) {
    if (bucket < 0 || bucket >= kMaxBuckets || count == 0) return;
    if (buckets_.size() <= static_cast<size_t>(bucket)) buckets_.resize(bucket + 1, 0);
    buckets_[bucket] += count;
}

void Log2Histogram::merge(const Log2Histogram& other) {
    for (size_t i = 0; i < other.buckets_.size(); ++i) add_bucket(static_cast<int>(i), other.buckets_[i]);
}

uint64_t Log2Histogram::total() const {
    uint64_t t = 0;
    for (auto c : buckets_) t += c;
    return t;
}

void Log2Histogram::set_buckets(std::vector<uint64_t> b) {
    if (b.size() > kMaxBuckets) b.resize(kMaxBuckets);
    while (!b.empty() && b.back() == 0) b.pop_back();
    buckets_ = std::move(b);
}

PercentileEstimate Log2Histogram::percentile(double p) const {
    const uint64_t n = total();
    if (n == 0) return {};
    p = std::clamp(p, 0.0, 100.0);
    // Rank of the wanted sample, 1-based, as the nearest-rank method defines it.
    const double rank = std::max(1.0, std::ceil(p / 100.0 * static_cast<double>(n)));
    uint64_t below = 0;
    for (size_t i = 0; i < buckets_.size(); ++i) {
        const uint64_t c = buckets_[i];
        if (c == 0) continue;
        if (static_cast<double>(below + c) >= rank) {
            const double lo = static_cast<double>(bucket_lo(static_cast<int>(i)));
            const double hi = static_cast<double>(bucket_hi(static_cast<int>(i)));
            // Spread the bucket's samples evenly over [lo, hi + 1).
            const double frac = (rank - static_cast<double>(below)) / static_cast<double>(c);
            const double value = std::min(hi, lo + frac * (hi + 1 - lo));
            return {value, lo, hi};
        }
        below += c;
    }
    const int last = static_cast<int>(buckets_.size()) - 1;
    return {static_cast<double>(bucket_hi(last)), static_cast<double>(bucket_lo(last)),
            static_cast<double>(bucket_hi(last))};
}

double Log2Histogram::mean_estimate() const {
    const uint64_t n = total();
    if (n == 0) return 0;
    double sum = 0;
    for (size_t i = 0; i < buckets_.size(); ++i) {
        const double mid = (static_cast<double>(bucket_lo(static_cast<int>(i))) +
                            static_cast<double>(bucket_hi(static_cast<int>(i)))) / 2.0;
        sum += mid * static_cast<double>(buckets_[i]);
    }
    return sum / static_cast<double>(n);
}

}  // namespace iodiag
