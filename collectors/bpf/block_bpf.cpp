#include "collectors/bpf/block_bpf.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "collectors/procfs/applications.hpp"
#include "collectors/bpf/bpf_array_read.hpp"
#include "collectors/bpf/bpf_program_stats.hpp"
#include "collectors/bpf/core_target_btf.hpp"
#include "collectors/bpf/deferred_release.hpp"
#include "collectors/lost_events.hpp"
#include "collectors/text_file.hpp"
#include "engine/evidence/layers.hpp"

#if IODIAG_HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "block.skel.h"
#include "bpf/block_events.h"
#endif

namespace iodiag {

namespace fs = std::filesystem;

const std::array<std::string, kBlockOps>& block_op_names() {
    static const std::array<std::string, kBlockOps> n{"read", "write", "flush", "discard", "other"};
    return n;
}
const std::array<std::string, kBlockStages>& block_stage_names() {
    static const std::array<std::string, kBlockStages> n{"q2g", "g2i", "i2d", "d2c", "q2c"};
    return n;
}

void BlockDeviceStats::merge(const BlockDeviceStats& o) {
    for (int op = 0; op < kBlockOps; ++op) {
        for (int s = 0; s < kBlockStages; ++s) {
            hist[op][s].merge(o.hist[op][s]);
            sum_ns[op][s] += o.sum_ns[op][s];
        }
        service[op].merge(o.service[op]);
        count[op] += o.count[op];
    }
    depth.merge(o.depth);
    for (int c = 0; c < kDepthClasses; ++c) {
        d2c_by_depth[c].merge(o.d2c_by_depth[c]);
        depth_sum[c] += o.depth_sum[c];
    }
    merges += o.merges;
    requeues += o.requeues;
    splits += o.splits;
    split_bytes += o.split_bytes;
}

uint64_t BlockDeviceStats::requests() const {
    uint64_t n = 0;
    for (auto c : count) n += c;
    return n;
}

BlockDeviceStats BlockDeviceStats::since(const BlockDeviceStats& earlier) const {
    BlockDeviceStats d;
    auto sub = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
    for (int op = 0; op < kBlockOps; ++op) {
        for (int s = 0; s < kBlockStages; ++s) {
            d.hist[op][s] = histogram_delta(hist[op][s], earlier.hist[op][s]);
            d.sum_ns[op][s] = sub(sum_ns[op][s], earlier.sum_ns[op][s]);
        }
        d.service[op] = histogram_delta(service[op], earlier.service[op]);
        d.count[op] = sub(count[op], earlier.count[op]);
    }
    d.depth = histogram_delta(depth, earlier.depth);
    for (int c = 0; c < kDepthClasses; ++c) {
        d.d2c_by_depth[c] = histogram_delta(d2c_by_depth[c], earlier.d2c_by_depth[c]);
        d.depth_sum[c] = sub(depth_sum[c], earlier.depth_sum[c]);
    }
    d.merges = sub(merges, earlier.merges);
    d.requeues = sub(requeues, earlier.requeues);
    d.splits = sub(splits, earlier.splits);
    d.split_bytes = sub(split_bytes, earlier.split_bytes);
    return d;
}

Log2Histogram BlockDeviceStats::stage_hist_all_ops(int stage) const {
    Log2Histogram h;
    for (int op = 0; op < kBlockOps; ++op) h.merge(hist[op][stage]);
    return h;
}

uint64_t BlockDeviceStats::stage_sum_all_ops(int stage) const {
    uint64_t n = 0;
    for (int op = 0; op < kBlockOps; ++op) n += sum_ns[op][stage];
    return n;
}

namespace {

// "/sys/class/block/loop0/dev" holds "7:0"; the kernel encodes it major<<20|minor.
std::optional<uint32_t> kernel_dev_of(const std::string& disk, std::string& why) {
    const std::string path = "/sys/class/block/" + disk + "/dev";
    auto text = try_read_text_file(path);
    if (!text) {
        why = "no block device " + disk + " (" + path + " unreadable)";
        return std::nullopt;
    }
    unsigned major = 0, minor = 0;
    if (std::sscanf(text->c_str(), "%u:%u", &major, &minor) != 2) {
        why = path + ": not MAJOR:MINOR";
        return std::nullopt;
    }
    return (major << 20) | minor;
}

}  // namespace

// ---------------------------------------------------------------- BlockTracer

#if IODIAG_HAVE_BPF

struct BlockTracer::Impl {
    block_bpf* skel = nullptr;
    std::vector<bpf_link*> links;
    ring_buffer* rb = nullptr;
    const std::function<void(const BlockIoExemplar&)>* sink = nullptr;
    std::mutex names_mu;   // device_name() is called from the poller and the readers
    std::map<uint32_t, std::string> names;
    std::map<std::string, BlockDeviceStats> drained;   // cumulative at the last drain()
    BlockTracer* owner = nullptr;
    int wake_fd = -1;   // eventfd, written by wake()
    int epoll_fd = -1;  // the ring buffer's epoll fd and wake_fd together
    uint32_t slots = 0; // disk slots the maps were sized to
    int ncpu = 0;
    // bio->bi_blkg exists (blk-cgroup: struct blkcg_gq in kernel BTF), so the
    // submitters' cgroups are the bios' blkcg (bpf/block.bpf.c request_blkg).
    bool blkcg = false;
    DeferredRelease holder;      // detach_at_exit(): a child holding copies of the links

    ~Impl() {
        if (epoll_fd >= 0) close(epoll_fd);
        if (wake_fd >= 0) close(wake_fd);
        if (rb) ring_buffer__free(rb);
        if (const auto how = release_links(links, holder, DeferredRelease::When::AtExit); !how.empty())
            spdlog::debug("block_bpf: links released: {}", how);
        if (skel) block_bpf__destroy(skel);
    }

