// Whether the idle I/O priority class explains the suffering application's
// wait in the I/O scheduler (issue 34, docs/settings.md "idle I/O class").
#include "engine/derive/derive_steps.hpp"

#include <algorithm>
#include <map>


namespace iodiag::derive {

namespace {

struct DeviceRequests {
    double requests = 0, idle = 0, scheduler_wait_us = 0, q2c_us = 0;
};

// The application's requests per device, from its submitter groups
// (block.submitter.*{device, app, cgroup, kind}; bpf/block.bpf.c).
std::map<std::string, DeviceRequests> requests_of(const Evidence& ev, const std::string& app) {
    std::map<std::string, DeviceRequests> out;
    for_each_device_metric_of(ev, "block.submitter.", app, [&](const std::string& d, const Metric& m) {
        DeviceRequests& r = out[d];
        if (m.name == "block.submitter.requests") r.requests += m.value;
        else if (m.name == "block.submitter.idle_class_requests") r.idle += m.value;
        else if (m.name == "block.submitter.scheduler_wait_us") r.scheduler_wait_us += m.value;
        else if (m.name == "block.submitter.q2c_total_us") r.q2c_us += m.value;
    });
    return out;
}

}  // namespace

// A process in the idle I/O priority class (ionice -c3, systemd
// IOSchedulingClass=idle) has its requests dispatched by mq-deadline and bfq
// only when no request of another class waits (mq-deadline lets one through
// after prio_aging_expire, 10 s by default): beside any other program's I/O
// they sit in the scheduler. Measured per request in the kernel (its ioprio at
// completion, its insert-to-issue time); the share is that wait over all the
// application's syscall time (a synchronous reader's request is its
// syscall's wait; an asynchronous one's overlap, so it is capped at 100).
// The block collector sums a request when it completes: a starved reader's
// requests still in the scheduler when the window ends are in none of those
// sums, while its syscalls waiting for them are counted (in flight, with
// their time so far). Its wait for its own requests (the syscall collector's
// device class, in-flight syscalls included), times the part of its
// completed requests' block time (on every device it uses) spent in this
// device's scheduler, counts them too; the larger of the two is its wait (a
// reader 100x slower behind a backup: 39 % from the completed requests, 99 %
// in the ground truth, seed 201000).
void add_ioprio_setting(Evidence& ev) {
    const Fact* app = judged_application(ev);
    if (!app) return;
    const double app_us = app_syscall_time_us(ev, app->value);
    if (app_us <= 0) return;
    // Its own wait for its requests over all its syscall time, where the
    // collector measured its slow syscalls in parts (attr.app.*).
    double io_wait_pct = 0;
    if (const Fact* measured = ev.find_fact("attr.app.name"); measured && measured->value == app->value)
        io_wait_pct = metric_or(ev, "attr.app.device_pct", {}, 0) * metric_or(ev, "attr.app.time_us", {}, 0) / app_us;
    const auto requests = requests_of(ev, app->value);
    double own_q2c_us = 0;   // its requests' block time on every device: its I/O wait is over all of them
    for (const auto& [d, r] : requests) own_q2c_us += r.q2c_us;
    for (const auto& [d, r] : requests) {
        if (r.requests <= 0 || r.idle <= 0) continue;
        const Labels l{{"device", d}};
        const std::string of = " of " + app->value + " on " + d;
        ev.add_metric("setting.idle_class_pct", l, 100.0 * r.idle / r.requests, "pct",
                      derived("100 x block.submitter.idle_class_requests / block.submitter.requests" + of));
        const double completed = 100.0 * r.scheduler_wait_us / app_us;
        const double waiting = own_q2c_us > 0 ? io_wait_pct * std::min(1.0, r.scheduler_wait_us / own_q2c_us) : 0;
        ev.add_metric("setting.idle_class_wait_pct", l, std::min(100.0, std::max(completed, waiting)), "pct",
                      derived("the larger of 100 x block.submitter.scheduler_wait_us" + of +
                              " / its syscall time (syscall.proc.time_us summed: its completed requests) and its "
                              "wait for its own requests (attr.app.device_pct x attr.app.time_us / that time: "
                              "those still waiting included) x block.submitter.scheduler_wait_us / its "
                              "block.submitter.q2c_total_us on every device; at most 100"));
    }
}

std::vector<MetricSpec> ioprio_setting_specs() {
    using K = MetricSpec::Kind;
    return {
        {"setting.idle_class_pct", K::Metric, "pct", layer::kBlockQueue, "device",
         "share of the suffering application's requests on the device that were of the idle I/O priority class"},
        {"setting.idle_class_wait_pct", K::Metric, "pct", layer::kBlockQueue, "device",
         "its requests' wait in the I/O scheduler over all its syscall time"},
    };
}

}  // namespace iodiag::derive
