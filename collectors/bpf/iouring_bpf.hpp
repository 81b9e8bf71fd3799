// io_uring collector (bpf/iouring.bpf.c): per ring and process, submit ->
// complete latency, the share of read/write requests punted to io-wq worker
// threads, and how long tasks waited for completions (CQ wait).
//
// Why punts matter: io_uring's gain comes from its shared submission and
// completion rings, that let a process queue many requests per
// io_uring_enter (or none, with SQPOLL) and reap completions in batches while
// the requests run asynchronously. That needs requests that can be issued
// without blocking (O_DIRECT). A request that cannot (a buffered write on ext4,
// on this kernel: all of them) is handed to an io-wq worker thread that performs
// it as an ordinary blocking write, so the batching gain is gone.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectors/bpf/bpf_features.hpp"
#include "collectors/collector.hpp"
#include "collectors/bpf/tail_call_chain.hpp"

namespace iodiag {

// Aggregates of one ring of one process, as read from the BPF map.
struct IouringRingStats {
    uint32_t pid = 0;
    uint64_t ring = 0;
    std::string comm;
    uint64_t submitted[3] = {0, 0, 0};   // read, write, other
    uint64_t punted[3] = {0, 0, 0};
    uint64_t completed = 0, untracked = 0, lat_sum_ns = 0;
    uint64_t iowq_ns = 0;                // of lat_sum_ns: from the punt to io-wq to completion
    std::vector<uint64_t> lat_hist;      // log2 us
    uint64_t cqwait_count = 0, cqwait_sum_ns = 0;
    std::vector<uint64_t> cqwait_hist;   // log2 us
};

// Turns ring aggregates into evidence (public: unit-tested without BPF).
// cq_wait_end: where a CQ wait's end was seen ("" = the collector's own
// raw_syscalls:sys_exit program), for the provenance.
void add_iouring_evidence(const std::vector<IouringRingStats>& rings, double window_s,
                          const std::string& mode, Evidence& ev, const std::string& cq_wait_end = "");
std::vector<MetricSpec> iouring_metric_specs();

class IouringBpfCollector : public Collector {
public:
    bool slow_to_start() const override { return true; }
    unsigned start_cpu_weight() const override { return 1; }
    explicit IouringBpfCollector(FeatureProbe* probe = nullptr);
    ~IouringBpfCollector() override;
    std::string name() const override { return "iouring_bpf"; }
    std::vector<MetricSpec> metric_specs() const override { return iouring_metric_specs(); }
    CollectorStatus start(const CollectOptions& opts) override;
    // Its sys_exit program goes into the syscall collector's chain when that
    // one offers it, else it is attached here (collectors/bpf/tail_call_chain.hpp);
    // then its links go to a child that detaches them after iodiag's exit
    // (collectors/bpf/deferred_release.hpp).
    void all_started() override;
    void finish(Evidence& ev) override;
    // Ends CQ waits through the syscall collector's sys_exit when both run;
    // set before start(). Without it, start() attaches its own sys_exit.
    void share_sys_exit(std::shared_ptr<TailCallChain> chain) { chain_ = std::move(chain); }
    // In-flight table entries used: 0 = all; a smaller power of two (at least
    // 2, one slot pair) makes live requests share slots (tests). Set before
    // start(), which refuses any other value.
    void use_inflight_slots(uint32_t slots) { inflight_slots_ = slots; }

private:
    void attach_cq_wait_end();
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::shared_ptr<TailCallChain> chain_;
    uint32_t inflight_slots_ = 0;
    FeatureProbe* probe_;
    std::unique_ptr<FeatureProbe> own_probe_;
};

}  // namespace iodiag
