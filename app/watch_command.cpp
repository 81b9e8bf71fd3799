// iodiag watch: the flight recorder. Keeps only the cheap sources on
// (/proc/diskstats, /proc/pressure, /proc/vmstat, once per interval); when a
// trigger holds (app/watch_triggers.hpp) it records a full bundle with every
// collector for a window, analyses it, keeps the capture (bundle + trigger +
// the seconds before + verdict) in its directory, and holds back further
// captures for --min-gap. Bounded: at most --keep captures and --max-bytes,
// pruning only its own files.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <ctime>
#include <deque>
#include <iostream>

#include <malloc.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <sys/utsname.h>

#include "engine/evidence/atomic_file.hpp"
#include "app/collect.hpp"
#include "app/command_options.hpp"
#include "app/commands.hpp"
#include "app/fleet_outputs.hpp"
#include "app/site_config_loading.hpp"
#include "app/watch_sampler.hpp"
#include "app/watch_store.hpp"
#include "app/watch_triggers.hpp"
#include "collectors/bpf/deferred_release.hpp"
#include "collectors/sysfs/block_queue_config.hpp"
#include "engine/evidence/json_text.hpp"
#include "engine/evidence/bundle.hpp"
#include "engine/render/render.hpp"
#include "engine/triage/analysis.hpp"

namespace iodiag::cli {

namespace {

using nlohmann::json;
using clock = std::chrono::steady_clock;

struct WatchOptions {
    CollectOptions capture;          // the full capture's window
    TriggerConfig triggers;
    std::string dir = "/var/lib/iodiag/watch";
    double interval_s = 1.0;         // cheap sampling interval
    double min_gap_min = 30;
    std::size_t keep = 20;
    std::uintmax_t max_bytes = 256ull << 20;
    double history_s = 600;          // samples kept (device history, context before a trigger)
    double context_s = 120;          // seconds before the trigger written with a capture
    double refresh_references_s = 600;
    double run_for_s = 0;            // 0 = until stopped
    std::size_t max_captures = 0;    // 0 = no limit
    VerdictOptions verdict;          // --format, --rules-dir, --prometheus, --journal
};

volatile std::sig_atomic_t g_stop = 0;
void on_stop(int) { g_stop = 1; }

double now_unix() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Nominal latencies per device, as a diagnosis judges them: the site
// configuration's reference, else the device's class (block_queue_config)
// through the engine's reference table. No capture has been analysed yet
// when the cheap sampling starts: the analysis's view of what the devices'
// configuration alone says.
std::map<std::string, DeviceReference> device_references(const CollectOptions& opts, const SiteConfig& site) {
    Evidence configured;
    BlockQueueConfigCollector config;
    if (config.start(opts).available) config.finish(configured);
    apply_site_devices(site, configured);
    const Evidence ev = judged_evidence(configured);
    std::map<std::string, DeviceReference> refs;
    for (const auto& m : ev.metrics) {
        const bool read = m.name == "device.nominal_read_latency_ms";
        if ((!read && m.name != "device.nominal_write_latency_ms") || !m.labels.count("device") || m.unit != "ms")
            continue;
        auto& r = refs[m.labels.at("device")];
        (read ? r.read_ms : r.write_ms) = m.value;
        r.source = m.provenance.kind + ": " + m.provenance.source;
    }
    return refs;
}

json sample_json(const WatchSample& s) {
    json j{{"t_unix", s.t_unix}, {"interval_s", s.interval_s}};
    auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
    j["psi"] = {{"io_some_pct", opt(s.io_some_pct)}, {"io_full_pct", opt(s.io_full_pct)},
                {"memory_some_pct", opt(s.memory_some_pct)}};
    j["devices"] = json::object();
    for (const auto& [dev, d] : s.devices)
        j["devices"][dev] = {{"util_pct", d.util_pct},
                             {"read_iops", d.read.iops},
                             {"read_await_ms", opt(d.read.await_ms)},
                             {"write_iops", d.write.iops},
                             {"write_await_ms", opt(d.write.await_ms)}};
    j["vm_per_s"] = s.vm_per_s;
    return j;
}

json trigger_json(const TriggerHit& h, double t_unix) {
    return {{"kind", h.kind},           {"device", h.device},       {"direction", h.direction},
            {"value", h.value},         {"threshold", h.threshold}, {"reference", h.reference},
            {"reason", h.reason},       {"t_unix", t_unix}};
}

class Watcher {
public:
    explicit Watcher(const WatchOptions& o) : o_(o), store_(o.dir), sampler_("/", o.capture.devices) {}

