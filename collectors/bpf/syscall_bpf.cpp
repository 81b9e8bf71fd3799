// Loader, attach and drain for the syscall BPF collector; the aggregation into
// Evidence is in syscall_bpf_emit.cpp, the attribution math in
// syscall_bpf_attribution.cpp.
#include "collectors/bpf/syscall_bpf.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>

#include <spdlog/spdlog.h>

#include "collectors/bpf/bpf_array_read.hpp"
#include "collectors/bpf/bpf_features.hpp"
#include "collectors/bpf/bpf_program_stats.hpp"
#include "collectors/bpf/core_target_btf.hpp"
#include "collectors/bpf/deferred_release.hpp"
#include "collectors/bpf/inflight_syscalls.hpp"
#include "collectors/bpf/waits_before_window.hpp"
#include "collectors/bpf/perf_tracepoint.hpp"
#include "collectors/cgroup/cgroup_ids.hpp"
#include "collectors/bpf/kallsyms.hpp"
#include "collectors/bpf/kallsyms_cache.hpp"
#include "collectors/procfs/applications.hpp"
#include "collectors/procfs/kernel_hz.hpp"
#include "collectors/procfs/proc_cmdline.hpp"
#include "collectors/sysfs/block_device_name.hpp"
#include "collectors/bpf/syscall_bpf_classes.hpp"
#include "collectors/bpf/syscall_bpf_snapshot.hpp"
#include "collectors/text_file.hpp"
#include "collectors/bpf/text_page_filter.hpp"
#include "engine/evidence/layers.hpp"

#if IODIAG_HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf/syscall_events.h"
#include "syscall.skel.h"

static_assert(IOD_CMDLINE_LEN == iodiag::kCmdlineMaxBytes, "one bound for the kernel's command lines and /proc's");
#endif

namespace iodiag {

namespace {
// CLOCK_MONOTONIC in ns: bpf_ktime_get_ns's clock.
uint64_t monotonic_now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Logs the time since the previous mark (at debug level): finish() must stay
// short because the verdict is due within the window + 1 s.
class StepTimer {
public:
    explicit StepTimer(const char* what) : what_(what), last_(std::chrono::steady_clock::now()) {}
    void mark(const char* step) {
        const auto now = std::chrono::steady_clock::now();
        spdlog::debug("{}: {} took {:.1f} ms", what_, step,
                      std::chrono::duration<double, std::milli>(now - last_).count());
        last_ = now;
    }

private:
    const char* what_;
    std::chrono::steady_clock::time_point last_;
};
}  // namespace

#if IODIAG_HAVE_BPF

struct SyscallBpfCollector::Impl {
    ::syscall_bpf* skel = nullptr;
    std::vector<bpf_link*> links;
    ring_buffer* rb = nullptr;
    std::thread drainer;
    std::atomic<bool> stop{false};
    int stop_fd = -1;   // eventfd: wakes the drainer at once when the window ends
    std::mutex mu;   // guards the exemplar state below
    std::vector<iod_exemplar> slowest;   // min-heap by total_ns, bounded
    std::map<std::string, std::vector<uint64_t>> file_ns_by_bucket;
    std::map<uint32_t, syscall_bpf::ProcParts> proc_parts;
    uint64_t received = 0;
    uint64_t stop_ns = 0;   // CLOCK_MONOTONIC when the programs stopped (the in-flight syscalls' end)
    uint64_t waiting_at_start = 0;   // syscalls found waiting when the programs attached, timed from then
    size_t max_exemplars = 64;
    static constexpr size_t kMaxPartsProcs = 4096;   // ~3 KiB each
    std::vector<syscall_bpf::Reading> readings;   // one per sample()
    uint32_t proc_slots = 0;
    std::optional<double> slow_threshold_us;   // this window's; unset = p99
    KernelHz hz;
    std::string root = "/";
    syscall_bpf::FsTrace xfs = syscall_bpf::FsTrace::Failed, btrfs = syscall_bpf::FsTrace::Failed;
    bool journal_waits_split = false;   // journal-class waits classified (sched + a journal function resolved)
    bool bio_queue_deferred = false;    // on_bio_queue loaded, chained or attached in all_started()
    // The per-syscall tracepoints' perf events and links (empty in raw mode),
    // and with them the other programs' links: handed to a child once start()
    // has attached them, released off the exit path in finish()
    // (collectors/bpf/deferred_release.hpp).
    std::vector<PerfTracepointLink> event_links;
    DeferredRelease holder;     // a child holding copies of them, spawned while the window runs
    size_t links_handed = 0;    // links[0, links_handed) went to it (a link attached later did not)
    std::string attach;   // which attach mode ran, for the provenance

    ~Impl() {
        stop_drainer();
        if (stop_fd >= 0) close(stop_fd);
        if (rb) ring_buffer__free(rb);
        release_attachments();
        if (skel) syscall_bpf__destroy(skel);
    }

    // The programs stop at once (the `stopped` flag each reads first): their
    // maps stop moving as after a detach.
    void stop_programs() {
        if (skel && skel->bss) __atomic_store_n(&skel->bss->stopped, 1u, __ATOMIC_RELEASE);
        if (!stop_ns) stop_ns = monotonic_now_ns();
    }
    // The events and links attached so far, to the child that will close them
    // (spawned on a thread of its own: 2-12 ms here).
    void hand_over_attachments() {
        std::vector<int> fds = descriptors_of(event_links);
        for (int fd : descriptors_of(links)) fds.push_back(fd);
        holder.hand_over(std::move(fds));
        links_handed = links.size();
    }
    // Stops the programs and leaves what was handed over to the child that
    // closes it after iodiag's exit; a link attached later, or everything
    // where nothing was handed over, is detached here. Says how.
    std::string release_attachments(DeferredRelease::When when = DeferredRelease::When::Now) {
        if (event_links.empty() && links.empty()) return "";
        stop_programs();
        std::vector<bpf_link*> later(links.begin() + static_cast<std::ptrdiff_t>(links_handed), links.end());
        links.resize(links_handed);
        free_handed_over(links);
        for (auto* l : later) bpf_link__destroy(l);
        if (!holder.holding() && !event_links.empty()) holder.hand_over(descriptors_of(event_links));
        event_links.clear();
        links_handed = 0;
        return holder.release(when);
    }

