#include "collectors/procfs/psi.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "collectors/text_file.hpp"
#include "engine/evidence/layers.hpp"

namespace iodiag {

PsiTotals parse_psi(const std::string& text, const std::string& path) {
    PsiTotals out;
    for_each_line(text, path, [&](const std::vector<std::string>& f, const std::string& line, const std::string& where) {
        if (f[0] != "some" && f[0] != "full")
            throw SourceError(where + ": expected a 'some' or 'full' line, got '" + line + "'");
        std::optional<std::uint64_t> total;
        for (std::size_t i = 1; i < f.size(); ++i)
            if (f[i].rfind("total=", 0) == 0) total = parse_u64(f[i].substr(6), where + " total");
        if (!total) throw SourceError(where + ": no total= in '" + line + "' (truncated?)");
        auto& slot = f[0] == "some" ? out.some_us : out.full_us;
        if (slot) throw SourceError(where + ": second '" + f[0] + "' line");
        slot = total;
    });
    if (!out.some_us) throw SourceError(path + ": no 'some' line (empty or truncated file?)");
    return out;
}

std::string pressure_read_error(const std::string& path, int err) {
    std::string msg = path + ": " + std::strerror(err);
    // psi=0 at boot: /proc/pressure is not created (ENOENT) and cgroup
    // pressure files refuse reads (EOPNOTSUPP).
    if (err == EOPNOTSUPP) msg += " (psi=0?)";
    if (err == ENOENT) msg += " (kernel without CONFIG_PSI, or booted with psi=0?)";
    return msg;
}

std::string read_pressure_file(const std::string& path) {
    // Plain read(2) rather than iostreams: the errno of a failed read is the
    // message (EOPNOTSUPP when the kernel was booted with psi=0).
    auto fail = [&](int err) { return SourceError(pressure_read_error(path, err)); };
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw fail(errno);
    std::string text;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            const int err = errno;
            ::close(fd);
            throw fail(err);
        }
        if (n == 0) break;
        text.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return text;
}

std::optional<double> psi_stall_pct(const std::optional<std::uint64_t>& before,
                                    const std::optional<std::uint64_t>& after, double seconds,
                                    const std::string& what) {
    if (!before || !after || seconds <= 0) return std::nullopt;
    if (*after < *before) {
        spdlog::warn("psi: {} total went backwards ({} -> {}); not reported", what, *before, *after);
        return std::nullopt;
    }
    // The kernel aggregates at read time; the two reads and our clock
    // readings are not simultaneous, so a fully stalled span can come out a
    // hair above 100 %.
    return std::min(100.0, static_cast<double>(*after - *before) / (seconds * 1e6) * 100.0);
}

namespace {

const char* const kPsiKinds[] = {"some", "full"};

const std::optional<std::uint64_t>& psi_total(const PsiTotals& t, const std::string& kind) {
    return kind == "some" ? t.some_us : t.full_us;
}

std::string psi_metric(const std::string& resource, const std::string& kind) {
    return "psi." + resource + "_" + kind + "_pct";
}

}  // namespace

void add_psi_metrics(const std::string& resource, const PsiTotals& before, const PsiTotals& after,
                     double window_s, const std::string& source_path, Evidence& ev) {
    std::optional<double> some;
    for (const std::string kind : kPsiKinds) {
        const std::string metric = psi_metric(resource, kind);
        auto pct = psi_stall_pct(psi_total(before, kind), psi_total(after, kind), window_s,
                                 source_path + " " + kind + " (" + metric + ")");
        if (!pct) continue;
        // All tasks stalled is a case of some task stalled, but the kernel
        // weighs each CPU's stall times by its non-idle time anew at every
        // read, so over a short, fully stalled window the two deltas can put
        // "full" a hair above "some": held to it.
        if (kind == "some") some = pct;
        else if (some) pct = std::min(*pct, *some);
        ev.add_metric(metric, {}, *pct, "pct",
                      {"derived", "Δ" + kind + " total (us) in " + source_path + " / window × 100"});
    }
}

