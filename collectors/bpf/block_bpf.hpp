// Block-layer stage timing from BPF (bpf/block.bpf.c): per disk and op, log2
// histograms of btt's Q2G, G2I, I2D, D2C and Q2C, exact stage sums, queue depth
// at issue, merges, requeues, and slow-request exemplars with every stage.
//
// BlockTracer owns the BPF programs (load, attach, read, exemplars); the
// collector ("block_bpf") and `iodiag slow` both use it. The kernel keeps the
// aggregates cumulative (nothing is reset): a reader takes differences.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collectors/bpf/bpf_features.hpp"
#include "collectors/collector.hpp"
#include "collectors/interval_series.hpp"
#include "collectors/bpf/tail_call_chain.hpp"
#include "engine/evidence/histogram.hpp"

namespace iodiag {

inline constexpr int kBlockOps = 5;     // read, write, flush, discard, other
inline constexpr int kBlockStages = 5;  // q2g, g2i, i2d, d2c, q2c
inline constexpr int kDepthClasses = 7; // depth at issue, log2: 1, 2-3, 4-7, ..., 64+
const std::array<std::string, kBlockOps>& block_op_names();
const std::array<std::string, kBlockStages>& block_stage_names();

// One slow request, every stage measured from the same five timestamps.
struct BlockIoExemplar {
    std::string comm;
    uint32_t pid = 0;
    uint64_t cgroup_id = 0;
    std::string device;   // kernel disk name, e.g. "loop0"
    std::string op;       // read | write | flush | discard | other
    uint64_t sector = 0;
    uint32_t bytes = 0;
    uint32_t depth = 0;   // requests in flight at issue
    // q2g, g2i, i2d, d2c, q2c in nanoseconds; the first four sum to the fifth.
    std::array<uint64_t, kBlockStages> stage_ns{};
    std::string observed; // stages really seen, e.g. "QGD" (I absent: direct issue)
    uint64_t complete_ns = 0;   // CLOCK_MONOTONIC of completion
};

// Aggregates of one disk over one or more drained intervals.
struct BlockDeviceStats {
    std::array<std::array<Log2Histogram, kBlockStages>, kBlockOps> hist;   // us
    std::array<std::array<uint64_t, kBlockStages>, kBlockOps> sum_ns{};
    std::array<uint64_t, kBlockOps> count{};
    Log2Histogram depth;
    std::array<Log2Histogram, kDepthClasses> d2c_by_depth;   // us, by the class of the depth at issue
    std::array<uint64_t, kDepthClasses> depth_sum{};         // the depths at issue summed per class
    std::array<Log2Histogram, kBlockOps> service;   // us: the busy time given to each request
    uint64_t merges = 0;
    uint64_t requeues = 0;
    uint64_t splits = 0, split_bytes = 0;   // bios split to the queue's limits, their front parts' bytes
    void merge(const BlockDeviceStats& o);
    uint64_t requests() const;
    // What was added between `earlier` and this (both cumulative readings).
    BlockDeviceStats since(const BlockDeviceStats& earlier) const;
    Log2Histogram stage_hist_all_ops(int stage) const;
    uint64_t stage_sum_all_ops(int stage) const;
};

// Per-disk stage sums of the reference path (tests: the accounting kept in
// plain hash maps beside the direct-mapped fast path, same timestamps).
struct BlockReferenceSums {
    uint64_t count = 0;
    std::array<uint64_t, kBlockStages> sum_ns{};
};

// Events the tracer could not account, by cause (bpf/block_events.h).
struct BlockLostCounts {
    uint64_t exemplars_ringbuf_full = 0;
    uint64_t inflight_slot_busy = 0;
    uint64_t inflight_stale = 0;
    uint64_t disk_table_full = 0;
    uint64_t submitter_table_full = 0;
    uint64_t completion_unseen = 0;   // issued requests whose completion never ran the program
    // Tracepoint runs the kernel skipped (collectors/bpf/bpf_program_stats.hpp);
    // absent where the kernel does not report them.
    std::optional<uint64_t> program_runs_skipped;
    std::string skipped_by_program;   // "on_rq_complete 1", for logs and test failures
};

// One submitter's (thread group's) own completed requests on one disk, in
// one cgroup (the one the kernel charged them to: the head bio's blkcg, else
// the submitter's), cumulative since attach (bpf/block_events.h
// iodiag_submitter_sums).
struct BlockSubmitterSums {
    std::string device;
    uint32_t tgid = 0;
    uint64_t cgroup_id = 0;   // kernfs id of the cgroup's directory; 0 = none
    // The submitter's command as the kernel read it when the sums were made
    // (its task's comm, a kernel worker's without the work's description),
    // "" when its thread was already gone; and whether it is a kernel thread.
    std::string comm;
    bool kthread = false;
    uint64_t count = 0, q2c_ns = 0, d2c_ns = 0;
    // The disk's busy time given to its requests (bpf/block.bpf.c service_ns):
    // the busy time partitioned among completions, unlike D2C, which counts a
    // request's wait behind others inside a device that queues internally.
    uint64_t service_ns = 0;
    uint64_t bytes = 0, write_bytes = 0;
    // Its requests' wait in the I/O scheduler (I2D), and how many of them
    // were of the idle I/O priority class.
    uint64_t i2d_ns = 0, idle_class = 0;
    // Of count: completions on a CPU whose slot another submitter held (the
    // per-CPU hash fallback).
    uint64_t hashed_count = 0;

