// Who suffered most, as one process: the application the findings judge,
// its process, that process's cgroup and the file of that process's slow
// syscalls (attr.who.*). Each field is read from the same process, never from
// the machine's slow set as a whole: the collector's attr.slow.top_cgroup is
// the cgroup with the most slow time and attr.slow.top_file the file with the
// most slow exemplar time of any process, and side by side with another
// process's name they once read "app postgres; comm chromium".
#include "engine/derive/derive_steps.hpp"

#include <map>
#include <set>

#include "engine/evidence/application_label.hpp"

namespace iodiag::derive {

namespace {

// The key with the most summed time, "" when none.
std::string largest(const std::map<std::string, double>& by) {
    std::string best;
    double most = 0;
    for (const auto& [k, v] : by)
        if (v > most) most = v, best = k;
    return best;
}

double exemplar_total_us(const Exemplar& e) {
    const auto t = e.values.find("total_us");
    return t == e.values.end() ? 0 : t->second;
}

}  // namespace

void add_who(Evidence& ev) {
    // Copied out: adding facts may move the vector these point into.
    auto fact = [&](const char* name) -> std::optional<Fact> {
        const Fact* f = ev.find_fact(name);
        return f ? std::optional<Fact>(*f) : std::nullopt;
    };
    const auto app_fact = fact("attr.app.name"), top_app = fact("attr.slow.top_app");
    const auto top_comm = fact("attr.slow.top_comm"), top_pid = fact("attr.slow.top_pid");
    const auto victim = fact("attr.victim.application");
    std::string app;
    Provenance app_from;
    if (victim && victim->value != "(none)") {
        // The operator said who suffered (--victim): it is judged, whatever
        // its rank among the window's applications.
        app = victim->value;
        app_from = derived("attr.victim.application: the application given by --victim (" +
                           victim->provenance.source + ")");
    } else if (app_fact) {
        app = app_fact->value;
        app_from = derived("attr.app.name: the application whose slow syscalls the findings' shares are over (" +
                           app_fact->provenance.source + ")");
    } else if (top_app) {
        app = top_app->value;
        app_from = derived("attr.slow.top_app: the application's own slow syscalls not measured, the command with "
                           "the most time in traced syscalls (" + top_app->provenance.source + ")");
    } else if (top_comm) {
        app = top_comm->value;
        app_from = derived("attr.slow.top_comm: the command of the process with the most slow-set time, the "
                           "application's own breakdown not measured (" + top_comm->provenance.source + ")");
    }
    if (app.empty()) return;
    ev.add_fact("attr.who.app", {}, app, app_from);
    if (const auto given = fact("attr.victim.given"))
        ev.add_fact("attr.who.given", {}, given->value,
                    derived(victim && victim->value != "(none)"
                                ? "given by the operator (--victim), not found by iodiag"
                                : "given by the operator (--victim) but matching no process that made a traced "
                                  "syscall: the application shown is the one that suffered most"));

    // Its process: the one the collector found slowest overall when that is one
    // of its processes, else its process with the most slow exemplar time, else
    // with the most traced syscall time.
    // Its processes: an exemplar's comm is its thread's ("ThreadPoolForeg" in
    // chromium), syscall.proc.time_us has the process's.
    std::set<std::string> app_pids;
    for (const auto& m : ev.metrics)
        if (m.name == "syscall.proc.time_us" && application_label(m.labels) == app) app_pids.insert(label_of(m.labels, "pid"));
    std::string pid;
    Provenance pid_from;
    if (top_pid && (app_pids.count(top_pid->value) || (top_comm && top_comm->value == app))) {
        pid = top_pid->value;
        pid_from = derived("attr.slow.top_pid, a process of " + app + " (" + top_pid->provenance.source + ")");
    }
    if (pid.empty()) {
        std::map<std::string, double> by_pid;
        for (const auto& e : ev.exemplars) {
            const std::string p = label_of(e.labels, "pid");
            if (e.kind == "syscall" && !p.empty() && (application_label(e.labels) == app || app_pids.count(p)))
                by_pid[p] += exemplar_total_us(e);
        }
        pid = largest(by_pid);
        pid_from = derived("the process of " + app + " with the most time in slow syscall exemplars");
    }
    if (pid.empty()) {
        std::map<std::string, double> by_pid;
        for (const auto& m : ev.metrics)
            if (m.name == "syscall.proc.time_us" && application_label(m.labels) == app)
                by_pid[label_of(m.labels, "pid")] += m.value;
        by_pid.erase("");
        pid = largest(by_pid);
        pid_from = derived("the process of " + app + " with the most traced syscall time (syscall.proc.time_us)");
    }
    if (pid.empty()) return;
    ev.add_fact("attr.who.pid", {}, pid, pid_from);
    for (const auto& m : ev.metrics)
        if (m.name == "syscall.proc.time_us" && label_of(m.labels, "pid") == pid && m.labels.count("comm")) {
            ev.add_fact("attr.who.comm", {}, m.labels.at("comm"),
                        derived("the command name of pid " + pid + " (syscall.proc.time_us)"));
            break;
        }

    // That process's cgroup (a task may have moved: the one it spent most time in).
    std::map<std::string, double> cgroup_time;
    for (const auto& m : ev.metrics)
        if (m.name == "syscall.proc.time_us" && label_of(m.labels, "pid") == pid)
            cgroup_time[label_of(m.labels, "cgroup")] += m.value;
    cgroup_time.erase("");
    std::string cgroup = largest(cgroup_time);
    Provenance cgroup_from = derived("the cgroup of pid " + pid + " in syscall.proc.time_us (per process and cgroup)");
    std::map<std::string, double> cgroup_slow, file_slow;
    for (const auto& e : ev.exemplars) {
        if (e.kind != "syscall" || label_of(e.labels, "pid") != pid) continue;
        cgroup_slow[label_of(e.labels, "cgroup")] += exemplar_total_us(e);
        file_slow[label_of(e.labels, "file")] += exemplar_total_us(e);
    }
    if (cgroup.empty()) {
        cgroup_slow.erase("");
        cgroup = largest(cgroup_slow);
        cgroup_from = derived("the cgroup of pid " + pid + "'s slow syscall exemplars");
    }
    if (!cgroup.empty()) ev.add_fact("attr.who.cgroup", {}, cgroup, cgroup_from);
    // "?": a syscall on no file (the collector's label for an fd without a dentry).
    file_slow.erase("");
    file_slow.erase("?");
    if (const std::string file = largest(file_slow); !file.empty())
        ev.add_fact("attr.who.file", {}, file,
                    derived("the file of pid " + pid + "'s slow syscall exemplars with the most time"));
}

std::vector<MetricSpec> who_specs() {
    using K = MetricSpec::Kind;
    return {
        {"attr.who.app", K::Fact, "", layer::kSyscall, "",
         "the application that suffered most (attr.app.name, else attr.slow.top_app, else the command of "
         "attr.slow.top_comm)"},
        {"attr.who.pid", K::Fact, "", layer::kSyscall, "", "its process that suffered most"},
        {"attr.who.comm", K::Fact, "", layer::kSyscall, "", "that process's command name"},
        {"attr.who.given", K::Fact, "", layer::kSyscall, "",
         "the --victim the operator gave (the application shown was given, not found, when it matched one)"},
        {"attr.who.cgroup", K::Fact, "", layer::kCgroup, "", "that process's cgroup (a cgroup label)"},
        {"attr.who.file", K::Fact, "", layer::kFilesystem, "",
         "the file of that process's slow syscalls with the most time"},
    };
}

}  // namespace iodiag::derive