    void stop_drainer() {
        stop = true;
        if (stop_fd >= 0) {
            const uint64_t one = 1;
            (void)!write(stop_fd, &one, sizeof(one));
        }
        if (drainer.joinable()) drainer.join();
    }

    // Waits on the ring buffer and the stop eventfd together, so that the
    // end of the window does not wait out a poll timeout.
    void drain_until_stopped() {
        const int ep = epoll_create1(EPOLL_CLOEXEC);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = ring_buffer__epoll_fd(rb);
        const bool ok = ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, ev.data.fd, &ev) == 0 &&
                        (ev.data.fd = stop_fd, epoll_ctl(ep, EPOLL_CTL_ADD, stop_fd, &ev) == 0);
        while (!stop) {
            if (ok) {
                epoll_event got[2];
                if (epoll_wait(ep, got, 2, 1000) < 0 && errno != EINTR) break;
                ring_buffer__consume(rb);
            } else {
                ring_buffer__poll(rb, 100);
            }
        }
        ring_buffer__consume(rb);
        if (ep >= 0) close(ep);
    }

    static std::string file_of(const iod_exemplar& e) {
        std::string name(e.name, strnlen(e.name, sizeof(e.name)));
        std::string parent(e.parent, strnlen(e.parent, sizeof(e.parent)));
        if (e.flags & IOD_F_PATH_FROM_USER || parent.empty() || parent == "/") return name;
        return parent + "/" + name;
    }

    int on_exemplar(const void* data, size_t size) {
        if (size < sizeof(iod_exemplar)) return 0;
        iod_exemplar e;
        std::memcpy(&e, data, sizeof(e));
        std::lock_guard<std::mutex> g(mu);
        ++received;
        auto& per_file = file_ns_by_bucket[file_of(e)];
        if (per_file.empty()) per_file.assign(IOD_HIST_BUCKETS, 0);
        const int bucket = std::min<int>(Log2Histogram::bucket_of(e.total_ns / 1000), IOD_HIST_BUCKETS - 1);
        per_file[bucket] += e.total_ns;
        // Per process, bounded: a process first seen when the table is full is
        // left out (its slow syscalls still count in the totals).
        if (auto it = proc_parts.find(e.tgid); it != proc_parts.end() || proc_parts.size() < kMaxPartsProcs) {
            auto& pp = proc_parts[e.tgid];
            if (pp.total_ns.empty()) {
                pp.class_ns.assign(IOD_HIST_BUCKETS, std::vector<uint64_t>(CLS_COUNT, 0));
                pp.total_ns.assign(IOD_HIST_BUCKETS, 0);
                pp.count.assign(IOD_HIST_BUCKETS, 0);
            }
            for (int c = 0; c < CLS_COUNT; ++c) pp.class_ns[bucket][c] += e.ns[c];
            pp.total_ns[bucket] += e.total_ns;
            pp.count[bucket] += 1;
            if (e.flags & (IOD_F_IN_FLIGHT | IOD_F_BEFORE_WINDOW)) pp.in_flight += 1;
        }
        auto cmp = [](const iod_exemplar& a, const iod_exemplar& b) { return a.total_ns > b.total_ns; };
        if (slowest.size() < max_exemplars) {
            slowest.push_back(e);
            std::push_heap(slowest.begin(), slowest.end(), cmp);
        } else if (!slowest.empty() && e.total_ns > slowest.front().total_ns) {
            std::pop_heap(slowest.begin(), slowest.end(), cmp);
            slowest.back() = e;
            std::push_heap(slowest.begin(), slowest.end(), cmp);
        }
        return 0;
    }
};

namespace {

int ringbuf_cb(void* ctx, void* data, size_t size) {
    return static_cast<SyscallBpfCollector::Impl*>(ctx)->on_exemplar(data, size);
}

// "tracepoint/syscalls/sys_enter_read" -> {"syscalls", "sys_enter_read"};
// "tp_btf/sched_switch" -> {"sched", "sched_switch"}.
std::pair<std::string, std::string> tracepoint_of(const std::string& section) {
    if (section.rfind("tracepoint/", 0) == 0) {
        const std::string rest = section.substr(11);
        const auto slash = rest.find('/');
        return {rest.substr(0, slash), rest.substr(slash + 1)};
    }
    const std::string name = section.substr(section.find('/') + 1);
    if (name.rfind("sched_", 0) == 0) return {"sched", name};
    if (name.rfind("mm_vmscan_", 0) == 0) return {"vmscan", name};
    if (name.rfind("block_", 0) == 0) return {"block", name};
    if (name == "sys_enter" || name == "sys_exit") return {"raw_syscalls", name};
    if (name.rfind("jbd2_", 0) == 0) return {"jbd2", name};
    if (name.rfind("ext4_", 0) == 0) return {"ext4", name};
    if (name.rfind("xfs_", 0) == 0) return {"xfs", name};
    if (name.rfind("btrfs_", 0) == 0) return {"btrfs", name};
    if (name.rfind("page_cache_", 0) == 0) return {"readahead", name};
    if (name == "balance_dirty_pages") return {"writeback", name};
    if (name.rfind("io_uring_", 0) == 0) return {"io_uring", name};
    return {"", name};
}

// This architecture's syscall numbers, index = enum iod_sys.
const std::vector<long>& traced_syscall_numbers() {
    static const std::vector<long> v = {
        SYS_read, SYS_write, SYS_pread64, SYS_pwrite64, SYS_readv, SYS_writev, SYS_preadv, SYS_pwritev,
        SYS_preadv2, SYS_pwritev2, SYS_fsync, SYS_fdatasync, SYS_sync_file_range, SYS_openat,
        SYS_io_uring_enter};
    return v;
}

bool is_max_counter(uint32_t i) {
    return i == CNT_JBD2_MAX_LOCKED || i == CNT_JBD2_MAX_FLUSHING || i == CNT_JBD2_MAX_LOGGING;
}

// The per-CPU aggregates summed over CPUs (maxima for the max counters).
syscall_bpf::Reading read_aggregates(const ::syscall_bpf* skel) {
    syscall_bpf::Reading r;
    r.hist.assign(GRP_COUNT, std::vector<uint64_t>(IOD_HIST_BUCKETS, 0));
    r.buckets.assign(IOD_HIST_BUCKETS, {});
    for (auto& b : r.buckets) b.class_ns.assign(CLS_COUNT, 0);
    r.counters.assign(CNT_COUNT, 0);
    const int ncpu = libbpf_num_possible_cpus();
    if (ncpu <= 0) return r;
    std::vector<iod_aggregates> per_cpu(static_cast<size_t>(ncpu));
    const uint32_t zero = 0;
    if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.aggregates), &zero, per_cpu.data()) != 0) return r;
    for (const auto& c : per_cpu) {
        for (int g = 0; g < GRP_COUNT; ++g)
            for (int b = 0; b < IOD_HIST_BUCKETS; ++b) r.hist[g][b] += c.hist[g][b];
        for (int b = 0; b < IOD_HIST_BUCKETS; ++b) {
            r.buckets[b].count += c.buckets[b].count;
            r.buckets[b].total_ns += c.buckets[b].total_ns;
            for (int k = 0; k < CLS_COUNT; ++k) r.buckets[b].class_ns[k] += c.buckets[b].ns[k];
        }
        for (uint32_t i = 0; i < CNT_COUNT; ++i)
            r.counters[i] = is_max_counter(i) ? std::max<uint64_t>(r.counters[i], c.counters[i]) : r.counters[i] + c.counters[i];
    }
    return r;
}

