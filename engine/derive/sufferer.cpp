// The application that suffered most and what its slow syscalls waited for.
#include "engine/derive/derive_steps.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "engine/derive/slow_floor.hpp"
#include "engine/evidence/application_label.hpp"

namespace iodiag::derive {

// The application with the most time in traced syscalls: its processes'
// times summed (a database's backends, a job's workers), from
// syscall.proc.time_us (the top 20 processes).
void add_top_app(Evidence& ev) {
    std::map<std::string, std::pair<double, int>> by_app;
    for (const auto& m : ev.metrics) {
        if (m.name != "syscall.proc.time_us") continue;
        const std::string app = application_label(m.labels);
        if (app.empty()) continue;
        by_app[app].first += m.value;
        by_app[app].second += 1;
    }
    const auto best = std::max_element(by_app.begin(), by_app.end(),
                                       [](const auto& a, const auto& b) { return a.second.first < b.second.first; });
    if (best == by_app.end()) return;
    ev.add_fact("attr.slow.top_app", {}, best->first,
                derived("application with the most time in traced syscalls, its processes summed (" +
                        std::to_string(best->second.second) + " process(es) among the top 20 of syscall.proc.time_us)"));
}

// The share a finding reports: what the application that suffered most
// waited for (attr.app.*, its own slow syscalls) when the collector measured
// it; else the machine's slow set (attr.slow.*), which on a busy machine also
// holds other programs' syscalls.
void add_sufferer_shares(Evidence& ev) {
    const bool own = ev.find_metric("attr.app.ops") != nullptr;
    const Fact* app = ev.find_fact("attr.app.name");
    std::string top;
    double best = 0;
    for (const auto& c : slow_set_classes()) {
        const Metric* m = ev.find_metric((own ? "attr.app." : "attr.slow.") + c + "_pct");
        if (!m) continue;
        if (m->value > best) best = m->value, top = c;
        ev.add_metric("attr.sufferer." + c + "_pct", {}, m->value, "pct",
                      derived(own ? "attr.app." + c + "_pct: the slow syscalls of " + (app ? app->value : "the application") +
                                        ", the application that suffered most"
                                  : "attr.slow." + c + "_pct: the machine's slow set (the application's own was not "
                                                       "measured)"));
    }
    // The time per slow syscall spent blocked off CPU on something other
    // than a CPU (storage, a lock, a limit, ...; not the filesystem's on-CPU
    // work, not the run queue): a thread that never blocks is CPU-bound, and
    // its run-queue delay inside a syscall is time slicing that happened to
    // end there, not a wait that followed its I/O.
    double blocked = 0;
    bool any_class = false;
    for (const auto& c : slow_set_classes())
        if (c != layer::kCpu && c != layer::kFilesystem)
            if (const Metric* m = ev.find_metric("attr.sufferer." + c + "_pct")) blocked += m->value, any_class = true;
    // Over its own slow syscalls where measured, else the machine's slow set
    // (bundles recorded before attr.app.time_us existed: the machine's); the
    // run-queue delay per slow syscall below is on the same basis.
    const Metric* app_time = own ? ev.find_metric("attr.app.time_us") : nullptr;
    const bool own_time = app_time != nullptr;
    double slow_total = 0;
    if (own_time) slow_total = app_time->value;
    else
        for (const auto& c : slow_set_classes()) slow_total += metric_or(ev, "attr.slow." + c + "_us", {}, 0);
    const double slow_ops = metric_or(ev, own_time ? "attr.app.ops" : "attr.slow.ops", {}, 0);
    if (any_class && slow_ops > 0 && slow_total > 0)
        ev.add_metric("attr.sufferer.blocked_us_per_op", {}, std::min(100.0, blocked) / 100 * slow_total / slow_ops,
                      "us",
                      derived("sum of attr.sufferer.<class>_pct of the off-CPU waits (all classes but cpu and "
                              "filesystem) x the slow syscalls' time / their count (" +
                              std::string(own_time ? "attr.app.time_us / attr.app.ops" : "the machine's slow set") +
                              "): the time per slow syscall blocked on something other than a CPU"));

    // Run-queue delay per slow syscall (the CPU rule's gate), on the same basis.
    const Metric* cpu = ev.find_metric(own_time ? "attr.app.cpu_pct" : "attr.slow.cpu_pct");
    const Metric* time = ev.find_metric(own_time ? "attr.app.time_us" : "attr.slow.cpu_us");
    const Metric* ops = ev.find_metric(own_time ? "attr.app.ops" : "attr.slow.ops");
    // Copied out: adding metrics may move the vector these point into.
    const std::optional<double> cpu_pct = cpu ? std::optional(cpu->value) : std::nullopt;
    const std::optional<double> slow_us = time ? std::optional(time->value) : std::nullopt;
    if (cpu && time && ops && ops->value > 0)
        ev.add_metric("attr.sufferer.cpu_us_per_op", {},
                      (own_time ? cpu->value / 100 * time->value : time->value) / ops->value, "us",
                      derived(own_time ? "attr.app.cpu_pct x attr.app.time_us / attr.app.ops"
                                       : "attr.slow.cpu_us / attr.slow.ops (the application's own not measured)"));
    // Run-queue delay as a share of ALL of the application's traced syscall
    // time, and how much of that time its slow set covers: a slow set that
    // covers a small part of it (a fast reader preempted now and then)
    // speaks for its tail, not for where its time goes. Its slow syscalls'
    // delay is measured; its faster syscalls' is estimated with the run-queue
    // share of the machine's syscalls below the window's p99 (attr.all less
    // attr.slow), mostly its own when it holds most of the syscall time.
    if (own_time && app && cpu_pct && slow_us && *slow_us > 0)
        if (const double all_us = std::max(*slow_us, app_syscall_time_us(ev, app->value)); all_us > 0) {
            const std::string from = " / the time of all of " + app->value +
                                     "'s traced syscalls (syscall.proc.time_us summed over its processes)";
            double fast_total = 0, fast_cpu = 0;
            for (const auto& c : slow_set_classes()) {
                const double part = metric_or(ev, "attr.all." + c + "_us", {}, 0) -
                                    metric_or(ev, "attr.slow." + c + "_us", {}, 0);
                fast_total += std::max(0.0, part);
                if (c == "cpu") fast_cpu = std::max(0.0, part);
            }
            const double fast_ratio = fast_total > 0 ? fast_cpu / fast_total : 0;
            ev.add_metric("attr.app.slow_part_pct", {}, 100.0 * *slow_us / all_us, "pct",
                          derived("attr.app.time_us" + from));
            ev.add_metric("attr.sufferer.cpu_all_pct", {},
                          std::min(100.0, (*cpu_pct / 100 * *slow_us + (all_us - *slow_us) * fast_ratio) / all_us * 100),
                          "pct",
                          derived("(run-queue delay in its slow syscalls, attr.app.cpu_pct x attr.app.time_us, + its "
                                  "other syscalls' time x the run-queue share of the machine's syscalls below the "
                                  "window's p99, attr.all.cpu_us - attr.slow.cpu_us over attr.all - attr.slow)" + from));
        }
    if (!top.empty())
        ev.add_fact("attr.sufferer.top_layer", {}, top,
                    derived(std::string("layer with the largest attr.sufferer.<layer>_pct (") +
                            (own ? "the suffering application's own slow syscalls" : "the machine's slow set") + ")"));
}

std::vector<MetricSpec> sufferer_specs() {
    using K = MetricSpec::Kind;
    std::vector<MetricSpec> specs = {
        {"attr.slow.top_app", K::Fact, "", layer::kSyscall, "",
         "application with the most time in traced syscalls, its processes summed"},
        {"attr.sufferer.blocked_us_per_op", K::Metric, "us", layer::kSyscall, "",
         "time per slow syscall of the suffering application blocked off CPU on something other than a CPU"},
        {"attr.sufferer.cpu_us_per_op", K::Metric, "us", layer::kCpu, "",
         "mean run-queue delay per slow syscall of the suffering application"},
        {"attr.sufferer.cpu_all_pct", K::Metric, "pct", layer::kCpu, "",
         "run-queue delay as a share of all of the suffering application's traced syscall time "
         "(measured in its slow syscalls, estimated from the machine's faster ones in the others)"},
        {"attr.app.slow_part_pct", K::Metric, "pct", layer::kSyscall, "",
         "share of the suffering application's traced syscall time in its slow syscalls (attr.app.*)"},
        {"attr.sufferer.top_layer", K::Fact, "", layer::kSyscall, "",
         "layer with the largest share of the suffering application's slow time"},
    };
    for (const auto& c : slow_set_classes())
        specs.push_back({"attr.sufferer." + c + "_pct", K::Metric, "pct", c == "other" ? layer::kSyscall : c, "",
                         "share of " + c + " in the slow syscalls of the application that suffered most "
                         "(attr.app.*), or of the machine's slow set where that was not measured"});
    return specs;
}

}  // namespace iodiag::derive
