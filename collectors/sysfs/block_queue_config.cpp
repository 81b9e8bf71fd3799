#include "collectors/sysfs/block_queue_config.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>

#include <algorithm>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "collectors/snapshot_support.hpp"
#include "collectors/text_file.hpp"
#include "engine/evidence/layers.hpp"

namespace iodiag {

namespace fs = std::filesystem;

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::vector<std::string> sorted_entries(const std::string& dir) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

// Numeric queue attributes: file name, metric, unit.
struct QueueAttr {
    const char* file;
    const char* metric;
    const char* unit;
    const char* description;
};
const std::vector<QueueAttr>& queue_attrs() {
    static const std::vector<QueueAttr> v{
        {"nr_requests", "queue.nr_requests", "requests", "Requests (tags) the queue can hold per hardware queue"},
        {"rotational", "queue.rotational", "bool", "1 for a spinning disk (as the kernel believes), 0 otherwise"},
        {"read_ahead_kb", "queue.read_ahead_kb", "KiB", "Readahead window"},
        {"wbt_lat_usec", "queue.wbt_lat_usec", "us", "Writeback throttling target latency (0 = off)"},
        {"max_sectors_kb", "queue.max_sectors_kb", "KiB", "Largest request the block layer builds"},
        {"max_hw_sectors_kb", "queue.max_hw_sectors_kb", "KiB", "Largest request the device takes (the most max_sectors_kb can be)"},
        {"optimal_io_size", "queue.optimal_io_size", "bytes", "The request size the device prefers (0: it gives none)"},
        {"nomerges", "queue.nomerges", "mode", "0 merges on, 1 only simple merges, 2 no merges"},
    };
    return v;
}

// Reads one numeric sysfs attribute; nullopt when absent. A present but
// malformed file is reported in `problems` and not emitted.
std::optional<unsigned long long> read_number(const std::string& path, std::vector<std::string>& problems) {
    auto line = try_read_first_line(path);
    if (!line) return std::nullopt;
    try {
        return parse_u64(*line, path);
    } catch (const SourceError& e) {
        problems.push_back(e.what());
        return std::nullopt;
    }
}

std::optional<std::pair<unsigned, unsigned>> parse_devnum(const std::string& text) {
    const auto colon = text.find(':');
    if (colon == std::string::npos) return std::nullopt;
    try {
        return std::pair<unsigned, unsigned>(static_cast<unsigned>(parse_u64(text.substr(0, colon), "dev")),
                                             static_cast<unsigned>(parse_u64(text.substr(colon + 1), "dev")));
    } catch (const SourceError&) {
        return std::nullopt;
    }
}

// A file on tmpfs or ramfs lives in the page cache only.
bool backed_by_memory(const std::string& path) {
    struct statfs sf {};
    if (::statfs(path.c_str(), &sf) != 0) return false;
    constexpr unsigned long kTmpfsMagic = 0x01021994, kRamfsMagic = 0x858458f6;
    const auto type = static_cast<unsigned long>(sf.f_type);
    return type == kTmpfsMagic || type == kRamfsMagic;
}

// The device's own cache mode, where its driver shows it: virtio-blk's
// /sys/block/<dev>/cache_type (the device's writeback bit), SCSI's
// scsi_disk/<h:c:t:l>/cache_type (the caching mode page's WCE bit). Both
// say "write back" (SCSI: "write back, no read (daft)" too) or "write
// through" ("none" for SCSI: no cache at all).
std::optional<std::pair<std::string, std::string>> device_cache_type(const std::string& sys_block,
                                                                     const std::string& dev) {
    std::vector<std::string> candidates{"cache_type"};   // relative to /sys/block/<dev>
    for (const auto& h : sorted_entries(sys_block + "/" + dev + "/device/scsi_disk"))
        candidates.push_back("device/scsi_disk/" + h + "/cache_type");
    for (const auto& rel : candidates)
        if (auto text = try_read_first_line(sys_block + "/" + dev + "/" + rel))
            return std::pair{starts_with(*text, "write back") ? std::string("write back") : std::string("write through"),
                             rel};
    return std::nullopt;
}

}  // namespace

