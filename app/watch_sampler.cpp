#include "app/watch_sampler.hpp"

#include <algorithm>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "collectors/snapshot_support.hpp"
#include "collectors/text_file.hpp"

namespace iodiag::cli {

namespace {

// Devices appear and go (loop devices, hot plug): the list of whole disks is
// read again every so many samples.
constexpr int kDiskRefreshSamples = 60;

std::optional<double> metric(const Evidence& ev, const std::string& name, const Labels& labels = {}) {
    const Metric* m = ev.find_metric(name, labels);
    return m ? std::optional<double>(m->value) : std::nullopt;
}

}  // namespace

WatchSampler::WatchSampler(std::string root, std::vector<std::string> devices)
    : root_(std::move(root)), filter_(std::move(devices)) {}

void WatchSampler::note(const std::string& problem) {
    if (std::find(problems_.begin(), problems_.end(), problem) != problems_.end()) return;
    spdlog::warn("watch: {}", problem);
    problems_.push_back(problem);
}

void WatchSampler::refresh_disks() {
    disks_.clear();
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(under_root(root_, "/sys/block"), ec)) {
        const std::string name = e.path().filename().string();
        if (device_selected(filter_, name)) disks_.push_back(name);
    }
    std::sort(disks_.begin(), disks_.end());
    samples_since_refresh_ = 0;
}

std::optional<WatchSample> WatchSampler::take(double now_unix, double elapsed_s) {
    if (disks_.empty() || ++samples_since_refresh_ >= kDiskRefreshSamples) refresh_disks();

    std::map<std::string, DiskStatsRecord> disks;
    const std::string diskstats = under_root(root_, "/proc/diskstats");
    try {
        disks = parse_diskstats(read_text_file(diskstats), diskstats);
    } catch (const SourceError& e) {
        note(e.what());
    }
    auto read_psi = [&](const std::string& resource) -> std::optional<PsiTotals> {
        const std::string path = under_root(root_, "/proc/pressure/" + resource);
        try {
            return parse_psi(read_pressure_file(path), path);
        } catch (const SourceError& e) {
            note(e.what());
            return std::nullopt;
        }
    };
    auto io = read_psi("io");
    auto memory = read_psi("memory");
    std::optional<VmstatCounters> vm;
    const std::string vmstat = under_root(root_, "/proc/vmstat");
    try {
        vm = parse_vmstat(read_text_file(vmstat), vmstat);
    } catch (const SourceError& e) {
        note(e.what());
    }

    std::optional<WatchSample> out;
    if (have_baseline_ && elapsed_s > 0) {
        // The collectors' own delta functions, into a scratch Evidence: the
        // per-second figures are computed exactly as a diagnosis computes
        // the window's.
        Evidence ev;
        for (const auto& dev : disks_) {
            auto a = disk_before_.find(dev), b = disks.find(dev);
            if (a != disk_before_.end() && b != disks.end()) add_disk_metrics(a->second, b->second, elapsed_s, ev);
        }
        if (io && io_before_) add_psi_metrics("io", *io_before_, *io, elapsed_s, "/proc/pressure/io", ev);
        if (memory && memory_before_)
            add_psi_metrics("memory", *memory_before_, *memory, elapsed_s, "/proc/pressure/memory", ev);
        if (vm && vm_before_) add_vmstat_metrics(*vm_before_, *vm, ev);

        WatchSample s;
        s.t_unix = now_unix;
        s.interval_s = elapsed_s;
        s.io_some_pct = metric(ev, "psi.io_some_pct");
        s.io_full_pct = metric(ev, "psi.io_full_pct");
        s.memory_some_pct = metric(ev, "psi.memory_some_pct");
        for (const auto& dev : disks_) {
            const Labels l{{"device", dev}};
            const auto util = metric(ev, "disk.util_pct", l);
            if (!util) continue;   // not in both snapshots, or a counter went backwards
            DeviceSample d;
            d.util_pct = *util;
            d.read = {metric(ev, "disk.read_iops", l).value_or(0), metric(ev, "disk.read_await_ms", l)};
            d.write = {metric(ev, "disk.write_iops", l).value_or(0), metric(ev, "disk.write_await_ms", l)};
            // An idle device says nothing: left out, so samples stay small.
            if (d.read.iops > 0 || d.write.iops > 0 || d.util_pct > 0) s.devices[dev] = d;
        }
        for (const auto& m : ev.metrics)
            if (m.name.rfind("vm.", 0) == 0 && m.unit == "count") s.vm_per_s[m.name] = m.value / elapsed_s;
        out = std::move(s);
    }
    disk_before_ = std::move(disks);
    io_before_ = io;
    memory_before_ = memory;
    vm_before_ = std::move(vm);
    have_baseline_ = true;
    return out;
}

}  // namespace iodiag::cli
