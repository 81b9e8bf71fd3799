#include "collectors/procfs/diskstats.hpp"

#include <algorithm>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "collectors/text_file.hpp"
#include "engine/evidence/layers.hpp"

namespace iodiag {

namespace {

const char* const kDiskstats = "/proc/diskstats";

// Whole disks are the entries of /sys/block; partitions live only below them.
std::vector<std::string> whole_disks(const std::string& root) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(under_root(root, "/sys/block"), ec))
        out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
}

}  // namespace

std::map<std::string, DiskStatsRecord> parse_diskstats(const std::string& text, const std::string& path) {
    std::map<std::string, DiskStatsRecord> out;
    for_each_line(text, path, [&](const std::vector<std::string>& f, const std::string&, const std::string& where) {
        if (f.size() == 7) return;  // old-style partition line: partitions are not reported
        if (f.size() != 14 && f.size() != 18 && f.size() != 20)
            throw SourceError(where + ": expected 14, 18 or 20 fields, got " + std::to_string(f.size()) +
                              " (truncated?)");
        auto u = [&](std::size_t i) { return parse_u64(f[i], where + " field " + std::to_string(i + 1)); };
        DiskStatsRecord r;
        r.major = static_cast<unsigned>(u(0));
        r.minor = static_cast<unsigned>(u(1));
        r.name = f[2];
        r.reads = u(3), r.read_merges = u(4), r.read_sectors = u(5), r.read_ticks_ms = u(6);
        r.writes = u(7), r.write_merges = u(8), r.write_sectors = u(9), r.write_ticks_ms = u(10);
        r.in_flight = u(11), r.io_ticks_ms = u(12), r.time_in_queue_ms = u(13);
        if (f.size() >= 18) {
            r.has_discard = true;
            r.discards = u(14), r.discard_merges = u(15), r.discard_sectors = u(16), r.discard_ticks_ms = u(17);
        }
        if (f.size() == 20) {
            r.has_flush = true;
            r.flushes = u(18), r.flush_ticks_ms = u(19);
        }
        if (!out.emplace(r.name, r).second) throw SourceError(where + ": device '" + r.name + "' seen twice");
    });
    if (out.empty()) throw SourceError(path + ": no devices (empty file?)");
    return out;
}

