#include "collectors/procfs/proc_cpu.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <sstream>

#include "collectors/cgroup/cgroup_label.hpp"
#include "collectors/procfs/applications.hpp"
#include "collectors/procfs/proc_pids.hpp"
#include "collectors/text_file.hpp"
#include "engine/evidence/layers.hpp"

namespace iodiag {

namespace {

constexpr unsigned long long kPfKthread = 0x00200000;

// utime + stime, starttime and the kernel-thread flag of one /proc/PID/stat
// line; false when it is not one. The name is between the first '(' and the
// last ')' (a name may hold either).
bool parse_stat(const std::string& line, ProcCpu& p) {
    const size_t open = line.find('('), close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) return false;
    p.comm = line.substr(open + 1, close - open - 1);
    const auto f = split_ws(line.substr(close + 1));   // f[0] = state (field 3)
    if (f.size() < 20) return false;
    p.kthread = (std::strtoull(f[6].c_str(), nullptr, 10) & kPfKthread) != 0;
    p.ticks = std::strtoull(f[11].c_str(), nullptr, 10) + std::strtoull(f[12].c_str(), nullptr, 10);
    p.start_ticks = std::strtoull(f[19].c_str(), nullptr, 10);
    return true;
}

Provenance stat_provenance(long ticks_per_s) {
    return {"file", "/proc/[pid]/stat utime + stime (all threads, " + std::to_string(ticks_per_s) +
                        " ticks/s), difference between the window's start and end; processes that exited inside "
                        "the window are not seen (their time is in cpu.unattributed_us)"};
}

}  // namespace

std::string expand_cpu_list(const std::string& list) {
    std::string out;
    std::istringstream in(list);
    for (std::string part; std::getline(in, part, ',');) {
        part.erase(std::remove_if(part.begin(), part.end(), ::isspace), part.end());
        if (part.empty()) continue;
        const size_t dash = part.find('-');
        char* end = nullptr;
        const long lo = std::strtol(part.c_str(), &end, 10);
        long hi = lo;
        if (dash != std::string::npos) hi = std::strtol(part.c_str() + dash + 1, &end, 10);
        if (*end != '\0' || lo < 0 || hi < lo || hi - lo > 4096) return "";
        for (long c = lo; c <= hi; ++c) out += (out.empty() ? "" : ",") + std::to_string(c);
    }
    return out;
}

CpuSnapshot read_cpu_snapshot(const std::string& root, long ticks_per_s) {
    CpuSnapshot s;
    if (const auto stat = try_read_first_line(under_root(root, "/proc/stat")); stat && stat->rfind("cpu ", 0) == 0) {
        const auto f = split_ws(*stat);   // cpu user nice system idle iowait irq softirq steal ...
        for (size_t i : {1u, 2u, 3u, 6u, 7u, 8u})
            if (i < f.size()) s.busy_ticks += std::strtoull(f[i].c_str(), nullptr, 10);
    }
    if (const auto up = try_read_first_line(under_root(root, "/proc/uptime")))
        s.uptime_ticks = static_cast<uint64_t>(std::strtod(up->c_str(), nullptr) * static_cast<double>(ticks_per_s));
    for (const int pid : numeric_entries(under_root(root, "/proc"))) {
        const auto line = try_read_first_line(under_root(root, "/proc/" + std::to_string(pid) + "/stat"));
        ProcCpu p;
        if (line && parse_stat(*line, p)) s.procs[pid] = std::move(p);
    }
    return s;
}