std::string parse_write_cache(const std::string& text, const std::string& path) {
    if (text == "write back" || text == "write through") return text;
    throw SourceError(path + ": expected 'write back' or 'write through', got '" + text + "'");
}

std::optional<std::string> classify_device(const std::string& name, std::optional<bool> rotational) {
    if (starts_with(name, "nvme")) return "nvme";
    if (starts_with(name, "sd") || starts_with(name, "hd")) {
        if (!rotational) return std::nullopt;
        return *rotational ? "hdd" : "sata_ssd";
    }
    if (starts_with(name, "vd") || starts_with(name, "xvd")) return "virtio";
    if (starts_with(name, "loop")) return "loop";
    if (starts_with(name, "zram")) return "zram";
    if (starts_with(name, "dm-")) return "dm";
    if (starts_with(name, "md")) return "md";
    return "other";
}

unsigned long long nr_requests_default(unsigned long long hw_depth, const std::string& scheduler) {
    // blk_mq_init_sched(): no scheduler, the tag set's depth; with one, twice
    // the smaller of it and BLKDEV_DEFAULT_RQ (128), as the scheduler holds
    // requests of its own besides the driver's.
    constexpr unsigned long long kBlkdevDefaultRq = 128;
    return scheduler == "none" ? hw_depth : 2 * std::min(hw_depth, kBlkdevDefaultRq);
}

std::string parse_active_scheduler(const std::string& text, const std::string& path) {
    const auto open = text.find('[');
    if (open != std::string::npos) {
        const auto close = text.find(']', open);
        if (close == std::string::npos || close == open + 1 || text.find('[', open + 1) < close)
            throw SourceError(path + ": unbalanced brackets in '" + text + "'");
        return text.substr(open + 1, close - open - 1);
    }
    const auto f = split_ws(text);
    if (f.size() == 1) return f[0];
    throw SourceError(path + ": no active scheduler (no [bracketed] entry) in '" + text + "'");
}

std::optional<std::string> whole_disk_of_devnum(const std::string& root, unsigned major, unsigned minor) {
    // Equivalent to matching /sys/class/block/*/dev, but the layout of
    // /sys/block gives the parent disk of a partition without resolving links.
    const std::string sys_block = under_root(root, "/sys/block");
    for (const auto& disk : sorted_entries(sys_block)) {
        const std::string dir = sys_block + "/" + disk;
        auto matches = [&](const std::string& dev_file) {
            auto line = try_read_first_line(dev_file);
            auto num = line ? parse_devnum(*line) : std::nullopt;
            return num && num->first == major && num->second == minor;
        };
        if (matches(dir + "/dev")) return disk;
        for (const auto& sub : sorted_entries(dir))
            if (fs::exists(dir + "/" + sub + "/partition") && matches(dir + "/" + sub + "/dev")) return disk;
    }
    return std::nullopt;
}