bool add_disk_metrics(const DiskStatsRecord& a, const DiskStatsRecord& b, double window_s, Evidence& ev) {
    if (window_s <= 0) return false;
    // Every cumulative counter must not go backwards. The tick fields are
    // 32-bit milliseconds in the kernel's output and wrap after ~49.7 days.
    const std::pair<std::uint64_t, std::uint64_t> counters[] = {
        {a.reads, b.reads}, {a.read_merges, b.read_merges}, {a.read_sectors, b.read_sectors},
        {a.read_ticks_ms, b.read_ticks_ms}, {a.writes, b.writes}, {a.write_merges, b.write_merges},
        {a.write_sectors, b.write_sectors}, {a.write_ticks_ms, b.write_ticks_ms},
        {a.io_ticks_ms, b.io_ticks_ms}, {a.time_in_queue_ms, b.time_in_queue_ms},
        {a.discards, b.discards}, {a.discard_ticks_ms, b.discard_ticks_ms},
        {a.flushes, b.flushes}, {a.flush_ticks_ms, b.flush_ticks_ms}};
    for (const auto& [x, y] : counters) {
        if (y < x) {
            spdlog::warn("diskstats: a counter of {} went backwards ({} -> {}): wrapped or device "
                         "replaced; device not reported for this window", b.name, x, y);
            return false;
        }
    }
    if (a.major != b.major || a.minor != b.minor) {
        spdlog::warn("diskstats: {} changed device number between snapshots; not reported", b.name);
        return false;
    }

    const Labels labels{{"device", b.name}};
    const double window_ms = window_s * 1000.0;
    auto d = [](std::uint64_t x, std::uint64_t y) { return static_cast<double>(y - x); };
    const double reads = d(a.reads, b.reads), writes = d(a.writes, b.writes);
    const double discards = b.has_discard && a.has_discard ? d(a.discards, b.discards) : 0;
    const double flushes = b.has_flush && a.has_flush ? d(a.flushes, b.flushes) : 0;
    const double read_ticks = d(a.read_ticks_ms, b.read_ticks_ms);
    const double write_ticks = d(a.write_ticks_ms, b.write_ticks_ms);
    const double discard_ticks = b.has_discard && a.has_discard ? d(a.discard_ticks_ms, b.discard_ticks_ms) : 0;
    const double flush_ticks = b.has_flush && a.has_flush ? d(a.flush_ticks_ms, b.flush_ticks_ms) : 0;

    auto add = [&](const char* metric, double value, const char* unit, const std::string& formula) {
        ev.add_metric(metric, labels, value, unit,
                      {"derived", formula + " of " + b.name + " in /proc/diskstats over the window"});
    };
    add("disk.read_iops", reads / window_s, "1/s", "Δreads / window");
    add("disk.write_iops", writes / window_s, "1/s", "Δwrites / window");
    if (a.has_flush && b.has_flush) add("disk.flush_iops", flushes / window_s, "1/s", "Δflushes / window");
    if (a.has_discard && b.has_discard)
        add("disk.discard_iops", discards / window_s, "1/s", "Δdiscards / window");
    const double ios = reads + writes + discards + flushes;
    add("disk.ios_per_s", ios / window_s, "1/s", "(Δreads + Δwrites + Δdiscards + Δflushes) / window");
    add("disk.read_bytes_per_s", d(a.read_sectors, b.read_sectors) * 512 / window_s, "bytes/s",
        "Δread_sectors × 512 / window");
    add("disk.write_bytes_per_s", d(a.write_sectors, b.write_sectors) * 512 / window_s, "bytes/s",
        "Δwrite_sectors × 512 / window");

    // An await over no completed I/O is undefined: not emitted rather than 0.
    if (reads > 0) add("disk.read_await_ms", read_ticks / reads, "ms", "Δread_ticks / Δreads");
    if (writes > 0) add("disk.write_await_ms", write_ticks / writes, "ms", "Δwrite_ticks / Δwrites");
    if (flushes > 0) add("disk.flush_await_ms", flush_ticks / flushes, "ms", "Δflush_ticks / Δflushes");
    if (ios > 0)
        add("disk.await_ms", (read_ticks + write_ticks + discard_ticks + flush_ticks) / ios, "ms",
            "(Δread_ticks + Δwrite_ticks + Δdiscard_ticks + Δflush_ticks) / (Δreads + Δwrites + "
            "Δdiscards + Δflushes)");

    // io_ticks advances in whole jiffies on some kernels, so it can overrun
    // the window by a tick: capped at 100 % as iostat does.
    add("disk.util_pct", std::min(100.0, d(a.io_ticks_ms, b.io_ticks_ms) / window_ms * 100.0), "pct",
        "Δio_ticks / window × 100 (capped at 100)");
    add("disk.aqu_sz", d(a.time_in_queue_ms, b.time_in_queue_ms) / window_ms, "requests",
        "Δtime_in_queue / window");
    ev.add_metric("disk.in_flight", labels, static_cast<double>(b.in_flight), "requests",
                  {"file", std::string(kDiskstats) + " in_flight of " + b.name + " at the end"});
    add("disk.read_merges_per_s", d(a.read_merges, b.read_merges) / window_s, "1/s", "Δread_merges / window");
    add("disk.write_merges_per_s", d(a.write_merges, b.write_merges) / window_s, "1/s",
        "Δwrite_merges / window");
    if (reads > 0)
        add("disk.avg_read_kb", d(a.read_sectors, b.read_sectors) * 512 / 1024 / reads, "KiB",
            "Δread_sectors × 512 / 1024 / Δreads");
    if (writes > 0)
        add("disk.avg_write_kb", d(a.write_sectors, b.write_sectors) * 512 / 1024 / writes, "KiB",
            "Δwrite_sectors × 512 / 1024 / Δwrites");
    return true;
}