void add_proc_cpu_metrics(const CpuSnapshot& before, const CpuSnapshot& after, long ticks_per_s,
                          const std::string& online, int self, const std::string& root, Evidence& ev) {
    const double us_per_tick = 1e6 / static_cast<double>(ticks_per_s);
    const Provenance p = stat_provenance(ticks_per_s);
    uint64_t total = 0, kthreads = 0, mine = 0;
    std::vector<std::pair<uint64_t, int>> users;
    for (const auto& [pid, now] : after.procs) {
        const auto was = before.procs.find(pid);
        // A process new in the window (or a pid reused) ran all its time in it.
        const bool same = was != before.procs.end() && was->second.start_ticks == now.start_ticks;
        const uint64_t from = same ? was->second.ticks : 0;
        if (!same && now.start_ticks + 1 < before.uptime_ticks) continue;   // missed at the start: unknown
        if (now.ticks <= from) continue;
        const uint64_t d = now.ticks - from;
        total += d;
        if (pid == self) mine += d;
        else if (now.kthread) kthreads += d;
        else users.push_back({d, pid});
    }
    ev.add_metric("cpu.oncpu_total_us", {}, total * us_per_tick, "us", p);
    ev.add_metric("cpu.kthread_oncpu_us", {}, kthreads * us_per_tick, "us", p);
    ev.add_metric("cpu.self_oncpu_us", {}, mine * us_per_tick, "us", p);
    if (after.busy_ticks > before.busy_ticks) {
        const double busy = (after.busy_ticks - before.busy_ticks) * us_per_tick;
        const Provenance ps{"file", "/proc/stat cpu line (user + nice + system + irq + softirq + steal), difference "
                                    "between the window's start and end"};
        ev.add_metric("cpu.busy_us", {}, busy, "us", ps);
        ev.add_metric("cpu.unattributed_us", {}, std::max(0.0, busy - total * us_per_tick), "us",
                      {"derived", "cpu.busy_us - cpu.oncpu_total_us: processes that exited inside the window, and "
                                  "tick rounding"});
    }
    const std::string online_list = expand_cpu_list(online);
    if (!online_list.empty()) {
        const Provenance po{"file", "/sys/devices/system/cpu/online"};
        ev.add_fact("cpu.online_list", {}, online_list, po);
        ev.add_metric("cpu.online_cpus", {}, static_cast<double>(std::count(online_list.begin(), online_list.end(), ',') + 1),
                      "count", po);
    }
    std::sort(users.rbegin(), users.rend());
    if (users.size() > ProcCpuCollector::kTopProcesses) users.resize(ProcCpuCollector::kTopProcesses);
    for (const auto& [d, pid] : users) {
        const std::string cg = cgroup::label_of(cgroup::read_process_cgroups(root, pid));
        const std::string& comm = after.procs.at(pid).comm;
        const Labels l{{"pid", std::to_string(pid)}, {"comm", comm},
                       {"app", ApplicationIndex::of_root(root).application_of(static_cast<uint32_t>(pid), comm)},
                       {"cgroup", cg.empty() ? "?" : cg}};
        ev.add_metric("cpu.proc_oncpu_us", l, d * us_per_tick, "us", p);
        // Where it may run, when that is not every online CPU (taskset,
        // cpuset): the rest run wherever the scheduler puts them.
        const auto status = try_read_text_file(under_root(root, "/proc/" + std::to_string(pid) + "/status"));
        if (!status) continue;
        const size_t at = status->find("Cpus_allowed_list:");
        if (at == std::string::npos) continue;
        const size_t end = status->find('\n', at);
        const std::string allowed = expand_cpu_list(status->substr(at + 18, end == std::string::npos ? end : end - at - 18));
        if (!allowed.empty() && allowed != online_list)
            ev.add_fact("cpu.proc_allowed_cpus", l, allowed,
                        {"file", "/proc/" + std::to_string(pid) + "/status Cpus_allowed_list, at the window's end"});
    }
}

std::vector<MetricSpec> ProcCpuCollector::metric_specs() const {
    using K = MetricSpec::Kind;
    const std::string cpu = layer::kCpu;
    return {
        {"cpu.proc_oncpu_us", K::Metric, "us", cpu, "pid",
         "on-CPU time of a process (all threads) in the window; the top ones; labels {pid, comm, cgroup}"},
        {"cpu.proc_allowed_cpus", K::Fact, "", cpu, "pid",
         "CPUs such a process may run on (comma list), when not every online CPU"},
        {"cpu.oncpu_total_us", K::Metric, "us", cpu, "", "on-CPU time of every process seen at both ends of the window"},
        {"cpu.kthread_oncpu_us", K::Metric, "us", cpu, "", "of it, kernel threads' (workers serving others)"},
        {"cpu.self_oncpu_us", K::Metric, "us", cpu, "", "of it, iodiag's own"},
        {"cpu.busy_us", K::Metric, "us", cpu, "", "all CPUs' busy time in the window (/proc/stat)"},
        {"cpu.unattributed_us", K::Metric, "us", cpu, "",
         "busy time no process seen at the window's end accounts for (processes that exited in it)"},
        {"cpu.online_cpus", K::Metric, "count", cpu, "", "online CPUs"},
        {"cpu.online_list", K::Fact, "", cpu, "", "online CPUs (comma list)"},
    };
}

CollectorStatus ProcCpuCollector::start(const CollectOptions& opts) {
    root_ = opts.root;
    const long hz = sysconf(_SC_CLK_TCK);
    ticks_per_s_ = hz > 0 ? hz : 100;
    before_ = read_cpu_snapshot(root_, ticks_per_s_);
    CollectorStatus st{name(), !before_.procs.empty(), "", {}};
    if (before_.procs.empty()) st.reason = "no readable " + under_root(root_, "/proc") + "/[pid]/stat";
    return st;
}

void ProcCpuCollector::finish(Evidence& ev) {
    const CpuSnapshot after = read_cpu_snapshot(root_, ticks_per_s_);
    const std::string online = try_read_first_line(under_root(root_, "/sys/devices/system/cpu/online")).value_or("");
    add_proc_cpu_metrics(before_, after, ticks_per_s_, online, root_ == "/" ? static_cast<int>(getpid()) : 0, root_, ev);
}

}  // namespace iodiag
