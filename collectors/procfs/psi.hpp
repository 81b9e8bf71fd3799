// Pressure stall information (/proc/pressure/io, /proc/pressure/memory): the
// share of the window in which some / all non-idle tasks were stalled on I/O
// or on memory, computed from the cumulative `total=` (microseconds) over our
// own window rather than the kernel's avg10 (which covers a different span);
// and the same share per interval of the window (series).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/collector.hpp"
#include "collectors/interval_snapshots.hpp"
#include "collectors/snapshot_support.hpp"

namespace iodiag {

struct PsiTotals {
    std::optional<std::uint64_t> some_us;
    std::optional<std::uint64_t> full_us;  // absent for cpu on older kernels
};

// Parses "some avg10=.. avg60=.. avg300=.. total=N" and "full ..." lines.
// Throws SourceError naming `path` and the line for anything else, or when
// there is no "some" line.
PsiTotals parse_psi(const std::string& text, const std::string& path);

// Reads a pressure file. Throws SourceError "<path>: <strerror> (hint)";
// EOPNOTSUPP and ENOENT say that PSI is probably off (psi=0).
std::string read_pressure_file(const std::string& path);
// The message of that error for an errno value.
std::string pressure_read_error(const std::string& path, int err);

// Share of `seconds` (pct, capped at 100) stalled between two cumulative
// totals; nullopt when either is absent, or the total went backwards (warned,
// naming `what`).
std::optional<double> psi_stall_pct(const std::optional<std::uint64_t>& before,
                                    const std::optional<std::uint64_t>& after, double seconds,
                                    const std::string& what);

// Appends psi.<resource>_some_pct / _full_pct for the window; a total that
// went backwards is skipped with a warning.
void add_psi_metrics(const std::string& resource, const PsiTotals& before, const PsiTotals& after,
                     double window_s, const std::string& source_path, Evidence& ev);

// Appends the per-interval series psi.<resource>_some_pct / _full_pct (share
// of each interval's measured length). A kind the kernel lacks, or one with an
// interval whose total went backwards, gets no series.
void add_psi_series(const std::string& resource, const IntervalSnapshots<PsiTotals>& snapshots,
                    const std::string& source_path, Evidence& ev);

class PsiCollector : public Collector {
public:
    std::string name() const override { return "psi"; }
    std::vector<MetricSpec> metric_specs() const override;
    CollectorStatus start(const CollectOptions& opts) override;
    void sample(size_t interval) override;
    void finish(Evidence& ev) override;

private:
    struct Source {
        std::string resource;  // "io", "memory"
        std::string path;
        std::optional<PsiTotals> before;  // nullopt: unreadable at start
        IntervalSnapshots<PsiTotals> series;
    };
    std::vector<Source> sources_;
    MonotonicStopwatch window_;
};

}  // namespace iodiag
