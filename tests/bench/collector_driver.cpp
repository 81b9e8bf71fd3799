// Runs chosen collectors exactly as `iodiag` does (start, sample() once per
// interval, finish) without the engine, so the overhead benchmarks can
// measure one collector, or one collector with and without its series drain,
// beside the peers. Ends after --duration seconds or on SIGTERM/SIGINT; prints
// the available/unavailable status of each collector and the lost-event
// counts to stderr.
//
//   iodiag_bench_collectors --collector block_bpf --interval 1 --duration 60
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>

#include "collectors/bpf_features.hpp"
#include "collectors/registry.hpp"

namespace {
std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }
}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Run iodiag collectors for an overhead benchmark"};
    std::vector<std::string> names;
    double interval_s = 1, duration_s = 3600;
    app.add_option("--collector", names, "Collector name (repeatable); default: all")->expected(1);
    app.add_option("--interval", interval_s, "Series interval in seconds; 0 = no sample() calls");
    app.add_option("--duration", duration_s, "Seconds to run");
    CLI11_PARSE(app, argc, argv);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);

    std::vector<std::unique_ptr<iodiag::Collector>> running;
    iodiag::CollectOptions opts;
    opts.duration_s = duration_s;
    opts.interval_s = interval_s;
    for (auto& c : iodiag::make_collectors()) {
        if (!names.empty() && std::find(names.begin(), names.end(), c->name()) == names.end()) continue;
        const auto st = c->start(opts);
        std::cerr << c->name() << ": " << (st.available ? "available" : "UNAVAILABLE") << " " << st.reason << "\n";
        if (st.available) running.push_back(std::move(c));
    }
    iodiag::release_vmlinux_btf();
    if (running.empty()) return 3;
    std::cerr << "ready\n";
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const auto end = start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(duration_s));
    auto next = interval_s > 0 ? start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(interval_s))
                               : clock::time_point::max();
    size_t i = 0;
    while (!g_stop && clock::now() < end) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        if (clock::now() >= next) {
            for (auto& c : running) c->sample(i);
            ++i;
            next += std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(interval_s));
        }
    }
    if (interval_s > 0) {
        for (auto& c : running) c->sample(i);
    }
    iodiag::Evidence ev;
    for (auto& c : running) c->finish(ev);
    for (const auto& m : ev.metrics)
        if (m.name == "collector.lost_events" && m.value > 0)
            std::cerr << "lost: " << m.labels.at("collector") << " " << m.labels.at("what") << " " << m.value << "\n";
    return 0;
}
