#include "app/collect.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <exception>
#include <future>
#include <optional>
#include <thread>

#include <spdlog/spdlog.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "app/progress.hpp"
#include "app/start_lanes.hpp"
#include "app/startup_heap.hpp"
#include "collectors/bpf/bpf_features.hpp"
#include "collectors/bpf/deferred_release.hpp"
#include "collectors/cgroup/cgroup_names.hpp"
#include "collectors/procfs/applications.hpp"
#include "collectors/registry.hpp"

namespace iodiag::cli {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void on_sigint(int) { g_interrupted = 1; }

template <class T>
void append_all(std::vector<T>& to, std::vector<T>&& from) {
    to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

// What collectors finished into `part` (they append, never look up or change
// an earlier entry), after what `ev` holds.
void append_evidence(Evidence& ev, Evidence&& part) {
    append_all(ev.collectors, std::move(part.collectors));
    append_all(ev.metrics, std::move(part.metrics));
    append_all(ev.facts, std::move(part.facts));
    append_all(ev.histograms, std::move(part.histograms));
    append_all(ev.exemplars, std::move(part.exemplars));
    append_all(ev.series.histograms, std::move(part.series.histograms));
    append_all(ev.series.values, std::move(part.series.values));
}

}  // namespace

Evidence collect_evidence(const CollectOptions& opts, bool show_progress, const std::function<void()>& during_window) {
    Evidence ev;
    utsname u{};
    if (uname(&u) == 0) {
        ev.host = u.nodename;
        ev.kernel = u.release;
    }
    if (geteuid() != 0)
        spdlog::warn("not running as root: BPF collectors will be unavailable and their layers not observed");

    // What the previous window's collectors left to children (a process that
    // observes again, e.g. watch) is let go before this window's start.
    let_deferred_children_go();
    auto collectors = make_collectors();
    // Slow starters (BPF load and attach) first; the snapshot collectors then
    // start right before the window and finish right after it.
    std::stable_partition(collectors.begin(), collectors.end(),
                          [](const std::unique_ptr<Collector>& c) { return c->slow_to_start(); });
    std::vector<bool> running(collectors.size(), false);
    std::vector<CollectorStatus> status(collectors.size());
    auto start_one = [&](size_t i) {
        const auto t0 = std::chrono::steady_clock::now();
        status[i] = collectors[i]->start(opts);
        spdlog::debug("{}: start took {:.1f} ms", collectors[i]->name(),
                      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    };
    // The starts' large allocations come from the start-up heap
    // (app/startup_heap.hpp), trimmed once the window is open: the trim
    // (~3 ms) then delays nothing.
    std::optional<StartupHeap> heap{std::in_place};
    const size_t lanes = usable_cpus();
    start_slow_starters(collectors, start_one, lanes);
    // Every BPF program is loaded: the probes' parsed kernel BTF can go.
    release_vmlinux_btf();
    // The snapshots (/proc walks: the longest with many processes) on the
    // cores the loads have freed, right before the window.
    start_fast_starters(collectors, start_one, lanes);
    for (size_t i = 0; i < collectors.size(); ++i) {
        CollectorStatus& st = status[i];
        if (st.name.empty()) st.name = collectors[i]->name();
        running[i] = st.available;
        if (!st.available && !collectors[i]->applicable()) {
            // Nothing of its kind on this host (no Ceph OSD): not a layer left
            // unobserved, so neither the evidence nor the verdict mentions it.
            spdlog::debug("{}: {}", st.name, st.reason);
            continue;
        }
        if (!st.available) spdlog::info("{} unavailable: {}", st.name, st.reason);   // the verdict lists it too
        ev.collectors.push_back(std::move(st));
    }
    // Collectors that share a kernel hook link up once all have started.
    for (size_t i = 0; i < collectors.size(); ++i)
        if (running[i]) collectors[i]->all_started();

    // The window is the time every available collector was observing: from the
    // last start() to the first finish().
    const auto wall_start = std::chrono::system_clock::now();
    const auto start = std::chrono::steady_clock::now();
    spdlog::debug("window starts: {} s", opts.duration_s);   // tests time a fault from here
    heap.reset();
    std::future<void> side;
    if (during_window) side = std::async(std::launch::async, during_window);
    g_interrupted = 0;
    auto previous = std::signal(SIGINT, on_sigint);
    const auto deadline =
        start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(opts.duration_s));
    // Short sleeps, so Ctrl-C ends the window promptly; at each interval's end
    // every running collector samples its series.
    using clock = std::chrono::steady_clock;
    const bool series = opts.interval_s > 0;
    const auto interval = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(opts.interval_s));
    size_t intervals = 0;
    auto sample_all = [&] {
        for (size_t i = 0; i < collectors.size(); ++i)
            if (running[i]) collectors[i]->sample(intervals);
        ++intervals;
    };
    auto next_sample = series ? start + interval : clock::time_point::max();
    std::optional<WindowProgress> progress;
    progress.emplace(opts.duration_s, show_progress, opts.root);
    // The side work's exception, once it has thrown, ends the window.
    std::exception_ptr side_error;
    auto side_failed = [&] {
        if (side.valid() && side.wait_for(clock::duration::zero()) == std::future_status::ready) {
            try {
                side.get();
            } catch (...) {
                side_error = std::current_exception();
            }
        }
        return side_error != nullptr;
    };
    while (!g_interrupted && !side_failed() && clock::now() < deadline) {
        // Not while the side work may still print (the rules' diagnostics):
        // its lines would land in the middle of the progress line.
        if (!side.valid()) progress->update(std::chrono::duration<double>(clock::now() - start).count());
        const auto wake = std::min(deadline, next_sample);
        const clock::duration left = wake - clock::now();
        std::this_thread::sleep_for(std::clamp<clock::duration>(left, clock::duration::zero(), std::chrono::milliseconds(50)));
        if (series && clock::now() >= next_sample && next_sample < deadline) {
            sample_all();
            next_sample += interval;
        }
    }
    progress.reset();   // erases the progress line before anything else is printed
    // The last (possibly shorter) interval ends with the window.
    if (series) sample_all();
    std::signal(SIGINT, previous);
    if (side_error) std::rethrow_exception(side_error);   // the collectors are released on the way out
    if (g_interrupted) spdlog::warn("interrupted: the window was cut short");

