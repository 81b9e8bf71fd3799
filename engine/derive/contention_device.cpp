// Who else used the devices the suffering application waited on: each
// submitter's share of the device's service time (D2C) and of its queue
// occupancy (Q2C: by Little's law, sum of Q2C / window = mean requests in
// flight), and the part of the application's slow time that the others'
// share explains.
#include "engine/derive/contention.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "engine/derive/derived_metrics.hpp"
#include "engine/derive/slow_floor.hpp"
#include "engine/evidence/format.hpp"

namespace iodiag::derive {

namespace {

// One submitter group of a device, as the block collector emits it
// (block.submitter.* {device, comm, cgroup, kind}).
struct Submitter {
    std::string comm, app, cgroup, kind, pid;   // app: its application (application_label.hpp)
    double d2c = 0, q2c = 0, bytes = 0, requests = 0;
    // Its requests' wait in the I/O scheduler (block.submitter.scheduler_wait_us):
    // with D2C, the time they held a tag (a request waiting for a tag holds none).
    double scheduler_wait = 0;
    double tag_hold() const { return d2c + scheduler_wait; }
    // Its part of the device's busy time (block.submitter.service_total_us),
    // -1 where the bundle predates it.
    double service = -1;
};

// A bundle recorded before the groups were kept has the same kernel sums per
// command only (block.submitter_d2c_total_us {device, comm}): each command a
// process, the flusher known by its work's name, the block layer's own
// requests ("(none)") and processes gone before they were named ("?") kernel
// work and nobody's.
std::map<std::string, std::vector<Submitter>> submitters_by_command(const Evidence& ev) {
    std::map<std::string, std::vector<Submitter>> out;
    for (const auto& m : ev.metrics) {
        if (m.name != "block.submitter_d2c_total_us" || !m.labels.count("device") || !m.labels.count("comm")) continue;
        Submitter s;
        s.comm = m.labels.at("comm");
        s.app = application_label(m.labels);
        s.kind = s.comm == "(none)" || s.comm == "?" ? "kernel"
                 : s.comm.find("flush-") != std::string::npos ? "writeback"
                                                              : "process";
        s.d2c = m.value;
        s.q2c = metric_or(ev, "block.submitter_q2c_total_us", m.labels, 0);
        s.requests = metric_or(ev, "block.submitter_requests", m.labels, 0);
        out[m.labels.at("device")].push_back(std::move(s));
    }
    return out;
}

std::map<std::string, std::vector<Submitter>> submitters_by_device(const Evidence& ev) {
    std::map<std::string, std::vector<Submitter>> out;
    for (const auto& m : ev.metrics) {
        if (m.name != "block.submitter.d2c_total_us") continue;
        const auto dev = m.labels.find("device");
        if (dev == m.labels.end()) continue;
        Submitter s;
        auto label = [&](const char* k) {
            const auto it = m.labels.find(k);
            return it == m.labels.end() ? std::string() : it->second;
        };
        s.comm = label("comm");
        s.app = application_label(m.labels);
        s.cgroup = label("cgroup");
        s.kind = label("kind");
        s.d2c = m.value;
        s.q2c = metric_or(ev, "block.submitter.q2c_total_us", m.labels, 0);
        s.service = metric_or(ev, "block.submitter.service_total_us", m.labels, -1);
        s.scheduler_wait = metric_or(ev, "block.submitter.scheduler_wait_us", m.labels, 0);
        s.bytes = metric_or(ev, "block.submitter.bytes", m.labels, 0);
        s.requests = metric_or(ev, "block.submitter.requests", m.labels, 0);
        if (const Fact* p = ev.find_fact("block.submitter.top_pid", m.labels)) s.pid = p->value;
        out[dev->second].push_back(std::move(s));
    }
    for (auto& [dev, subs] : submitters_by_command(ev))
        if (!out.count(dev)) out[dev] = std::move(subs);
    return out;
}

// The slowest flash class's time for one request of `bytes` (seed 000 §3.1:
// a SATA SSD's 4 KiB read, 0.3 ms) plus its transfer over the SATA link (6
// Gb/s with 8b/10b coding: 600 MB/s, the fastest it can move data), x3 (§9.4's
// alert level against a baseline).
constexpr double kFlashAccessUs = 300;
constexpr double kSataLinkBytesPerUs = 600;
double flash_request_us(double bytes) { return 3 * (kFlashAccessUs + bytes / kSataLinkBytesPerUs); }

// Whether the device is slow for the work it was given, whoever gave it: its
// busy time per completed request (utilisation x window / requests: by
// Little's law the time it needs per request, however many it serves at once)
// against what the slowest flash device needs for requests of that size. A
// device that queues requests inside itself has long D2C at depth, but a short
// busy time per request; a slow one has both.
void add_service_per_request(Evidence& ev, const std::string& dev, double bytes, double window_us) {
    const Labels l{{"device", dev}};
    const Metric* util = ev.find_metric("disk.util_pct", l);
    const Metric* requests = ev.find_metric("block.requests", l);
    if (!util || !requests || requests->value <= 0 || window_us <= 0) return;
    const double util_pct = util->value, n = requests->value;
    ev.add_metric("device.busy_per_request_us", l, util_pct / 100 * window_us / n, "us",
                  derived("disk.util_pct x window / block.requests: the device's busy time per completed request "
                          "(Little's law: its service time, however many requests it serves at once)"));
    ev.add_metric("device.flash_request_us", l, flash_request_us(bytes / n), "us",
                  derived("3 x (0.3 ms + bytes per request / 600 MB/s): the slowest flash class's 4 KiB access (seed "
                          "000 §3.1, SATA SSD) and the request's transfer over a SATA link, at §9.4's 3x alert level"));
}

// The others' share (0..1) of the device's time while the application's own
// requests were in it. That time is not recorded; it is at most their D2C
// total (each request alone in flight of its own: exact for a synchronous
// reader) and at most the device's busy time (all of them at once). Of it the
// device gave their requests `own_service`; the rest went to others, and to
// kernel work, which is why it is bounded by the others' busy time.
double others_overlap(const Evidence& ev, const std::string& dev, double own_d2c, double own_service,
                      double other_load, double window_us) {
    const Metric* util = ev.find_metric("disk.util_pct", {{"device", dev}});
    const double busy = util && window_us > 0 ? util->value / 100 * window_us : 0;
    const double in_device = busy > 0 ? std::min(own_d2c, busy) : own_d2c;
    if (in_device <= 0) return 0;
    return std::clamp((in_device - own_service) / in_device, 0.0, std::min(1.0, other_load / in_device));
}

}  // namespace

double sufferer_dirtied_fraction(const Evidence& ev, const std::string& app) {
    const Metric* all = ev.find_metric("io.write_bytes_dirtied");
    if (!all || all->value <= 0) return -1;
    // Its processes', and those of the unit, container or pod it runs in.
    const std::string service = service_of_app(ev, app);
    double mine = 0;
    for (const auto& m : ev.metrics)
        if (m.name == "io.proc_write_bytes")
            if (application_label(m.labels) == app ||
                (!service.empty() && service_of_pid(ev, label_of(m.labels, "pid")) == service))
                mine += m.value;
    return std::min(1.0, mine / all->value);
}

// Per device the suffering application (attr.app.name; where its own
// breakdown was not measured, the command that waited on the device most,
// device.top_submitter) submitted requests to: the others' share of its
// service time and queue occupancy, whether they hold most of it
// (device.contended), the largest other submitter, and the part of the
// application's slow time that explains.
//
// Whose a request is: the submitter's command against the application's
// name (as the syscall collector names an application: its processes summed
// by command). Writeback by the kernel's flusher threads is the dirtiers':
// the kernel records the cgroup it charged (cgroup v2 with the io and memory
// controllers: the dirtier's; v1: the root), not the process, so it is split
// by who dirtied the window's data (/proc/PID/io write_bytes): the
// application's part is its own load, the rest the others'; where the kernel
// charged it to a cgroup (v2), that cgroup says whose it is. Other kernel work
// (a journal thread, a block-layer flush request, a process gone before it was
// named) is in the device's total but nobody's: it is not counted as others'.
void add_device_contention(Evidence& ev) {
    const Fact* app_fact = ev.find_fact("attr.app.name");
    const std::string app_name = app_fact ? app_fact->value : "";
    const double window_us = ev.window.duration_s * 1e6;
    const auto by_device = submitters_by_device(ev);
    // Its page-cache misses' wait for their data (the page_cache class, off
    // CPU in a folio wait under filemap_*) is a wait for reads from the
    // devices its own requests went to: split by its own Q2C there, as its
    // I/O wait is. A buffered reader behind a backup waits for the backup's
    // requests this way, not in the device class.
    const auto own_by_device = app_own_q2c(ev, lower_devices(ev));
    double own_total = 0;
    for (const auto& [d, q] : own_by_device) own_total += q;
    const double cache_fill_pct = metric_or(ev, "attr.sufferer.page_cache_pct", {}, 0);
    for (const auto& [dev, subs] : by_device) {
        std::string app = app_name;
        if (app.empty())
            if (const Fact* top = ev.find_fact("device.top_submitter", {{"device", dev}})) app = top->value;
        if (app.empty()) continue;
        const double dirtied_by_app = sufferer_dirtied_fraction(ev, app);
        // The application's cgroups, as its own requests were charged.
        std::set<std::string> app_cgroups;
        for (const auto& [d, all] : by_device)
            for (const auto& s : all)
                if (s.app == app) app_cgroups.insert(s.cgroup);
        // Its service's other programs are its parts (application_service.cpp).
        const std::string service = service_of_app(ev, app);
        auto ours = [&](const Submitter& s) {
            return s.app == app || (!service.empty() && s.kind == "process" && service_of_cgroup(ev, s.cgroup) == service);
        };
        // What the device's time is split by: its busy time where every group
        // has it (a device that queues internally gives a small request a long
        // D2C behind large ones, so D2C shares flatter the one that waited),
        // else D2C (an older bundle).
        const bool by_service =
            std::all_of(subs.begin(), subs.end(), [](const Submitter& s) { return s.service >= 0; });
        auto load = [by_service](const Submitter& s) { return by_service ? s.service : s.d2c; };
        double total_d2c = 0, total_q2c = 0, own_q2c = 0, other_d2c = 0, other_q2c = 0, bytes = 0;
        double total_hold = 0, other_hold = 0;   // tag-holding time (Submitter::tag_hold)
        double total_load = 0, other_load = 0, own_service = 0, own_d2c = 0;
        std::vector<Submitter> others;
        for (const auto& s : subs) {
            total_d2c += s.d2c;
            total_q2c += s.q2c;
            total_hold += s.tag_hold();
            total_load += load(s);
            bytes += s.bytes;
            if (ours(s)) {
                own_q2c += s.q2c;
                own_d2c += s.d2c;
                own_service += std::max(0.0, s.service);
            } else if (s.kind == "writeback" && s.cgroup != "/" && s.cgroup != "?" && !s.cgroup.empty()) {
                // Charged by the kernel to the dirtier's cgroup (cgroup v2
                // writeback): whose data it is, recorded.
                if (app_cgroups.count(s.cgroup)) {
                    own_q2c += s.q2c;
                    own_d2c += s.d2c;
                    own_service += std::max(0.0, s.service);
                } else {
                    others.push_back(s);
                }
            } else if (s.kind == "writeback" && dirtied_by_app >= 0) {
                own_q2c += s.q2c * dirtied_by_app;
                own_d2c += s.d2c * dirtied_by_app;
                own_service += std::max(0.0, s.service) * dirtied_by_app;
                Submitter o = s;
                o.d2c *= 1 - dirtied_by_app;
                o.q2c *= 1 - dirtied_by_app;
                o.scheduler_wait *= 1 - dirtied_by_app;
                if (o.service > 0) o.service *= 1 - dirtied_by_app;
                others.push_back(std::move(o));
            } else if (s.kind == "process") {
                others.push_back(s);
            } else if (s.kind == "rest") {
                // Groups beyond the largest the collector lists: none of them
                // is the application (it waited on the device, its requests
                // are among the largest), but they have no single name.
                other_d2c += s.d2c;
                other_q2c += s.q2c;
                other_hold += s.tag_hold();
                other_load += load(s);
            }
        }
        // Only where the application's own requests were measured: on a
        // stack's lower device its requests are its upper device's worker's.
        if (own_q2c <= 0 || total_d2c <= 0 || total_load <= 0) continue;
        for (const auto& o : others)
            other_d2c += o.d2c, other_q2c += o.q2c, other_hold += o.tag_hold(), other_load += load(o);
        add_service_per_request(ev, dev, bytes, window_us);
        const Labels l{{"device", dev}};
        const std::string basis = "block.submitter.*{device=" + dev + "}: each submitter's own completed requests";
        const double d2c_others_pct = 100.0 * other_d2c / total_d2c;
        // The basis the device's time is split on (Submitter::load).
        const double others_pct = 100.0 * other_load / total_load;
        const std::string load_basis =
            by_service ? "busy time given to the requests (block.submitter.service_total_us)" : "D2C total";
        // What its requests waited behind in the device: the others' part of
        // the device's time while its own requests were in it (where busy
        // time was measured), else of the whole window's.
        double others_there = others_pct / 100;
        if (by_service && own_d2c > 0) {
            others_there = others_overlap(ev, dev, own_d2c, own_service, other_load, window_us);
            ev.add_metric("device.others_overlap_pct", l, 100.0 * others_there, "pct",
                          derived("(the device's time while " + app + "'s requests were in it - the busy time given "
                                  "to them) / that time, at most the others' busy time over it; that time is its "
                                  "requests' D2C total (exact with one in flight at a time), at most the device's "
                                  "busy time (disk.util_pct x window: with several at once, the whole window's "
                                  "share)"));
        }
        // The kernel's writeback of others' dirty pages among them: what
        // writeback throttling (wbt) would have held back for the
        // application's reads and synchronous writes (rules/settings.yaml).
        double writeback_d2c = 0;
        for (const auto& o : others)
            if (o.kind == "writeback") writeback_d2c += o.d2c;
        ev.add_metric("device.others_writeback_d2c_share_pct", l, 100.0 * writeback_d2c / total_d2c, "pct",
                      derived("the flusher's D2C total on " + dev + " for data others dirtied / all requests' D2C "
                              "total (" + basis + ")"));
        ev.add_fact("device.sufferer", l, app,
                    derived(app_name.empty() ? "device.top_submitter: the command that waited on " + dev +
                                                   " most (no application's own breakdown was measured)"
                                             : "attr.app.name: the application that suffered most"));
        ev.add_metric("device.others_d2c_share_pct", l, d2c_others_pct, "pct",
                      derived("D2C total of the requests of submitters other than " + app +
                              " / all requests' D2C total on the device (" + basis +
                              "; writeback split by who dirtied the data, io.proc_write_bytes; kernel work "
                              "counted as nobody's)"));
        // How much of its requests' time was waiting, not service: behind
        // others' requests (and its own, at depth) in the queue and inside the
        // device. Where busy time was not measured, D2C cannot tell waiting
        // from service: all of it.
        const double waited = by_service ? std::clamp((own_q2c - own_service) / own_q2c, 0.0, 1.0) : 1.0;
        if (by_service) {
            ev.add_metric("device.others_busy_share_pct", l, others_pct, "pct",
                          derived("the busy time the device gave to requests of submitters other than " + app +
                                  " / all of its busy time (" + basis + ", block.submitter.service_total_us; "
                                  "writeback split as above)"));
            ev.add_metric("device.sufferer_queued_pct", l, 100.0 * waited, "pct",
                          derived("(" + app + "'s own Q2C total - the busy time the device gave its requests) / its "
                                  "Q2C total on " + dev + ": the part of its requests' time spent waiting"));
        }
        if (total_q2c > 0)
            ev.add_metric("device.others_q2c_share_pct", l, 100.0 * other_q2c / total_q2c, "pct",
                          derived("Q2C total of the others' requests / all requests' Q2C total: their part of "
                                  "the device's queue occupancy (" + basis + ")"));
        if (window_us > 0) {
            ev.add_metric("device.others_in_flight", l, other_q2c / window_us, "requests",
                          derived("others' Q2C total / window (Little's law: their mean requests in flight)"));
            ev.add_metric("device.sufferer_in_flight", l, own_q2c / window_us, "requests",
                          derived(app + "'s own Q2C total / window (Little's law: its mean requests in flight)"));
        }
        // Its wait on the device: for its requests (queue and service) and,
        // before they existed, for a request or tag (the others' requests
        // hold the tags as they hold the device).
        double others_waited_pct = others_pct;
        const Metric* io_wait = ev.find_metric("device.io_wait_share_pct", l);
        const Metric* tag_wait = ev.find_metric("device.tag_wait_share_pct", l);
        const auto own_here = own_by_device.find(dev);
        const double fill = own_total > 0 && own_here != own_by_device.end() && !app_name.empty()
                                ? cache_fill_pct * own_here->second / own_total
                                : 0;
        if (io_wait) {
            // Copied out: adding metrics may move the vector these point into.
            const double io = io_wait->value, tag = tag_wait ? tag_wait->value : 0;
            ev.add_metric("device.cache_fill_wait_pct", l, fill, "pct",
                          derived("attr.sufferer.page_cache_pct x " + app + "'s own Q2C total on " + dev +
                                  " / its own Q2C total on the devices it submits to: its page-cache misses' wait "
                                  "for data read from " + dev));
            const double w = std::min(100.0, io + tag + fill);
            ev.add_metric("device.sufferer_wait_pct", l, w, "pct",
                          derived("device.io_wait_share_pct + device.tag_wait_share_pct + device.cache_fill_wait_pct: " +
                                  app + "'s slow syscalls' wait for its I/O on " + dev + ", its wait for a request "
                                  "or tag and its page-cache misses' wait for data read from it included"));
            // Against the largest other part of its slow time (a CPU, dirty
            // throttling, a lock...): whether this wait is what it felt most.
            double next = 0;
            for (const auto& c : slow_set_classes())
                if (c != "device" && c != "block_queue" && !(c == "page_cache" && fill > 0))
                    next = std::max(next, metric_or(ev, "attr.sufferer." + c + "_pct", {}, 0));
            ev.add_metric("device.sufferer_wait_lead_pct", l, w - next, "pct",
                          derived("device.sufferer_wait_pct - the largest other part of " + app +
                                  "'s slow time (attr.sufferer.<layer>_pct, device and block queue left out)"));
            // Its wait for a tag is a wait for one of the requests holding
            // them to complete, whatever their service: the tags are the
            // others' in the proportion of the tag-holding time their requests
            // had (from the tag to the completion: D2C and the wait in the
            // scheduler; Little's law: the tags they held on average). Not
            // Q2C: a request waiting for a tag holds none, and four readers
            // queued for the tags behind a backup 32 deep held 45 % of the
            // Q2C (seed 161001) with few tags among them.
            const double tag_others = total_hold > 0 ? other_hold / total_hold : other_load / total_load;
            const double share = (w - std::min(w, tag)) * others_there + std::min(w, tag) * tag_others;
            others_waited_pct = w > 0 ? 100.0 * share / w : 100.0 * others_there;
            ev.add_metric("device.contention_share_pct", l, share, "pct",
                          derived("device.sufferer_wait_pct x the others' share of what " + app + " waited for on " +
                                  dev + ": of the device's " +
                                  (by_service && own_d2c > 0 ? "time while its requests were in it (device.others_overlap_pct)"
                                                             : load_basis) +
                                  " for its I/O and page-cache fills, of the tag-holding time (D2C + scheduler "
                                  "wait) for its tag wait: the part of its slow time spent waiting on " + dev +
                                  " for the others' requests"));
            // What the others cost it: their part of what it waited for, but
            // no more than the part of its requests' time they waited rather
            // than were served; only that can be lost to anyone. A bulk job
            // whose large requests were being served 90 % of their time lost
            // little to a light reader beside it, however much of the busy
            // time the reader's many small requests took. For a reader with
            // one request in flight the two are the same measure (the
            // device's time while its request was in it, less its service).
            ev.add_metric("device.contention_lost_pct", l, std::min(share, w * waited), "pct",
                          derived(std::string("device.contention_share_pct") +
                                  (by_service ? ", at most device.sufferer_wait_pct x device.sufferer_queued_pct"
                                              : " (busy time not measured)") +
                                  ": the part of " + app + "'s slow time its requests waited on " + dev +
                                  " while it served others"));
        }
        // The others cost it: their share of what it waited for on the device
        // as above, against a third where it was measured while its requests
        // were in the device, else (an older bundle: the whole window's D2C)
        // against the majority.
        const double bar = by_service ? kOthersCostlyPct : kOthersMajorityPct;
        ev.add_metric("device.contended", l, others_waited_pct >= bar ? 1 : 0, "bool",
                      derived("1 when other programs' requests held " + format_number(bar) + " % or more of what " +
                              app + " waited for on the device (device.contention_share_pct / "
                              "device.sufferer_wait_pct; without its wait, device." +
                              (by_service ? "others_overlap_pct" : "others_d2c_share_pct") + ")" +
                              (by_service ? ": its requests took 1.5x their own service or longer" : "")));
        if (others.empty()) continue;
        // The largest other (by service time), and the few after it.
        std::sort(others.begin(), others.end(),
                  [&](const Submitter& a, const Submitter& b) { return load(a) > load(b); });
        const Submitter& top = others.front();
        const std::string how = "the submitter group (application, cgroup) with the largest " + load_basis + " on " + dev +
                                " among those other than " + app + " (" + basis + ")";
        ev.add_fact("device.neighbor_comm", l, top.app, derived(how));
        if (!top.pid.empty()) ev.add_fact("device.neighbor_pid", l, top.pid, derived(how + "; its process with the most"));
        if (!top.cgroup.empty())
            ev.add_fact("device.neighbor_cgroup", l, top.cgroup,
                        derived(how + "; the cgroup its I/O was charged to (bio blkcg) with its process's own"));
        ev.add_metric("device.neighbor_d2c_share_pct", l, 100.0 * load(top) / total_load, "pct",
                      derived("its " + load_basis + " / all requests' on " + dev));
        ev.add_metric("device.neighbor_bytes", l, top.bytes, "bytes", derived("bytes of its completed requests"));
        ev.add_metric("device.neighbor_requests", l, top.requests, "count", derived("its completed requests"));
        std::string list;
        for (size_t i = 0; i < others.size() && i < 3; ++i) {
            const auto& o = others[i];
            list += (i ? "; " : "") + o.app + (o.pid.empty() ? "" : " (pid " + o.pid + ")") + " in " +
                    (o.cgroup.empty() ? "?" : o.cgroup) + ": " + format_number(100.0 * load(o) / total_load) +
                    (by_service ? " % of busy time, " : " % of service time, ") + format_value(o.bytes, "bytes");
        }
        ev.add_fact("device.neighbors", l, list, derived("the largest other submitters on " + dev + " by " + load_basis));
        // The flusher writes what others dirtied: who, from /proc/PID/io,
        // where the kernel charged it to no one's cgroup in particular.
        if (top.kind == "writeback" && (top.cgroup == "/" || top.cgroup == "?" || top.cgroup.empty()))
            if (const Fact* w = ev.find_fact("io.top_writer"))
                ev.add_fact("device.neighbor_dirtier", l, w->value,
                            {"derived", "inferred, not recorded by the kernel: the process that dirtied the most data "
                                        "in the window (io.top_writer, /proc/PID/io write_bytes), whose pages the "
                                        "flusher wrote back; the kernel charged the bios to cgroup " +
                                            (top.cgroup.empty() ? std::string("?") : top.cgroup)});
    }
}

std::vector<MetricSpec> device_contention_specs() {
    using K = MetricSpec::Kind;
    const std::string d = layer::kDevice;
    return {
        {"device.others_writeback_d2c_share_pct", K::Metric, "pct", d, "device",
         "share of the device's service time spent writing back data other programs dirtied (the flusher's "
         "requests, the suffering application's own dirty data left out)"},
        {"device.others_d2c_share_pct", K::Metric, "pct", d, "device",
         "share of the device's service time (D2C total) spent on requests of submitters other than the suffering "
         "application (writeback split by who dirtied the data)"},
        {"device.sufferer", K::Fact, "", d, "device",
         "the application whose wait on the device is judged (attr.app.name, else device.top_submitter)"},
        {"device.others_busy_share_pct", K::Metric, "pct", d, "device",
         "share of the device's busy time given to requests of submitters other than the suffering application "
         "(block.submitter.service_total_us; writeback split by who dirtied the data)"},
        {"device.others_overlap_pct", K::Metric, "pct", d, "device",
         "share of the device's time while the suffering application's requests were in it that the device gave to "
         "other programs' requests (its D2C total, at most the device's busy time, less the busy time given to its "
         "requests)"},
        {"device.contention_lost_pct", K::Metric, "pct", d, "device",
         "what the others cost the suffering application on the device: device.contention_share_pct, at most its "
         "wait on the device x the part of its requests' time they waited rather than were served "
         "(device.sufferer_queued_pct)"},
        {"device.sufferer_queued_pct", K::Metric, "pct", d, "device",
         "share of the suffering application's requests' time (Q2C) spent waiting rather than served (its Q2C "
         "less the device's busy time given to them)"},
        {"device.contended", K::Metric, "bool", d, "device",
         "1 when other programs' requests held a third or more of what the suffering application waited for on the "
         "device (its requests took 1.5x their own service or longer): the device's time while its requests were in "
         "it for its I/O, the tag-holding time for its tag wait (the overlap alone where its wait was not measured; "
         "in an older bundle without busy time, the majority of the D2C time)"},
        {"device.others_q2c_share_pct", K::Metric, "pct", d, "device",
         "share of the device's queue occupancy (Q2C total) held by the others' requests"},
        {"device.others_in_flight", K::Metric, "requests", d, "device",
         "the others' mean requests in flight (Q2C total / window, Little's law)"},
        {"device.sufferer_in_flight", K::Metric, "requests", d, "device",
         "the suffering application's own mean requests in flight"},
        {"device.busy_per_request_us", K::Metric, "us", d, "device",
         "the device's busy time per completed request (utilisation x window / requests)"},
        {"device.flash_request_us", K::Metric, "us", d, "device",
         "3x the slowest flash class's time for a request of the device's mean size (0.3 ms + size / 600 MB/s)"},
        {"device.sufferer_wait_pct", K::Metric, "pct", d, "device",
         "share of the suffering application's slow time spent waiting for its I/O on the device, its wait for a "
         "request or tag and its page-cache misses' wait for data read from it included (device.io_wait_share_pct + "
         "device.tag_wait_share_pct + device.cache_fill_wait_pct)"},
        {"device.cache_fill_wait_pct", K::Metric, "pct", d, "device",
         "share of the suffering application's slow time its page-cache misses waited for data read from the device "
         "(its page_cache share split by its own requests' Q2C over the devices)"},
        {"device.sufferer_wait_lead_pct", K::Metric, "pct", d, "device",
         "device.sufferer_wait_pct less the largest other part of the application's slow time (>= 0: the wait "
         "on this device is what it felt most)"},
        {"device.contention_share_pct", K::Metric, "pct", d, "device",
         "part of the suffering application's slow time it waited on the device for others' requests: its I/O "
         "and page-cache fill wait x device.others_overlap_pct (device.others_d2c_share_pct where the busy time "
         "was not measured), its tag wait x the others' share of the tag-holding time (D2C + scheduler wait)"},
        {"device.neighbor_comm", K::Fact, "", d, "device", "the other submitter with the most service time"},
        {"device.neighbor_pid", K::Fact, "", d, "device", "its process with the most service time"},
        {"device.neighbor_cgroup", K::Fact, "", d, "device", "its cgroup (the label as the evidence prints it)"},
        {"device.neighbor_d2c_share_pct", K::Metric, "pct", d, "device",
         "its share of the device's busy time (of its D2C total where busy time was not measured)"},
        {"device.neighbor_bytes", K::Metric, "bytes", d, "device", "bytes of its completed requests"},
        {"device.neighbor_requests", K::Metric, "count", d, "device", "its completed requests"},
        {"device.neighbors", K::Fact, "", d, "device", "the largest other submitters, with their shares and bytes"},
        {"device.neighbor_dirtier", K::Fact, "", d, "device",
         "when the neighbor is the writeback flusher: who dirtied the data (inferred from /proc/PID/io)"},
    };
}

}  // namespace iodiag::derive
