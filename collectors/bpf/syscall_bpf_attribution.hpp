// Latency share per layer over a set of syscalls, from the per-duration-bucket
// sums the BPF program keeps (struct iod_bucket_sums). Pure functions: no BPF,
// unit-tested on their own.
//
// The slow set is every syscall whose duration fell in a log2 bucket at or
// above the bucket holding the threshold (the window's p99 of all attributed
// syscalls, or the user's threshold): the kernel keeps sums per bucket, so the
// threshold is exact to the bucket's lower bound, which is what is reported.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/evidence/histogram.hpp"

namespace iodiag::syscall_bpf {

struct BucketSums {
    uint64_t count = 0;
    uint64_t total_ns = 0;
    std::vector<uint64_t> class_ns;   // index = enum iod_class
};

struct LayerShare {
    std::string layer;   // engine layer name or "other"
    double pct = 0;      // share of the summed syscall time
    double us = 0;       // summed time
};

struct Attribution {
    uint64_t ops = 0;
    double total_us = 0;
    double threshold_us = 0;    // lower bound of the first bucket in the set (0 = all)
    std::vector<LayerShare> shares;   // one per layer that had time, plus "other" always; sums to 100
};

// The histogram of durations (us) implied by the bucket sums.
Log2Histogram duration_histogram(const std::vector<BucketSums>& buckets);

// First bucket of the slow set: the bucket of `user_threshold_us` when given,
// else the bucket holding percentile `pct` of the durations. nullopt when
// there are no syscalls.
std::optional<int> slow_first_bucket(const std::vector<BucketSums>& buckets, double pct,
                                     std::optional<double> user_threshold_us);

// Shares over buckets [first_bucket, end). `layers` names each class (index =
// class); the class named "other" collects unclassified waits, and any time
// not charged to a class (which the kernel's accounting should never leave)
// is added to it rather than hidden.
Attribution attribute(const std::vector<BucketSums>& buckets, int first_bucket,
                      const std::vector<std::string>& layers);

}  // namespace iodiag::syscall_bpf
