// Per-interval series from cumulative readings (CONTRACTS.md, Collector::sample).
//
// The BPF collectors never reset a map: each sample() reads the cumulative
// figures (histograms and sums since attach) and records them here; finish()
// turns them into one entry per interval, interval i = reading(i) -
// reading(i-1). Nothing that happened between two readings can fall between
// them, so the intervals add up to the last reading exactly.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/evidence/evidence.hpp"

namespace iodiag {

// Bucket-wise now - before; a bucket that went down (a reading of another
// source) counts as 0.
Log2Histogram histogram_delta(const Log2Histogram& now, const Log2Histogram& before);

class CumulativeSeries {
public:
    struct Meta {
        std::string unit;
        Provenance provenance;
    };
    // Readings taken at the end of the next interval (call once per sample(),
    // in order). Series that first appear later are zero before they appear;
    // one missing from a reading keeps its previous cumulative value.
    void record(std::map<std::pair<std::string, Labels>, Log2Histogram> histograms,
                std::map<std::pair<std::string, Labels>, double> values);
    // Unit and provenance of a series (the last one given wins).
    void describe(const std::string& name, const Labels& labels, Meta meta);
    size_t intervals() const { return readings_.size(); }
    // The last reading of a histogram (empty if never read).
    Log2Histogram last_histogram(const std::string& name, const Labels& labels) const;
    // Appends every series, one entry per recorded interval.
    void emit(Series& out) const;

private:
    struct Reading {
        std::map<std::pair<std::string, Labels>, Log2Histogram> histograms;
        std::map<std::pair<std::string, Labels>, double> values;
    };
    std::vector<Reading> readings_;
    std::map<std::pair<std::string, Labels>, Meta> meta_;
};

}  // namespace iodiag