DiskTotals disk_totals(const DiskStatsRecord& r) {
    DiskTotals t;
    t.major = r.major, t.minor = r.minor;
    t.ios = r.reads + r.writes + (r.has_discard ? r.discards : 0) + (r.has_flush ? r.flushes : 0);
    t.ticks_ms = r.read_ticks_ms + r.write_ticks_ms + (r.has_discard ? r.discard_ticks_ms : 0) +
                 (r.has_flush ? r.flush_ticks_ms : 0);
    t.io_ticks_ms = r.io_ticks_ms;
    return t;
}

DiskSeriesSnapshot disk_series_snapshot(const std::map<std::string, DiskStatsRecord>& records,
                                        const std::vector<std::string>& devices) {
    DiskSeriesSnapshot out;
    for (const auto& dev : devices)
        if (auto it = records.find(dev); it != records.end()) out.emplace(dev, disk_totals(it->second));
    return out;
}

void add_disk_series(const IntervalSnapshots<DiskSeriesSnapshot>& snapshots, const std::vector<std::string>& devices,
                     Evidence& ev) {
    if (!snapshots.complete() || snapshots.intervals() == 0) return;
    const std::string where = " of the device in /proc/diskstats per interval";
    for (const auto& dev : devices) {
        const Labels labels{{"device", dev}};
        ValueSeries iops{"disk.iops", labels, "1/s", {},
                         {"derived", "(Δreads + Δwrites + Δdiscards + Δflushes) / the interval's measured length" + where}};
        ValueSeries await{"disk.await_ms", labels, "ms", {},
                          {"derived", "(Δread_ticks + Δwrite_ticks + Δdiscard_ticks + Δflush_ticks) / (Δreads + "
                                      "Δwrites + Δdiscards + Δflushes)" + where +
                                      "; 0 in an interval where no I/O completed (disk.iops 0 there)"}};
        ValueSeries util{"disk.util_pct", labels, "pct", {},
                         {"derived", "Δio_ticks / the interval's measured length × 100 (capped at 100)" + where}};
        std::string problem;
        bool busy = false;
        snapshots.for_each_interval([&](const DiskSeriesSnapshot& a, const DiskSeriesSnapshot& b, double seconds,
                                        size_t i) {
            const auto x = a.find(dev), y = b.find(dev);
            if (!problem.empty()) return;
            if (x == a.end() || y == b.end())
                problem = "not in /proc/diskstats at every sample";
            else if (x->second.major != y->second.major || x->second.minor != y->second.minor)
                problem = "device number changed in interval " + std::to_string(i);
            else if (y->second.ios < x->second.ios || y->second.ticks_ms < x->second.ticks_ms ||
                     y->second.io_ticks_ms < x->second.io_ticks_ms)
                problem = "a counter went backwards in interval " + std::to_string(i) + " (wrapped or replaced)";
            else if (seconds <= 0)
                problem = "interval " + std::to_string(i) + " has no length";
            if (!problem.empty()) return;
            const double ios = static_cast<double>(y->second.ios - x->second.ios);
            const double ticks = static_cast<double>(y->second.ticks_ms - x->second.ticks_ms);
            const double io_ticks = static_cast<double>(y->second.io_ticks_ms - x->second.io_ticks_ms);
            busy = busy || ios > 0 || io_ticks > 0;
            iops.intervals.push_back(ios / seconds);
            await.intervals.push_back(ios > 0 ? ticks / ios : 0);
            util.intervals.push_back(std::min(100.0, io_ticks / (seconds * 1000.0) * 100.0));
        });
        if (!problem.empty()) {
            spdlog::warn("diskstats: no per-interval series of {}: {}", dev, problem);
            continue;
        }
        // A disk idle for the whole window adds nothing to look at; its
        // window metrics (disk.ios_per_s 0) say it was observed and idle.
        if (!busy) continue;
        ev.series.values.push_back(std::move(iops));
        ev.series.values.push_back(std::move(await));
        ev.series.values.push_back(std::move(util));
    }
}

