// The evidence model: the only thing the engine sees.
//
// Every value carries its unit, its instance labels (device, cgroup, pid, ...)
// and its provenance (where it was read or measured). Live collection and
// replay of a recorded bundle produce the same Evidence, hence the same verdict.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/evidence/histogram.hpp"

namespace iodiag {

// Instance labels, e.g. {"device": "vda"}. Ordered so that serialisation and
// fingerprints are stable.
using Labels = std::map<std::string, std::string>;

// Where a value came from.
struct Provenance {
    // "file", "sysctl", "tracepoint", "ioctl", "derived", "reference"
    std::string kind;
    // e.g. "/proc/diskstats", "tracepoint:block:block_rq_complete",
    // "derived: disk.read_ticks_delta / disk.reads_delta",
    // "reference: seed 000 §3.1 (NVMe 4K random read 70-120 us)"
    std::string source;
};

// Observation window (wall clock, seconds since the epoch).
struct Window {
    double start_unix = 0;
    double duration_s = 0;
};

struct Metric {
    std::string name;   // e.g. "disk.read_await_ms"
    Labels labels;
    double value = 0;
    std::string unit;   // e.g. "ms", "1/s", "bytes", "pct", "count"
    Provenance provenance;
};

// A non-numeric observation: the scheduler, the device class, a mount option.
struct Fact {
    std::string name;   // e.g. "queue.scheduler"
    Labels labels;
    std::string value;
    Provenance provenance;
};

// A log2 latency (or size) histogram; see histogram.hpp for the bucket layout.
struct HistogramMetric {
    std::string name;   // e.g. "block.d2c_us"
    Labels labels;
    std::string unit;   // unit of the bucket bounds, e.g. "us"
    Log2Histogram hist;
    Provenance provenance;
};

// One individual slow operation with its measured parts.
struct Exemplar {
    std::string kind;                       // e.g. "block_io", "syscall"
    Labels labels;                          // comm, pid, device, cgroup, file ...
    std::map<std::string, double> values;   // e.g. {"q2c_us": 1234, "d2c_us": 1200}
    std::string unit;                       // unit of values, e.g. "us"
    Provenance provenance;
};

// Per-interval values over the window (seed 000 §5: a single window's
// histogram hides bursts, bimodality and a stall that starts at second 40).
// Interval i covers [Series::start_unix + i * interval_s, + interval_s); every
// series holds exactly Series::count intervals, the last one possibly shorter
// (it ends with the window).
struct HistogramSeries {
    std::string name;   // e.g. "block.d2c_us", the same name as the window histogram
    Labels labels;
    std::string unit;
    std::vector<Log2Histogram> intervals;
    Provenance provenance;
};

struct ValueSeries {
    std::string name;   // e.g. "layer.attributed_us", "psi.io_some_pct"
    Labels labels;
    std::string unit;
    std::vector<double> intervals;
    Provenance provenance;
};

struct Series {
    double start_unix = 0;
    double interval_s = 0;   // 0: no series were recorded (a version-1 bundle)
    size_t count = 0;        // number of intervals
    std::vector<HistogramSeries> histograms;
    std::vector<ValueSeries> values;

    bool empty() const { return count == 0; }
    const HistogramSeries* find_histogram(const std::string& name, const Labels& labels = {}) const;
    const ValueSeries* find_values(const std::string& name, const Labels& labels = {}) const;
};

// Whether a collector could observe, and if not, why.
struct CollectorStatus {
    std::string name;                  // e.g. "diskstats"
    bool available = false;
    std::string reason;                // why unavailable (or a degradation note)
    std::vector<std::string> layers;   // layers whose latency it observes
};

// Positions of a vector's entries by name and labels, so that a lookup is a
// hash and a tree search rather than a scan of ~1,000 metrics, or of every
// device's entry of one name (the rules look names up per device: a scan
// made a host with hundreds of disks quadratic). The vectors are public and
// appended to directly, so the index is built on the first lookup, extended
// by the entries appended since the last one, and rebuilt whenever the vector
// has shrunk, its last indexed entry no longer carries the name it had (an
// entry erased before it), or a position found no longer holds what was
// looked up. A copy starts empty. Renaming or relabelling an entry in place
// is not noticed: add a new entry instead.
class NameIndex {
public:
    NameIndex() = default;
    NameIndex(const NameIndex&) {}
    NameIndex& operator=(const NameIndex&) {
        std::lock_guard lock(mutex_);
        positions_.clear();
        size_ = 0;
        return *this;
    }

    // The first entry (in vector order) with that name and exactly those labels.
    template <typename T>
    const T* find(const std::vector<T>& items, const std::string& name, const Labels& labels) const {
        std::lock_guard lock(mutex_);
        for (int attempt = 0; attempt < 2; ++attempt) {
            update(items, attempt == 1);
            auto by_name = positions_.find(name);
            if (by_name == positions_.end()) return nullptr;
            auto at = by_name->second.find(labels);
            if (at == by_name->second.end()) return nullptr;
            const size_t pos = at->second;
            if (pos < items.size() && items[pos].name == name && items[pos].labels == labels) return &items[pos];
        }
        return nullptr;
    }

private:
    template <typename T>
    void update(const std::vector<T>& items, bool rebuild) const {
        if (rebuild || items.size() < size_ || (size_ > 0 && items[size_ - 1].name != last_name_)) {
            positions_.clear();
            size_ = 0;
        }
        if (items.size() == size_) return;   // nothing appended since the last lookup
        for (size_t i = size_; i < items.size(); ++i)
            positions_[items[i].name].try_emplace(items[i].labels, i);   // the first one stays
        size_ = items.size();
        last_name_ = items.back().name;
    }

    mutable std::mutex mutex_;   // const lookups may come from several threads
    mutable size_t size_ = 0;    // entries indexed
    mutable std::string last_name_;
    mutable std::unordered_map<std::string, std::map<Labels, size_t>> positions_;
};

struct Evidence {
    // Version 2 added `series`; version-1 bundles still load (without series).
    static constexpr int kSchemaVersion = 2;
    static constexpr int kOldestReadableSchemaVersion = 1;
    int schema_version = kSchemaVersion;   // as read from a bundle; written as kSchemaVersion
    std::string host;
    std::string kernel;
    Window window;
    std::vector<CollectorStatus> collectors;
    std::vector<Metric> metrics;
    std::vector<Fact> facts;
    std::vector<HistogramMetric> histograms;
    std::vector<Exemplar> exemplars;
    Series series;

    // A value that is not finite (NaN, inf) is left out with a warning.
    void add_metric(std::string name, Labels labels, double value, std::string unit,
                    Provenance provenance);
    void add_fact(std::string name, Labels labels, std::string value, Provenance provenance);

    // Lookups; nullptr / nullopt when absent.
    const Metric* find_metric(const std::string& name, const Labels& labels = {}) const;
    const Fact* find_fact(const std::string& name, const Labels& labels = {}) const;
    const HistogramMetric* find_histogram(const std::string& name, const Labels& labels = {}) const;

    // Distinct values of a label key across metrics, facts and histograms,
    // e.g. instances("device") -> {"loop0", "vda"}.
    std::vector<std::string> instances(const std::string& label_key) const;

    // True when an available collector observes that layer's latency.
    bool layer_observed(const std::string& layer) const;

    // Lookup indexes of metrics, facts and histograms (not part of the evidence).
    NameIndex metric_index;
    NameIndex fact_index;
    NameIndex histogram_index;
};

}  // namespace iodiag
