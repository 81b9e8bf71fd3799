#include "collectors/procfs/dirty_limits.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

#include "collectors/procfs/meminfo.hpp"
#include "collectors/snapshot_support.hpp"
#include "collectors/text_file.hpp"
#include "collectors/procfs/vmstat.hpp"
#include "engine/evidence/layers.hpp"

namespace iodiag {

namespace {

struct Sysctl {
    const char* name;     // file under /proc/sys/vm and metric "vm.<name>"
    const char* unit;
    const std::string& layer;
    bool required;        // needed to compute the limits
    const char* description;
};

const std::vector<Sysctl>& sysctls() {
    static const std::vector<Sysctl> v{
        {"dirty_ratio", "pct", layer::kDirty, true, "Dirty limit as a share of dirtyable memory"},
        {"dirty_background_ratio", "pct", layer::kDirty, true,
         "Background writeback threshold as a share of dirtyable memory"},
        {"dirty_bytes", "bytes", layer::kDirty, true, "Dirty limit in bytes (0 = use dirty_ratio)"},
        {"dirty_background_bytes", "bytes", layer::kDirty, true,
         "Background threshold in bytes (0 = use dirty_background_ratio)"},
        {"dirty_expire_centisecs", "cs", layer::kDirty, false, "Age after which dirty data is written back"},
        {"dirty_writeback_centisecs", "cs", layer::kDirty, false, "Flusher wake-up interval"},
        {"min_free_kbytes", "KiB", layer::kReclaim, false, "Free memory the kernel keeps (sets the watermarks)"},
        {"swappiness", "", layer::kReclaim, false, "Reclaim preference between anon and file pages"},
    };
    return v;
}

// Reads a "zone" block's "name value" field that sits on its own line.
std::optional<std::uint64_t> field(const std::vector<std::string>& f, const char* key, const std::string& where) {
    if (f.size() == 2 && f[0] == key) return parse_u64(f[1], where);
    return std::nullopt;
}

}  // namespace

std::uint64_t parse_totalreserve_pages(const std::string& zoneinfo, const std::string& path) {
    struct Zone {
        std::string where;  // path:line of its header
        std::size_t index = 0;  // position within its node = zone type
        std::optional<std::uint64_t> high, boost, managed;
        std::vector<std::uint64_t> protection;
        bool has_protection = false;
    };
    std::vector<Zone> zones;
    std::string node;
    std::size_t index_in_node = 0, line_no = 0, pos = 0;
    while (pos < zoneinfo.size()) {
        const auto nl = zoneinfo.find('\n', pos);
        const std::string line = zoneinfo.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
        pos = nl == std::string::npos ? zoneinfo.size() : nl + 1;
        ++line_no;
        const std::string where = path + ":" + std::to_string(line_no);
        const auto f = split_ws(line);
        if (f.empty()) continue;
        if (f[0] == "Node") {  // "Node 0, zone   Normal"
            if (f.size() != 4 || f[2] != "zone")
                throw SourceError(where + ": expected 'Node N, zone NAME', got '" + line + "'");
            if (f[1] != node) node = f[1], index_in_node = 0;
            zones.push_back({where, index_in_node++, {}, {}, {}, {}, false});
            continue;
        }
        if (zones.empty()) throw SourceError(where + ": data before the first 'Node N, zone NAME' line");
        Zone& z = zones.back();
        // Only the zone's own lines; the per-cpu "high:" of pagesets has a colon.
        if (auto v = field(f, "high", where)) z.high = v;
        else if (auto v2 = field(f, "boost", where)) z.boost = v2;
        else if (auto v3 = field(f, "managed", where)) z.managed = v3;
        else if (f[0] == "protection:") {
            // "protection: (0, 3019, 4683, 4683, 4683)"
            const auto open = line.find('('), close = line.find(')');
            if (open == std::string::npos || close == std::string::npos || close < open)
                throw SourceError(where + ": malformed protection line '" + line + "' (truncated?)");
            std::string inner = line.substr(open + 1, close - open - 1);
            std::replace(inner.begin(), inner.end(), ',', ' ');
            for (const auto& tok : split_ws(inner)) z.protection.push_back(parse_u64(tok, where));
            z.has_protection = true;
        }
    }
    if (zones.empty()) throw SourceError(path + ": no zones (empty file?)");
    std::uint64_t total = 0;
    for (const auto& z : zones) {
        if (!z.high || !z.managed || !z.has_protection)
            throw SourceError(z.where + ": zone without its high, managed or protection line (truncated?)");
        // zoneinfo's "high" includes the current watermark_boost; the reserve
        // was computed by setup_per_zone_wmarks() with the boost reset to 0.
        const std::uint64_t boost = z.boost.value_or(0);
        const std::uint64_t high = *z.high >= boost ? *z.high - boost : 0;
        std::uint64_t max_reserve = 0;
        for (std::size_t j = z.index; j < z.protection.size(); ++j) max_reserve = std::max(max_reserve, z.protection[j]);
        total += std::min(max_reserve + high, *z.managed);
    }
    return total;
}

DirtyLimitsPages compute_dirty_limits(const DirtyInputs& in) {
    DirtyLimitsPages out;
    // global_dirtyable_memory(): free pages minus the kernel's reserves, plus
    // the file LRU. Approximation: highmem is assumed not dirtyable-relevant
    // (vm_highmem_is_dirtyable only matters on 32-bit kernels with highmem).
    std::uint64_t x = in.free_pages;
    x -= std::min(x, in.totalreserve_pages);
    x += in.active_file + in.inactive_file;
    out.dirtyable = x + 1;  // the kernel adds 1 so that it is never 0

    // domain_dirty_limits(): ratios are converted to parts per PAGE_SIZE first
    // (integer division, as the kernel does); a nonzero *_bytes overrides its ratio.
    const std::uint64_t ratio = in.dirty_ratio * in.page_size / 100;
    const std::uint64_t bg_ratio = in.dirty_background_ratio * in.page_size / 100;
    auto div_round_up = [](std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; };
    out.thresh = in.dirty_bytes ? div_round_up(in.dirty_bytes, in.page_size) : ratio * out.dirtyable / in.page_size;
    out.bg_thresh = in.dirty_background_bytes ? div_round_up(in.dirty_background_bytes, in.page_size)
                                              : bg_ratio * out.dirtyable / in.page_size;
    if (out.bg_thresh >= out.thresh) out.bg_thresh = out.thresh / 2;
    // Not modelled: a realtime task gets both limits raised by 1/4 plus
    // global dirty_limit/32; memcg domains (cgroup writeback) have their own,
    // smaller limits; per-bdi min/max_ratio and strictlimit split the limit
    // further between devices.
    out.freerun = (out.thresh + out.bg_thresh) / 2;  // dirty_freerun_ceiling()
    return out;
}

void DirtyLimitsCollector::collect(const std::string& root, Evidence& ev) {
    // Read and compute everything first, so that a failure appends nothing.
    struct Reading {
        const Sysctl* sysctl;
        std::uint64_t value;
    };
    std::vector<Reading> readings;
    DirtyInputs in;
    for (const auto& s : sysctls()) {
        const std::string path = under_root(root, std::string("/proc/sys/vm/") + s.name);
        std::optional<std::string> text;
        if (s.required) text = read_text_file(path);
        else text = try_read_text_file(path);
        if (!text) continue;
        auto first = split_ws(*text);
        if (first.empty()) throw SourceError(path + ": empty");
        readings.push_back({&s, parse_u64(first[0], path)});
    }
    auto sysctl = [&](const char* name) {
        for (const auto& r : readings)
            if (std::string(r.sysctl->name) == name) return r.value;
        return std::uint64_t{0};
    };
    in.dirty_ratio = sysctl("dirty_ratio");
    in.dirty_background_ratio = sysctl("dirty_background_ratio");
    in.dirty_bytes = sysctl("dirty_bytes");
    in.dirty_background_bytes = sysctl("dirty_background_bytes");

    const long page_size = ::sysconf(_SC_PAGESIZE);
    in.page_size = page_size > 0 ? static_cast<std::uint64_t>(page_size) : 4096;

    const std::string vmstat_path = under_root(root, "/proc/vmstat");
    const auto vmstat = parse_vmstat(read_text_file(vmstat_path), vmstat_path);
    auto vm = [&](const char* key) {
        auto it = vmstat.find(key);
        if (it == vmstat.end()) throw SourceError(vmstat_path + ": no " + key);
        return it->second;
    };
    in.active_file = vm("nr_active_file");
    in.inactive_file = vm("nr_inactive_file");
    const std::uint64_t dirty_pages = vm("nr_dirty") + vm("nr_writeback");

    // Free pages from MemFree: in mainline it is the same counter as
    // nr_free_pages (global NR_FREE_PAGES), but on some kernels (seen on this
    // project's 6.18 Firecracker guests) /proc/vmstat's nr_free_pages leaves
    // out memory that MemFree and the kernel's own dirty threshold count.
    const std::string meminfo_path = under_root(root, "/proc/meminfo");
    const auto meminfo = parse_meminfo(read_text_file(meminfo_path), meminfo_path);
    auto free_it = meminfo.find("MemFree");
    if (free_it == meminfo.end()) throw SourceError(meminfo_path + ": no MemFree");
    in.free_pages = free_it->second / in.page_size;

    const std::string zoneinfo_path = under_root(root, "/proc/zoneinfo");
    in.totalreserve_pages = parse_totalreserve_pages(read_text_file(zoneinfo_path), zoneinfo_path);

    DirtyLimitsPages lim = compute_dirty_limits(in);
    const std::string inputs =
        "free pages (/proc/meminfo MemFree) − totalreserve_pages (/proc/zoneinfo) + nr_active_file + "
        "nr_inactive_file (/proc/vmstat)";
    Provenance limit_prov{"derived", "domain_dirty_limits(): vm.dirty_bytes, else vm.dirty_ratio × dirtyable"};
    Provenance bg_prov{"derived",
                       "domain_dirty_limits(): vm.dirty_background_bytes, else vm.dirty_background_ratio × "
                       "dirtyable; halved limit if not below it"};

    // The kernel publishes its own result for the reading task
    // (nr_dirty_threshold, since 2.6.37). Our inputs are read at slightly
    // different moments, so small differences are normal; a large one means
    // this kernel computes differently, and then its own figures are used.
    auto kthresh = vmstat.find("nr_dirty_threshold");
    auto kbg = vmstat.find("nr_dirty_background_threshold");
    if (kthresh != vmstat.end() && kbg != vmstat.end()) {
        const double diff = std::fabs(static_cast<double>(kthresh->second) - static_cast<double>(lim.thresh));
        if (diff > std::max(64.0, 0.02 * static_cast<double>(kthresh->second))) {
            spdlog::warn("dirty_limits: computed dirty limit {} pages, kernel reports {} (nr_dirty_threshold); "
                         "using the kernel's", lim.thresh, kthresh->second);
            lim.thresh = kthresh->second;
            lim.bg_thresh = kbg->second;
            lim.freerun = (lim.thresh + lim.bg_thresh) / 2;
            limit_prov = {"file", "/proc/vmstat nr_dirty_threshold"};
            bg_prov = {"file", "/proc/vmstat nr_dirty_background_threshold"};
        }
    }

    for (const auto& r : readings)
        ev.add_metric(std::string("vm.") + r.sysctl->name, {}, static_cast<double>(r.value), r.sysctl->unit,
                      {"file", std::string("/proc/sys/vm/") + r.sysctl->name});
    const double ps = static_cast<double>(in.page_size);
    ev.add_metric("dirty.dirtyable_bytes", {}, static_cast<double>(lim.dirtyable) * ps, "bytes",
                  {"derived", "global_dirtyable_memory(): " + inputs});
    ev.add_metric("dirty.limit_bytes", {}, static_cast<double>(lim.thresh) * ps, "bytes", limit_prov);
    ev.add_metric("dirty.background_limit_bytes", {}, static_cast<double>(lim.bg_thresh) * ps, "bytes", bg_prov);
    ev.add_metric("dirty.freerun_bytes", {}, static_cast<double>(lim.freerun) * ps, "bytes",
                  {"derived", "dirty_freerun_ceiling(): (dirty.limit_bytes + dirty.background_limit_bytes) / 2"});
    if (lim.thresh > 0)
        ev.add_metric("dirty.pct_of_limit", {},
                      static_cast<double>(dirty_pages) / static_cast<double>(lim.thresh) * 100.0, "pct",
                      {"derived", "(nr_dirty + nr_writeback in /proc/vmstat) / dirty.limit_bytes × 100"});
}

std::vector<MetricSpec> DirtyLimitsCollector::metric_specs() const {
    std::vector<MetricSpec> out;
    for (const auto& s : sysctls())
        out.push_back({std::string("vm.") + s.name, MetricSpec::Kind::Metric, s.unit, s.layer, "",
                       std::string(s.description) + " (sysctl vm." + s.name + ")"});
    auto m = [](std::string n, std::string unit, std::string d) {
        return MetricSpec{std::move(n), MetricSpec::Kind::Metric, std::move(unit), layer::kDirty, "", std::move(d)};
    };
    out.push_back(m("dirty.dirtyable_bytes", "bytes",
                    "Memory the dirty limits are a share of: free − reserves + file LRU (global_dirtyable_memory)"));
    out.push_back(m("dirty.limit_bytes", "bytes", "Global dirty limit: writers are throttled approaching it"));
    out.push_back(m("dirty.background_limit_bytes", "bytes", "Background writeback starts above this"));
    out.push_back(m("dirty.freerun_bytes", "bytes",
                    "(limit + background) / 2: below it balance_dirty_pages never pauses writers"));
    out.push_back(m("dirty.pct_of_limit", "pct",
                    "Dirty + writeback pages as a share of the dirty limit, at the end of the window"));
    return out;
}

CollectorStatus DirtyLimitsCollector::start(const CollectOptions& opts) {
    CollectorStatus st{name(), false, "", {}};
    root_ = opts.root;
    try {
        Evidence probe;  // proves every source is readable and parseable now
        collect(root_, probe);
    } catch (const SourceError& e) {
        st.reason = e.what();
        return st;
    }
    st.available = true;
    return st;
}

void DirtyLimitsCollector::finish(Evidence& ev) {
    try {
        collect(root_, ev);
    } catch (const SourceError& e) {
        spdlog::warn("dirty_limits: {}", e.what());
        mark_unavailable_at_finish(ev, name(), {}, e.what());
    }
}

}  // namespace iodiag