    const auto end = std::chrono::steady_clock::now();
    // From here a collector's question about a process that exited waits for
    // the syscall collector's record of it (applications.hpp).
    ApplicationIndex::of_root(opts.root).window_over();
    // Reverse start order: the snapshot collectors here, each slow starter
    // (BPF map reads and detaches, the longer part) on a thread of its own at
    // the same time, into evidence of its own appended after: the same
    // evidence, in the same order, as one after the other, sooner.
    auto finish_one = [&](size_t i, Evidence& into) {
        const auto t0 = std::chrono::steady_clock::now();
        collectors[i]->finish(into);
        spdlog::debug("{}: finish took {:.1f} ms", collectors[i]->name(),
                      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    };
    std::vector<Evidence> parts(collectors.size());
    std::vector<std::exception_ptr> errors(collectors.size());
    auto finish_apart = [&](size_t i) {
        try {
            finish_one(i, parts[i]);
        } catch (...) {
            errors[i] = std::current_exception();
        }
    };
    std::vector<std::thread> finishers;
    for (size_t i = 0; i < collectors.size(); ++i)
        if (running[i] && collectors[i]->slow_to_start()) finishers.emplace_back(finish_apart, i);
    // The snapshots whose finish only appends (the /proc walkers) on the
    // lanes, into evidence of their own; then the others here, each in its
    // place in the same reverse order, with those parts appended in theirs.
    std::vector<size_t> snapshots_apart;
    for (size_t i = collectors.size(); i-- > 0;)
        if (running[i] && !collectors[i]->slow_to_start() && collectors[i]->finish_only_appends())
            snapshots_apart.push_back(i);
    run_on_lanes(snapshots_apart, finish_apart, lanes);
    std::exception_ptr error;
    for (size_t i = collectors.size(); i-- > 0 && !error;) {
        if (!running[i] || collectors[i]->slow_to_start()) continue;
        if (collectors[i]->finish_only_appends()) {
            error = errors[i];
            append_evidence(ev, std::move(parts[i]));
            continue;
        }
        try {
            finish_one(i, ev);
        } catch (...) {
            error = std::current_exception();
        }
    }
    for (auto& t : finishers) t.join();
    for (size_t i = collectors.size(); i-- > 0;) {
        if (!collectors[i]->slow_to_start()) continue;   // the snapshots' parts are in already
        if (!error) error = errors[i];
        append_evidence(ev, std::move(parts[i]));
    }
    if (error) std::rethrow_exception(error);
    if (side.valid()) side.get();   // still going when the window ended: waited for here, its exception thrown
    // Every collector has written its cgroup labels: each gets the name people
    // use for it, read from the host now so that a replay shows the same.
    const auto t_names = std::chrono::steady_clock::now();
    add_cgroup_names(ev, opts.root);
    spdlog::debug("cgroup names took {:.1f} ms",
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_names).count());
    ev.window.start_unix = std::chrono::duration<double>(wall_start.time_since_epoch()).count();
    ev.window.duration_s = std::chrono::duration<double>(end - start).count();
    if (series) {
        ev.series.start_unix = ev.window.start_unix;
        ev.series.interval_s = opts.interval_s;
        ev.series.count = intervals;
    }
    return ev;
}

}  // namespace iodiag::cli