    void run() {
        const auto started = clock::now();
        check_fleet_outputs(o_.verdict.fleet, "watch");
        SiteSetup site = load_rules_and_site_config_or_exit(o_.verdict.rules_dir, o_.verdict.config);
        rules_ = std::move(site.rules);
        site_ = std::move(site.config);
        try {
            store_.prepare();
        } catch (const std::exception& e) {
            std::cerr << "iodiag watch: " << e.what() << "\n";
            throw ExitCode{3};
        }
        refresh_references();
        last_capture_ = store_.last_capture_unix();   // the rate limit holds across restarts
        std::cerr << "iodiag watch: sampling /proc/diskstats, /proc/pressure and /proc/vmstat every "
                  << o_.interval_s << " s; capturing " << o_.capture.duration_s << " s with every collector into "
                  << store_.dir() << " when I/O pressure >= " << o_.triggers.psi_some_pct << " % for "
                  << o_.triggers.psi_for_s << " s or a device's await > " << o_.triggers.await_factor
                  << " x its reference for " << o_.triggers.await_for_s << " s; at most one capture per "
                  << o_.min_gap_min << " min, keeping " << o_.keep << " captures / " << o_.max_bytes
                  << " bytes\n";
        for (const auto& [dev, r] : references_)
            spdlog::info("watch: {} reference read {} ms, write {} ms ({})", dev, r.read_ms.value_or(-1),
                         r.write_ms.value_or(-1), r.source);

        g_stop = 0;
        struct sigaction sa {};
        sa.sa_handler = on_stop;   // no SA_RESTART: a signal ends the sleep at once
        sigaction(SIGTERM, &sa, nullptr);
        sigaction(SIGINT, &sa, nullptr);

        const auto interval = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(o_.interval_s));
        auto last_snapshot = clock::now();
        sampler_.take(now_unix(), 0);
        auto next = last_snapshot + interval;
        auto last_refresh = last_snapshot;
        while (!g_stop) {
            if (o_.run_for_s > 0 && clock::now() - started >= std::chrono::duration<double>(o_.run_for_s)) break;
            if (o_.max_captures > 0 && captures_ >= o_.max_captures) break;
            sleep_until(next);
            if (g_stop) break;
            const auto t = clock::now();
            next += interval;
            if (next < t) next = t + interval;   // fell behind (suspend, a capture): no burst of samples
            const double elapsed = std::chrono::duration<double>(t - last_snapshot).count();
            last_snapshot = t;
            if (auto s = sampler_.take(now_unix(), elapsed)) {
                push(std::move(*s));
                ++fresh_;
            }
            if (t - last_refresh >= std::chrono::duration<double>(o_.refresh_references_s)) {
                refresh_references();
                last_refresh = t;
            }
            // A stretch that began before the last capture was judged already:
            // the next capture needs a stretch of its own.
            if (auto hit = evaluate_triggers(samples_, o_.triggers, references_); hit && hit->samples <= fresh_) {
                if (rate_limited()) continue;
                capture(*hit);
                // The capture's collectors ran in between: start the cheap
                // deltas afresh (the samples before stay: history, context).
                sampler_.restart();
                sampler_.take(now_unix(), 0);
                last_snapshot = clock::now();
                next = last_snapshot + interval;
                fresh_ = 0;
            }
        }
        std::signal(SIGTERM, SIG_DFL);
        std::signal(SIGINT, SIG_DFL);
        std::cerr << "iodiag watch: stopped after " << captures_ << " capture(s)\n";
    }

private:
    static void sleep_until(clock::time_point when) {
        const auto left = when - clock::now();
        if (left <= clock::duration::zero()) return;
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
        timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
        ::nanosleep(&ts, nullptr);   // EINTR (a stop signal) ends it early
    }