    static int on_event(void* ctx, void* data, size_t size) {
        auto* self = static_cast<Impl*>(ctx);
        if (size < sizeof(iodiag_block_event) || !self->sink) return 0;
        const auto* e = static_cast<const iodiag_block_event*>(data);
        BlockIoExemplar x;
        x.comm.assign(e->comm, strnlen(e->comm, sizeof(e->comm)));
        x.pid = e->pid;
        x.cgroup_id = e->cgroup_id;
        x.device = self->owner->device_name(e->dev);
        x.op = block_op_names()[e->op < kBlockOps ? e->op : kBlockOps - 1];
        x.sector = e->sector;
        x.bytes = e->bytes;
        x.depth = e->depth;
        x.stage_ns = {e->g_ns - e->q_ns, e->i_ns - e->g_ns, e->d_ns - e->i_ns, e->c_ns - e->d_ns,
                      e->c_ns - e->q_ns};
        if (e->seen & IODIAG_SEEN_Q) x.observed += 'Q';
        if (e->seen & IODIAG_SEEN_G) x.observed += 'G';
        if (e->seen & IODIAG_SEEN_I) x.observed += 'I';
        if (e->seen & IODIAG_SEEN_D) x.observed += 'D';
        x.observed += 'C';
        x.complete_ns = e->c_ns;
        (*self->sink)(x);
        return 0;
    }
};

BlockTracer::BlockTracer() : impl_(std::make_unique<Impl>()) { impl_->owner = this; }
BlockTracer::~BlockTracer() = default;

namespace {

// Tracepoints every request passes (the collector is unavailable without them)
// and those it can do without (then that part is not observed, said in the note).
const std::vector<std::string> kRequiredTracepoints{
    "block_bio_queue", "block_getrq", "block_rq_insert", "block_rq_issue", "block_rq_complete",
    "block_bio_backmerge", "block_bio_frontmerge", "block_rq_merge", "block_rq_requeue"};

// Aggregates per disk slot on every CPU: the number of slots, a power of two
// from 4 to 64, is what fits in 16 MiB of per-CPU memory (more disks than
// slots go to an on-demand hash).
uint32_t disk_slots_for(int ncpu) { return per_cpu_slots(sizeof(iodiag_dev_stats), ncpu, 16u << 20, 64, 4); }

// The programs of one attach mode, with their tracepoints.
std::vector<TracepointProgram> programs_of(block_bpf* s, bool btf) {
    auto& p = s->progs;
    if (btf)
        return {{p.btf_bio_queue, "block_bio_queue"},       {p.btf_split, "block_split"},
                {p.btf_getrq, "block_getrq"},               {p.btf_rq_insert, "block_rq_insert"},
                {p.btf_rq_issue, "block_rq_issue"},         {p.btf_rq_complete, "block_rq_complete"},
                {p.btf_bio_backmerge, "block_bio_backmerge"}, {p.btf_bio_frontmerge, "block_bio_frontmerge"},
                {p.btf_rq_merge, "block_rq_merge"},         {p.btf_rq_requeue, "block_rq_requeue"}};
    return {{p.raw_bio_queue, "block_bio_queue"},       {p.raw_split, "block_split"},
            {p.raw_getrq, "block_getrq"},               {p.raw_rq_insert, "block_rq_insert"},
            {p.raw_rq_issue, "block_rq_issue"},         {p.raw_rq_complete, "block_rq_complete"},
            {p.raw_bio_backmerge, "block_bio_backmerge"}, {p.raw_bio_frontmerge, "block_bio_frontmerge"},
            {p.raw_rq_merge, "block_rq_merge"},         {p.raw_rq_requeue, "block_rq_requeue"}};
}

// Opens, loads and attaches block.bpf.o with one program variant per
// tracepoint; "" on success, else which step failed for which program and
// why (then nothing stays attached). `split` = block_split exists.
std::string load_block_bpf(BlockTracer::Impl& im, AttachMode mode, uint32_t dev, const BlockTracerOptions& o,
                           bool split) {
    const std::string what = "block.bpf.o (" + to_string(mode) + ")";
    LibbpfLog log;
    auto fail = [&](const std::string& step, int err) {
        std::string why = what + ": " + step + ": " + std::strerror(err < 0 ? -err : err);
        if (auto detail = log.failure(); !detail.empty()) why += " (" + detail + ")";
        for (auto* l : im.links) bpf_link__destroy(l);
        im.links.clear();
        block_bpf__destroy(im.skel);
        im.skel = nullptr;
        return why;
    };
    const CoreTargetFile core_target("block_bpf", block_bpf__elf_bytes);
    LIBBPF_OPTS(bpf_object_open_opts, open_opts, .btf_custom_path = core_target.path());
    im.skel = block_bpf__open_opts(&open_opts);
    if (!im.skel) return what + ": open: " + std::strerror(errno);
    auto* s = im.skel;
    s->rodata->filter_dev = dev;
    s->rodata->filter_pid = o.pid;
    s->rodata->disk_slot_mask = im.slots - 1;
    s->rodata->reference_accounting = o.reference_accounting;
    if (o.submitter_slots) s->rodata->submitter_slot_mask = o.submitter_slots - 1;
    if (o.inflight_slots) s->rodata->inflight_slot_mask = o.inflight_slots - 1;
    for (bpf_map* m : {s->maps.stats, s->maps.slot_dev, s->maps.issued})
        if (int err = bpf_map__set_max_entries(m, im.slots); err) return fail("sizing " + std::string(bpf_map__name(m)), err);
    if (!o.reference_accounting)
        for (bpf_map* m : {s->maps.ref_inflight, s->maps.ref_sums})
            if (int err = bpf_map__set_max_entries(m, 1); err) return fail("sizing " + std::string(bpf_map__name(m)), err);
    const bool btf = mode == AttachMode::TpBtf;
    for (const auto& p : programs_of(s, btf)) bpf_program__set_autoload(p.prog, split || std::string(p.tracepoint) != "block_split");
    for (const auto& p : programs_of(s, !btf)) bpf_program__set_autoload(p.prog, false);
    if (int err = block_bpf__load(s); err) return fail("load", err);
    spdlog::debug("block_bpf: verified instructions: {}", verified_instructions(s->obj));
    s->data->slow_threshold_ns = o.threshold_ns;
    for (const auto& p : programs_of(s, btf)) {
        if (!bpf_program__autoload(p.prog)) continue;
        if (!o.attach_completion && std::string(p.tracepoint) == "block_rq_complete") continue;
        bpf_link* l = bpf_program__attach(p.prog);
        if (!l) return fail(std::string("attach ") + bpf_program__name(p.prog) + " to " + p.tracepoint, errno);
        im.links.push_back(l);
    }
    return "";
}

}  // namespace

void BlockTracer::detach_at_exit() { hand_over_links(impl_->links, impl_->holder); }

std::string BlockTracer::start(const BlockTracerOptions& opts, FeatureProbe& probe, std::string& note) {
    if (const uint32_t n = opts.submitter_slots; n && ((n & (n - 1)) || n > IODIAG_SUBMITTER_SLOTS))
        return "submitter slots " + std::to_string(n) + ": not a power of two up to " +
               std::to_string(IODIAG_SUBMITTER_SLOTS);
    if (const uint32_t n = opts.inflight_slots; n && ((n & (n - 1)) || n < 2 || n > IODIAG_INFLIGHT_SLOTS))
        return "in-flight slots " + std::to_string(n) + ": not a power of two from 2 to " +
               std::to_string(IODIAG_INFLIGHT_SLOTS);
    for (const auto& tp : kRequiredTracepoints)
        if (!probe.tracepoint_exists("block", tp)) return probe.last_failure();
    const bool split = probe.tracepoint_exists("block", "block_split");
    // One real load+attach decides the program form (each probe detaches with
    // an RCU grace period, so probing all ten would cost a noticeable part of
    // a second); if the full object then fails in that form, raw_tp is tried.
    const auto t0 = std::chrono::steady_clock::now();
    auto ms_since = [](auto t) {
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
    };
    const AttachPlan plan = choose_attach_mode(probe, {"block_rq_issue"});
    spdlog::debug("block_bpf start: attach-mode probe took {:.1f} ms", ms_since(t0));
    if (plan.mode == AttachMode::None) return plan.reason;
    note = plan.reason;
    if (!split) note += std::string(note.empty() ? "" : "; ") + "no block_split tracepoint: split bios have no Q";

    uint32_t dev = 0;
    if (!opts.device.empty()) {
        std::string why;
        auto d = kernel_dev_of(opts.device, why);
        if (!d) return why;
        dev = *d;
    }
    impl_->ncpu = libbpf_num_possible_cpus();
    if (impl_->ncpu <= 0) return std::string("block.bpf.o: number of possible CPUs: ") + std::strerror(-impl_->ncpu);
    impl_->slots = disk_slots_for(impl_->ncpu);
    impl_->blkcg = kernel_struct_exists("blkcg_gq");
    AttachMode mode = plan.mode;
    std::string why = load_block_bpf(*impl_, mode, dev, opts, split);
    if (!why.empty() && mode == AttachMode::TpBtf) {
        mode = AttachMode::RawTp;
        const std::string retry = load_block_bpf(*impl_, mode, dev, opts, split);
        if (!retry.empty()) return why + "; " + retry;
        note += std::string(note.empty() ? "" : "; ") + why + "; using raw_tp with CO-RE reads";
    }
    spdlog::debug("block_bpf start: load+attach took {:.1f} ms", ms_since(t0));
    if (!impl_->skel) return why;
    impl_->rb = ring_buffer__new(bpf_map__fd(impl_->skel->maps.events), &Impl::on_event, impl_.get(), nullptr);
    if (!impl_->rb) return std::string("block.bpf.o: ring buffer: ") + std::strerror(errno);
    // Without the eventfd/epoll pair poll() falls back to ring_buffer__poll (wake() then waits it out).
    impl_->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    impl_->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = ring_buffer__epoll_fd(impl_->rb);
    const bool paired = impl_->wake_fd >= 0 && impl_->epoll_fd >= 0 &&
                        epoll_ctl(impl_->epoll_fd, EPOLL_CTL_ADD, ev.data.fd, &ev) == 0 &&
                        (ev.data.fd = impl_->wake_fd, epoll_ctl(impl_->epoll_fd, EPOLL_CTL_ADD, impl_->wake_fd, &ev) == 0);
    if (!paired && impl_->epoll_fd >= 0) {
        close(impl_->epoll_fd);
        impl_->epoll_fd = -1;
    }
    mode_ = mode;
    return "";
}

int BlockTracer::bio_queue_chain_fd() const {
    return impl_->skel && mode_ == AttachMode::TpBtf ? bpf_map__fd(impl_->skel->maps.bio_queue_chain) : -1;
}

void BlockTracer::set_threshold_ns(uint64_t ns) {
    if (impl_->skel) __atomic_store_n(&impl_->skel->data->slow_threshold_ns, ns, __ATOMIC_RELAXED);
}

void BlockTracer::poll(int timeout_ms, const std::function<void(const BlockIoExemplar&)>& sink) {
    if (!impl_->rb) return;
    impl_->sink = &sink;
    if (impl_->epoll_fd >= 0) {
        epoll_event got[2];
        if (timeout_ms != 0) epoll_wait(impl_->epoll_fd, got, 2, timeout_ms);
        ring_buffer__consume(impl_->rb);
    } else {
        ring_buffer__poll(impl_->rb, timeout_ms);
    }
    impl_->sink = nullptr;
}

void BlockTracer::wake() {
    if (impl_->wake_fd < 0) return;
    const uint64_t one = 1;
    (void)!write(impl_->wake_fd, &one, sizeof(one));
}

namespace {

// A depth class as a label: "1", "2-3", ..., "64+".
std::string depth_class_name(int c) {
    if (c == 0) return "1";
    if (c == kDepthClasses - 1) return std::to_string(1u << c) + "+";
    return std::to_string(1u << c) + "-" + std::to_string((2u << c) - 1);
}

// One CPU's D2C by depth class (reads and writes): what a class's D2C
// buckets do not hold of its count is bucket 0, as for the other histograms.
void add_d2c_by_depth(const iodiag_dev_stats& c, BlockDeviceStats& out) {
    for (int k = 0; k < kDepthClasses; ++k) {
        uint64_t above = 0;
        for (int b = 1; b < IODIAG_NR_BUCKETS; ++b)
            if (c.d2c_by_depth[k][b]) {
                out.d2c_by_depth[k].add_bucket(b, c.d2c_by_depth[k][b]);
                above += c.d2c_by_depth[k][b];
            }
        if (c.depth_count[k] > above) out.d2c_by_depth[k].add_bucket(0, c.depth_count[k] - above);
        out.depth_sum[k] += c.depth_sum[k];
    }
}

// Sums one disk's per-CPU aggregates into `out`. The kernel leaves bucket 0
// (0..1 us, depth 1) unwritten: it is what the count has beyond the others.
void add_per_cpu(const std::vector<iodiag_dev_stats>& per_cpu, BlockDeviceStats& out) {
    for (const auto& c : per_cpu) {
        uint64_t with_depth = 0;
        for (int op = 0; op < kBlockOps; ++op) {
            const auto& o = c.ops[op];
            for (int st = 0; st < kBlockStages; ++st) {
                uint64_t above = 0;
                for (int b = 1; b < IODIAG_NR_BUCKETS; ++b)
                    if (c.hist[op][st][b]) {
                        out.hist[op][st].add_bucket(b, c.hist[op][st][b]);
                        above += c.hist[op][st][b];
                    }
                if (o.count > above) out.hist[op][st].add_bucket(0, o.count - above);
                out.sum_ns[op][st] += o.sum_ns[st];
            }
            uint64_t served = 0;
            for (int b = 1; b < IODIAG_NR_BUCKETS; ++b)
                if (c.service_hist[op][b]) {
                    out.service[op].add_bucket(b, c.service_hist[op][b]);
                    served += c.service_hist[op][b];
                }
            if (o.count > served) out.service[op].add_bucket(0, o.count - served);
            out.count[op] += o.count;
            with_depth += o.with_depth;
        }
        uint64_t above = 0;
        for (int b = 1; b < IODIAG_NR_BUCKETS; ++b)
            if (c.depth_hist[b]) {
                out.depth.add_bucket(b, c.depth_hist[b]);
                above += c.depth_hist[b];
            }
        if (with_depth > above) out.depth.add_bucket(0, with_depth - above);
        add_d2c_by_depth(c, out);
        out.merges += c.merges;
        out.requeues += c.requeues;
        out.splits += c.splits;
        out.split_bytes += c.split_bytes;
    }
}

}  // namespace

std::vector<uint32_t> BlockTracer::slot_devices() const {
    std::vector<uint32_t> devs(impl_->slots);
    read_array_map(bpf_map__fd(impl_->skel->maps.slot_dev), impl_->slots, sizeof(uint32_t),
                   reinterpret_cast<unsigned char*>(devs.data()), impl_->slots, [](uint32_t, uint32_t) {});
    return devs;
}

std::map<std::string, BlockDeviceStats> BlockTracer::read() {
    std::map<std::string, BlockDeviceStats> out;
    if (!impl_->skel) return out;
    std::vector<iodiag_dev_stats> per_cpu(static_cast<size_t>(impl_->ncpu));
    const int stats_fd = bpf_map__fd(impl_->skel->maps.stats);
    // The owners in one batched read (every sample), then one lookup per used
    // slot: a few disks' aggregates, kilobytes per CPU each.
    const std::vector<uint32_t> devs = slot_devices();
    for (uint32_t slot = 0; slot < devs.size(); ++slot) {
        if (devs[slot] == 0) continue;
        if (bpf_map_lookup_elem(stats_fd, &slot, per_cpu.data()) != 0) continue;
        add_per_cpu(per_cpu, out[device_name(devs[slot])]);
    }
    for_each_percpu_hash_entry<uint32_t, iodiag_dev_stats>(
        bpf_map__fd(impl_->skel->maps.overflow_stats), impl_->ncpu,
        [&](uint32_t dev, const std::vector<iodiag_dev_stats>& copies) { add_per_cpu(copies, out[device_name(dev)]); });
    return out;
}

std::map<std::string, uint64_t> BlockTracer::in_flight() {
    std::map<std::string, uint64_t> out;
    if (!impl_->skel) return out;
    // A counter below zero (a completion of a request issued before the
    // attach is not counted down, so it cannot be one; read as a guard) is 0.
    // The count is the counter's low bits (the weights in flight are above them).
    auto add = [&](uint32_t dev, int64_t packed) {
        const int64_t n = packed & IODIAG_BUSY_COUNT_MASK;
        out[device_name(dev)] += packed > 0 ? uint64_t(n) : 0;
    };
    // Two batched reads (on the way to the verdict), not two lookups per slot.
    const uint32_t slots = impl_->slots;
    const std::vector<uint32_t> devs = slot_devices();
    std::vector<iodiag_disk_busy> counts(slots);
    read_array_map(bpf_map__fd(impl_->skel->maps.issued), slots, sizeof(iodiag_disk_busy),
                   reinterpret_cast<unsigned char*>(counts.data()), slots, [](uint32_t, uint32_t) {});
    for (uint32_t slot = 0; slot < slots; ++slot)
        if (devs[slot]) add(devs[slot], counts[slot].issued);
    for_each_hash_entry<uint32_t, iodiag_disk_busy>(bpf_map__fd(impl_->skel->maps.overflow_issued),
                                                    [&](uint32_t dev, const iodiag_disk_busy& b) { add(dev, b.issued); });
    return out;
}

std::map<std::string, BlockDeviceStats> BlockTracer::drain() {
    auto now = read();
    std::map<std::string, BlockDeviceStats> out;
    for (const auto& [dev, s] : now) {
        auto it = impl_->drained.find(dev);
        out[dev] = it == impl_->drained.end() ? s : s.since(it->second);
    }
    impl_->drained = std::move(now);
    return out;
}

std::map<std::string, BlockReferenceSums> BlockTracer::reference_sums() {
    std::map<std::string, BlockReferenceSums> out;
    if (!impl_->skel) return out;
    for_each_percpu_hash_entry<uint32_t, iodiag_ref_sums>(
        bpf_map__fd(impl_->skel->maps.ref_sums), impl_->ncpu,
        [&](uint32_t dev, const std::vector<iodiag_ref_sums>& copies) {
            auto& r = out[device_name(dev)];
            for (const auto& c : copies) {
                r.count += c.count;
                for (int st = 0; st < kBlockStages; ++st) r.sum_ns[st] += c.sum_ns[st];
            }
        });
    return out;
}

BlockLostCounts BlockTracer::lost() const {
    BlockLostCounts l;
    if (!impl_->skel) return l;
    auto at = [&](int i) { return __atomic_load_n(&impl_->skel->bss->lost[i], __ATOMIC_RELAXED); };
    l.exemplars_ringbuf_full = at(IODIAG_LOST_EXEMPLAR_RINGBUF_FULL);
    l.inflight_slot_busy = at(IODIAG_LOST_INFLIGHT_SLOT_BUSY);
    l.inflight_stale = at(IODIAG_LOST_INFLIGHT_STALE);
    l.disk_table_full = at(IODIAG_LOST_DISK_TABLE_FULL);
    l.submitter_table_full = at(IODIAG_LOST_SUBMITTER_TABLE_FULL);
    l.completion_unseen = at(IODIAG_LOST_COMPLETION_UNSEEN);
    if (const auto skipped = skipped_runs(impl_->skel->obj)) {
        l.program_runs_skipped = skipped->total;
        l.skipped_by_program = skipped->by_program;
    }
    return l;
}

std::vector<BlockSubmitterSums> BlockTracer::submitters() {
    std::vector<BlockSubmitterSums> out;
    if (!impl_->skel) return out;
    // Summed by key over the direct-mapped slots (each CPU's copy of a slot
    // may hold another key) and the hash of the keys that found theirs taken.
    // Keyed by the cgroup's blkcg address (or id): the id is in the sums,
    // written once per entry (per-CPU copies not yet used hold 0).
    std::map<std::tuple<uint32_t, uint32_t, uint64_t>, BlockSubmitterSums> sums;
    auto add = [&](const iodiag_submitter_key& k, const iodiag_submitter_sums& c, bool hashed) {
        auto& s = sums[{k.dev, k.tgid, k.cgroup}];
        if (c.cgroup_id) s.cgroup_id = c.cgroup_id;
        // Each CPU's entry read the comm when it was made: they differ only
        // when the process exec'd in between; the first one read stays.
        if (s.comm.empty() && c.comm[0]) {
            s.comm.assign(c.comm, strnlen(c.comm, sizeof(c.comm)));
            s.kthread = c.kthread != 0;
        }
        s.count += c.count;
        s.q2c_ns += c.q2c_ns;
        s.d2c_ns += c.d2c_ns;
        s.service_ns += c.service_ns;
        s.bytes += c.bytes;
        s.write_bytes += c.write_bytes;
        s.i2d_ns += c.i2d_ns;
        s.idle_class += c.idle_class;
        if (hashed) s.hashed_count += c.count;
    };
    for_each_percpu_array_copy<iodiag_submitter_slot>(
        bpf_map__fd(impl_->skel->maps.submitter_slots), IODIAG_SUBMITTER_SLOTS, impl_->ncpu,
        [&](uint32_t, int, const iodiag_submitter_slot& s) {
            if (s.key.dev) add(s.key, s.sums, false);
        });
    for_each_percpu_hash_entry<iodiag_submitter_key, iodiag_submitter_sums>(
        bpf_map__fd(impl_->skel->maps.submitter_sums), impl_->ncpu,
        [&](const iodiag_submitter_key& k, const std::vector<iodiag_submitter_sums>& copies) {
            for (const auto& c : copies) add(k, c, true);
        });
    for (auto& [k, s] : sums) {
        s.device = device_name(std::get<0>(k));
        s.tgid = std::get<1>(k);
        out.push_back(std::move(s));
    }
    return out;
}

bool BlockTracer::submitter_cgroup_is_blkcg() const { return impl_->blkcg; }

#else  // !IODIAG_HAVE_BPF

struct BlockTracer::Impl {
    std::mutex names_mu;
    std::map<uint32_t, std::string> names;
};
BlockTracer::BlockTracer() : impl_(std::make_unique<Impl>()) {}
BlockTracer::~BlockTracer() = default;
std::string BlockTracer::start(const BlockTracerOptions&, FeatureProbe&, std::string&) {
    return "iodiag was built without BPF (IODIAG_HAVE_BPF=0: no clang/bpftool or no kernel BTF "
           "at build time)";
}
int BlockTracer::bio_queue_chain_fd() const { return -1; }
void BlockTracer::detach_at_exit() {}
void BlockTracer::set_threshold_ns(uint64_t) {}
void BlockTracer::poll(int, const std::function<void(const BlockIoExemplar&)>&) {}
void BlockTracer::wake() {}
std::map<std::string, BlockDeviceStats> BlockTracer::read() { return {}; }
std::map<std::string, BlockDeviceStats> BlockTracer::drain() { return {}; }
std::map<std::string, BlockReferenceSums> BlockTracer::reference_sums() { return {}; }
BlockLostCounts BlockTracer::lost() const { return {}; }
std::vector<BlockSubmitterSums> BlockTracer::submitters() { return {}; }
bool BlockTracer::submitter_cgroup_is_blkcg() const { return false; }

#endif

std::string BlockTracer::device_name(uint32_t kernel_dev) {
    std::lock_guard lock(impl_->names_mu);
    auto it = impl_->names.find(kernel_dev);
    if (it != impl_->names.end()) return it->second;
    const std::string majmin = std::to_string(kernel_dev >> 20) + ":" + std::to_string(kernel_dev & 0xfffff);
    std::error_code ec;
    const fs::path target = fs::read_symlink("/sys/dev/block/" + majmin, ec);
    std::string name = ec ? majmin : target.filename().string();
    impl_->names[kernel_dev] = name;
    return name;
}

// ---------------------------------------------------------- BlockBpfCollector

namespace {

const char* kStageProvenance[kBlockStages] = {
    "tracepoint:block:block_bio_queue -> block_getrq",
    "tracepoint:block:block_getrq -> block_rq_insert (no insert: issue time)",
    "tracepoint:block:block_rq_insert -> block_rq_issue",
    "tracepoint:block:block_rq_issue -> block_rq_complete",
    "tracepoint:block:block_bio_queue -> block_rq_complete",
};
constexpr uint64_t kIntervalMs = 1000;

}  // namespace

BlockBpfCollector::BlockBpfCollector(std::optional<uint64_t> threshold_ns, FeatureProbe* probe)
    : fixed_threshold_ns_(threshold_ns), probe_(probe) {
    if (!probe_) {
        own_probe_ = std::make_unique<KernelFeatureProbe>();
        probe_ = own_probe_.get();
    }
}

BlockBpfCollector::~BlockBpfCollector() {
    if (bio_queue_chain_ && tracer_) bio_queue_chain_->withdraw();   // its array closes with tracer_
    stop_ = true;
    if (tracer_) tracer_->wake();
    if (thread_.joinable()) thread_.join();
}

std::vector<MetricSpec> BlockBpfCollector::metric_specs() const {
    using K = MetricSpec::Kind;
    std::vector<MetricSpec> v;
    const std::string dev = layer::kDevice, q = layer::kBlockQueue;
    const char* stage_desc[kBlockStages] = {
        "Q2G: bio queued until it got a request (tag wait)",
        "G2I: request allocated until inserted into the scheduler (plugging); 0 without insert",
        "I2D: inserted until issued to the driver (scheduler queueing)",
        "D2C: issued to the driver until completed (device service time)",
        "Q2C: bio queued until the request completed (whole block layer + device)"};
    for (int s = 0; s < kBlockStages; ++s) {
        const std::string st = block_stage_names()[s];
        const std::string layer = st == "d2c" ? dev : (st == "q2c" ? dev : q);
        v.push_back({"block." + st + "_us", K::Histogram, "us", layer, "device",
                     std::string(stage_desc[s]) + " per request, log2 histogram; labels {device} and {device, op}"});
        v.push_back({"block." + st + "_total_us", K::Metric, "us", layer, "device",
                     std::string("Sum of ") + stage_desc[s] + " over completed requests"});
    }
    v.push_back({"block.depth_at_issue", K::Histogram, "requests", q, "device",
                 "Requests in flight on the disk when a request is issued (this one included)"});
    v.push_back({"block.d2c_by_depth_us", K::Histogram, "us", dev, "device",
                 "D2C per read or write request by the depth at issue (this request included), log2 histogram; "
                 "labels {device, depth: 1 | 2-3 | 4-7 | ... | 64+}"});
    v.push_back({"block.depth_class_mean", K::Metric, "requests", dev, "device",
                 "Mean depth at issue of the requests in a depth class; labels {device, depth}"});
    v.push_back({"block.service_us", K::Histogram, "us", dev, "device",
                 "The busy time given to each request (each stretch between completions shared by the requests in "
                 "flight, by the pages each moves), log2 histogram; labels {device, op}"});
    v.push_back({"block.requests", K::Metric, "count", dev, "device", "Requests completed in the window"});
    v.push_back({"block.in_flight_at_end", K::Metric, "count", dev, "device",
                 "Requests issued to the driver whose completion had not been seen when the window ended: in "
                 "flight then, or completed without the kernel running block_rq_complete"});
    v.push_back({"block.submitter_q2c_total_us", K::Metric, "us", dev, "device",
                 "Sum of Q2C over the requests a command's processes submitted to the device; labels {device, comm}"});
    v.push_back({"block.submitter_d2c_total_us", K::Metric, "us", dev, "device",
                 "Sum of D2C over the requests a command's processes submitted to the device; labels {device, comm}"});
    v.push_back({"block.submitter_requests", K::Metric, "count", dev, "device",
                 "Requests a command's processes submitted to the device, completed; labels {device, comm}"});
    const std::string group = "; labels {device, comm, cgroup, kind}: the submitters grouped by command and by "
                              "the cgroup the requests were charged to, kind process | writeback (the flusher) | "
                              "kernel | unknown | rest (beyond the largest groups)";
    v.push_back({"block.submitter.requests", K::Metric, "count", dev, "device", "Requests a submitter group completed" + group});
    v.push_back({"block.submitter.bytes", K::Metric, "bytes", dev, "device", "Bytes of those requests" + group});
    v.push_back({"block.submitter.write_bytes", K::Metric, "bytes", dev, "device", "Bytes of its write requests" + group});
    v.push_back({"block.submitter.d2c_total_us", K::Metric, "us", dev, "device",
                 "Sum of D2C of its requests: its part of the device's service time" + group});
    v.push_back({"block.submitter.q2c_total_us", K::Metric, "us", dev, "device",
                 "Sum of Q2C of its requests: its part of the queue occupancy (/ window = mean in flight)" + group});
    v.push_back({"block.submitter.service_total_us", K::Metric, "us", dev, "device",
                 "The device's busy time given to its requests (each from the later of its issue and the device's "
                 "previous completion to its own): its part of the device's busy time, its wait behind others' "
                 "requests inside the device left out" + group});
    v.push_back({"block.submitter.scheduler_wait_us", K::Metric, "us", q, "device",
                 "Sum of I2D of its requests: their wait in the I/O scheduler" + group});
    v.push_back({"block.submitter.idle_class_requests", K::Metric, "count", q, "device",
                 "Of its requests, those of the idle I/O priority class (ionice -c3; rq->ioprio)" + group});
    v.push_back({"block.submitter.processes", K::Metric, "count", dev, "device", "Thread groups in the group" + group});
    v.push_back({"block.submitter.top_pid", K::Fact, "", dev, "device", "The group's thread group with the most D2C" + group});
    for (const char* s : {"q2g", "g2i", "i2d", "d2c"})
        v.push_back({std::string("block.") + s + "_share_pct", K::Metric, "pct",
                     std::string(s) == "d2c" ? dev : q, "device",
                     std::string("Share of ") + s + " in the summed Q2C time"});
    v.push_back({"block.queue_share_pct", K::Metric, "pct", q, "device",
                 "Share of block-layer queueing (Q2G+G2I+I2D) in the summed Q2C time"});
    v.push_back({"block.merges", K::Metric, "count", q, "device", "Bios merged into requests, and requests merged"});
    v.push_back({"block.requeues", K::Metric, "count", q, "device", "Requests requeued by the driver"});
    v.push_back({"block.splits", K::Metric, "count", q, "device",
                 "Bios split to the queue's limits (max_sectors_kb, segments, boundaries): each split made one more "
                 "request"});
    v.push_back({"block.split_kb_mean", K::Metric, "KiB", q, "device",
                 "Mean size of the split-off front parts: the queue's max_sectors_kb when that limit split them"});
    v.push_back({"block.flushes", K::Metric, "count", dev, "device", "Flush requests completed"});
    v.push_back({"block.flush_d2c_share_pct", K::Metric, "pct", dev, "device",
                 "Share of the device's D2C time spent on flush requests"});
    v.push_back({"block.d2c_p99_us", K::Metric, "us", dev, "device", "p99 of D2C (from the log2 histogram)"});
    v.push_back({"block.q2c_p99_us", K::Metric, "us", dev, "device", "p99 of Q2C (from the log2 histogram)"});
    for (const auto& spec : lost_events_specs(dev)) v.push_back(spec);
    return v;
}

CollectorStatus BlockBpfCollector::start(const CollectOptions& opts) {
    CollectorStatus st{name(), false, "", {layer::kDevice, layer::kBlockQueue}};
    if (opts.root != "/") {
        st.reason = "BPF tracing observes the live kernel only (root is " + opts.root + ")";
        return st;
    }
    BlockTracerOptions to;
    if (opts.devices.size() == 1) to.device = opts.devices[0];
    devices_ = opts.devices;
    to.pid = opts.pid > 0 ? uint32_t(opts.pid) : 0;
    window_threshold_ns_ = opts.slow_threshold_us > 0
                               ? std::optional<uint64_t>(uint64_t(opts.slow_threshold_us * 1000.0))
                               : fixed_threshold_ns_;
    to.threshold_ns = window_threshold_ns_.value_or(UINT64_MAX);
    tracer_ = std::make_unique<BlockTracer>();
    std::string note;
    if (auto why = tracer_->start(to, *probe_, note); !why.empty()) {
        st.reason = why;
        tracer_.reset();
        return st;
    }
    st.available = true;
    st.reason = note;
    if (bio_queue_chain_ && tracer_->bio_queue_chain_fd() >= 0) bio_queue_chain_->offer(tracer_->bio_queue_chain_fd());
    provenance_suffix_ = " (" + to_string(tracer_->mode()) + ")";
    stop_ = false;
    thread_ = std::thread([this] { loop(); });
    return st;
}

void BlockBpfCollector::all_started() {
    if (tracer_) tracer_->detach_at_exit();
}

std::map<std::string, BlockDeviceStats> BlockBpfCollector::read_wanted(bool update_threshold) {
    auto got = tracer_->read();
    if (devices_.size() > 1)
        for (auto it = got.begin(); it != got.end();)
            it = std::find(devices_.begin(), devices_.end(), it->first) == devices_.end() ? got.erase(it) : std::next(it);
    std::lock_guard lock(mu_);
    // Default threshold: the p99 of Q2C over what completed since the last
    // read (about one second), applied from now on.
    Log2Histogram q2c;
    for (const auto& [dev, s] : got) {
        if (!update_threshold) break;
        auto it = last_read_.find(dev);
        q2c.merge((it == last_read_.end() ? s : s.since(it->second)).stage_hist_all_ops(4));
    }
    if (!update_threshold) return got;
    last_read_ = got;
    if (!window_threshold_ns_ && !q2c.empty())
        tracer_->set_threshold_ns(uint64_t(q2c.percentile(99).value * 1000.0));
    return got;
}

void BlockBpfCollector::loop() {
    auto next_read = std::chrono::steady_clock::now() + std::chrono::milliseconds(kIntervalMs);
    const std::function<void(const BlockIoExemplar&)> sink = [this](const BlockIoExemplar& x) {
        if (devices_.size() > 1 && std::find(devices_.begin(), devices_.end(), x.device) == devices_.end())
            return;
        std::lock_guard lock(mu_);
        exemplars_.push_back(x);
        // Keep the slowest only: memory stays bounded whatever the rate.
        if (exemplars_.size() > 2 * kMaxExemplars) {
            std::nth_element(exemplars_.begin(), exemplars_.begin() + kMaxExemplars, exemplars_.end(),
                             [](const auto& a, const auto& b) { return a.stage_ns[4] > b.stage_ns[4]; });
            exemplars_.resize(kMaxExemplars);
        }
    };
    while (!stop_) {
        tracer_->poll(100, sink);
        if (std::chrono::steady_clock::now() >= next_read) {
            read_wanted(true);
            next_read += std::chrono::milliseconds(kIntervalMs);
        }
    }
}

// The series are differences of cumulative readings: the kernel never resets
// its aggregates, so nothing completed between two samples is lost.
void BlockBpfCollector::sample(size_t /*interval*/) {
    if (!tracer_) return;
    auto got = read_wanted(false);
    std::map<std::pair<std::string, Labels>, Log2Histogram> h;
    for (const auto& [dev, s] : got) {
        h[{"block.d2c_us", {{"device", dev}}}] = s.stage_hist_all_ops(3);
        h[{"block.q2c_us", {{"device", dev}}}] = s.stage_hist_all_ops(4);
    }
    std::lock_guard lock(mu_);
    for (const auto& [dev, s] : got) {
        series_.describe("block.d2c_us", {{"device", dev}},
                         {"us", {"tracepoint", std::string(kStageProvenance[3]) + provenance_suffix_ +
                                                   ", per interval (difference of cumulative in-kernel histograms)"}});
        series_.describe("block.q2c_us", {{"device", dev}},
                         {"us", {"tracepoint", std::string(kStageProvenance[4]) + provenance_suffix_ +
                                                   ", per interval (difference of cumulative in-kernel histograms)"}});
    }
    series_.record(std::move(h), {});
    last_sample_ = std::move(got);
    sampled_ = true;
    learn_submitter_names();
}

// Per device, the applications whose processes submitted its requests (their
// processes summed, as the syscall collector names an application: label app,
// collectors/procfs/applications.hpp; a kernel thread by its command), with
// their own requests' Q2C and D2C sums: what an application waited for on each
// device, apart from other programs' I/O there. The largest few per device.
void BlockBpfCollector::emit_submitters(Evidence& ev,
                                        const std::function<Provenance(const std::string&)>& prov) {
    learn_submitter_names();
    const std::vector<BlockSubmitterSums> sums = tracer_->submitters();
    emit_submitter_groups(ev, sums, prov);
    // device -> (application, command) -> sums
    std::map<std::string, std::map<std::pair<std::string, std::string>, BlockSubmitterSums>> by_dev;
    for (const auto& s : sums) {
        if (!devices_.empty() && std::find(devices_.begin(), devices_.end(), s.device) == devices_.end()) continue;
        const std::string comm = submitter_command(s);
        auto& a = by_dev[s.device][{submitter_application(s), comm}];
        a.count += s.count;
        a.q2c_ns += s.q2c_ns;
        a.d2c_ns += s.d2c_ns;
    }
    const Provenance p = prov("tracepoint:block:block_bio_queue -> block_rq_complete, summed per submitter (the "
                              "thread group that queued the bio) and here per application: its command as the "
                              "kernel recorded it with the sums (a kernel thread's from /proc/PID/comm), its "
                              "application from /proc/PID/{stat,cmdline} while it ran");
    for (auto& [dev, apps] : by_dev) {
        std::vector<std::pair<std::pair<std::string, std::string>, BlockSubmitterSums>> v(apps.begin(), apps.end());
        std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.q2c_ns > b.second.q2c_ns; });
        if (v.size() > kMaxSubmittersPerDevice) v.resize(kMaxSubmittersPerDevice);
        for (const auto& [who, a] : v) {
            const Labels l{{"device", dev}, {"app", who.first}, {"comm", who.second}};
            ev.add_metric("block.submitter_q2c_total_us", l, a.q2c_ns / 1000.0, "us", p);
            ev.add_metric("block.submitter_d2c_total_us", l, a.d2c_ns / 1000.0, "us", p);
            ev.add_metric("block.submitter_requests", l, double(a.count), "count", p);
        }
    }
}