    // Adds another's request sums (not its identity).
    void add_sums(const BlockSubmitterSums& o) {
        count += o.count, q2c_ns += o.q2c_ns, d2c_ns += o.d2c_ns, service_ns += o.service_ns;
        bytes += o.bytes, write_bytes += o.write_bytes, i2d_ns += o.i2d_ns, idle_class += o.idle_class;
    }
};

struct BlockTracerOptions {
    std::string device;              // "" = all disks; else a disk name ("loop0")
    uint32_t pid = 0;                // 0 = all
    uint64_t threshold_ns = UINT64_MAX;   // exemplars at Q2C >= this; UINT64_MAX = none
    bool reference_accounting = false;    // also keep the reference sums (tests)
    // Direct-mapped submitter slots used per CPU: 0 = all of them; a smaller
    // power of two makes submitters share slots (tests of the hash fallback).
    uint32_t submitter_slots = 0;
    // In-flight table entries used: 0 = all; a smaller power of two (at least
    // 2, one slot pair) makes live requests share slots (tests).
    uint32_t inflight_slots = 0;
    // false: block_rq_complete's program is loaded but not attached (tests:
    // every completion then goes unseen, as the kernel rarely lets one go).
    bool attach_completion = true;
};

class BlockTracer {
public:
    BlockTracer();
    ~BlockTracer();
    BlockTracer(const BlockTracer&) = delete;
    BlockTracer& operator=(const BlockTracer&) = delete;

    // Loads and attaches. Returns "" on success, else why not (then nothing is
    // attached). `note` receives a degradation note (e.g. raw_tp fallback).
    std::string start(const BlockTracerOptions& opts, FeatureProbe& probe, std::string& note);
    // Hands copies of the programs' links to a child process, spawned now on
    // a thread of its own (collectors/bpf/deferred_release.hpp): when this
    // tracer is destroyed, its programs are then detached after the process
    // exits (or at let_deferred_children_go()), not on the caller's path
    // (~8 ms of kernel text patching at the end of a window here); until then
    // they keep running, their results unread. Without it they are detached
    // on destruction.
    void detach_at_exit();
    AttachMode mode() const { return mode_; }
    // The program array block_bio_queue's program tail-calls (tp_btf only,
    // else -1): for collectors/bpf/tail_call_chain.hpp.
    int bio_queue_chain_fd() const;

    void set_threshold_ns(uint64_t ns);
    // Waits up to timeout_ms for exemplars and hands each to `sink`; returns
    // early once wake() was called (and at once from then on).
    void poll(int timeout_ms, const std::function<void(const BlockIoExemplar&)>& sink);
    // Ends a poll() waiting in another thread now (thread-safe), so that a
    // window's end does not wait out the poll timeout.
    void wake();
    // Everything since attach, by disk name (the kernel's cumulative aggregates).
    std::map<std::string, BlockDeviceStats> read();
    // What completed since the previous drain() (or since attach), by disk name.
    std::map<std::string, BlockDeviceStats> drain();
    // Per disk: requests seen issued whose completion has not been seen (the
    // in-kernel depth counter, now): in flight, or completed without the
    // kernel running block_rq_complete and not yet found out (a bio queued
    // again finds one: lost().completion_unseen).
    std::map<std::string, uint64_t> in_flight();
    // The reference path's sums (empty unless reference_accounting).
    std::map<std::string, BlockReferenceSums> reference_sums();
    BlockLostCounts lost() const;
    // Per (disk, submitter tgid, cgroup): the submitter's own requests' sums.
    std::vector<BlockSubmitterSums> submitters();
    // Whether the cgroup ids of submitters() are the bios' blkcg (blk-cgroup
    // in this kernel) rather than the submitting task's v2 cgroup.
    bool submitter_cgroup_is_blkcg() const;
    uint64_t exemplars_dropped() const { return lost().exemplars_ringbuf_full; }
    uint64_t tracking_failures() const { return lost().inflight_slot_busy; }
    std::string device_name(uint32_t kernel_dev);

    struct Impl;   // BPF objects (opaque)

private:
    // Which disk owns each aggregate slot (0: unused), in one batched read.
    std::vector<uint32_t> slot_devices() const;