// The application of a process met in a per-device table: the comm the
// kernel recorded for processes with traced syscalls (`named`), else the
// procs map's, else /proc's; "" when none is known.
std::string table_application(SyscallBpfCollector::Impl& im,
                              const std::map<uint32_t, const syscall_bpf::ProcessTime*>& named, uint32_t tgid) {
    std::string comm;
    if (const auto n = named.find(tgid); n != named.end()) {
        comm = n->second->comm;
    } else if (iod_proc_info info{}; bpf_map_lookup_elem(bpf_map__fd(im.skel->maps.procs), &tgid, &info) == 0) {
        comm.assign(info.comm, strnlen(info.comm, sizeof(info.comm)));
    } else {
        comm = try_read_first_line(under_root(im.root, "/proc/" + std::to_string(tgid) + "/comm")).value_or("");
    }
    return comm.empty() ? "" : ApplicationIndex::of_root(im.root).application_of(tgid, comm);
}

// The traced syscalls still waiting when the programs stopped, at least
// `min_ns` so far (collectors/bpf/inflight_syscalls.hpp), counted as slow
// syscalls of that duration: in the window's attribution (`all`), in their
// process's time (`by_pid`) and as exemplars marked in flight. Returns how
// many. Only the live machine's threads can be read (pidfds).
uint64_t add_in_flight_syscalls(SyscallBpfCollector::Impl& im, uint64_t min_ns, CgroupIdNames& cg,
                                syscall_bpf::Reading& all, std::map<uint32_t, syscall_bpf::ProcessTime>& by_pid) {
    if (im.root != "/" || !im.stop_ns) return 0;
    uint64_t n = 0;
    const auto threads = syscall_bpf::read_in_flight_syscalls(bpf_map__fd(im.skel->maps.task_state),
                                                              static_cast<uint32_t>(getpid()), traced_syscall_numbers());
    for (const auto& t : threads) {
        const CgroupIdNames::Ids ids = cg.ids_of(static_cast<int>(t.tgid));
        uint64_t released = 0;
        if (ids.io) bpf_map_lookup_elem(bpf_map__fd(im.skel->maps.throttle_release), &ids.io, &released);
        auto e = syscall_bpf::exemplar_of_in_flight(t.tgid, t.tid, t.state, im.stop_ns, released);
        if (!e || e->total_ns < min_ns) continue;
        e->cgid = ids.v2;
        e->memcg = ids.memory;
        e->io_cg = ids.blkio;
        const std::string task = "/proc/" + std::to_string(t.tgid) + "/task/" + std::to_string(t.tid);
        // Into the zeroed fields as the program fills them: cut, NUL-terminated.
        auto put = [](auto& field, const std::string& text) {
            std::memcpy(field, text.data(), std::min(text.size(), sizeof(field) - 1));
        };
        put(e->comm, try_read_first_line(task + "/comm").value_or(""));
        if (e->sys != SYS_OPENAT) {
            const std::filesystem::path path = syscall_bpf::path_of_fd(t.tgid, t.arg0);
            put(e->name, path.filename().string());
            put(e->parent, path.parent_path().filename().string());
        }
        const int b = std::min<int>(Log2Histogram::bucket_of(e->total_ns / 1000), IOD_HIST_BUCKETS - 1);
        if (static_cast<size_t>(b) < all.buckets.size()) {
            auto& sums = all.buckets[b];
            sums.count += 1;
            sums.total_ns += e->total_ns;
            for (int c = 0; c < CLS_COUNT && static_cast<size_t>(c) < sums.class_ns.size(); ++c)
                sums.class_ns[c] += e->ns[c];
        }
        auto& p = by_pid[t.tgid];
        if (p.ns_by_bucket.empty()) p.ns_by_bucket.assign(IOD_HIST_BUCKETS, 0);
        p.ops += 1;
        p.ns_by_bucket[b] += e->total_ns;
        im.on_exemplar(&*e, sizeof(*e));
        ++n;
    }
    return n;
}

// Every entry of a hash keyed by (filesystem device, process): f(key, value).
template <typename Value, typename F>
void for_each_device_process(int fd, F&& f) {
    iod_ra_key key{}, next{};
    const iod_ra_key* at = nullptr;
    while (bpf_map_get_next_key(fd, at, &next) == 0) {
        key = next;
        at = &key;
        Value v{};
        if (bpf_map_lookup_elem(fd, &key, &v) == 0) f(key, v);
    }
}

