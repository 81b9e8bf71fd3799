// Runs chosen collectors exactly as `iodiag` does (start, sample() once per
// interval, finish) without the engine, so the overhead benchmarks can
// measure one collector, or one collector with and without its series drain,
// beside the peers. Ends after --duration seconds or on SIGTERM/SIGINT; prints
// the available/unavailable status of each collector and the lost-event
// counts to stderr, and the CPU time spent in sample() and finish() (the
// series drain: tests/bench/series_drain_overhead.py divides it by the I/Os).
//
//   iodiag_bench_collectors --collector block_bpf --interval 1 --duration 60
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>

#include <time.h>

#include <CLI/CLI.hpp>

#include "collectors/bpf/bpf_features.hpp"
#include "collectors/registry.hpp"

namespace {
std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

// CPU time of this thread: sample() and finish() run here, the collectors'
// own threads (ring buffer polling) do not count.
uint64_t thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}
}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Run iodiag collectors for an overhead benchmark"};
    std::vector<std::string> names, devices;
    double interval_s = 1, duration_s = 3600;
    app.add_option("--collector", names, "Collector name (repeatable); default: all")->expected(1);
    app.add_option("--device", devices, "Trace only this disk (repeatable); default: all");
    app.add_option("--interval", interval_s, "Series interval in seconds; 0 = no sample() calls");
    app.add_option("--duration", duration_s, "Seconds to run");
    CLI11_PARSE(app, argc, argv);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);

    std::vector<std::unique_ptr<iodiag::Collector>> running;
    iodiag::CollectOptions opts;
    opts.duration_s = duration_s;
    opts.interval_s = interval_s;
    opts.devices = devices;
    for (auto& c : iodiag::make_collectors()) {
        if (!names.empty() && std::find(names.begin(), names.end(), c->name()) == names.end()) continue;
        const auto st = c->start(opts);
        std::cerr << c->name() << ": " << (st.available ? "available" : "UNAVAILABLE") << " " << st.reason << "\n";
        if (st.available) running.push_back(std::move(c));
    }
    iodiag::release_vmlinux_btf();
    if (running.empty()) return 3;
    for (auto& c : running) c->all_started();
    std::cerr << "ready\n";
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const auto end = start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(duration_s));
    auto next = interval_s > 0 ? start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(interval_s))
                               : clock::time_point::max();
    size_t i = 0;
    uint64_t sample_ns = 0;
    while (!g_stop && clock::now() < end) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        if (clock::now() >= next) {
            const uint64_t t0 = thread_cpu_ns();
            for (auto& c : running) c->sample(i);
            sample_ns += thread_cpu_ns() - t0;
            ++i;
            next += std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(interval_s));
        }
    }
    if (interval_s > 0) {
        const uint64_t t0 = thread_cpu_ns();
        for (auto& c : running) c->sample(i);
        sample_ns += thread_cpu_ns() - t0;
        ++i;
    }
    iodiag::Evidence ev;
    const uint64_t t0 = thread_cpu_ns();
    for (auto& c : running) c->finish(ev);
    const uint64_t finish_ns = thread_cpu_ns() - t0;
    std::cerr << "samples " << i << " sample_cpu_ns " << sample_ns << " finish_cpu_ns " << finish_ns << "\n";
    for (const auto& m : ev.metrics)
        if (m.name == "collector.lost_events" && m.value > 0)
            std::cerr << "lost: " << m.labels.at("collector") << " " << m.labels.at("what") << " " << m.value << "\n";
    return 0;
}
