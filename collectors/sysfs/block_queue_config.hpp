// Block queue configuration per whole disk (/sys/block/<dev>/queue/*, mq/),
// the device class, and for a loop device the disk holding its backing file.
// Configuration, not latency: it explains what the latency collectors see
// (a tiny nr_requests, a scheduler on an NVMe disk, a loop on a slow disk).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "collectors/collector.hpp"

namespace iodiag {

// nvme, sata_ssd, hdd, virtio, loop, zram, dm, md or other, from the kernel
// name; `rotational` only matters for sd*/hd* (nullopt there -> nullopt).
std::optional<std::string> classify_device(const std::string& name, std::optional<bool> rotational);

// The active scheduler of a queue/scheduler file: the bracketed entry
// ("none [mq-deadline] kyber" -> "mq-deadline"), or the only entry when there
// is just one and no brackets. Throws SourceError naming `path` otherwise.
std::string parse_active_scheduler(const std::string& text, const std::string& path);

// A queue/write_cache file's value: "write back" or "write through".
// Throws SourceError naming `path` otherwise.
std::string parse_write_cache(const std::string& text, const std::string& path);

// nr_requests as the kernel sets it for a queue whose driver has `hw_depth`
// tags per hardware queue, under `scheduler` (block/blk-mq-sched.c
// blk_mq_init_sched): a value below it was set by someone.
unsigned long long nr_requests_default(unsigned long long hw_depth, const std::string& scheduler);

// The whole disk whose block device number is major:minor, from the `dev`
// files of /sys/block/<disk> and of its partitions /sys/block/<disk>/<part>
// (a partition maps to its parent disk). nullopt when none matches.
std::optional<std::string> whole_disk_of_devnum(const std::string& root, unsigned major, unsigned minor);

class BlockQueueConfigCollector : public Collector {
public:
    std::string name() const override { return "block_queue_config"; }
    std::vector<MetricSpec> metric_specs() const override;
    // Reads the configuration (it is what the window ran under).
    CollectorStatus start(const CollectOptions& opts) override;
    void finish(Evidence& ev) override;
    // Configuration, not counters: it is read beside the BPF collectors'
    // loads (a walk of /sys/block, 20-180 ms on a busy host) instead of
    // delaying the window by that much.
    bool slow_to_start() const override { return true; }

private:
    Evidence read_;  // metrics and facts read in start(), appended in finish()
};

}  // namespace iodiag