std::vector<MetricSpec> BlockQueueConfigCollector::metric_specs() const {
    std::vector<MetricSpec> out;
    for (const auto& a : queue_attrs())
        out.push_back({a.metric, MetricSpec::Kind::Metric, a.unit, layer::kBlockQueue, "device",
                       std::string(a.description) + " (/sys/block/<dev>/queue/" + a.file + ")"});
    out.push_back({"queue.nr_hw_queues", MetricSpec::Kind::Metric, "count", layer::kBlockQueue, "device",
                   "Hardware dispatch queues (entries of /sys/block/<dev>/mq)"});
    out.push_back({"queue.hw_queue_depth", MetricSpec::Kind::Metric, "requests", layer::kBlockQueue, "device",
                   "The driver's tags per hardware queue (/sys/block/<dev>/mq/0/nr_tags): what the device takes at once"});
    // A count: the value as written to nr_requests (a fix's command line).
    out.push_back({"queue.nr_requests_default", MetricSpec::Kind::Metric, "count", layer::kBlockQueue, "device",
                   "nr_requests as the kernel sets it for this queue (blk_mq_init_sched): the driver's depth with no "
                   "scheduler, twice the smaller of it and 128 with one"});
    auto fact = [](std::string n, const std::string& lay, std::string d) {
        return MetricSpec{std::move(n), MetricSpec::Kind::Fact, "", lay, "device", std::move(d)};
    };
    out.push_back(fact("queue.scheduler", layer::kBlockQueue, "Active I/O scheduler (e.g. none, mq-deadline)"));
    out.push_back(fact("queue.write_cache", layer::kDevice,
                       "What the block layer believes of the device's cache (/sys/block/<dev>/queue/write_cache): "
                       "'write back' (volatile: the kernel sends cache flushes) or 'write through' (none sent)"));
    out.push_back(fact("device.cache_type", layer::kDevice,
                       "The device's own cache mode where its driver shows it (virtio-blk cache_type, SCSI "
                       "scsi_disk/*/cache_type): 'write back' or 'write through'"));
    out.push_back(fact("device.class", layer::kDevice,
                       "nvme, sata_ssd, hdd, virtio, loop, zram, dm, md or other (from name and rotational)"));
    out.push_back(fact("device.backing_file", layer::kDevice, "File behind a loop device"));
    out.push_back(fact("device.backing_device", layer::kDevice,
                       "Whole disk holding a loop device's backing file"));
    out.push_back(fact("device.backing_class", layer::kDevice,
                       "Class of the disk behind a loop device, or memory (a file on tmpfs/ramfs)"));
    out.push_back(fact("device.slaves", layer::kDevice,
                       "Whole disks a dm/md device is built on (/sys/block/*/slaves), comma-separated"));
    return out;
}