    void push(WatchSample s) {
        samples_.push_back(std::move(s));
        double kept = 0;
        for (const auto& x : samples_) kept += x.interval_s;
        while (samples_.size() > 1 && kept - samples_.front().interval_s >= o_.history_s) {
            kept -= samples_.front().interval_s;
            samples_.pop_front();
        }
    }

    void refresh_references() { references_ = device_references(o_.capture, site_); }

    bool rate_limited() {
        if (!last_capture_) return false;
        const double since = now_unix() - *last_capture_;
        if (since >= o_.min_gap_min * 60) return false;
        if (!held_back_logged_) {
            spdlog::info("watch: a trigger holds, but the last capture was {:.0f} s ago (--min-gap {} min)", since,
                         o_.min_gap_min);
            held_back_logged_ = true;
        }
        return true;
    }

    void capture(const TriggerHit& hit) {
        held_back_logged_ = false;
        const double t = now_unix();
        last_capture_ = t;
        try {
            capture_at(hit, t);
        } catch (const std::exception& e) {
            // A service keeps watching: the next trigger may fare better.
            std::cerr << "iodiag watch: capture failed: " << e.what() << "\n";
        }
        // The capture's collectors and evidence are gone: give their memory
        // back, so the recorder idles at its sampling footprint again.
        ::malloc_trim(0);
    }

    void capture_at(const TriggerHit& hit, double t) {
        const auto started = clock::now();
        std::cerr << "iodiag watch: trigger: " << hit.reason << "; capturing " << o_.capture.duration_s << " s\n";
        json before = json::array();
        for (const auto& s : samples_)
            if (s.t_unix >= t - o_.context_s) before.push_back(sample_json(s));

        const std::string stamp = store_.new_stamp(t);
        Evidence live = collect_evidence(o_.capture);
        // The collectors' children hold their tracepoints until let go (at
        // exit, for a one-shot run): a watcher lives on, and until then every
        // syscall of the machine would still take the kernel's tracing path.
        let_deferred_children_go();
        apply_site_devices(site_, live);   // as a diagnosis does: the bundle holds the references used
        const Evidence ev = as_recorded(live);
        const Verdict v = analyze(ev, rules_);
        ++captures_;
        try {
            save_bundle(store_.bundle_path(stamp), ev);
            json record{{"schema", "iodiag-watch-capture"},
                        {"schema_version", 1},
                        {"host", ev.host},
                        {"trigger", trigger_json(hit, t)},
                        {"bundle", stamp + ".bundle.json"},
                        {"before", before},
                        {"verdict", render_json(v)}};
            write_file_atomically(store_.record_path(stamp), json_text(record, 1) + "\n");
        } catch (const std::exception& e) {
            // A service keeps watching: the next capture may find room.
            std::cerr << "iodiag watch: capture " << stamp << " not kept: " << e.what() << "\n";
        }
        for (const auto& f : store_.prune(o_.keep, o_.max_bytes)) spdlog::info("watch: pruned {}", f);

        // Text and Markdown get a line saying which capture this is; JSON
        // formats carry nothing but the verdict (the record file has the rest).
        if (o_.verdict.format == "text" || o_.verdict.format == "markdown")
            std::cout << "iodiag watch: capture " << stamp << " (" << store_.bundle_path(stamp)
                      << "), trigger: " << hit.reason << "\n";
        std::cout << render_verdict(v, o_.verdict.format);
        std::cout.flush();
        try {
            write_fleet_outputs(o_.verdict.fleet, v, ev, "watch", started);
        } catch (const ExitCode&) {
            // already reported; a service keeps watching
        }
    }

    const WatchOptions& o_;
    CaptureStore store_;
    WatchSampler sampler_;
    RuleSet rules_;
    SiteConfig site_;
    std::map<std::string, DeviceReference> references_;
    std::deque<WatchSample> samples_;
    std::size_t captures_ = 0;
    std::size_t fresh_ = 0;                   // samples since the last capture
    std::optional<double> last_capture_;      // Unix time
    bool held_back_logged_ = false;
};

}  // namespace

