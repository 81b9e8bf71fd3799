// Ceph performance counters as `perf dump` prints them on an admin socket:
// sections ("osd", "bluestore", "rocksdb", "throttle-...") of counters that
// are either plain numbers (counts, gauges) or averages {avgcount, sum}
// (latencies: sum in seconds over avgcount events). Both are cumulative since
// the daemon started, so a window's figure is the difference of two dumps.
//
// The parsers are pure (text in, value or error out) so that malformed or
// another version's output is rejected with a reason, and they can be fuzzed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/evidence/histogram.hpp"

namespace iodiag {

struct PerfCounter {
    bool is_average = false;   // {avgcount, sum}
    double value = 0;          // plain counter or gauge
    double avgcount = 0;       // averages: events
    double sum = 0;            // averages: total (seconds for latencies)
};

// "section.counter" -> value, e.g. "osd.op_w_latency", "bluestore.kv_sync_lat".
struct PerfDump {
    std::map<std::string, PerfCounter> counters;
    const PerfCounter* find(const std::string& key) const;
};

struct PerfDumpParse {
    std::optional<PerfDump> dump;
    std::string error;   // set when dump is empty: what was wrong with the text
};

// Parses `perf dump` JSON. Counters of shapes it does not know (another
// version's) are skipped; text that is not a JSON object of sections is an
// error. Never throws.
PerfDumpParse parse_perf_dump(std::string_view json);

// One average counter over a window: events and total between two dumps.
struct PerfWindow {
    double count = 0;
    double sum = 0;   // seconds for latencies
    double mean() const { return count > 0 ? sum / count : 0; }
};

// The window's part of an average counter; nullopt when absent from either
// dump or when it went backwards (the daemon restarted in the window).
std::optional<PerfWindow> perf_window(const PerfDump& before, const PerfDump& after, const std::string& key);
// The window's increase of a plain counter; nullopt as above.
std::optional<double> perf_increase(const PerfDump& before, const PerfDump& after, const std::string& key);

// `perf histogram dump`: a two-dimensional histogram (latency x request size)
// per counter, bucket bounds given by the dump itself (in nanoseconds for the
// latency axis, whatever its name says in 16.2). Reduced to the latency axis.
struct PerfLatencyHistogram {
    std::vector<double> lo_ns;      // bucket lower bounds (< 0: underflow bucket)
    std::vector<double> hi_ns;      // upper bounds (< 0: open-ended)
    std::vector<uint64_t> counts;   // summed over the size axis
};
struct PerfHistogramParse {
    std::map<std::string, PerfLatencyHistogram> histograms;   // "osd.op_w_latency_in_bytes_histogram"
    std::string error;
};
PerfHistogramParse parse_perf_histogram_dump(std::string_view json);

// The window's histogram (after - before, bucket by bucket) re-bucketed into a
// log2 histogram in microseconds (each bucket's count at its midpoint, so a
// value is placed within a factor of two, as every log2 histogram here).
// nullopt when the layouts differ or a bucket went backwards.
std::optional<Log2Histogram> perf_histogram_window_us(const PerfLatencyHistogram& before,
                                                      const PerfLatencyHistogram& after);

}  // namespace iodiag