CollectorStatus BlockQueueConfigCollector::start(const CollectOptions& opts) {
    CollectorStatus st{name(), false, "", {}};
    read_ = Evidence{};
    const std::string sys_block = under_root(opts.root, "/sys/block");
    if (!fs::is_directory(sys_block)) {
        st.reason = sys_block + ": not a directory (sysfs not mounted?)";
        return st;
    }
    std::vector<std::string> problems;
    auto rotational_of = [&](const std::string& dev) -> std::optional<bool> {
        std::vector<std::string> reported_elsewhere;  // the queue attributes loop reports it
        auto v = read_number(sys_block + "/" + dev + "/queue/rotational", reported_elsewhere);
        if (!v) return std::nullopt;
        return *v != 0;
    };
    for (const auto& dev : sorted_entries(sys_block)) {
        if (!device_selected(opts.devices, dev)) continue;
        const std::string dir = sys_block + "/" + dev;
        const Labels labels{{"device", dev}};
        auto file_prov = [&](const std::string& rel) { return Provenance{"file", "/sys/block/" + dev + "/" + rel}; };

        std::optional<std::string> backing_file;
        if (starts_with(dev, "loop")) {
            backing_file = try_read_first_line(dir + "/loop/backing_file");
            if (!backing_file || backing_file->empty()) continue;  // unbound loop device
        }
        for (const auto& a : queue_attrs())
            if (auto v = read_number(dir + "/queue/" + a.file, problems))
                read_.add_metric(a.metric, labels, static_cast<double>(*v), a.unit,
                                 file_prov(std::string("queue/") + a.file));
        if (fs::is_directory(dir + "/mq"))
            read_.add_metric("queue.nr_hw_queues", labels, static_cast<double>(sorted_entries(dir + "/mq").size()),
                             "count", {"derived", "number of entries in /sys/block/" + dev + "/mq"});
        std::optional<std::string> scheduler;
        if (auto text = try_read_first_line(dir + "/queue/scheduler")) {
            try {
                scheduler = parse_active_scheduler(*text, dir + "/queue/scheduler");
                read_.add_fact("queue.scheduler", labels, *scheduler, file_prov("queue/scheduler"));
            } catch (const SourceError& e) {
                problems.push_back(e.what());
            }
        }
        if (auto depth = read_number(dir + "/mq/0/nr_tags", problems)) {
            read_.add_metric("queue.hw_queue_depth", labels, static_cast<double>(*depth), "requests",
                             file_prov("mq/0/nr_tags"));
            if (scheduler)
                read_.add_metric("queue.nr_requests_default", labels,
                                 static_cast<double>(nr_requests_default(*depth, *scheduler)), "count",
                                 {"derived", "the kernel's default for scheduler " + *scheduler + " over " +
                                                 std::to_string(*depth) + " driver tags (block/blk-mq-sched.c "
                                                 "blk_mq_init_sched)"});
        }
        if (auto text = try_read_first_line(dir + "/queue/write_cache")) {
            try {
                read_.add_fact("queue.write_cache", labels, parse_write_cache(*text, dir + "/queue/write_cache"),
                               file_prov("queue/write_cache"));
            } catch (const SourceError& e) {
                problems.push_back(e.what());
            }
        }
        if (auto own = device_cache_type(sys_block, dev))
            read_.add_fact("device.cache_type", labels, own->first, file_prov(own->second));
        if (auto cls = classify_device(dev, rotational_of(dev)))
            read_.add_fact("device.class", labels, *cls,
                           {"derived", "kernel name " + dev + " and /sys/block/" + dev + "/queue/rotational"});
        // dm/md devices: their members, as whole disks (a member partition's
        // requests are traced on its disk), so a stacked device can be walked down.
        if (fs::is_directory(dir + "/slaves")) {
            std::string members;
            for (const auto& part : sorted_entries(dir + "/slaves")) {
                std::error_code ec;
                const fs::path real = fs::canonical(under_root(opts.root, "/sys/class/block/" + part), ec);
                std::string disk = part;
                if (!ec && fs::exists(real / "partition")) disk = real.parent_path().filename().string();
                if (members.find(disk) == std::string::npos) members += (members.empty() ? "" : ",") + disk;
            }
            if (!members.empty()) read_.add_fact("device.slaves", labels, members, file_prov("slaves/"));
        }
        if (backing_file) {
            read_.add_fact("device.backing_file", labels, *backing_file, file_prov("loop/backing_file"));
            struct stat sb {};
            if (::stat(under_root(opts.root, *backing_file).c_str(), &sb) != 0) {
                spdlog::info("block_queue_config: cannot stat {} (backing file of {}): backing disk unknown",
                             *backing_file, dev);
                continue;
            }
            const unsigned maj = ::major(sb.st_dev), min = ::minor(sb.st_dev);
            auto disk = whole_disk_of_devnum(opts.root, maj, min);
            if (!disk && backed_by_memory(under_root(opts.root, *backing_file))) {
                // The loop device reads and writes pages of memory: it serves
                // requests in microseconds and in parallel, whatever its
                // rotational flag says (the class a scheduler choice depends on).
                read_.add_fact("device.backing_class", labels, "memory",
                               {"derived", "statfs(" + *backing_file + ").f_type = tmpfs or ramfs"});
                continue;
            }
            if (!disk) {
                // e.g. a file on tmpfs or overlayfs (anonymous device numbers).
                spdlog::info("block_queue_config: {} (backing file of {}) is on device {}:{}, not a block device",
                             *backing_file, dev, maj, min);
                continue;
            }
            const Provenance prov{"derived", "stat(" + *backing_file + ").st_dev = " + std::to_string(maj) + ":" +
                                                 std::to_string(min) + " matched against /sys/block/*/dev"};
            read_.add_fact("device.backing_device", labels, *disk, prov);
            if (auto cls = classify_device(*disk, rotational_of(*disk)))
                read_.add_fact("device.backing_class", labels, *cls,
                               {"derived", "kernel name " + *disk + " and /sys/block/" + *disk + "/queue/rotational"});
        }
    }
    for (const auto& p : problems) {
        spdlog::warn("block_queue_config: {}", p);
        st.reason += (st.reason.empty() ? "unreadable values, not reported: " : "; ") + p;
    }
    st.available = true;
    return st;
}

void BlockQueueConfigCollector::finish(Evidence& ev) {
    ev.metrics.insert(ev.metrics.end(), read_.metrics.begin(), read_.metrics.end());
    ev.facts.insert(ev.facts.end(), read_.facts.begin(), read_.facts.end());
}

}  // namespace iodiag
