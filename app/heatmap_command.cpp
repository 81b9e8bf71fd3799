#include "app/heatmap_command.hpp"
#include "engine/evidence/atomic_file.hpp"

#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "app/bundle_loading.hpp"
#include "app/collect.hpp"
#include "app/commands.hpp"
#include "engine/evidence/bundle.hpp"
#include "engine/render/heatmap.hpp"
#include "engine/render/heatmap_select.hpp"

namespace iodiag::cli {

namespace {

struct HeatmapOptions {
    std::string bundle;
    bool live = false;
    CollectOptions collect;
    std::string record;   // live: also keep the bundle here
    std::string metric;
    std::vector<std::string> devices;
    std::vector<std::string> label_args;   // KEY=VALUE
    std::string output;
    std::string colour = "auto";
    bool list = false;
};

[[noreturn]] void fail(const std::string& message) {
    std::cerr << "iodiag heatmap: " << message << "\n";
    throw ExitCode{3};
}

Labels wanted_labels(const HeatmapOptions& o) {
    Labels l;
    for (const auto& arg : o.label_args) {
        const auto eq = arg.find('=');
        if (eq == std::string::npos || eq == 0) fail("--label wants KEY=VALUE, got '" + arg + "'");
        l[arg.substr(0, eq)] = arg.substr(eq + 1);
    }
    if (o.devices.size() > 1) fail("one --device at a time (a heatmap is of one series)");
    if (!o.devices.empty()) {
        const std::string& d = o.devices.front();
        l["device"] = d.rfind("/dev/", 0) == 0 ? d.substr(5) : d;
    }
    return l;
}

// Where the histogram series should have come from, when there are none:
// "; block_bpf: unavailable: needs root" per BPF collector.
std::string bpf_collector_states(const Evidence& ev) {
    if (!ev.series.histograms.empty() || ev.series.empty()) return "";
    std::string out;
    for (const auto& c : ev.collectors)
        if (c.name == "block_bpf" || c.name == "syscall_bpf")
            out += "; " + c.name + ": " + (c.available ? "ran" : "unavailable: " + c.reason);
    return out;
}

bool colour_wanted(const std::string& mode) {
    if (mode == "always") return true;
    if (mode == "never") return false;
    const char* no_colour = std::getenv("NO_COLOR");
    return isatty(STDOUT_FILENO) && !(no_colour && *no_colour);
}

Evidence evidence_of(const HeatmapOptions& o) {
    if (o.live == !o.bundle.empty()) fail("give a BUNDLE or --live (one of them)");
    if (!o.live) return load_bundle_or_exit("heatmap", o.bundle);
    if (o.collect.interval_s <= 0) fail("--live needs --interval > 0");
    CollectOptions c = o.collect;
    c.devices = o.devices;
    // The same round trip as `record`: what is drawn is what a bundle holds.
    Evidence ev = evidence_from_json(evidence_to_json(collect_evidence(c)));
    if (!o.record.empty()) {
        try {
            save_bundle(o.record, ev);
        } catch (const std::exception& e) {
            fail(e.what());
        }
        std::cerr << "iodiag heatmap: evidence written to " << o.record << "\n";
    }
    return ev;
}

void run_heatmap(const HeatmapOptions& o) {
    const Labels labels = wanted_labels(o);
    const Evidence ev = evidence_of(o);
    const std::string from = o.live ? std::string("the live window") : o.bundle;
    if (o.list) {
        if (ev.series.histograms.empty())
            fail(from + ": " + find_heatmap_series(ev.series, {}).error + bpf_collector_states(ev));
        std::cout << describe_heatmap_series(ev.series);
        return;
    }
    const HeatmapLookup found = find_heatmap_series(ev.series, {o.metric, labels});
    if (!found.series) fail(from + ": " + found.error + bpf_collector_states(ev));
    if (!found.note.empty()) std::cerr << "iodiag heatmap: " << found.note << "\n";
    const Heatmap h = make_heatmap(ev.series, *found.series, ev.window.duration_s);
    if (o.output.empty()) {
        HeatmapTerminalOptions t;
        t.colour = colour_wanted(o.colour);
        std::cout << render_heatmap_terminal(h, t);
        return;
    }
    try {
        write_file_atomically(o.output, render_heatmap_svg(h));
    } catch (const std::exception& e) {
        fail(e.what());
    }
    std::cerr << "iodiag heatmap: " << h.title() << " (" << h.total << " operations, " << h.intervals
              << " intervals) written to " << o.output << "\n";
}

}  // namespace

void add_heatmap_command(CLI::App& app) {
    static HeatmapOptions o;   // CLI11 binds to it by reference
    auto* c = app.add_subcommand(
        "heatmap",
        "Latency heatmap of one histogram series: x = time (one column per interval), y = log2 latency bucket,\n"
        "colour = operations (log scale). From a recorded bundle, or --live from a window observed now.\n"
        "Without -o it is drawn in the terminal (colour only on a tty); with -o a self-contained SVG is written\n"
        "atomically. Default series: block.d2c_us of the busiest device (else syscall.latency_us).\n"
        "Examples:\n"
        "  iodiag heatmap bundle.json --metric block.d2c_us --device vda -o d2c.svg\n"
        "  iodiag heatmap bundle.json --metric syscall.latency_us --label op=write\n"
        "  iodiag heatmap --live --duration 10 --metric block.q2c_us -o q2c.svg   (as root)\n"
        "Exit 0: drawn; 3: bad arguments, unreadable bundle, or no such series (the ones that exist are listed)");
    c->add_option("bundle", o.bundle, "Bundle written by `iodiag record` (schema version 2, with series)")
        ->check(CLI::ExistingFile);
    c->add_flag("--live", o.live, "Observe a window now (root for the BPF collectors) instead of reading a bundle");
    c->add_option("-d,--duration", o.collect.duration_s, "--live: window in seconds (Ctrl-C ends it early)")
        ->default_val(10)
        ->check(CLI::Range(0.1, 3600.0));
    c->add_option("--interval", o.collect.interval_s, "--live: seconds per column")
        ->default_val(1.0)
        ->check(CLI::Range(0.01, 3600.0));
    c->add_option("--threshold", o.collect.slow_threshold_us, "--live: what counts as slow, in us (default: the p99)")
        ->check(CLI::NonNegativeNumber);
    c->add_option("--record", o.record, "--live: also write the window's bundle here (atomically)");
    c->add_option("--metric", o.metric, "Histogram series, e.g. block.d2c_us, block.q2c_us, syscall.latency_us");
    c->add_option("--device", o.devices, "Only the series of this device (kernel name, e.g. nvme0n1); --live: observe only it");
    c->add_option("--label", o.label_args, "Only series with this label, KEY=VALUE (e.g. op=write); repeatable");
    c->add_option("-o,--output", o.output, "SVG file to write (replaced atomically); default: draw in the terminal");
    c->add_option("--color", o.colour, "Terminal colour")->check(CLI::IsMember({"auto", "always", "never"}))->default_val("auto");
    c->add_flag("--list", o.list, "List the histogram series (and their labels) that exist, and exit");
    c->callback([] { run_heatmap(o); });
}

}  // namespace iodiag::cli
