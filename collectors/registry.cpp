#include "collectors/registry.hpp"

#include "collectors/bpf/block_bpf.hpp"
#include "collectors/sysfs/block_queue_config.hpp"
#include "collectors/ceph/ceph_collector.hpp"
#include "collectors/cgroup/cgroup_collector.hpp"
#include "collectors/cgroup/cgroup_names.hpp"
#include "collectors/procfs/delayacct.hpp"
#include "collectors/procfs/diskstats.hpp"
#include "collectors/procfs/dirty_limits.hpp"
#include "collectors/bpf/iouring_bpf.hpp"
#include "collectors/procfs/meminfo.hpp"
#include "collectors/procfs/mounts.hpp"
#include "collectors/nvme/nvme_smart_collector.hpp"
#include "collectors/procfs/proc_cpu.hpp"
#include "collectors/procfs/proc_io.hpp"
#include "collectors/procfs/psi.hpp"
#include "collectors/bpf/syscall_bpf.hpp"
#include "collectors/procfs/vmstat.hpp"

namespace iodiag {

std::vector<std::unique_ptr<Collector>> make_collectors() {
    std::vector<std::unique_ptr<Collector>> c;
    // One line per collector; keep the order bottom-up (device first).
    c.push_back(std::make_unique<DiskstatsCollector>());
    // Tracepoints two collectors hook run one program when both run
    // (collectors/bpf/tail_call_chain.hpp): block_bio_queue the block collector's,
    // raw_syscalls:sys_exit the syscall collector's.
    auto bio_queue = std::make_shared<TailCallChain>();
    auto sys_exit = std::make_shared<TailCallChain>();
    auto block = std::make_unique<BlockBpfCollector>();
    block->share_bio_queue(bio_queue);
    c.push_back(std::move(block));
    c.push_back(std::make_unique<NvmeSmartCollector>());
    c.push_back(std::make_unique<BlockQueueConfigCollector>());
    c.push_back(std::make_unique<VmstatCollector>());
    c.push_back(std::make_unique<MeminfoCollector>());
    c.push_back(std::make_unique<DirtyLimitsCollector>());
    c.push_back(std::make_unique<MountsCollector>());
    // Who dirtied the window's data: /proc, with the threads that exit inside
    // it as the syscall collector's BPF program records them at their exit
    // (collectors/bpf/exited_writers.hpp).
    auto exited = std::make_shared<ExitedWriters>();
    c.push_back(std::make_unique<ProcIoCollector>(exited));
    c.push_back(std::make_unique<ProcCpuCollector>());
    c.push_back(std::make_unique<PsiCollector>());
    c.push_back(std::make_unique<CgroupCollector>());
    c.push_back(std::make_unique<DelayacctCollector>());
    auto iouring = std::make_unique<IouringBpfCollector>();
    iouring->share_sys_exit(sys_exit);
    c.push_back(std::move(iouring));
    auto syscalls = std::make_unique<SyscallBpfCollector>();
    syscalls->share_sys_exit(sys_exit);
    syscalls->share_bio_queue(bio_queue);
    syscalls->share_exited_writers(exited);
    c.push_back(std::move(syscalls));
    c.push_back(std::make_unique<CephCollector>());
    return c;
}

std::vector<MetricSpec> collector_metric_specs() {
    std::vector<MetricSpec> specs;
    for (const auto& c : make_collectors()) {
        auto mine = c->metric_specs();
        specs.insert(specs.end(), mine.begin(), mine.end());
    }
    // Added at the end of collection for every collector's cgroup labels (app/collect.cpp).
    auto names = cgroup_name_specs();
    specs.insert(specs.end(), names.begin(), names.end());
    return specs;
}

}  // namespace iodiag
