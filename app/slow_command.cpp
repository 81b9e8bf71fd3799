#include "app/slow_command.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "collectors/bpf/block_bpf.hpp"
#include "app/commands.hpp"
#include "engine/evidence/json_text.hpp"

namespace iodiag::cli {

namespace {

std::atomic<bool> g_slow_interrupted{false};
void on_slow_signal(int) { g_slow_interrupted = true; }

// "1ms", "250us", "2s", "500ns"; a bare number is milliseconds.
std::optional<uint64_t> parse_threshold_ns(const std::string& text) {
    size_t used = 0;
    double v = 0;
    try {
        v = std::stod(text, &used);
    } catch (...) {
        return std::nullopt;
    }
    const std::string unit = text.substr(used);
    double scale = 0;
    if (unit == "ns") scale = 1;
    else if (unit == "us" || unit == "µs") scale = 1e3;
    else if (unit == "ms" || unit.empty()) scale = 1e6;
    else if (unit == "s") scale = 1e9;
    if (scale == 0 || v < 0) return std::nullopt;
    return uint64_t(v * scale + 0.5);
}

// Nanoseconds as microseconds with three decimals: exact, so the printed stage
// columns add up to the printed total digit for digit.
std::string us3(uint64_t ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%llu.%03llu", (unsigned long long)(ns / 1000),
                  (unsigned long long)(ns % 1000));
    return buf;
}

void print_text_header() {
    std::printf("%-8s %-16s %7s %-8s %-7s %12s %7s %5s %11s %11s %11s %11s %11s %s\n", "TIME(s)",
                "COMM", "PID", "DEVICE", "OP", "SECTOR", "BYTES", "QD", "Q2G(us)", "G2I(us)",
                "I2D(us)", "D2C(us)", "Q2C(us)", "SEEN");
}

void print_text(const BlockIoExemplar& x, double t) {
    std::printf("%-8.3f %-16s %7u %-8s %-7s %12llu %7u %5u %11s %11s %11s %11s %11s %s\n", t,
                x.comm.c_str(), x.pid, x.device.c_str(), x.op.c_str(), (unsigned long long)x.sector,
                x.bytes, x.depth, us3(x.stage_ns[0]).c_str(), us3(x.stage_ns[1]).c_str(),
                us3(x.stage_ns[2]).c_str(), us3(x.stage_ns[3]).c_str(), us3(x.stage_ns[4]).c_str(),
                x.observed.c_str());
    std::fflush(stdout);
}

void print_json(const BlockIoExemplar& x, double t) {
    nlohmann::json j{{"time_s", t},       {"comm", x.comm},   {"pid", x.pid},
                     {"cgroup_id", x.cgroup_id}, {"device", x.device}, {"op", x.op},
                     {"sector", x.sector}, {"bytes", x.bytes}, {"depth_at_issue", x.depth},
                     {"observed", x.observed}};
    const auto& stages = block_stage_names();
    for (int s = 0; s < kBlockStages; ++s) {
        j[stages[s] + "_ns"] = x.stage_ns[s];
        j[stages[s] + "_us"] = x.stage_ns[s] / 1000.0;
    }
    std::cout << json_text(j) << '\n' << std::flush;
}

struct SlowArgs {
    std::string threshold;
    std::string device;
    int pid = 0;
    std::string format = "text";
    double duration_s = 0;
};

int run_slow(const SlowArgs& a) {
    BlockTracerOptions opts;
    opts.device = a.device;
    opts.pid = a.pid > 0 ? uint32_t(a.pid) : 0;
    const bool fixed = !a.threshold.empty();
    if (fixed) {
        auto ns = parse_threshold_ns(a.threshold);
        if (!ns) {
            std::cerr << "iodiag slow: bad --threshold '" << a.threshold
                      << "' (want e.g. 1ms, 250us, 2s)\n";
            return 3;
        }
        opts.threshold_ns = *ns;
    }
    KernelFeatureProbe probe;
    BlockTracer tracer;
    std::string note;
    if (auto why = tracer.start(opts, probe, note); !why.empty()) {
        std::cerr << "iodiag slow: block tracing unavailable: " << why << '\n';
        return 3;
    }
    if (!note.empty()) std::cerr << "iodiag slow: " << note << '\n';
    if (!fixed)
        std::cerr << "iodiag slow: no --threshold: using the p99 of Q2C over the previous second "
                     "(first exemplars after one second)\n";
    std::signal(SIGINT, on_slow_signal);
    std::signal(SIGTERM, on_slow_signal);

    const bool json = a.format == "json";
    if (!json) print_text_header();
    const auto t0 = std::chrono::steady_clock::now();
    auto next_interval = t0 + std::chrono::seconds(1);
    const std::function<void(const BlockIoExemplar&)> sink = [&](const BlockIoExemplar& x) {
        const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        json ? print_json(x, t) : print_text(x, t);
    };
    while (!g_slow_interrupted) {
        tracer.poll(100, sink);
        const auto now = std::chrono::steady_clock::now();
        if (a.duration_s > 0 && now - t0 >= std::chrono::duration<double>(a.duration_s)) break;
        if (now >= next_interval) {
            next_interval += std::chrono::seconds(1);
            auto stats = tracer.drain();   // keeps the kernel aggregates from piling up
            if (!fixed) {
                Log2Histogram q2c;
                for (const auto& [dev, s] : stats) q2c.merge(s.stage_hist_all_ops(4));
                if (!q2c.empty()) tracer.set_threshold_ns(uint64_t(q2c.percentile(99).value * 1000.0));
            }
        }
    }
    tracer.poll(0, sink);
    std::cerr << "iodiag slow: exemplars dropped (ring buffer full): " << tracer.exemplars_dropped()
              << ", requests not timed (slot busy): " << tracer.tracking_failures() << '\n';
    return 0;
}

}  // namespace

void add_slow_command(CLI::App& app) {
    auto args = std::make_shared<SlowArgs>();
    auto* cmd = app.add_subcommand(
        "slow",
        "Stream slow block I/Os as they complete, each with its measured block-layer stages:\n"
        "Q2G (waiting for a request/tag), G2I (plugging), I2D (scheduler queue),\n"
        "D2C (device service time), Q2C (total). Q2G+G2I+I2D+D2C = Q2C exactly.\n"
        "SEEN lists the stages observed (Q G I D C); a stage not passed (no I without\n"
        "an I/O scheduler) is zero-length. Needs root (BPF tracepoints).");
    cmd->add_option("--threshold", args->threshold,
                    "Report I/Os with Q2C at least this long (e.g. 1ms, 250us); default: the p99 "
                    "of the previous second");
    cmd->add_option("--device", args->device, "Only this disk (kernel name, e.g. nvme0n1, loop0)");
    cmd->add_option("--pid", args->pid, "Only I/O submitted by this process (thread group id)");
    cmd->add_option("--format", args->format, "text (default) or json (one JSON object per line)")
        ->check(CLI::IsMember({"text", "json"}));
    cmd->add_option("--duration", args->duration_s, "Stop after this many seconds (default: until Ctrl-C)");
    cmd->callback([args] { throw ExitCode{run_slow(*args)}; });
}

}  // namespace iodiag::cli
