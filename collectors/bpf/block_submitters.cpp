// Who used each device: the block tracer's per-(disk, thread group, cgroup)
// sums (bpf/block_events.h), a process named by the command the kernel
// recorded with them and by its application (collectors/procfs/applications.hpp),
// a kernel thread and the cgroups from /proc while the window runs; grouped
// per device by (application, cgroup) and emitted as block.submitter.*.
#include <algorithm>
#include <set>
#include <tuple>

#include "collectors/bpf/block_bpf.hpp"
#include "collectors/cgroup/cgroup_ids.hpp"
#include "collectors/cgroup/cgroup_label.hpp"
#include "collectors/procfs/applications.hpp"
#include "collectors/procfs/proc_pid_stat.hpp"
#include "collectors/text_file.hpp"

namespace iodiag {

namespace {

bool is_kthread(uint32_t tgid) {
    const auto stat = try_read_first_line("/proc/" + std::to_string(tgid) + "/stat");
    return stat && stat_says_kernel_thread(*stat);
}

// A kernel worker's command is "kworker/u4:2+flush-7:0" while it runs a work
// item and "kworker/u4:2-flush-7:0" after: the work's description follows.
std::string worker_description(const std::string& comm) {
    if (comm.rfind("kworker/", 0) != 0) return "";
    const size_t at = comm.find_first_of("+-", 8);
    return at == std::string::npos ? "" : comm.substr(at + 1);
}

// The name a submitter group is shown under (a process: its application), and what it is: a process, the
// writeback flusher (writing what others dirtied), other kernel work, or
// unknown (gone before it was named). A process is named by the command the
// kernel recorded with its sums (as of its requests: a shell's child that
// exec'd the program is the program, and one gone before /proc was read keeps
// its name); /proc's where the kernel has none (its thread had gone by its
// first completion), shown as its application (`app`, submitter_application).
// A kernel thread by /proc's (its work's description).
std::pair<std::string, std::string> display(const BlockSubmitterSums& s, const SubmitterIdentity* who,
                                            const std::string& app) {
    if (s.tgid == 0) return {"(none)", "kernel"};   // a request the block layer made (a flush), or seen after its Q
    SubmitterIdentity recorded;
    if (!who || who->comm.empty()) {
        if (s.comm.empty()) return {"?", "unknown"};
        recorded.comm = s.comm;   // gone before /proc was read: the kernel's record only
        recorded.kthread = s.kthread;
        who = &recorded;
    }
    if (!who->kthread) return {app, "process"};
    if (who->flusher) return {"writeback (kworker flush)", "writeback"};
    const std::string desc = worker_description(who->comm);
    if (who->comm.rfind("kworker/", 0) == 0) return {desc.empty() ? "kworker" : "kworker (" + desc + ")", "kernel"};
    return {who->comm, "kernel"};
}

}  // namespace

std::string BlockBpfCollector::submitter_command(const BlockSubmitterSums& s) const {
    if (s.tgid == 0) return "(none)";   // a request the block layer made (a flush), or first seen after its Q
    const auto w = submitter_who_.find(s.tgid);
    const bool kthread = w != submitter_who_.end() && !w->second.comm.empty() ? w->second.kthread : s.kthread;
    if (!kthread && !s.comm.empty()) return s.comm;
    if (const auto it = submitter_comm_.find(s.tgid); it != submitter_comm_.end()) return it->second;
    return s.comm.empty() ? "?" : s.comm;   // "?": gone before it was named
}

std::string BlockBpfCollector::submitter_application(const BlockSubmitterSums& s) const {
    const std::string comm = submitter_command(s);
    const auto w = submitter_who_.find(s.tgid);
    const bool kthread = w != submitter_who_.end() && !w->second.comm.empty() ? w->second.kthread : s.kthread;
    if (s.tgid == 0 || kthread || comm == "?") return comm;
    if (w != submitter_who_.end() && !w->second.app.empty()) return w->second.app;
    return ApplicationIndex::host().application_of(s.tgid, comm);
}

void BlockBpfCollector::learn_submitter_names() {
    const auto subs = tracer_->submitters();
    bool unresolved = false;
    for (const auto& s : subs) {
        if (s.cgroup_id && !blkcg_paths_.count(s.cgroup_id)) unresolved = true;
        if (s.tgid == 0) continue;
        auto [it, fresh] = submitter_who_.try_emplace(s.tgid);
        SubmitterIdentity& who = it->second;
        // A process keeps what it was; a kernel worker's work changes, so it is
        // read at every sample (a flusher is one once seen flushing).
        if (!fresh && !who.kthread) continue;
        const auto comm = try_read_first_line("/proc/" + std::to_string(s.tgid) + "/comm");
        if (!comm || comm->empty()) continue;   // gone: stays unknown
        if (fresh) {
            who.kthread = is_kthread(s.tgid);
            const cgroup::ProcessCgroups cg = cgroup::read_process_cgroups("/", static_cast<int>(s.tgid));
            who.memory_v1 = cg.memory_v1;
            who.blkio_v1 = cg.blkio_v1;
            who.v2 = cg.v2;
            // Asked while it lives, so that it keeps its application if it
            // exits before the window ends.
            if (!who.kthread) who.app = ApplicationIndex::host().application_of(s.tgid, *comm);
        }
        who.comm = *comm;
        if (who.kthread && worker_description(*comm).rfind("flush-", 0) == 0) who.flusher = true;
        submitter_comm_.try_emplace(s.tgid, *comm);
    }
    // Cgroups are resolved while they exist (one may be removed before the
    // window ends); an id that does not resolve is tried once.
    if (!unresolved) return;
    CgroupIdNames names("/");
    blkio_v1_ = names.blkio_on_v1();
    for (const auto& s : subs)
        if (s.cgroup_id && !blkcg_paths_.count(s.cgroup_id))
            blkcg_paths_[s.cgroup_id] = tracer_->submitter_cgroup_is_blkcg() ? names.blkcg_path(s.cgroup_id)
                                                                            : names.v2_path(s.cgroup_id);
}

// Per device, per (application, cgroup): requests, bytes, service time (D2C) and
// queue occupancy (Q2C) of the group's completed requests, its busiest thread
// group and how many there were. The cgroup is printed as every collector
// prints a process's cgroup (collectors/cgroup/cgroup_label.hpp), with the
// part the io controller decides taken from the kernel's own record: the
// cgroup the bio was charged to (blkcg), where the kernel has blk-cgroup.
void BlockBpfCollector::emit_submitter_groups(Evidence& ev, const std::vector<BlockSubmitterSums>& sums,
                                              const std::function<Provenance(const std::string&)>& prov) {
    const bool blkcg = tracer_->submitter_cgroup_is_blkcg();
    struct Group {
        BlockSubmitterSums sum;
        std::set<uint32_t> tgids;
        uint32_t top_tgid = 0;
        uint64_t top_d2c = 0;
        std::string top_comm;   // its busiest thread group's command name
    };
    using Key = std::tuple<std::string, std::string, std::string>;   // application (or kernel work), cgroup, kind
    std::map<std::string, std::map<Key, Group>> by_dev;
    for (const auto& s : sums) {
        if (!devices_.empty() && std::find(devices_.begin(), devices_.end(), s.device) == devices_.end()) continue;
        const auto w = submitter_who_.find(s.tgid);
        const SubmitterIdentity* who = w == submitter_who_.end() ? nullptr : &w->second;
        const auto [shown, kind] = display(s, who, submitter_application(s));
        const auto p = blkcg_paths_.find(s.cgroup_id);
        const std::string charged = p == blkcg_paths_.end() ? "" : p->second;
        std::string memory = who ? who->memory_v1 : "", blkio = who ? who->blkio_v1 : "", v2 = who ? who->v2 : "";
        if (!charged.empty()) (blkcg && blkio_v1_ ? blkio : v2) = charged;
        std::string label = cgroup::label_of(memory, blkio, v2);
        Group& g = by_dev[s.device][Key{shown, label.empty() ? "?" : label, kind}];
        g.sum.add_sums(s);
        g.tgids.insert(s.tgid);
        if (s.d2c_ns >= g.top_d2c) {
            g.top_d2c = s.d2c_ns, g.top_tgid = s.tgid;
            g.top_comm = kind == "process" && who ? who->comm : shown;
        }
    }
    const Provenance p =
        prov(std::string("tracepoint:block:block_rq_complete, every completed request summed in the kernel per ") +
             "(disk, thread group that queued its bio, cgroup) and here per (application, cgroup): command as "
             "the kernel recorded it with the sums (task comm), application from /proc/PID/{stat,cmdline} while "
             "it ran (collectors/procfs/applications.hpp), a kernel worker's from /proc/PID/comm (by its work: "
             "flush-* = the writeback flusher), cgroup " +
             (blkcg ? "the one the kernel charged the request to (its head bio's blkcg, bio->bi_blkg) with the "
                      "process's other cgroups from /proc/PID/cgroup"
                    : "the submitter's (no blk-cgroup in this kernel), read through its task at completion"));
    const Provenance service_prov =
        prov("tracepoint:block:block_rq_complete, the disk's busy time given to each completed request (from the "
             "later of its issue and the disk's previous completion to its own: the requests' service times "
             "partition the disk's busy time), summed in the kernel per (disk, thread group, cgroup) and here per "
             "(application, cgroup)");
    for (auto& [dev, groups] : by_dev) {
        std::vector<std::pair<Key, Group>> v(groups.begin(), groups.end());
        std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.sum.d2c_ns > b.second.sum.d2c_ns; });
        // Bounded: the largest groups by service time, the rest summed into
        // one, so the device's totals stay whole.
        if (v.size() > kMaxSubmitterGroupsPerDevice) {
            Group rest;
            for (size_t i = kMaxSubmitterGroupsPerDevice - 1; i < v.size(); ++i) {
                const Group& g = v[i].second;
                rest.sum.add_sums(g.sum);
                rest.tgids.insert(g.tgids.begin(), g.tgids.end());
            }
            v.resize(kMaxSubmitterGroupsPerDevice - 1);
            v.push_back({Key{"(rest)", "", "rest"}, std::move(rest)});
        }
        for (const auto& [key, g] : v) {
            const Labels l{{"device", dev}, {"comm", g.top_comm.empty() ? std::get<0>(key) : g.top_comm},
                           {"app", std::get<0>(key)}, {"cgroup", std::get<1>(key)}, {"kind", std::get<2>(key)}};
            ev.add_metric("block.submitter.requests", l, double(g.sum.count), "count", p);
            ev.add_metric("block.submitter.bytes", l, double(g.sum.bytes), "bytes", p);
            ev.add_metric("block.submitter.write_bytes", l, double(g.sum.write_bytes), "bytes", p);
            ev.add_metric("block.submitter.d2c_total_us", l, g.sum.d2c_ns / 1000.0, "us", p);
            ev.add_metric("block.submitter.q2c_total_us", l, g.sum.q2c_ns / 1000.0, "us", p);
            ev.add_metric("block.submitter.service_total_us", l, g.sum.service_ns / 1000.0, "us", service_prov);
            ev.add_metric("block.submitter.scheduler_wait_us", l, g.sum.i2d_ns / 1000.0, "us", p);
            ev.add_metric("block.submitter.idle_class_requests", l, double(g.sum.idle_class), "count", p);
            ev.add_metric("block.submitter.processes", l, double(g.tgids.size()), "count", p);
            if (g.top_tgid) ev.add_fact("block.submitter.top_pid", l, std::to_string(g.top_tgid), p);
        }
    }
}

}  // namespace iodiag