std::vector<MetricSpec> DiskstatsCollector::metric_specs() const {
    auto m = [](std::string n, std::string unit, std::string d) {
        return MetricSpec{std::move(n), MetricSpec::Kind::Metric, std::move(unit), layer::kDevice, "device",
                          std::move(d)};
    };
    return {
        m("disk.read_iops", "1/s", "Completed reads per second"),
        m("disk.write_iops", "1/s", "Completed writes per second"),
        m("disk.flush_iops", "1/s", "Completed flush requests per second (kernel 5.5+)"),
        m("disk.discard_iops", "1/s", "Completed discards per second (kernel 4.18+)"),
        m("disk.ios_per_s", "1/s", "Completed reads + writes + discards + flushes per second"),
        m("disk.read_bytes_per_s", "bytes/s", "Bytes read per second"),
        m("disk.write_bytes_per_s", "bytes/s", "Bytes written per second"),
        m("disk.read_await_ms", "ms", "Mean read time, queue + service (only when reads completed)"),
        m("disk.write_await_ms", "ms", "Mean write time, queue + service (only when writes completed)"),
        m("disk.flush_await_ms", "ms", "Mean flush time (only when flushes completed)"),
        m("disk.await_ms", "ms", "Mean time over all completed requests (only when any completed)"),
        m("disk.util_pct", "pct", "Share of the window with at least one request in flight"),
        m("disk.aqu_sz", "requests", "Mean number of requests in the queue or in flight"),
        m("disk.in_flight", "requests", "Requests in flight at the end of the window"),
        m("disk.read_merges_per_s", "1/s", "Reads merged into queued requests per second"),
        m("disk.write_merges_per_s", "1/s", "Writes merged into queued requests per second"),
        m("disk.avg_read_kb", "KiB", "Mean read size (only when reads completed)"),
        m("disk.avg_write_kb", "KiB", "Mean write size (only when writes completed)"),
    };
}

CollectorStatus DiskstatsCollector::start(const CollectOptions& opts) {
    CollectorStatus st{name(), false, "", {layer::kDevice}};
    path_ = under_root(opts.root, kDiskstats);
    disks_.clear();
    try {
        before_ = parse_diskstats(read_text_file(path_), path_);
    } catch (const SourceError& e) {
        st.reason = e.what();
        return st;
    }
    std::vector<std::string> missing;
    const auto all_disks = whole_disks(opts.root);
    for (const auto& dev : all_disks) {
        if (device_selected(opts.devices, dev) && before_.count(dev)) disks_.push_back(dev);
    }
    for (const auto& want : opts.devices)
        if (std::find(disks_.begin(), disks_.end(), kernel_device_name(want)) == disks_.end())
            missing.push_back(want);
    if (disks_.empty()) {
        st.reason = all_disks.empty()
                        ? under_root(opts.root, "/sys/block") + ": no whole disks listed"
                        : "no whole disk in " + path_ + " matches the requested devices (" +
                              join(opts.devices) + ")";
        return st;
    }
    if (!missing.empty())
        st.reason = "not whole disks listed in " + path_ + " and /sys/block, not reported: " + join(missing);
    window_.start();
    series_.begin(disk_series_snapshot(before_, disks_));
    st.available = true;
    return st;
}

void DiskstatsCollector::sample(size_t) {
    try {
        series_.take(disk_series_snapshot(parse_diskstats(read_text_file(path_), path_), disks_));
    } catch (const SourceError& e) {
        series_.take(std::nullopt, e.what());
    }
}

void DiskstatsCollector::finish(Evidence& ev) {
    const double window_s = window_.elapsed_s();
    std::map<std::string, DiskStatsRecord> after;
    try {
        after = parse_diskstats(read_text_file(path_), path_);
    } catch (const SourceError& e) {
        spdlog::warn("diskstats: {}", e.what());
        mark_unavailable_at_finish(ev, name(), {layer::kDevice}, e.what());
        return;
    }
    for (const auto& dev : disks_) {
        auto it = after.find(dev);
        if (it == after.end()) {
            spdlog::warn("diskstats: {} disappeared from {} during the window; not reported", dev, path_);
            continue;
        }
        add_disk_metrics(before_.at(dev), it->second, window_s, ev);
    }
    if (series_.intervals() > 0 && !series_.complete())
        spdlog::warn("diskstats: no per-interval series: {}", series_.failure());
    add_disk_series(series_, disks_, ev);
}

}  // namespace iodiag
