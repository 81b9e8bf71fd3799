// Who held the CPUs the suffering application waited for on the run queue:
// each process's on-CPU time in the window (cpu.proc_oncpu_us, /proc/PID/stat)
// on the CPUs the application may run on, and the part of its slow time the
// others' share of them explains.
#include "engine/derive/contention.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "engine/evidence/format.hpp"
#include "engine/evidence/application_label.hpp"

namespace iodiag::derive {

namespace {

std::set<int> cpus_of(const std::string& list) {
    std::set<int> s;
    std::istringstream in(list);
    for (std::string n; std::getline(in, n, ',');)
        if (!n.empty() && n.find_first_not_of("0123456789") == std::string::npos) s.insert(std::stoi(n));
    return s;
}

std::string list_of(const std::set<int>& s) {
    std::string out;
    for (int c : s) out += (out.empty() ? "" : ",") + std::to_string(c);
    return out;
}

struct Group {
    double us = 0;          // on-CPU time on the application's CPUs (weighted)
    double raw_us = 0;      // on-CPU time anywhere
    double top_us = 0;
    std::string top_pid;
};

}  // namespace

// On which CPUs the application ran is not recorded per instant: a process
// restricted to some CPUs (taskset, cpuset: cpu.proc_allowed_cpus) ran on
// those; one that may run anywhere is counted on the application's CPUs in
// proportion (its time x |its CPUs and the application's| / |its CPUs|).
// Processes not listed (below the top ones) and kernel threads are spread
// over all online CPUs alike. Kernel threads serve others (a loop device's
// worker, the flusher): in the total, never a neighbor.
void add_cpu_contention(Evidence& ev) {
    const Fact* app_fact = ev.find_fact("attr.app.name");
    const Fact* online_fact = ev.find_fact("cpu.online_list");
    if (!app_fact || !online_fact) return;
    const std::string app = app_fact->value;
    const std::set<int> online = cpus_of(online_fact->value);
    if (online.empty()) return;
    struct Proc {
        const Metric* m;
        std::set<int> allowed;
    };
    std::vector<Proc> procs;
    std::set<int> mine;
    std::set<std::string> app_cgroups;
    double listed = 0;
    for (const auto& m : ev.metrics) {
        if (m.name == "syscall.proc.time_us" && application_label(m.labels) == app && m.labels.count("cgroup"))
            app_cgroups.insert(m.labels.at("cgroup"));
        if (m.name != "cpu.proc_oncpu_us" || !m.labels.count("comm")) continue;
        const Fact* a = ev.find_fact("cpu.proc_allowed_cpus", m.labels);
        Proc p{&m, a ? cpus_of(a->value) : online};
        if (p.allowed.empty()) p.allowed = online;
        listed += m.value;
        if (application_label(m.labels) == app) {
            mine.insert(p.allowed.begin(), p.allowed.end());
            if (m.labels.count("cgroup")) app_cgroups.insert(m.labels.at("cgroup"));
        }
        procs.push_back(std::move(p));
    }
    // Its processes were not among the top ones: it may run anywhere.
    const std::set<int> where = mine.empty() ? online : mine;
    auto on_where = [&](const std::set<int>& a) {
        size_t both = 0;
        for (int c : a) both += where.count(c);
        return a.empty() ? 0.0 : static_cast<double>(both) / static_cast<double>(a.size());
    };
    const double spread = static_cast<double>(where.size()) / static_cast<double>(online.size());
    const double total = metric_or(ev, "cpu.oncpu_total_us", {}, listed);
    const double kthreads = metric_or(ev, "cpu.kthread_oncpu_us", {}, 0);
    const double self = metric_or(ev, "cpu.self_oncpu_us", {}, 0);
    const double unlisted = std::max(0.0, total - kthreads - self - listed);
    double own = 0, own_busiest = 0, others = unlisted * spread;
    std::map<std::pair<std::string, std::string>, Group> groups;
    for (const auto& p : procs) {
        const double w = p.m->value * on_where(p.allowed);
        const std::string whose = application_label(p.m->labels);
        if (whose == app) {
            own += w;
            // One thread runs at most the whole window: a process that ran
            // longer had several, and its others compete with the waiter.
            own_busiest = std::max(own_busiest, std::min(w, ev.window.duration_s * 1e6));
            continue;
        }
        others += w;
        const std::string cg = p.m->labels.count("cgroup") ? p.m->labels.at("cgroup") : "?";
        Group& g = groups[{whose, cg}];
        g.us += w;
        g.raw_us += p.m->value;
        if (p.m->value > g.top_us && p.m->labels.count("pid")) g.top_us = p.m->value, g.top_pid = p.m->labels.at("pid");
    }
    // A thread never waits behind itself: while one of the application's
    // processes waits for a CPU, the others and its own other processes hold
    // them. The one left out is its busiest (a one-process reader waits only
    // behind others; its idle parent, as fio's, changes nothing), at most one
    // thread's worth of it.
    const double all = own - own_busiest + others + (kthreads + self) * spread;
    if (all <= 0) return;
    const std::string cpus = list_of(where);
    const std::string basis = "cpu.proc_oncpu_us (/proc/PID/stat utime + stime over the window) on CPUs " + cpus +
                              " (where " + app + " may run; a process allowed on more CPUs counted in proportion, "
                              "unlisted processes and kernel threads spread over all online CPUs)";
    ev.add_fact("cpu.sufferer_cpus", {}, cpus,
                derived(mine.empty() ? "every online CPU (" + app + "'s processes are not restricted, or not among "
                                                                   "the top ones)"
                                     : "the CPUs " + app + "'s processes may run on (cpu.proc_allowed_cpus)"));
    ev.add_metric("cpu.others_share_pct", {}, 100.0 * others / all, "pct",
                  derived("on-CPU time of processes other than " + app + " / the on-CPU time a waiting process of " +
                          app + " competed with (all but its busiest process's own), " + basis));
    ev.add_metric("cpu.sufferer_share_pct", {}, 100.0 * (own - own_busiest) / all, "pct",
                  derived("on-CPU time of " + app + "'s processes but its busiest / the same, " + basis));
    // The part of its time spent runnable while others held the CPUs: its
    // run-queue delay against all of its syscall time where measured (the
    // CPU rules' basis), else against its slow syscalls.
    const Metric* rq = ev.find_metric("attr.sufferer.cpu_all_pct");
    const std::string rq_name = rq ? "attr.sufferer.cpu_all_pct" : "attr.sufferer.cpu_pct";
    if (!rq) rq = ev.find_metric("attr.sufferer.cpu_pct");
    if (rq)
        ev.add_metric("cpu.contention_share_pct", {}, rq->value * others / all, "pct",
                      derived(rq_name + " (" + app + "'s run-queue delay) x cpu.others_share_pct"));
    if (groups.empty()) return;
    std::vector<std::pair<std::pair<std::string, std::string>, Group>> ranked(groups.begin(), groups.end());
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second.us > b.second.us; });
    const auto& [key, top] = ranked.front();
    const std::string how = "the (command, cgroup) other than " + app + " with the most on-CPU time, " + basis;
    ev.add_fact("cpu.neighbor_comm", {}, key.first, derived(how));
    if (!top.top_pid.empty()) ev.add_fact("cpu.neighbor_pid", {}, top.top_pid, derived(how + "; its busiest process"));
    ev.add_fact("cpu.neighbor_cgroup", {}, key.second, derived(how));
    ev.add_fact("cpu.neighbor_relation", {}, app_cgroups.count(key.second) ? "in the same cgroup as " + app
                                                                            : "in another cgroup than " + app + "'s",
                derived("its cgroup against those of " + app + "'s processes (syscall.proc.time_us, "
                        "cpu.proc_oncpu_us)"));
    ev.add_metric("cpu.neighbor_share_pct", {}, 100.0 * top.us / all, "pct",
                  derived("its on-CPU time / the on-CPU time a waiting process of " + app + " competed with, " +
                          basis));
    ev.add_metric("cpu.neighbor_oncpu_us", {}, top.raw_us, "us", derived("its on-CPU time in the window, all CPUs"));
    std::string list;
    for (size_t i = 0; i < ranked.size() && i < 3; ++i)
        list += (i ? "; " : "") + ranked[i].first.first + " (pid " + ranked[i].second.top_pid + ") in " +
                ranked[i].first.second + ": " + format_number(100.0 * ranked[i].second.us / all) + " %";
    ev.add_fact("cpu.neighbors", {}, list, derived("the largest others by on-CPU time, " + basis));
}