// The page-cache misses per filesystem device and process (ra_misses), each
// named by its disk (its queue holds read_ahead_kb) and its application.
void read_readahead_misses(SyscallBpfCollector::Impl& im,
                           const std::map<uint32_t, const syscall_bpf::ProcessTime*>& named,
                           syscall_bpf::Snapshot& s) {
    s.page_bytes = static_cast<uint32_t>(sysconf(_SC_PAGESIZE));
    std::map<uint32_t, std::string> devices;
    for_each_device_process<iod_ra_misses>(bpf_map__fd(im.skel->maps.ra_misses), [&](const iod_ra_key& key,
                                                                                      const iod_ra_misses& v) {
        if (!(v.misses + v.async + v.cache_wait_ns)) return;
        auto dev = devices.find(key.dev);
        if (dev == devices.end())
            dev = devices.emplace(key.dev, syscall_bpf::readahead_device_name(im.root, key.dev)).first;
        syscall_bpf::ReadaheadMisses m;
        m.device = dev->second;
        m.pid = key.tgid;
        m.app = table_application(im, named, key.tgid);
        m.misses = v.misses;
        m.sequential = v.sequential;
        m.unwidened = v.unwidened;
        m.window_pages = v.window_pages;
        m.async = v.async;
        m.async_window_pages = v.async_window_pages;
        m.cache_wait_ns = v.cache_wait_ns;
        m.cache_read_ns = v.cache_read_ns;
        s.readahead.push_back(std::move(m));
    });
}

// The writes that waited for durability per filesystem device and process
// (sync_writes), each named by the filesystem's own device (its mount
// options are its superblock's) and its application.
void read_sync_writes(SyscallBpfCollector::Impl& im, const std::map<uint32_t, const syscall_bpf::ProcessTime*>& named,
                      syscall_bpf::Snapshot& s) {
    static_assert(syscall_bpf::kSyncReasons.size() == IOD_SYNC_REASONS);
    std::map<uint32_t, std::string> devices;
    for_each_device_process<iod_sync_writes>(bpf_map__fd(im.skel->maps.sync_writes), [&](const iod_ra_key& key,
                                                                                          const iod_sync_writes& v) {
        auto dev = devices.find(key.dev);
        if (dev == devices.end())
            dev = devices.emplace(key.dev, block_device_name(im.root, kernel_dev_major(key.dev),
                                                             kernel_dev_minor(key.dev), false)).first;
        syscall_bpf::SyncWrites w;
        w.device = dev->second;
        w.pid = key.tgid;
        w.app = table_application(im, named, key.tgid);
        for (size_t r = 0; r < IOD_SYNC_REASONS; ++r)
            w.writes[r] = v.writes[r], w.wait_ns[r] = v.wait_ns[r], w.time_ns[r] = v.time_ns[r];
        w.fsyncs = v.fsyncs;
        w.fsync_time_ns = v.fsync_time_ns;
        s.sync_writes.push_back(std::move(w));
    });
}

// The programs of the per-syscall attach (bpf/syscall.bpf.c): three enter
// programs by the arguments they read, one exit program.
std::vector<bpf_program*> event_programs(::syscall_bpf* skel) {
    return {skel->progs.sys_enter_fd, skel->progs.sys_enter_fd_arg1, skel->progs.sys_enter_fd_arg3,
            skel->progs.sys_exit_event};
}

// The enter program of a traced syscall (enum iod_sys) on its own event: the
// one that reads the arguments it needs and none past the end of its event's
// record (the kernel refuses to attach a program that would).
bpf_program* enter_program(::syscall_bpf* skel, int sys) {
    switch (sys) {
    case SYS_PREAD64: case SYS_PWRITE64: case SYS_PREADV: case SYS_PWRITEV: case SYS_PREADV2: case SYS_PWRITEV2:
        return skel->progs.sys_enter_fd_arg3;
    case SYS_SYNC_FILE_RANGE: case SYS_OPENAT:
        return skel->progs.sys_enter_fd_arg1;
    default:
        return skel->progs.sys_enter_fd;
    }
}

// Per-CPU process-time slots: what fits in 8 MiB over all CPUs, 64..4096
// (whole groups of IOD_PROC_SLOTS_PER_GROUP: the map's elements).
uint32_t proc_slots_for(int ncpu) {
    static_assert(64 % IOD_PROC_SLOTS_PER_GROUP == 0, "the fewest slots make whole groups");
    const size_t budget = 8u << 20;
    uint32_t slots = 4096;
    while (slots > 64 && size_t(slots) * sizeof(iod_proc_time) * size_t(std::max(ncpu, 1)) > budget) slots /= 2;
    return slots;
}

}  // namespace

#else
struct SyscallBpfCollector::Impl {};
#endif

SyscallBpfCollector::SyscallBpfCollector(SyscallBpfOptions opts) : opts_(std::move(opts)) {}

SyscallBpfCollector::~SyscallBpfCollector() {
    if (chain_ && impl_) chain_->withdraw();   // its array closes with impl_
    if (bio_queue_chain_ && impl_) bio_queue_chain_->release();
}

std::vector<MetricSpec> SyscallBpfCollector::metric_specs() const { return syscall_bpf::metric_specs(); }

CollectorStatus SyscallBpfCollector::start(const CollectOptions& opts) {
    victim_ = opts.victim;
#if IODIAG_HAVE_BPF
    // The traced syscalls on their own tracepoints when tracefs has every
    // one's enter and exit event (looked at, never assumed from the kernel's
    // version; the attach itself has the last word), else on the raw ones.
    KernelFeatureProbe probe(opts.root);
    std::string absent;
    for (const auto& n : syscall_bpf::syscall_names())
        for (const char* side : {"sys_enter_", "sys_exit_"})
            if (absent.empty() && !probe.tracepoint_exists("syscalls", side + n))
                absent = std::string("syscalls:") + side + n + " missing (" + probe.last_failure() + ")";
    if (!absent.empty()) return start_attached(opts, absent);
    std::string refused;
    CollectorStatus st = start_attached(opts, "", &refused);
    if (refused.empty()) return st;
    return start_attached(opts, "per-syscall tracepoints refused: " + refused);
#else
    return start_attached(opts, "");
#endif
}

