#include "collectors/bpf/readahead_misses.hpp"

#include <map>
#include <algorithm>
#include <tuple>

#include "collectors/sysfs/block_device_name.hpp"
#include "engine/evidence/layers.hpp"

namespace iodiag::syscall_bpf {

std::string readahead_device_name(const std::string& root, uint32_t kernel_dev) {
    // A partition's readahead is its disk's (the filesystem's backing_dev_info
    // is the disk's).
    return block_device_name(root, kernel_dev_major(kernel_dev), kernel_dev_minor(kernel_dev), true);
}

std::vector<MetricSpec> readahead_specs() {
    using K = MetricSpec::Kind;
    return {
        {"fs.readahead_misses", K::Metric, "count", layer::kPageCache, "device",
         "reads that missed the page cache and waited (page_cache_sync_ra), per filesystem device and application"},
        {"fs.readahead_sequential_misses", K::Metric, "count", layer::kPageCache, "device",
         "of those, misses of a read continuing the file's previous read (the kernel's sequential test)"},
        {"fs.readahead_unwidened_misses", K::Metric, "count", layer::kPageCache, "device",
         "of the sequential misses, those whose readahead window was no larger than the pages the read asked for "
         "(read_ahead_kb 0 or tiny when the file was opened): one synchronous device read each"},
        {"fs.readahead_async", K::Metric, "count", layer::kPageCache, "device",
         "asynchronous readaheads (page_cache_async_ra): a sequential read reached its window's marked page and "
         "the kernel started reading the next window"},
        {"fs.page_cache_wait_us", K::Metric, "us", layer::kPageCache, "device",
         "the application's reads' wait for the page cache (a miss's fill, a page still being read ahead) on the "
         "device's files, over all its reads"},
        {"fs.page_cache_read_us", K::Metric, "us", layer::kPageCache, "device",
         "the whole duration of the application's reads that waited for the page cache on the device's files"},
        {"fs.readahead_window_kb", K::Metric, "KiB", layer::kPageCache, "device",
         "mean readahead window (the file's ra_pages) at the application's misses and asynchronous readaheads"},
    };
}

void emit_readahead(const std::vector<ReadaheadMisses>& misses, uint32_t page_bytes, Evidence& ev) {
    std::map<std::pair<std::string, std::string>, ReadaheadMisses> by_app;
    for (const auto& m : misses) {
        const std::string app = m.app.empty() ? "pid " + std::to_string(m.pid) : m.app;
        by_app[{m.device, app}].add_counts(m);
    }
    const Provenance prov{"tracepoint",
                          "tp_btf:readahead:page_cache_sync_ra per filesystem device (inode->i_sb->s_dev) and "
                          "process: sequential = the page asked for follows the file's previous read (ra->prev_pos, "
                          "inherited by the later misses of one read), unwidened = sequential with ra->ra_pages <= "
                          "the pages asked for; tp_btf:readahead:page_cache_async_ra per the same"};
    // The applications that waited longest, each with its own values; the
    // rest (a busy machine's many processes that missed a few times each)
    // summed, so that a bundle stays small whatever runs.
    std::vector<std::pair<std::pair<std::string, std::string>, ReadaheadMisses>> ranked(by_app.begin(), by_app.end());
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.second.cache_wait_ns > b.second.cache_wait_ns; });
    if (ranked.size() > kReadaheadApplicationsKept) {
        std::map<std::string, ReadaheadMisses> rest;
        for (size_t i = kReadaheadApplicationsKept; i < ranked.size(); ++i)
            rest[ranked[i].first.first].add_counts(ranked[i].second);
        ranked.resize(kReadaheadApplicationsKept);
        for (auto& [device, r] : rest) ranked.push_back({{device, kOtherApplications}, r});
    }
    for (const auto& [key, m] : ranked) {
        const Labels l{{"device", key.first}, {"app", key.second}};
        ev.add_metric("fs.readahead_misses", l, static_cast<double>(m.misses), "count", prov);
        ev.add_metric("fs.readahead_sequential_misses", l, static_cast<double>(m.sequential), "count", prov);
        ev.add_metric("fs.readahead_unwidened_misses", l, static_cast<double>(m.unwidened), "count", prov);
        ev.add_metric("fs.readahead_async", l, static_cast<double>(m.async), "count", prov);
        ev.add_metric("fs.page_cache_wait_us", l, static_cast<double>(m.cache_wait_ns) / 1000.0, "us",
                      {"tracepoint", "syscall_bpf: the page_cache class of every traced read (from page_cache_sync_ra "
                                     "to its data, and off-CPU waits in the page cache's functions) per the read "
                                     "file's device and process"});
        ev.add_metric("fs.page_cache_read_us", l, static_cast<double>(m.cache_read_ns) / 1000.0, "us",
                      {"tracepoint", "syscall_bpf: the whole duration of every traced read charged page_cache "
                                     "time, per the read file's device and process"});
        if (const uint64_t events = m.misses + m.async)
            ev.add_metric("fs.readahead_window_kb", l,
                          static_cast<double>(m.window_pages + m.async_window_pages) * page_bytes / 1024.0 /
                              static_cast<double>(events),
                          "KiB", prov);
    }
}

}  // namespace iodiag::syscall_bpf