void add_watch_command(CLI::App& app) {
    static WatchOptions o;
    auto* w = app.add_subcommand(
        "watch",
        "Flight recorder: sample the cheap sources (/proc/diskstats, /proc/pressure, /proc/vmstat) every "
        "second, and when I/O pressure or a device's latency stays high, record a full bundle with every "
        "collector, analyse it and keep it (rate-limited, bounded). Runs until stopped (SIGTERM/Ctrl-C); "
        "meant to run as the service iodiag-watch.service.");
    w->add_option("--dir", o.dir, "Directory of the captures (created if missing; only its watch-* files are pruned)")
        ->default_val(o.dir);
    w->add_option("--capture-duration", o.capture.duration_s, "Window of a full capture, in seconds")
        ->default_val(10)
        ->check(CLI::Range(1.0, 600.0));
    w->add_option("--interval", o.interval_s, "Sampling interval of the cheap sources, in seconds")
        ->default_val(o.interval_s)
        ->check(CLI::Range(0.1, 60.0));
    w->add_option("--psi-some", o.triggers.psi_some_pct,
                  "Trigger: I/O pressure 'some' (share of each second some task waited on I/O) at or above "
                  "this percentage ...")
        ->default_val(o.triggers.psi_some_pct)
        ->check(CLI::Range(0.0, 100.0));
    w->add_option("--psi-for", o.triggers.psi_for_s, "... for this many seconds")
        ->default_val(o.triggers.psi_for_s)
        ->check(CLI::Range(0.1, 3600.0));
    w->add_option("--await-factor", o.triggers.await_factor,
                  "Trigger: a device's read or write await above this factor x its reference (its nominal "
                  "latency by class or site configuration, else its own median over --history) ...")
        ->default_val(o.triggers.await_factor)
        ->check(CLI::Range(1.0, 1e6));
    w->add_option("--await-for", o.triggers.await_for_s, "... for this many seconds")
        ->default_val(o.triggers.await_for_s)
        ->check(CLI::Range(0.1, 3600.0));
    w->add_option("--min-iops", o.triggers.min_iops,
                  "Seconds with fewer completions per second in a direction do not judge its await")
        ->default_val(o.triggers.min_iops)
        ->check(CLI::NonNegativeNumber);
    w->add_option("--history", o.history_s,
                  "Seconds of samples kept: a device's own history, and the context written before a trigger")
        ->default_val(o.history_s)
        ->check(CLI::Range(10.0, 86400.0));
    w->add_option("--history-min", o.triggers.history_min_samples,
                  "Samples with I/O a device needs before its own median is its reference")
        ->default_val(o.triggers.history_min_samples)
        ->check(CLI::Range(1, 1000000));
    w->add_option("--min-gap", o.min_gap_min, "At most one capture per this many minutes (across restarts)")
        ->default_val(o.min_gap_min)
        ->check(CLI::Range(0.0, 10080.0));
    w->add_option("--keep", o.keep, "Captures kept; older ones are pruned")->default_val(o.keep)->check(CLI::Range(1, 100000));
    w->add_option("--max-bytes", o.max_bytes, "Bytes the captures may hold together (e.g. 256MiB); older ones are pruned")
        ->transform(CLI::AsSizeValue(false))
        ->default_str("256MiB");
    w->add_option("--device", o.capture.devices, "Only these block devices (kernel names); repeatable");
    w->add_option("--run-for", o.run_for_s, "Stop after this many seconds (0: until stopped)")
        ->default_val(0)
        ->check(CLI::NonNegativeNumber);
    w->add_option("--max-captures", o.max_captures, "Stop after this many captures (0: no limit)")->default_val(0);
    add_verdict_options(w, o.verdict);
    w->callback([] {
        o.context_s = std::min(o.context_s, o.history_s);
        Watcher(o).run();
    });
}

}  // namespace iodiag::cli
