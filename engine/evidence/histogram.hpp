// Log2 histograms, laid out like the kernel-side ones of bcc's libbpf-tools:
// bucket 0 counts values 0..1, bucket i (i >= 1) counts [2^i, 2^(i+1) - 1].
// Percentiles are estimated by linear interpolation inside the bucket that holds
// the wanted rank; the true value lies somewhere in that bucket, so every
// estimate also carries the bucket's bounds (a factor-of-two error at most).
#pragma once

#include <cstdint>
#include <vector>

namespace iodiag {

struct PercentileEstimate {
    double value = 0;   // interpolated estimate
    double lo = 0;      // lowest value the bucket can hold
    double hi = 0;      // highest value the bucket can hold
};

class Log2Histogram {
public:
    static constexpr int kMaxBuckets = 64;

    // Bucket index a value falls in.
    static int bucket_of(uint64_t value);
    static uint64_t bucket_lo(int bucket);
    static uint64_t bucket_hi(int bucket);

    void add(uint64_t value, uint64_t count = 1);
    void add_bucket(int bucket, uint64_t count);
    void merge(const Log2Histogram& other);

    uint64_t total() const;
    bool empty() const { return total() == 0; }
    // p in [0, 100]. On an empty histogram returns all zeros.
    PercentileEstimate percentile(double p) const;
    // Mean estimated from bucket midpoints.
    double mean_estimate() const;

    const std::vector<uint64_t>& buckets() const { return buckets_; }
    void set_buckets(std::vector<uint64_t> b);

private:
    std::vector<uint64_t> buckets_;   // trailing empty buckets are trimmed
};

}  // namespace iodiag