void add_psi_series(const std::string& resource, const IntervalSnapshots<PsiTotals>& snapshots,
                    const std::string& source_path, Evidence& ev) {
    if (!snapshots.complete() || snapshots.intervals() == 0) return;
    for (const std::string kind : kPsiKinds) {
        const std::string metric = psi_metric(resource, kind);
        ValueSeries vs{metric, {}, "pct", {},
                       {"derived", "Δ" + kind + " total (us) in " + source_path + " per interval / the interval's "
                                   "measured length × 100"}};
        bool whole = true;
        snapshots.for_each_interval([&](const PsiTotals& a, const PsiTotals& b, double seconds, size_t i) {
            const auto pct = psi_stall_pct(psi_total(a, kind), psi_total(b, kind), seconds,
                                           source_path + " " + kind + " in interval " + std::to_string(i));
            if (!pct) whole = false;
            vs.intervals.push_back(pct.value_or(0));
        });
        // A kernel without the "full" line has no series for it; one interval
        // that went backwards leaves a series without a value there: dropped.
        if (whole) ev.series.values.push_back(std::move(vs));
    }
}

std::vector<MetricSpec> PsiCollector::metric_specs() const {
    auto m = [](std::string n, const std::string& lay, std::string d) {
        return MetricSpec{std::move(n), MetricSpec::Kind::Metric, "pct", lay, "", std::move(d)};
    };
    // io pressure is what the application feels of all I/O layers together;
    // memory pressure is reclaim and thrashing (refaults) stalls.
    return {
        m("psi.io_some_pct", layer::kSyscall, "Share of the window in which some task was stalled on I/O"),
        m("psi.io_full_pct", layer::kSyscall,
          "Share of the window in which all non-idle tasks were stalled on I/O"),
        m("psi.memory_some_pct", layer::kReclaim,
          "Share of the window in which some task was stalled on memory (reclaim, refaults)"),
        m("psi.memory_full_pct", layer::kReclaim,
          "Share of the window in which all non-idle tasks were stalled on memory"),
    };
}

CollectorStatus PsiCollector::start(const CollectOptions& opts) {
    CollectorStatus st{name(), false, "", {}};
    sources_.clear();
    std::vector<std::string> problems;
    for (const std::string resource : {"io", "memory"}) {
        Source s{resource, under_root(opts.root, "/proc/pressure/" + resource), std::nullopt, {}};
        try {
            s.before = parse_psi(read_pressure_file(s.path), s.path);
            s.series.begin(*s.before);
        } catch (const SourceError& e) {
            problems.push_back(e.what());
        }
        sources_.push_back(std::move(s));
    }
    for (const auto& p : problems) st.reason += (st.reason.empty() ? "" : "; ") + p;
    st.available = std::any_of(sources_.begin(), sources_.end(), [](const Source& s) { return s.before; });
    window_.start();
    return st;
}

void PsiCollector::sample(size_t) {
    for (auto& s : sources_) {
        if (!s.before) continue;
        try {
            s.series.take(parse_psi(read_pressure_file(s.path), s.path));
        } catch (const SourceError& e) {
            s.series.take(std::nullopt, e.what());
        }
    }
}

void PsiCollector::finish(Evidence& ev) {
    const double window_s = window_.elapsed_s();
    std::vector<std::string> problems;
    bool any = false;
    for (const auto& s : sources_) {
        if (!s.before) continue;
        try {
            add_psi_metrics(s.resource, *s.before, parse_psi(read_pressure_file(s.path), s.path), window_s,
                            "/proc/pressure/" + s.resource, ev);
            any = true;
        } catch (const SourceError& e) {
            spdlog::warn("psi: {}", e.what());
            problems.push_back(e.what());
        }
    }
    for (const auto& s : sources_) {
        if (!s.before || s.series.intervals() == 0) continue;
        if (s.series.complete())
            add_psi_series(s.resource, s.series, "/proc/pressure/" + s.resource, ev);
        else
            spdlog::warn("psi: no per-interval series of {}: {}", s.path, s.series.failure());
    }
    if (!any && !problems.empty()) {
        std::string reason;
        for (const auto& p : problems) reason += (reason.empty() ? "" : "; ") + p;
        mark_unavailable_at_finish(ev, name(), {}, reason);
    }
}

}  // namespace iodiag
