#include "collectors/bpf/iouring_bpf.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>

#include "collectors/bpf/bpf_array_read.hpp"
#include "collectors/bpf/bpf_program_stats.hpp"
#include "collectors/bpf/core_target_btf.hpp"
#include "collectors/bpf/deferred_release.hpp"
#include "collectors/bpf/perf_tracepoint.hpp"
#include "collectors/lost_events.hpp"
#include "engine/evidence/histogram.hpp"
#include "engine/evidence/layers.hpp"

#if IODIAG_HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <spdlog/spdlog.h>

#include <linux/types.h>

#include <sys/syscall.h>

#include "bpf/iouring_events.h"
#include "iouring.skel.h"
#endif

namespace iodiag {

namespace {

const std::vector<std::string> kTracepoints{"io_uring_submit_req", "io_uring_complete",
                                            "io_uring_queue_async_work", "io_uring_cqring_wait"};

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string hex(uint64_t v) {
    char b[32];
    std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
    return b;
}

Log2Histogram hist_of(const std::vector<uint64_t>& buckets) {
    Log2Histogram h;
    for (size_t i = 0; i < buckets.size(); ++i)
        if (buckets[i]) h.add_bucket(static_cast<int>(i), buckets[i]);
    return h;
}

struct Totals {
    uint64_t sub[3] = {0, 0, 0}, punt[3] = {0, 0, 0};
    uint64_t completed = 0, lat_sum_ns = 0, iowq_ns = 0, cqwaits = 0, cqwait_sum_ns = 0;
    Log2Histogram lat, cqwait;
    std::string comm;
    void add(const IouringRingStats& r) {
        for (int i = 0; i < 3; ++i) {
            sub[i] += r.submitted[i];
            punt[i] += r.punted[i];
        }
        completed += r.completed;
        lat_sum_ns += r.lat_sum_ns;
        iowq_ns += r.iowq_ns;
        cqwaits += r.cqwait_count;
        cqwait_sum_ns += r.cqwait_sum_ns;
        lat.merge(hist_of(r.lat_hist));
        cqwait.merge(hist_of(r.cqwait_hist));
        if (comm.empty()) comm = r.comm;
    }
    uint64_t rw_sub() const { return sub[0] + sub[1]; }
    uint64_t rw_punt() const { return punt[0] + punt[1]; }
};

}  // namespace

std::vector<MetricSpec> iouring_metric_specs() {
    using K = MetricSpec::Kind;
    const std::string S = layer::kSyscall;
    std::vector<MetricSpec> specs = {
        {"iouring.submitted", K::Metric, "count", S, "", "io_uring requests submitted in the window"},
        {"iouring.rw_submitted", K::Metric, "count", S, "", "read/write requests submitted (READ, WRITE, *V, *_FIXED)"},
        {"iouring.punted", K::Metric, "count", S, "", "requests handed to io-wq worker threads"},
        {"iouring.iowq_time_pct", K::Metric, "pct", S, "",
         "share of the requests' submit-to-completion time spent after their hand-off to io-wq workers"},
        {"iouring.punted_writes", K::Metric, "count", S, "", "write requests handed to io-wq workers"},
        {"iouring.punted_reads", K::Metric, "count", S, "", "read requests handed to io-wq workers"},
        {"iouring.rw_punt_share_pct", K::Metric, "pct", S, "",
         "share of read/write requests punted to io-wq workers (could not be issued without blocking)"},
        {"iouring.write_punt_share_pct", K::Metric, "pct", S, "", "share of write requests punted"},
        {"iouring.read_punt_share_pct", K::Metric, "pct", S, "", "share of read requests punted"},
        {"iouring.completed", K::Metric, "count", S, "", "timed completions (submitted in the window)"},
        {"iouring.latency_us", K::Histogram, "us", S, "", "io_uring request latency, submit -> complete"},
        {"iouring.latency_p50_us", K::Metric, "us", S, "", "median submit -> complete latency (log2 estimate)"},
        {"iouring.latency_p99_us", K::Metric, "us", S, "", "p99 submit -> complete latency (log2 estimate)"},
        {"iouring.latency_mean_us", K::Metric, "us", S, "", "mean submit -> complete latency (exact)"},
        {"iouring.cq_waits", K::Metric, "count", S, "", "times a task waited in io_uring_enter for completions"},
        {"iouring.cq_wait_us", K::Histogram, "us", S, "", "CQ wait: io_uring_cqring_wait -> io_uring_enter returns"},
        {"iouring.cq_wait_p99_us", K::Metric, "us", S, "", "p99 CQ wait"},
        {"iouring.cq_wait_total_ms", K::Metric, "ms", S, "", "time spent waiting for completions, all tasks"},
        {"iouring.rings", K::Metric, "count", S, "", "active (process, ring) pairs"},
        {"iouring.attach_mode", K::Fact, "", S, "", "tp_btf or raw_tp"},
        {"iouring.proc.submitted", K::Metric, "count", S, "pid", "requests submitted by the process"},
        {"iouring.proc.rw_punt_share_pct", K::Metric, "pct", S, "pid", "share of the process's read/write requests punted"},
        {"iouring.proc.latency_p99_us", K::Metric, "us", S, "pid", "p99 submit -> complete of the process"},
        {"iouring.proc.latency_us", K::Histogram, "us", S, "pid", "submit -> complete latency of the process"},
        {"iouring.proc.cq_wait_total_ms", K::Metric, "ms", S, "pid", "time the process waited for completions"},
        {"iouring.proc.comm", K::Fact, "", S, "pid", "command name of the submitting process"},
        {"iouring.ring.submitted", K::Metric, "count", S, "pid",
         "per ring (labels {pid, ring}): requests submitted"},
        {"iouring.ring.punted", K::Metric, "count", S, "pid", "per ring (labels {pid, ring}): requests punted"},
        {"iouring.ring.latency_us", K::Histogram, "us", S, "pid",
         "per ring (labels {pid, ring}): submit -> complete latency"},
    };
    for (const auto& spec : lost_events_specs(S)) specs.push_back(spec);
    return specs;
}

void add_iouring_evidence(const std::vector<IouringRingStats>& rings, double window_s, const std::string& mode,
                          Evidence& ev, const std::string& cq_wait_end) {
    const std::string tp = mode == "raw_tp" ? "raw_tp" : "tp_btf";
    const Provenance sub{"tracepoint", tp + ":io_uring:io_uring_submit_req"};
    const Provenance punt{"tracepoint", tp + ":io_uring:io_uring_queue_async_work / io_uring_submit_req"};
    const Provenance lat{"tracepoint", tp + ":io_uring:io_uring_submit_req -> io_uring_complete"};
    const Provenance cq{"tracepoint", tp + ":io_uring:io_uring_cqring_wait -> " +
                                          (cq_wait_end.empty() ? tp + ":raw_syscalls:sys_exit (io_uring_enter)"
                                                               : cq_wait_end)};
    ev.add_fact("iouring.attach_mode", {}, tp, {"probe", "bpf_features"});
    Totals all;
    std::map<uint32_t, Totals> by_pid;
    for (const auto& r : rings) {
        all.add(r);
        by_pid[r.pid].add(r);
        const Labels rl{{"pid", std::to_string(r.pid)}, {"ring", hex(r.ring)}};
        const uint64_t s = r.submitted[0] + r.submitted[1] + r.submitted[2];
        ev.add_metric("iouring.ring.submitted", rl, double(s), "count", sub);
        ev.add_metric("iouring.ring.punted", rl, double(r.punted[0] + r.punted[1] + r.punted[2]), "count", punt);
        if (r.completed) ev.histograms.push_back({"iouring.ring.latency_us", rl, "us", hist_of(r.lat_hist), lat});
    }
    auto pct = [](uint64_t a, uint64_t b) { return b ? 100.0 * double(a) / double(b) : 0.0; };
    ev.add_metric("iouring.rings", {}, double(rings.size()), "count", sub);
    ev.add_metric("iouring.submitted", {}, double(all.sub[0] + all.sub[1] + all.sub[2]), "count", sub);
    ev.add_metric("iouring.rw_submitted", {}, double(all.rw_sub()), "count", sub);
    ev.add_metric("iouring.punted", {}, double(all.punt[0] + all.punt[1] + all.punt[2]), "count", punt);
    ev.add_metric("iouring.punted_writes", {}, double(all.punt[1]), "count", punt);
    ev.add_metric("iouring.punted_reads", {}, double(all.punt[0]), "count", punt);
    if (all.rw_sub()) ev.add_metric("iouring.rw_punt_share_pct", {}, pct(all.rw_punt(), all.rw_sub()), "pct", punt);
    if (all.sub[1]) ev.add_metric("iouring.write_punt_share_pct", {}, pct(all.punt[1], all.sub[1]), "pct", punt);
    if (all.sub[0]) ev.add_metric("iouring.read_punt_share_pct", {}, pct(all.punt[0], all.sub[0]), "pct", punt);
    ev.add_metric("iouring.completed", {}, double(all.completed), "count", lat);
    if (all.completed) {
        ev.histograms.push_back({"iouring.latency_us", {}, "us", all.lat, lat});
        ev.add_metric("iouring.latency_p50_us", {}, all.lat.percentile(50).value, "us", lat);
        ev.add_metric("iouring.latency_p99_us", {}, all.lat.percentile(99).value, "us", lat);
        ev.add_metric("iouring.latency_mean_us", {}, all.lat_sum_ns / 1e3 / double(all.completed), "us", lat);
        if (all.lat_sum_ns)
            ev.add_metric("iouring.iowq_time_pct", {}, 100.0 * double(all.iowq_ns) / double(all.lat_sum_ns), "pct",
                          {lat.kind, "Σ(io_uring_queue_async_work -> io_uring_complete) / Σ(io_uring_submit_req -> "
                                     "io_uring_complete) of the timed requests"});
    }
    ev.add_metric("iouring.cq_waits", {}, double(all.cqwaits), "count", cq);
    ev.add_metric("iouring.cq_wait_total_ms", {}, all.cqwait_sum_ns / 1e6, "ms", cq);
    if (all.cqwaits) {
        ev.histograms.push_back({"iouring.cq_wait_us", {}, "us", all.cqwait, cq});
        ev.add_metric("iouring.cq_wait_p99_us", {}, all.cqwait.percentile(99).value, "us", cq);
    }
    for (const auto& [pid, t] : by_pid) {
        const Labels l{{"pid", std::to_string(pid)}};
        ev.add_fact("iouring.proc.comm", l, t.comm, sub);
        ev.add_metric("iouring.proc.submitted", l, double(t.sub[0] + t.sub[1] + t.sub[2]), "count", sub);
        if (t.rw_sub()) ev.add_metric("iouring.proc.rw_punt_share_pct", l, pct(t.rw_punt(), t.rw_sub()), "pct", punt);
        if (t.completed) {
            ev.histograms.push_back({"iouring.proc.latency_us", l, "us", t.lat, lat});
            ev.add_metric("iouring.proc.latency_p99_us", l, t.lat.percentile(99).value, "us", lat);
        }
        ev.add_metric("iouring.proc.cq_wait_total_ms", l, t.cqwait_sum_ns / 1e6, "ms", cq);
    }
    (void)window_s;
}

#if IODIAG_HAVE_BPF

struct IouringBpfCollector::Impl {
    iouring_bpf* skel = nullptr;
    std::vector<bpf_link*> links;
    std::string mode;
    double t0 = 0;
    uint32_t ring_slots = 0;
    bool cq_exit = false;         // raw_syscalls:sys_exit (x86-64 registers)
    bool cq_exit_event = false;   // syscalls:sys_exit_io_uring_enter
    // the CQ wait's end not attached in start(): all_started() chains or attaches it
    bool cq_exit_deferred = false;
    std::string cq_wait_end;   // provenance of a CQ wait's end; "" = own raw sys_exit
    // sys_exit_io_uring_enter's perf event when this collector attached it
    // itself, released off the exit path (collectors/bpf/deferred_release.hpp)
    std::vector<PerfTracepointLink> exit_event;
    DeferredRelease holder;   // a child holding a copy of it, spawned once it is attached
    // The links' copies go to a child of their own once everything is
    // attached (all_started()): their detach (kernel text patching) then runs
    // after iodiag's exit, not in finish().
    DeferredRelease links_holder;
    ~Impl() { destroy(); }
    // Every program returns at once from now on (the `stopped` flag each
    // reads first): the maps stop moving as after a detach.
    void stop_programs() {
        if (skel && skel->bss) __atomic_store_n(&skel->bss->stopped, 1u, __ATOMIC_RELEASE);
    }
    // Stops the programs and detaches them, or leaves that to the child they
    // were handed to.
    void release_links() {
        stop_programs();
        if (const auto how = iodiag::release_links(links, links_holder, DeferredRelease::When::AtExit); !how.empty())
            spdlog::debug("iouring_bpf: links released: {}", how);
    }
    void release_exit_event() {
        if (exit_event.empty()) return;
        stop_programs();
        spdlog::debug("iouring_bpf: sys_exit_io_uring_enter released: {}", holder.release());
        exit_event.clear();
    }
    // The CQ wait's end on this collector's own program: io_uring_enter's own
    // exit event, else the raw sys_exit filter (every syscall of the machine
    // runs it). "" when attached, else why not.
    std::string attach_own_exit(bool btf) {
        std::string refused;
        if (cq_exit_event) {
            PerfTracepointLink l;
            refused = attach_perf_tracepoint(bpf_program__fd(skel->progs.tp_sys_exit), "syscalls",
                                             "sys_exit_io_uring_enter", l);
            if (refused.empty()) {
                exit_event.push_back(l);
                holder.hand_over(descriptors_of(exit_event));   // the child that closes it after our exit
                cq_wait_end = "tracepoint:syscalls:sys_exit_io_uring_enter";
                return "";
            }
        }
        bpf_program* raw = btf ? skel->progs.btf_sys_exit : skel->progs.raw_sys_exit;
        if (!cq_exit || !bpf_program__autoload(raw))
            return refused.empty() ? "no exit tracepoint for io_uring_enter" : refused;
        LibbpfLog log;
        bpf_link* l = bpf_program__attach(raw);
        if (!l) return std::string("attach ") + bpf_program__name(raw) + ": " + std::strerror(errno);
        links.push_back(l);
        cq_wait_end = "";
        return "";
    }
    void destroy() {
        release_exit_event();
        release_links();
        if (skel) iouring_bpf__destroy(skel);
        skel = nullptr;
    }
};

namespace {

// Per-CPU ring slots: what fits in 8 MiB over all CPUs, 16..1024.
uint32_t ring_slots_for(int ncpu) { return per_cpu_slots(sizeof(iouring_stats), ncpu, 8u << 20, 1024, 16); }

std::vector<TracepointProgram> iouring_programs(iouring_bpf* s, bool btf) {
    auto& p = s->progs;
    if (btf)
        return {{p.btf_submit_req, "io_uring_submit_req"}, {p.btf_queue_async_work, "io_uring_queue_async_work"},
                {p.btf_complete, "io_uring_complete"},     {p.btf_cqring_wait, "io_uring_cqring_wait"},
                {p.btf_sys_exit, "sys_exit"}};
    return {{p.raw_submit_req, "io_uring_submit_req"}, {p.raw_queue_async_work, "io_uring_queue_async_work"},
            {p.raw_complete, "io_uring_complete"},     {p.raw_cqring_wait, "io_uring_cqring_wait"},
            {p.raw_sys_exit, "sys_exit"}};
}

// Adds one ring's per-CPU copies (a copy whose key is unset was never
// claimed on that CPU).
void add_ring(const iouring_stats& v, std::map<std::pair<uint32_t, uint64_t>, IouringRingStats>& rings) {
    auto& r = rings[{v.key.tgid, v.key.ring}];
    r.pid = v.key.tgid;
    r.ring = v.key.ring;
    if (r.comm.empty()) r.comm = std::string(v.comm, strnlen(v.comm, sizeof v.comm));
    for (int i = 0; i < 3; ++i) {
        r.submitted[i] += v.submitted[i];
        r.punted[i] += v.punted[i];
    }
    r.completed += v.completed;
    r.untracked += v.untracked;
    r.lat_sum_ns += v.lat_sum_ns;
    r.iowq_ns += v.iowq_ns;
    r.cqwait_count += v.cqwait_count;
    r.cqwait_sum_ns += v.cqwait_sum_ns;
    r.lat_hist.resize(IOURING_HIST_SLOTS, 0);
    r.cqwait_hist.resize(IOURING_HIST_SLOTS, 0);
    for (int b = 0; b < IOURING_HIST_SLOTS; ++b) {
        r.lat_hist[b] += v.lat_hist[b];
        r.cqwait_hist[b] += v.cqwait_hist[b];
    }
}

}  // namespace

IouringBpfCollector::IouringBpfCollector(FeatureProbe* probe) : impl_(std::make_unique<Impl>()), probe_(probe) {
    if (!probe_) {
        own_probe_ = std::make_unique<KernelFeatureProbe>();
        probe_ = own_probe_.get();
    }
}
IouringBpfCollector::~IouringBpfCollector() {
    if (chain_ && impl_->skel) chain_->release();   // its program closes with impl_
}

CollectorStatus IouringBpfCollector::start(const CollectOptions& opts) {
    CollectorStatus st{name(), false, "", {}};
    if (opts.root != "/") {
        st.reason = "io_uring tracing needs the live system (root is " + opts.root + ")";
        return st;
    }
    if (const uint32_t n = inflight_slots_; n && ((n & (n - 1)) || n < 2 || n > IOURING_INFLIGHT_SLOTS)) {
        st.reason = "in-flight slots " + std::to_string(n) + ": not a power of two from 2 to " +
                    std::to_string(IOURING_INFLIGHT_SLOTS);
        return st;
    }
    if (auto why = probe_->btf_available(); !why.empty()) {
        st.reason = why;
        return st;
    }
    for (const auto& tp : kTracepoints)
        if (!probe_->tracepoint_exists("io_uring", tp)) {
            st.reason = "tracepoint io_uring:" + tp + " not found: " + probe_->last_failure();
            return st;
        }
    const AttachPlan plan = choose_attach_mode(*probe_, kTracepoints);
    if (plan.mode == AttachMode::None) {
        st.reason = plan.reason;
        return st;
    }
    // The CQ wait ends at the exit of io_uring_enter: its own per-syscall
    // tracepoint, or raw_syscalls:sys_exit (x86-64 register layout); without
    // either, waits are counted, not timed.
    impl_->cq_exit_event = probe_->tracepoint_exists("syscalls", "sys_exit_io_uring_enter");
#if defined(__x86_64__)
    impl_->cq_exit = probe_->tracepoint_exists("raw_syscalls", "sys_exit");
#endif
    impl_->ring_slots = ring_slots_for(libbpf_num_possible_cpus());
    // Opens, loads and attaches one program set; "" or why not (nothing left behind).
    auto load_attach = [&](bool btf) -> std::string {
        const std::string what = "iouring.bpf.o (" + std::string(btf ? "tp_btf" : "raw_tp") + ")";
        const CoreTargetFile core_target("iouring_bpf", iouring_bpf__elf_bytes);
        LIBBPF_OPTS(bpf_object_open_opts, open_opts, .btf_custom_path = core_target.path());
        auto* s = iouring_bpf__open_opts(&open_opts);
        if (!s) return what + ": open: " + std::strerror(errno);
        impl_->skel = s;
        auto fail = [&](const std::string& step, int err, const LibbpfLog* log) {
            std::string why = what + ": " + step + ": " + std::strerror(err < 0 ? -err : err);
            if (log)
                if (auto detail = log->failure(); !detail.empty()) why += " (" + detail + ")";
            impl_->destroy();
            return why;
        };
        s->rodata->filter_tgid = static_cast<uint32_t>(opts.pid > 0 ? opts.pid : 0);
        s->rodata->io_uring_enter_nr = SYS_io_uring_enter;
        s->rodata->ring_slot_mask = impl_->ring_slots - 1;
        if (inflight_slots_) s->rodata->inflight_slot_mask = inflight_slots_ - 1;
        if (int err = bpf_map__set_max_entries(s->maps.ring_stats, impl_->ring_slots); err)
            return fail("sizing ring_stats", err, nullptr);
        for (const auto& p : iouring_programs(s, btf))
            bpf_program__set_autoload(p.prog, std::string(p.tracepoint) != "sys_exit" || impl_->cq_exit);
        for (const auto& p : iouring_programs(s, !btf)) bpf_program__set_autoload(p.prog, false);
        bpf_program__set_autoload(s->progs.tp_sys_exit, impl_->cq_exit_event);
        {
            LibbpfLog log;
            if (int err = iouring_bpf__load(s); err) return fail("load", err, &log);
        }
        spdlog::debug("iouring_bpf: verified instructions: {}", verified_instructions(s->obj));
        // the syscall collector's tail call (all_started()) takes a program
        // of its own type: tp_btf, or a perf tracepoint program
        impl_->cq_exit_deferred = chain_ && (btf || impl_->cq_exit_event);
        for (const auto& p : iouring_programs(s, btf)) {
            if (!bpf_program__autoload(p.prog)) continue;
            if (std::string(p.tracepoint) == "sys_exit") continue;   // below or in all_started()
            LibbpfLog log;
            bpf_link* l = bpf_program__attach(p.prog);
            if (!l) return fail(std::string("attach ") + bpf_program__name(p.prog) + " to " + p.tracepoint, errno, &log);
            impl_->links.push_back(l);
        }
        if (!impl_->cq_exit_deferred && (impl_->cq_exit_event || impl_->cq_exit))
            if (auto why = impl_->attach_own_exit(btf); !why.empty())   // the requests are still timed
                impl_->cq_wait_end = "nothing: " + why + ", CQ waits not timed";
        return "";
    };
    bool btf = plan.mode == AttachMode::TpBtf;
    std::string note = plan.reason;
    if (std::string why = load_attach(btf); !why.empty()) {
        // The probe only loads a tp_btf program: the set can still fail to
        // load or attach here, and raw_tp is then tried.
        if (!btf) {
            st.reason = why;
            return st;
        }
        btf = false;
        if (std::string retry = load_attach(false); !retry.empty()) {
            st.reason = why + "; " + retry;
            return st;
        }
        note += std::string(note.empty() ? "" : "; ") + why + "; using raw_tp with CO-RE reads";
    }
    impl_->mode = btf ? "tp_btf" : "raw_tp";
    impl_->t0 = now_s();
    st.available = true;
    st.reason = note;
    if (!impl_->cq_exit && !impl_->cq_exit_event)
        st.reason += std::string(st.reason.empty() ? "" : "; ") +
                     "neither syscalls:sys_exit_io_uring_enter nor raw_syscalls:sys_exit (x86-64) traced here: "
                     "CQ waits counted, not timed";
    // Requests already in flight at start complete without a submit: counted as
    // untracked, never timed from a wrong origin.
    return st;
}

void IouringBpfCollector::all_started() {
    if (!impl_->skel) return;
    if (impl_->cq_exit_deferred) attach_cq_wait_end();
    hand_over_links(impl_->links, impl_->links_holder);
}

void IouringBpfCollector::attach_cq_wait_end() {
    impl_->cq_exit_deferred = false;
    // The syscall collector's exit program calls ours when its array takes
    // our kind of program; otherwise ours is attached on its own.
    const ChainKind kind = chain_->offered();
    bpf_program* callee = kind == ChainKind::PerfTracepoint ? impl_->skel->progs.tp_sys_exit
                          : kind == ChainKind::TpBtf && impl_->mode == "tp_btf" ? impl_->skel->progs.btf_sys_exit
                                                                                : nullptr;
    if (callee && bpf_program__autoload(callee) && chain_->take(bpf_program__fd(callee))) {
        impl_->cq_wait_end = kind == ChainKind::PerfTracepoint
                                 ? "tracepoint:syscalls:sys_exit_io_uring_enter (this collector's program, "
                                   "tail-called from syscall_bpf's)"
                                 : "tp_btf:raw_syscalls:sys_exit (io_uring_enter; this collector's program, "
                                   "tail-called from syscall_bpf's)";
        return;
    }
    if (auto why = impl_->attach_own_exit(impl_->mode == "tp_btf"); !why.empty())
        impl_->cq_wait_end = "nothing: " + why + ", CQ waits not timed";   // the requests are still timed
}

void IouringBpfCollector::finish(Evidence& ev) {
    if (!impl_->skel) return;
    const double window_s = now_s() - impl_->t0;
    // Stop the programs first so the maps stop moving; their links and own
    // exit event, if any, are closed after iodiag's exit.
    if (chain_) chain_->release();
    impl_->release_exit_event();
    impl_->release_links();
    const int ncpu = std::max(libbpf_num_possible_cpus(), 1);
    std::map<std::pair<uint32_t, uint64_t>, IouringRingStats> by_ring;
    for_each_percpu_array_copy<iouring_stats>(bpf_map__fd(impl_->skel->maps.ring_stats), impl_->ring_slots, ncpu,
                                              [&](uint32_t, int, const iouring_stats& v) {
                                                  if (v.key.ring) add_ring(v, by_ring);
                                              });
    for_each_percpu_hash_entry<iouring_key, iouring_stats>(
        bpf_map__fd(impl_->skel->maps.ring_overflow), ncpu,
        [&](const iouring_key& k, const std::vector<iouring_stats>& copies) {
            for (auto v : copies) {
                v.key = k;   // copies on CPUs that never claimed it hold zeroes
                add_ring(v, by_ring);
            }
        });
    std::vector<IouringRingStats> rings;
    for (auto& [k, r] : by_ring) rings.push_back(std::move(r));
    add_iouring_evidence(rings, window_s, impl_->mode, ev, impl_->cq_wait_end);
    const auto* lost = impl_->skel->bss->lost;
    const std::string src = "bpf/iouring.bpf.c lost[] counters";
    std::vector<LostEventCount> counts{
        {"inflight_slot_busy", lost[IOURING_LOST_INFLIGHT_SLOT_BUSY],
         "submissions and punts are all counted; only those requests' latencies are missing",
         src + " (in-flight slot held by a live request)"},
        {"ring_table_full", lost[IOURING_LOST_RING_TABLE_FULL],
         "the other rings' figures are complete; those rings' counts are missing",
         src + " (per-ring slot taken and overflow hash full)"}};
    if (const auto skipped = skipped_runs(impl_->skel->obj))
        counts.push_back({"program_runs_skipped", skipped->total,
                          "those submissions, punts or completions are missing from the counts and latencies; "
                          "every request whose hooks all ran is complete",
                          kSkippedRunsSource});
    add_lost_events(ev, name(), counts);
    impl_->destroy();
}

#else  // !IODIAG_HAVE_BPF

struct IouringBpfCollector::Impl {};
IouringBpfCollector::IouringBpfCollector(FeatureProbe* probe) : impl_(std::make_unique<Impl>()), probe_(probe) {}
IouringBpfCollector::~IouringBpfCollector() = default;
CollectorStatus IouringBpfCollector::start(const CollectOptions&) {
    return {name(), false,
            "iodiag was built without BPF (IODIAG_HAVE_BPF=0: no clang/bpftool or no kernel BTF at build time)",
            {}};
}
void IouringBpfCollector::all_started() {}
void IouringBpfCollector::finish(Evidence&) {}

#endif

}  // namespace iodiag