    std::unique_ptr<Impl> impl_;
    AttachMode mode_ = AttachMode::None;
};

// The collector. Threshold for exemplars: CollectOptions::slow_threshold_us
// when > 0, else the constructor's when given, otherwise the p99 of Q2C (all
// disks) over the previous one-second interval. Series (sample()): the
// per-interval block.d2c_us and block.q2c_us {device}, from the cumulative
// in-kernel histograms (no per-I/O work beyond the window's own histograms).
// What a submitter is, read from /proc/PID while the window runs (a process's
// command is the kernel's record, BlockSubmitterSums::comm, where there is one).
struct SubmitterIdentity {
    std::string comm;       // /proc/PID/comm (a kernel worker's with its work's description)
    std::string app;        // a process's application (collectors/procfs/applications.hpp)
    bool kthread = false;   // PF_KTHREAD
    bool flusher = false;   // a kernel worker seen doing writeback (description flush-MAJ:MIN)
    std::string memory_v1, blkio_v1, v2;   // /proc/PID/cgroup
};

class BlockBpfCollector : public Collector {
public:
    bool slow_to_start() const override { return true; }
    unsigned start_cpu_weight() const override { return 2; }
    explicit BlockBpfCollector(std::optional<uint64_t> threshold_ns = std::nullopt,
                               FeatureProbe* probe = nullptr);
    ~BlockBpfCollector() override;
    std::string name() const override { return "block_bpf"; }
    std::vector<MetricSpec> metric_specs() const override;
    CollectorStatus start(const CollectOptions& opts) override;
    void sample(size_t interval) override;
    void finish(Evidence& ev) override;
    // Its links go to a child that detaches them after iodiag's exit
    // (BlockTracer::detach_at_exit), spawned while the window runs.
    void all_started() override;
    // Offers its block_bio_queue program to the syscall collector's
    // (collectors/bpf/tail_call_chain.hpp); set before start().
    void share_bio_queue(std::shared_ptr<TailCallChain> chain) { bio_queue_chain_ = std::move(chain); }

    static constexpr size_t kMaxExemplars = 64;   // slowest kept per window

private:
    void loop();
    // Reads the cumulative aggregates (the wanted devices only); with
    // update_threshold, sets the p99 threshold from what completed since the
    // previous such read (about one second).
    std::map<std::string, BlockDeviceStats> read_wanted(bool update_threshold);

    std::optional<uint64_t> fixed_threshold_ns_;   // from the constructor
    std::optional<uint64_t> window_threshold_ns_;  // this window's fixed threshold, if any
    FeatureProbe* probe_;
    std::unique_ptr<FeatureProbe> own_probe_;
    std::unique_ptr<BlockTracer> tracer_;
    std::shared_ptr<TailCallChain> bio_queue_chain_;
    std::vector<std::string> devices_;   // user-space device filter (several devices)
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::mutex mu_;
    std::map<std::string, BlockDeviceStats> last_read_;   // cumulative, for the threshold
    std::map<std::string, BlockDeviceStats> last_sample_; // cumulative at the last sample()
    bool sampled_ = false;
    CumulativeSeries series_;
    std::vector<BlockIoExemplar> exemplars_;
    std::string provenance_suffix_;
    // Submitters' commands and identities, read from /proc at each sample (a
    // process that exits before the window ends keeps its name; a process's
    // command recorded by the kernel wins over /proc's), and the
    // paths of the cgroups their requests were charged to (block_submitters.cpp).
    void learn_submitter_names();
    // A submitter's command in block.submitter_*: the kernel's record for a
    // process, /proc's first read for a kernel thread, "?" when neither,
    // "(none)" for tgid 0 (block_submitters.cpp).
    std::string submitter_command(const BlockSubmitterSums& s) const;
    // A process's application (collectors/procfs/applications.hpp) as it was
    // named while it ran, else as its recorded command gives it; anything
    // else (a kernel thread, the block layer, unknown): its command.
    std::string submitter_application(const BlockSubmitterSums& s) const;
    void emit_submitters(Evidence& ev, const std::function<Provenance(const std::string&)>& prov);
    // Per device and (command, cgroup): who used it, and how much
    // (block_submitters.cpp).
    void emit_submitter_groups(Evidence& ev, const std::vector<BlockSubmitterSums>& sums,
                               const std::function<Provenance(const std::string&)>& prov);
    static constexpr size_t kMaxSubmittersPerDevice = 8;
    static constexpr size_t kMaxSubmitterGroupsPerDevice = 16;
    std::map<uint32_t, std::string> submitter_comm_;
    std::map<uint32_t, SubmitterIdentity> submitter_who_;
    std::map<uint64_t, std::string> blkcg_paths_;   // cgroup id -> path ("" unresolved), while the window runs
    bool blkio_v1_ = false;                          // the io controller is a v1 hierarchy (blkio) here
};

}  // namespace iodiag