CollectorStatus SyscallBpfCollector::start_attached(const CollectOptions& opts, const std::string& raw_because,
                                                    std::string* events_refused) {
    CollectorStatus st;
    st.name = name();
    // Until the programs attach, the layers it measures when it runs: a status
    // that says unavailable names them, so the verdict says why they were not
    // observed. On success they become the layers whose probes attached.
    st.layers = {layer::kSyscall, layer::kFilesystem, layer::kCpu,     layer::kPageCache, layer::kDirty,
                 layer::kReclaim, layer::kJournal,    layer::kLocks,   layer::kCgroup};
#if !IODIAG_HAVE_BPF
    (void)opts;
    st.reason = "built without BPF support (no clang/bpftool/BTF at build time)";
    return st;
#else
    if (geteuid() != 0) {
        st.reason = "needs root (CAP_BPF + CAP_PERFMON) to load BPF programs";
        return st;
    }
    KernelFeatureProbe probe(opts.root);
    // Kernel BTF: a fixture root answers from the file's existence, at once;
    // the machine's is mapped and walked (~4 ms, shared with the other
    // collectors' probes) on the resolver thread below, while the kernel
    // verifies the programs.
    const bool machine_root = opts.root == "/";
    if (!machine_root)
        if (auto why = probe.btf_available(); !why.empty()) {
            st.reason = why;
            return st;
        }
    StepTimer t("syscall_bpf start");
    auto impl = std::make_unique<Impl>();
    impl->max_exemplars = opts_.max_exemplars;
    impl->slow_threshold_us = opts.slow_threshold_us > 0 ? std::optional<double>(opts.slow_threshold_us)
                                                         : opts_.slow_threshold_us;
    impl->root = opts.root;
    const CoreTargetFile core_target("syscall_bpf", syscall_bpf__elf_bytes);
    LIBBPF_OPTS(bpf_object_open_opts, open_opts, .btf_custom_path = core_target.path());
    impl->skel = syscall_bpf__open_opts(&open_opts);
    if (!impl->skel) {
        st.reason = std::string("opening the syscall BPF object failed: ") + std::strerror(errno);
        return st;
    }
    // One attach mode's syscall programs are loaded: their tail call's
    // program array takes programs of one type only (see bpf/syscall.bpf.c).
    const bool per_syscall = raw_because.empty();
    for (bpf_program* p : event_programs(impl->skel)) bpf_program__set_autoload(p, per_syscall);
    bpf_program__set_autoload(impl->skel->progs.sys_enter, !per_syscall);
    bpf_program__set_autoload(impl->skel->progs.sys_exit, !per_syscall);
    impl->attach = per_syscall ? "syscalls:sys_enter_<name>/sys_exit_<name> of the traced syscalls"
                               : "raw_syscalls:sys_enter/sys_exit (tp_btf) filtered by syscall number";
    auto* ro = impl->skel->rodata;
    ro->target_tgid = opts.pid > 0 ? static_cast<uint32_t>(opts.pid) : 0;
    ro->self_tgid = static_cast<uint32_t>(getpid());
    ro->page_shift = static_cast<uint32_t>(__builtin_ctzl(static_cast<unsigned long>(sysconf(_SC_PAGESIZE))));
    ro->exemplar_min_ns = static_cast<uint64_t>(opts_.exemplar_min_us * 1000);
    if (opts_.first_walk_frames > 0)
        ro->first_walk_frames = std::min<unsigned>(opts_.first_walk_frames, IOD_STACK_DEPTH);

    // Wait classifier: kernel function ranges from /proc/kallsyms (~40-70 ms
    // of CPU to generate and parse), or from this boot's cache of them (see
    // collectors/bpf/kallsyms_cache.hpp), read while the kernel verifies the
    // programs. A fixture root never uses the machine's cache. Then, on the
    // same thread, BIO_BPS_THROTTLED's bit in bio->bi_flags, read from BTF
    // (not assumed: it is not ABI); both go to the program's writable data
    // after load and before attach.
    std::vector<std::string> notes;
    KallsymsSources sources;
    sources.kallsyms = under_root(opts.root, sources.kallsyms);
    sources.boot_id = under_root(opts.root, sources.boot_id);
    sources.modules = under_root(opts.root, sources.modules);
    if (!machine_root) sources.cache_dir.clear();
    const std::string& kallsyms_path = sources.kallsyms;
    std::vector<KernelSymbolRange> ranges;
    std::string btf_why;
    uint32_t throttled_bit = 0xff;
    std::thread kallsyms_reader([&] {
        auto got = resolve_kernel_symbols_cached(sources, syscall_bpf::wait_classifier_functions());
        spdlog::debug("syscall_bpf: wait classifier's function ranges {}", got.how);
        ranges = got.ranges.value_or(std::vector<KernelSymbolRange>{});
        if (ranges.size() > IOD_MAX_RANGES) ranges.resize(IOD_MAX_RANGES);
        if (machine_root) btf_why = KernelFeatureProbe("/").btf_available();
        throttled_bit = static_cast<uint32_t>(kernel_enum_value("BIO_BPS_THROTTLED").value_or(0xff));
    });
    struct JoinOnExit {
        std::thread& t;
        ~JoinOnExit() {
            if (t.joinable()) t.join();
        }
    } join_reader{kallsyms_reader};
    impl->proc_slots = proc_slots_for(libbpf_num_possible_cpus());
    ro->proc_slot_mask = impl->proc_slots - 1;
    if (int err = bpf_map__set_max_entries(impl->skel->maps.proc_time, impl->proc_slots / IOD_PROC_SLOTS_PER_GROUP);
        err) {
        st.reason = std::string("syscall.bpf.o: sizing proc_time: ") + std::strerror(-err);
        return st;
    }
    for (size_t i = 0; i < traced_syscall_numbers().size(); ++i) {
        const long nr = traced_syscall_numbers()[i];
        if (nr >= 0 && nr < IOD_MAX_NR) ro->sys_of_nr[nr] = static_cast<uint8_t>(i + 1);
    }
    for (unsigned sys = 0; sys < SYS_COUNT; ++sys) ro->group_of_sys[sys] = static_cast<uint8_t>(iod_group_of(sys));
    std::set<int> classes_resolved;

    // Programs whose tracepoint is missing are not loaded (and their layer not claimed).
    std::set<std::string> missing;
    bpf_program* prog;
    bpf_object__for_each_program(prog, impl->skel->obj) {
        if (!bpf_program__autoload(prog)) continue;
        auto [cat, tp] = tracepoint_of(bpf_program__section_name(prog));
        if (!cat.empty() && !probe.tracepoint_exists(cat, tp)) {
            bpf_program__set_autoload(prog, false);
            missing.insert(tp);
        }
    }
    t.mark("tracepoint checks");
    {
        LibbpfLog log;
        if (int err = syscall_bpf__load(impl->skel); err) {
            st.reason = std::string("syscall.bpf.o: load: ") + std::strerror(-err);
            if (auto detail = log.failure(); !detail.empty()) st.reason += " (" + detail + ")";
            kallsyms_reader.join();
            if (!btf_why.empty()) st.reason = btf_why;   // the cause, not its consequence
            return st;
        }
    }
    t.mark("load");
    spdlog::debug("syscall_bpf: verified instructions: {}", verified_instructions(impl->skel->obj));
    kallsyms_reader.join();
    t.mark("kallsyms and BTF (after load)");
    if (!btf_why.empty()) {
        st.reason = btf_why;
        return st;
    }
    impl->skel->data->bio_throttled_bit = throttled_bit;
    for (size_t i = 0; i < ranges.size(); ++i)
        impl->skel->bss->ranges[i] = {ranges[i].start, ranges[i].end, static_cast<unsigned>(ranges[i].tag),
                                      syscall_bpf::journal_kind_of_function(ranges[i].name)};
    const TextPageFilter pages = text_page_filter(ranges, IOD_RANGE_PAGE_WORDS);
    std::copy(pages.words.begin(), pages.words.end(), impl->skel->bss->range_pages);
    impl->skel->bss->range_base = pages.base;
    impl->skel->bss->range_page_shift = pages.shift;
    __atomic_store_n(&impl->skel->bss->nranges, static_cast<uint32_t>(ranges.size()), __ATOMIC_RELEASE);
    for (const auto& r : ranges) classes_resolved.insert(r.tag);
    if (ranges.empty())
        notes.push_back("off-CPU waits unclassified (counted as other): no classifier function found in " +
                        kallsyms_path);
    // The syscall programs: on each traced syscall's own enter and exit
    // events, or on raw_syscalls sys_enter/sys_exit filtering by syscall
    // number (see bpf/syscall.bpf.c).
    std::set<std::string> attached;
    if (per_syscall) {
        const int exit_fd = bpf_program__fd(impl->skel->progs.sys_exit_event);
        for (int sys = 0; sys < SYS_COUNT; ++sys)
            for (const auto& [side, fd] : {std::pair{"sys_enter_", bpf_program__fd(enter_program(impl->skel, sys))},
                                           std::pair{"sys_exit_", exit_fd}}) {
                PerfTracepointLink l;
                const std::string event = side + syscall_bpf::syscall_names()[sys];
                if (auto why = attach_perf_tracepoint(fd, "syscalls", event, l); !why.empty()) {
                    impl->release_attachments();
                    if (events_refused) *events_refused = why;
                    st.reason = why;
                    return st;
                }
                impl->event_links.push_back(l);
            }
        attached.insert({"sys_enter", "sys_exit"});
        notes.push_back("syscalls timed on their own tracepoints (" + impl->attach +
                        "): other syscalls run no iodiag program");
    } else {
        notes.push_back("syscalls timed on " + impl->attach + " (" + raw_because +
                        "): every syscall of the machine runs that filter");
    }
    bpf_object__for_each_program(prog, impl->skel->obj) {
        if (!bpf_program__autoload(prog)) continue;
        const auto events = event_programs(impl->skel);
        if (std::find(events.begin(), events.end(), prog) != events.end()) continue;   // attached above
        const auto tp = tracepoint_of(bpf_program__section_name(prog)).second;
        if (bio_queue_chain_ && tp == "block_bio_queue") {
            impl->bio_queue_deferred = true;   // the block collector's program may call it
            attached.insert(tp);
            continue;
        }
        bpf_link* l = bpf_program__attach(prog);
        if (!l) {
            missing.insert(tp + " (attach: " + std::strerror(errno) + ")");
            continue;
        }
        impl->links.push_back(l);
        attached.insert(tp);
    }
    impl->hand_over_attachments();   // off the start's and the finish's paths
    auto has = [&](const std::string& tp) { return attached.count(tp) > 0; };
    t.mark("attach");
    if (!has("sys_enter") || !has("sys_exit")) {
        st.reason = "syscall.bpf.o: sys_enter/sys_exit (raw_syscalls, tp_btf) did not attach";
        for (const auto& m : missing)
            if (m.rfind("sys_", 0) == 0)
                st.reason += "; " + (m.find(' ') == std::string::npos ? m + " (no such tracepoint)" : m);
        return st;
    }
    impl->rb = ring_buffer__new(bpf_map__fd(impl->skel->maps.exemplars), ringbuf_cb, impl.get(), nullptr);
    if (!impl->rb) {
        st.reason = std::string("ring buffer: ") + std::strerror(errno);
        return st;
    }
    impl->hz = find_kernel_hz(opts.root);
    if (machine_root) {
        // The syscalls already waiting, timed from now (waits_before_window.hpp).
        const auto waits = syscall_bpf::stamp_waits_before_window(
            bpf_map__fd(impl->skel->maps.task_state), static_cast<uint32_t>(getpid()), traced_syscall_numbers(),
            monotonic_now_ns(), opts.pid > 0 ? static_cast<uint32_t>(opts.pid) : 0);
        impl->waiting_at_start = waits.stamped;
        for (const auto& why : waits.why_not) spdlog::debug("syscall_bpf: a wait before the window not timed: {}", why);
        t.mark("waits before the window");
    }
    impl->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    Impl* raw = impl.get();
    impl->drainer = std::thread([raw] { raw->drain_until_stopped(); });

    // Layers truly observed: those whose probes attached.
    // A filesystem whose events are not in tracefs is not in the kernel (a
    // module loads on first mount): none of its files can be fsynced.
    auto fs_trace = [&](const char* cat, std::initializer_list<const char*> tps) {
        bool all = true, none = true;
        for (const char* tp : tps) {
            all = all && has(tp);
            none = none && !probe.tracepoint_exists(cat, tp);
        }
        return all ? syscall_bpf::FsTrace::Attached
                   : none ? syscall_bpf::FsTrace::NotInKernel : syscall_bpf::FsTrace::Failed;
    };
    impl->xfs = fs_trace("xfs", {"xfs_file_fsync", "xfs_log_force"});
    impl->btrfs = fs_trace("btrfs", {"btrfs_sync_file"});
    const bool sched = has("sched_switch") && has("sched_wakeup");
    st.layers = {layer::kSyscall, layer::kFilesystem};
    if (sched) st.layers.push_back(layer::kCpu);
    if (sched && classes_resolved.count(CLS_PAGE_CACHE)) st.layers.push_back(layer::kPageCache);
    if ((sched && classes_resolved.count(CLS_DIRTY)) || has("balance_dirty_pages")) st.layers.push_back(layer::kDirty);
    if (has("mm_vmscan_direct_reclaim_begin") || has("mm_vmscan_memcg_reclaim_begin"))
        st.layers.push_back(layer::kReclaim);
    if (sched && classes_resolved.count(CLS_JOURNAL)) st.layers.push_back(layer::kJournal);
    impl->journal_waits_split = sched && classes_resolved.count(CLS_JOURNAL);
    if (sched && classes_resolved.count(CLS_LOCKS)) st.layers.push_back(layer::kLocks);
    if (!sched) notes.push_back("sched_switch/sched_wakeup not attached: off-CPU waits and run-queue delay "
                                "are not separated (they count as filesystem time)");
    // blk-throttle holds bios before block_bio_queue; a syscall whose bios
    // never reached Q in its own context and whose cgroup's held bios were
    // released while it waited gets that part of its wait charged to cgroup.
    if (sched && has("block_bio_queue") && throttled_bit < 16) {
        st.layers.push_back(layer::kCgroup);
        notes.push_back("cgroup: blk-throttle hold time measured for submitters that wait for their own "
                        "I/O (direct/sync I/O); throttled buffered writeback shows as dirty throttling");
    } else {
        notes.push_back("cgroup layer not claimed: block_bio_queue not attached or BIO_BPS_THROTTLED not "
                        "in kernel BTF, so blk-throttle hold time is seen only as block-I/O wait");
    }
    for (const auto& m : missing) notes.push_back("not attached: " + m);
    if (impl->hz.hz == 0) notes.push_back("kernel HZ unknown: jiffies fields not converted");
    std::string reason;
    for (const auto& n : notes) reason += (reason.empty() ? "" : "; ") + n;
    st.reason = reason;
    st.available = true;
    impl_ = std::move(impl);
    ApplicationIndex::of_root(opts.root).expect_kernel_names();
    if (exited_ && has("sched_process_exit")) exited_->offer(bpf_map__fd(impl_->skel->maps.exits));
    if (chain_)
        chain_->offer(bpf_map__fd(impl_->skel->maps.io_uring_exit_chain),
                      per_syscall ? ChainKind::PerfTracepoint : ChainKind::TpBtf);
    return st;
#endif
}