std::vector<MetricSpec> cpu_contention_specs() {
    using K = MetricSpec::Kind;
    const std::string c = layer::kCpu;
    return {
        {"cpu.sufferer_cpus", K::Fact, "", c, "", "the CPUs the suffering application may run on"},
        {"cpu.others_share_pct", K::Metric, "pct", c, "",
         "share of the on-CPU time on the suffering application's CPUs used by other processes, of what a waiting "
         "process of it competed with (all but its own busiest process's time)"},
        {"cpu.sufferer_share_pct", K::Metric, "pct", c, "",
         "the application's own part of that time (its other processes)"},
        {"cpu.contention_share_pct", K::Metric, "pct", c, "",
         "part of the application's time spent on the run queue while others held its CPUs (its run-queue delay "
         "share x cpu.others_share_pct)"},
        {"cpu.neighbor_comm", K::Fact, "", c, "", "the other command with the most on-CPU time there"},
        {"cpu.neighbor_pid", K::Fact, "", c, "", "its busiest process"},
        {"cpu.neighbor_cgroup", K::Fact, "", c, "", "its cgroup (the label as the evidence prints it)"},
        {"cpu.neighbor_relation", K::Fact, "", c, "", "whether it runs in the application's cgroup or another one"},
        {"cpu.neighbor_share_pct", K::Metric, "pct", c, "", "its share of the on-CPU time on those CPUs"},
        {"cpu.neighbor_oncpu_us", K::Metric, "us", c, "", "its on-CPU time in the window"},
        {"cpu.neighbors", K::Fact, "", c, "", "the largest others by on-CPU time, with their shares"},
    };
}

}  // namespace iodiag::derive