void BlockBpfCollector::finish(Evidence& ev) {
    if (!tracer_) return;
    if (bio_queue_chain_) bio_queue_chain_->withdraw();   // the array goes with tracer_
    stop_ = true;
    tracer_->wake();
    if (thread_.joinable()) thread_.join();
    const std::function<void(const BlockIoExemplar&)> sink = [this](const BlockIoExemplar& x) {
        std::lock_guard lock(mu_);
        exemplars_.push_back(x);
    };
    tracer_->poll(0, sink);
    // With series, the window's figures are the last sample's (taken right
    // before finish), so the intervals add up to them exactly.
    std::map<std::string, BlockDeviceStats> totals = sampled_ ? last_sample_ : read_wanted(false);
    std::lock_guard lock(mu_);

    auto prov = [&](const std::string& src) { return Provenance{"tracepoint", src + provenance_suffix_}; };
    const auto& stages = block_stage_names();
    const auto& ops = block_op_names();
    for (const auto& [dev, s] : totals) {
        const Labels dl{{"device", dev}};
        const uint64_t requests = s.requests();
        for (int st = 0; st < kBlockStages; ++st) {
            ev.histograms.push_back({"block." + stages[st] + "_us", dl, "us", s.stage_hist_all_ops(st),
                                     prov(kStageProvenance[st])});
            for (int op = 0; op < kBlockOps; ++op) {
                if (!s.count[op]) continue;
                ev.histograms.push_back({"block." + stages[st] + "_us", {{"device", dev}, {"op", ops[op]}},
                                         "us", s.hist[op][st], prov(kStageProvenance[st])});
            }
            ev.add_metric("block." + stages[st] + "_total_us", dl, s.stage_sum_all_ops(st) / 1000.0, "us",
                          prov(kStageProvenance[st]));
            for (int op = 0; op < kBlockOps; ++op)
                if (s.count[op])
                    ev.add_metric("block." + stages[st] + "_total_us", {{"device", dev}, {"op", ops[op]}},
                                  s.sum_ns[op][st] / 1000.0, "us", prov(kStageProvenance[st]));
        }
        for (int op = 0; op < kBlockOps; ++op)
            if (s.count[op])
                ev.histograms.push_back({"block.service_us", {{"device", dev}, {"op", ops[op]}}, "us", s.service[op],
                                         prov("tracepoint:block:block_rq_issue - block_rq_complete (the busy time "
                                              "given to each request: each stretch between completions shared by "
                                              "the requests in flight, by the pages each moves)")});
        ev.histograms.push_back({"block.depth_at_issue", dl, "requests", s.depth,
                                 prov("tracepoint:block:block_rq_issue - block_rq_complete (in flight at issue)")});
        for (int c = 0; c < kDepthClasses; ++c) {
            const uint64_t n = s.d2c_by_depth[c].total();
            if (!n) continue;
            const Labels cl{{"device", dev}, {"depth", depth_class_name(c)}};
            const std::string src = "tracepoint:block:block_rq_issue -> block_rq_complete (D2C of reads and writes "
                                    "by the requests in flight at issue, this one included)";
            ev.histograms.push_back({"block.d2c_by_depth_us", cl, "us", s.d2c_by_depth[c], prov(src)});
            ev.add_metric("block.depth_class_mean", cl, double(s.depth_sum[c]) / double(n), "requests", prov(src));
        }
        const std::string complete = "tracepoint:block:block_rq_complete";
        ev.add_metric("block.requests", dl, double(requests), "count", prov(complete));
        for (int op = 0; op < kBlockOps; ++op)
            if (s.count[op])
                ev.add_metric("block.requests", {{"device", dev}, {"op", ops[op]}}, double(s.count[op]),
                              "count", prov(complete));
        ev.add_metric("block.flushes", dl, double(s.count[2]), "count", prov(complete + " (op flush)"));
        ev.add_metric("block.merges", dl, double(s.merges), "count",
                      prov("tracepoint:block:block_bio_backmerge + block_bio_frontmerge + block_rq_merge"));
        ev.add_metric("block.requeues", dl, double(s.requeues), "count",
                      prov("tracepoint:block:block_rq_requeue"));
        ev.add_metric("block.splits", dl, double(s.splits), "count", prov("tracepoint:block:block_split"));
        if (s.splits)
            ev.add_metric("block.split_kb_mean", dl, double(s.split_bytes) / 1024.0 / double(s.splits), "KiB",
                          prov("tracepoint:block:block_split, the split-off bio's bi_iter.bi_size"));
        const uint64_t q2c = s.stage_sum_all_ops(4);
        if (q2c > 0) {
            const char* share[4] = {"q2g", "g2i", "i2d", "d2c"};
            double queue = 0;
            for (int st = 0; st < 4; ++st) {
                const double pct = 100.0 * double(s.stage_sum_all_ops(st)) / double(q2c);
                if (st < 3) queue += pct;
                ev.add_metric(std::string("block.") + share[st] + "_share_pct", dl, pct, "pct",
                              {"derived", "derived: block." + std::string(share[st]) +
                                              "_total_us / block.q2c_total_us (" + kStageProvenance[st] + ")"});
            }
            ev.add_metric("block.queue_share_pct", dl, queue, "pct",
                          {"derived", "derived: (block.q2g_total_us + g2i + i2d) / block.q2c_total_us"});
        }
        if (const uint64_t d2c = s.stage_sum_all_ops(3); d2c > 0)
            ev.add_metric("block.flush_d2c_share_pct", dl, 100.0 * double(s.sum_ns[2][3]) / double(d2c), "pct",
                          {"derived", "derived: D2C time of flush requests / all D2C time (" +
                                          std::string(kStageProvenance[3]) + ")"});
        if (requests > 0) {
            ev.add_metric("block.d2c_p99_us", dl, s.stage_hist_all_ops(3).percentile(99).value, "us",
                          {"derived", "derived: p99 of block.d2c_us (log2 histogram, " +
                                          std::string(kStageProvenance[3]) + ")"});
            ev.add_metric("block.q2c_p99_us", dl, s.stage_hist_all_ops(4).percentile(99).value, "us",
                          {"derived", "derived: p99 of block.q2c_us (log2 histogram, " +
                                          std::string(kStageProvenance[4]) + ")"});
        }
    }
    // Disks traced without a single completed request: say so (0), so rules
    // decide "idle" instead of "not observed".
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/sys/block", ec)) {
        const std::string dev = entry.path().filename().string();
        if (totals.count(dev)) continue;
        if (!devices_.empty() && std::find(devices_.begin(), devices_.end(), dev) == devices_.end()) continue;
        ev.add_metric("block.requests", {{"device", dev}}, 0, "count",
                      prov("tracepoint:block:block_rq_complete (none in the window)"));
    }
    // After the window's figures: a request issued and not seen completing is
    // in none of them. Left out of them and counted here, so that a test
    // after its workload ended, or an operator looking at a stuck device,
    // can tell (a completion the kernel never reported stays counted until
    // its bio is queued again: collector.lost_events completion_unseen).
    for (const auto& [dev, n] : tracer_->in_flight()) {
        if (!devices_.empty() && std::find(devices_.begin(), devices_.end(), dev) == devices_.end()) continue;
        ev.add_metric("block.in_flight_at_end", {{"device", dev}}, double(n), "count",
                      prov("bpf/block.bpf.c issued[] (+1 at block_rq_issue, -1 at block_rq_complete and "
                           "block_rq_requeue), read at the window's end"));
    }
    emit_submitters(ev, prov);
    const BlockLostCounts lost = tracer_->lost();
    const std::string src = "bpf/block.bpf.c lost[] counters";
    std::vector<LostEventCount> counts{
        {"exemplars_ringbuf_full", lost.exemplars_ringbuf_full,
         "block stage histograms, sums and shares are complete (in-kernel); only those slow-I/O "
         "exemplars are missing", src + " (ring buffer reservation failed at block_rq_complete)"},
        {"inflight_slot_busy", lost.inflight_slot_busy,
         "those requests are missing from the stage histograms and sums; all others are complete",
         src + " (both in-flight slots of the request held by live requests)"},
        {"inflight_stale", lost.inflight_stale,
         "requests whose completion was never seen (error paths) were dropped after 60 s; no completed "
         "request is missing", src + " (in-flight entry idle over 60 s reclaimed)"},
        {"disk_table_full", lost.disk_table_full,
         "completions of disks beyond the aggregate table are missing; the other disks are complete",
         src + " (no aggregate slot for the disk)"},
        {"submitter_table_full", lost.submitter_table_full,
         "the per-device stage figures are complete; only block.submitter_* lacks those requests",
         src + " (per-submitter table full)"},
        {"completion_unseen", lost.completion_unseen,
         "those issued requests are missing from every figure: the kernel completed them without running the "
         "completion program; the disk's depth at issue was corrected when each was found",
         src + " (the bio of an issued request queued again: its completion was never seen)"}};
    if (lost.program_runs_skipped)
        counts.push_back({"program_runs_skipped", *lost.program_runs_skipped,
                          "a skipped completion leaves its request out of every figure and the disk's depth at "
                          "issue one too high for the rest of the window; a skipped queue or issue leaves stages "
                          "of its request unseen; every request whose hooks all ran is complete",
                          kSkippedRunsSource});
    add_lost_events(ev, name(), counts);
    series_.emit(ev.series);

    std::sort(exemplars_.begin(), exemplars_.end(),
              [](const auto& a, const auto& b) { return a.stage_ns[4] > b.stage_ns[4]; });
    if (exemplars_.size() > kMaxExemplars) exemplars_.resize(kMaxExemplars);
    for (const auto& x : exemplars_) {
        Exemplar e;
        e.kind = "block_io";
        e.unit = "us";
        e.labels = {{"comm", x.comm}, {"app", ApplicationIndex::host().application_of(x.pid, x.comm)},
                    {"pid", std::to_string(x.pid)},
                    {"cgroup_id", std::to_string(x.cgroup_id)}, {"device", x.device}, {"op", x.op}};
        e.values["sector"] = double(x.sector);
        e.values["bytes"] = double(x.bytes);
        for (int st = 0; st < kBlockStages; ++st) e.values[stages[st] + "_us"] = x.stage_ns[st] / 1000.0;
        e.provenance = prov("tracepoint:block:block_bio_queue/getrq/rq_insert/rq_issue/rq_complete, stages seen " +
                            x.observed);
        ev.exemplars.push_back(std::move(e));
    }
    tracer_.reset();
}

}  // namespace iodiag