void SyscallBpfCollector::all_started() {
#if IODIAG_HAVE_BPF
    if (!impl_ || !impl_->bio_queue_deferred) return;
    impl_->bio_queue_deferred = false;
    const ChainOutcome o = chain_or_attach(*bio_queue_chain_, impl_->skel->progs.on_bio_queue, impl_->links);
    // Rare (the program loaded and its tracepoint exists): the syscalls are
    // still timed, but a wait for block I/O whose bios blk-throttle held is
    // then charged to the device, not the cgroup.
    if (!o.error.empty())
        spdlog::warn("syscall_bpf: attaching block_bio_queue failed ({}): blk-throttle hold time not separated",
                     o.error);
#endif
}

void SyscallBpfCollector::sample(size_t /*interval*/) {
#if IODIAG_HAVE_BPF
    if (impl_) impl_->readings.push_back(read_aggregates(impl_->skel));
#endif
}

void SyscallBpfCollector::finish(Evidence& ev) {
#if IODIAG_HAVE_BPF
    if (!impl_) return;
    Impl& im = *impl_;
    StepTimer t("syscall_bpf finish");
    if (chain_) chain_->withdraw();   // the array goes with the skeleton
    if (bio_queue_chain_) bio_queue_chain_->release();   // its program stops being called
    // Stop the programs first so the maps stop moving, then drain what is
    // left. Their perf events and links are closed after iodiag's exit (each
    // event's close waits for RCU grace periods, each link's patches kernel
    // text) by the child they were handed to, let go when iodiag exits.
    if (const auto how = im.release_attachments(DeferredRelease::When::AtExit); !how.empty())
        spdlog::debug("syscall_bpf: programs stopped, perf events and links released: {}", how);
    t.mark("stop and release");
    im.stop_drainer();
    t.mark("drain join");

    syscall_bpf::Snapshot s;
    s.hz = im.hz.hz;
    s.hz_source = im.hz.source;
    s.xfs = im.xfs;
    s.btrfs = im.btrfs;
    s.journal_waits_split = im.journal_waits_split;
    s.user_threshold_us = im.slow_threshold_us;
    s.exemplar_min_us = opts_.exemplar_min_us;
    s.victim = victim_;
    s.attach = im.attach;
    // The window's figures: everything since attach. With series, they are
    // the last interval's reading (taken after detach, so the intervals add
    // up to the window exactly).
    syscall_bpf::Reading all = read_aggregates(im.skel);
    CgroupIdNames cg(im.root);
    std::map<uint32_t, syscall_bpf::ProcessTime> by_pid;   // per-process time, by tgid
    s.in_flight_at_end =
        add_in_flight_syscalls(im, static_cast<uint64_t>(opts_.exemplar_min_us * 1000), cg, all, by_pid);
    s.waiting_at_start = im.waiting_at_start;
    t.mark("in-flight syscalls");
    s.hist = all.hist;
    s.buckets = all.buckets;
    s.counters = all.counters;
    if (const auto skipped = skipped_runs(im.skel->obj)) {
        s.program_runs_skipped = skipped->total;
        if (skipped->total) spdlog::debug("syscall_bpf: runs skipped by the kernel: {}", skipped->by_program);
    }
    s.read_hit.assign(IOD_HIST_BUCKETS, 0);
    s.read_miss.assign(IOD_HIST_BUCKETS, 0);
    {
        const int ncpu = libbpf_num_possible_cpus();
        std::vector<iod_aggregates> per_cpu(static_cast<size_t>(std::max(ncpu, 1)));
        const uint32_t zero = 0;
        if (bpf_map_lookup_elem(bpf_map__fd(im.skel->maps.aggregates), &zero, per_cpu.data()) == 0)
            for (const auto& c : per_cpu)
                for (int b = 0; b < IOD_HIST_BUCKETS; ++b) {
                    s.read_hit[b] += c.read_hit[b];
                    s.read_miss[b] += c.read_miss[b];
                }
    }
    if (!im.readings.empty()) {
        im.readings.back() = all;
        s.readings = std::move(im.readings);
    }
    const int g_fd = bpf_map__fd(im.skel->maps.gauges);
    s.gauges.assign(GAUGE_COUNT, 0);
    for (uint32_t i = 0; i < GAUGE_COUNT; ++i) bpf_map_lookup_elem(g_fd, &i, &s.gauges[i]);

    t.mark("array maps");
    // Per-process time: the per-CPU slots and the overflow hash, summed by tgid.
    {
        const int ncpu = std::max(libbpf_num_possible_cpus(), 1);
        auto add = [&](const iod_proc_time& v) {
            if (!v.tgid) return;
            auto& p = by_pid[v.tgid];
            if (p.ns_by_bucket.empty()) p.ns_by_bucket.assign(IOD_HIST_BUCKETS, 0);
            p.ops += v.ops;
            for (int b = 0; b < IOD_HIST_BUCKETS; ++b) p.ns_by_bucket[b] += v.ns_by_bucket[b];
        };
        for_each_percpu_array_copy<iod_proc_time_group>(
            bpf_map__fd(im.skel->maps.proc_time), im.proc_slots / IOD_PROC_SLOTS_PER_GROUP, ncpu,
            [&](uint32_t, int, const iod_proc_time_group& g) {
                for (const auto& v : g.slot) add(v);
            });
        for_each_percpu_hash_entry<uint32_t, iod_proc_time>(
            bpf_map__fd(im.skel->maps.proc_time_overflow), ncpu,
            [&](uint32_t tgid, const std::vector<iod_proc_time>& copies) {
                for (auto v : copies) {
                    v.tgid = tgid;   // per-CPU copies never claimed on that CPU hold zeroes
                    add(v);
                }
            });
    }
    // Who each process was, as the kernel recorded it (procs: at its first
    // traced syscall, the command and command line again at each exec); the
    // command line from /proc where the kernel could not read it, if the pid
    // is still that command's.
    const int p_fd = bpf_map__fd(im.skel->maps.procs);
    std::map<uint32_t, const syscall_bpf::ProcessTime*> named;
    s.procs.reserve(by_pid.size());
    for (auto& [pid, p] : by_pid) {
        iod_proc_info info{};
        p.pid = pid;
        if (bpf_map_lookup_elem(p_fd, &pid, &info) == 0) {
            p.comm.assign(info.comm, strnlen(info.comm, sizeof(info.comm)));
            p.cgroup = cg.label(info.cgid, info.memcg, info.io_cg);
            const size_t len = std::min<size_t>(info.cmdline_len, sizeof(info.cmdline));
            p.cmdline = cmdline_of_argv(std::string_view(info.cmdline, len));
        } else if (im.root == "/") {
            // Only in flight (it completed no traced syscall): the kernel
            // recorded nothing of it yet, /proc says who it is.
            p.comm = try_read_first_line("/proc/" + std::to_string(pid) + "/comm").value_or("");
            const CgroupIdNames::Ids ids = cg.ids_of(static_cast<int>(pid));
            p.cgroup = cg.label(ids.v2, ids.memory, ids.blkio);
        }
        if (p.cmdline.empty() && !p.comm.empty() &&
            try_read_first_line(under_root(im.root, "/proc/" + std::to_string(pid) + "/comm")) == p.comm)
            p.cmdline = read_proc_cmdline(im.root, pid);
        // What the kernel recorded of it, for the other collectors should it
        // have exited (they may be waiting for it: given below, once all are).
        if (!p.comm.empty()) ApplicationIndex::of_root(im.root).remember(pid, p.comm, p.cmdline);
        if (!victim_.empty())
            p.cgroup_now = try_read_text_file(under_root(im.root, "/proc/" + std::to_string(pid) + "/cgroup")).value_or("");
        s.procs.push_back(std::move(p));
        named[pid] = &s.procs.back();
    }
    ApplicationIndex::of_root(im.root).kernel_names_given();
    // Then each one's application, as every collector names it.
    for (auto& p : s.procs) p.app = ApplicationIndex::of_root(im.root).application_of(p.pid, p.comm);
    t.mark("procs map");
    read_readahead_misses(im, named, s);
    t.mark("readahead map");
    read_sync_writes(im, named, s);
    t.mark("sync writes map");

    {
        std::lock_guard<std::mutex> g(im.mu);
        s.exemplars_received = im.received;
        s.file_ns_by_bucket = im.file_ns_by_bucket;
        s.proc_parts = im.proc_parts;
        std::vector<iod_exemplar> sorted = im.slowest;
        std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.total_ns > b.total_ns; });
        for (const auto& e : sorted) {
            syscall_bpf::SlowOp op;
            op.comm.assign(e.comm, strnlen(e.comm, sizeof(e.comm)));
            // The process's command line while it still ran this command (a
            // later exec gave the process another one).
            if (const auto n = named.find(e.tgid); n != named.end() && n->second->comm == op.comm)
                op.cmdline = n->second->cmdline;
            op.pid = e.tgid;
            op.tid = e.tid;
            op.app = ApplicationIndex::of_root(im.root).application_of(op.pid, op.comm);
            op.cgroup = cg.label(e.cgid, e.memcg, e.io_cg);
            op.file = Impl::file_of(e);
            op.sys = static_cast<int>(e.sys);
            op.ret = e.ret;
            op.offset = e.offset;
            op.total_ns = e.total_ns;
            op.flags = e.flags;
            op.class_ns.assign(e.ns, e.ns + CLS_COUNT);
            s.slowest.push_back(std::move(op));
        }
    }
    t.mark("exemplars");
    if (opts_.on_snapshot) opts_.on_snapshot(s);
    syscall_bpf::emit(s, ev);
    t.mark("emit");
    impl_.reset();
    t.mark("destroy");
#else
    (void)ev;
#endif
}

}  // namespace iodiag
