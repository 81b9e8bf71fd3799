// Task delay accounting: per process, how long its threads waited for block
// I/O (blkio), for free pages (direct reclaim: freepages), on thrashing
// (refaults of the working set) and on swap-in during the window.
//
// Interpretation: blkio delay is time a task spent in io_schedule() waiting for
// I/O to complete. That includes waits for a page being read, for a free tag
// (blk_mq_get_tag), for dirty throttling (balance_dirty_pages sleeps in
// io_schedule_timeout) and for writeback: it is *not* device time, and the
// threads of a process add up (a process can wait more than the window).
//
// Needs kernel.task_delayacct=1, and then counts only tasks started after it
// was turned on. iodiag never turns it on by itself: when it is off the
// collector says so and gives the command.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectors/collector.hpp"

namespace iodiag {

struct TaskDelays {
    std::string comm;
    uint64_t blkio_count = 0, blkio_ns = 0;
    uint64_t swapin_count = 0, swapin_ns = 0;
    uint64_t freepages_count = 0, freepages_ns = 0;
    uint64_t thrashing_count = 0, thrashing_ns = 0;
    bool detailed = false;   // true: from taskstats (all four kinds); false: /proc stat blkio only
};

// Where per-process delays come from.
class DelaySource {
public:
    virtual ~DelaySource() = default;
    virtual std::optional<TaskDelays> read(int tgid) = 0;
    virtual std::string describe() const = 0;
};

// Taskstats over generic netlink (TASKSTATS_CMD_GET, TGID): sums the threads of
// the process. nullptr with `why` set when the family cannot be resolved.
std::unique_ptr<DelaySource> make_taskstats_source(std::string* why);
// /proc/<pid>/stat field 42 (delayacct_blkio_ticks, clock ticks): blkio only.
std::unique_ptr<DelaySource> make_proc_stat_source(const std::string& root);

// Decodes a TASKSTATS_CMD_GET answer as the kernel sends it: one netlink
// message, the generic-netlink header, TASKSTATS_TYPE_AGGR_TGID (or _PID)
// nesting TASKSTATS_TYPE_STATS (struct taskstats, of any version: fields it
// lacks read as zero). nullopt for an error message or an answer without stats;
// never reads outside [buf, buf + size).
std::optional<TaskDelays> decode_taskstats_reply(const char* buf, size_t size);
// Field 42 of a /proc/<pid>/stat line, in clock ticks; throws SourceError.
uint64_t parse_delayacct_blkio_ticks(const std::string& stat_line, const std::string& where);
// The most delay a process can have accrued: its threads (num_threads) times
// its age (/proc/uptime less its starttime), in seconds; nullopt when either
// file cannot be read under `root`.
std::optional<double> max_plausible_delay_s(const std::string& root, int pid);

// Command name (field 2, without the parentheses).
std::string parse_stat_comm(const std::string& stat_line);

class DelayacctCollector : public Collector {
public:
    DelayacctCollector() = default;
    // Tests: a fixed source instead of netlink / procfs.
    explicit DelayacctCollector(std::function<std::unique_ptr<DelaySource>(const std::string& root)> factory)
        : factory_(std::move(factory)) {}

    std::string name() const override { return "delayacct"; }
    std::vector<MetricSpec> metric_specs() const override;
    CollectorStatus start(const CollectOptions& opts) override;
    void finish(Evidence& ev) override;

    // How many processes (largest total delay first) are reported.
    static constexpr size_t kTopProcesses = 20;

private:
    std::map<int, TaskDelays> snapshot();

    std::function<std::unique_ptr<DelaySource>(const std::string& root)> factory_;
    std::unique_ptr<DelaySource> source_;
    std::string root_ = "/";
    int pid_filter_ = 0;
    std::map<int, TaskDelays> before_;
    double t0_ = 0;
};

}  // namespace iodiag
