// diagnose (the default), record and replay: collect -> bundle -> analyze -> render.
#include <iostream>
#include <memory>

#include <spdlog/spdlog.h>

#include "engine/triage/analysis.hpp"
#include "engine/evidence/bundle.hpp"
#include "app/collect.hpp"
#include "app/commands.hpp"
#include "app/rules_loading.hpp"
#include "engine/render/render.hpp"
#include "engine/evidence/json_text.hpp"

namespace iodiag::cli {

namespace {

struct Options {
    CollectOptions collect;
    std::string format = "text";
    std::string rules_dir;
    std::string output;   // record: bundle path
    std::string bundle;   // replay: bundle path
};

// Same evidence in, same verdict out: the live path analyses what a replay of
// its bundle would read (the very text written), so record + replay can never
// disagree.
Evidence as_recorded(const Evidence& ev) { return parse_bundle(bundle_text(ev)); }

void print_verdict(const Verdict& v, const std::string& format) {
    if (format == "json")
        std::cout << json_text(render_json(v), 2) << "\n";
    else
        std::cout << render_text(v);
}

void add_window_options(CLI::App* cmd, Options& o) {
    cmd->add_option("-d,--duration", o.collect.duration_s, "Observation window in seconds (Ctrl-C ends it early)")
        ->default_val(10)
        ->check(CLI::Range(0.1, 3600.0));
    cmd->add_option("--device", o.collect.devices, "Only these block devices (kernel names, e.g. nvme0n1); repeatable");
    cmd->add_option("--pid", o.collect.pid, "Only this process (where a collector can filter)");
    cmd->add_option("--cgroup", o.collect.cgroup, "Only this cgroup path (where a collector can filter)");
    cmd->add_option("--threshold", o.collect.slow_threshold_us,
                    "What counts as a slow operation, in microseconds (slow syscalls for the attribution, "
                    "slow block I/Os for the exemplars); default: the window's own p99")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--interval", o.collect.interval_s,
                    "Length of one interval of the per-interval series kept in the bundle, in seconds "
                    "(heatmaps, share over time); 0 = no series")
        ->default_val(1.0)
        ->check(CLI::Range(0.0, 3600.0));
}

void add_output_options(CLI::App* cmd, Options& o) {
    cmd->add_option("--format", o.format, "Verdict format")->check(CLI::IsMember({"text", "json"}))->default_val("text");
    cmd->add_option("--rules-dir", o.rules_dir, "Directory of rule files (default: the installed or source rules/)");
}

void run_diagnose(const Options& o) {
    RuleSet rules = load_rules_or_exit(o.rules_dir);
    const Evidence ev = as_recorded(collect_evidence(o.collect));
    print_verdict(analyze(ev, rules), o.format);
}

// Writes the bundle and prints the verdict, which a replay of the bundle reproduces.
void run_record(const Options& o) {
    RuleSet rules = load_rules_or_exit(o.rules_dir);
    const Evidence ev = as_recorded(collect_evidence(o.collect));
    try {
        save_bundle(o.output, ev);
    } catch (const std::exception& e) {
        std::cerr << "iodiag record: " << e.what() << "\n";
        throw ExitCode{3};
    }
    std::cerr << "iodiag: evidence of a " << ev.window.duration_s << " s window written to " << o.output
              << " (replay with: iodiag replay " << o.output << ")\n";
    print_verdict(analyze(ev, rules), o.format);
}

void run_replay(const Options& o) {
    RuleSet rules = load_rules_or_exit(o.rules_dir);
    Evidence ev;
    try {
        ev = load_bundle(o.bundle);
    } catch (const std::exception& e) {
        std::cerr << "iodiag replay: " << e.what() << "\n";
        throw ExitCode{3};
    }
    print_verdict(analyze(ev, rules), o.format);
}

}  // namespace

void add_diagnose_commands(CLI::App& app) {
    // Options live as long as the app: CLI11 binds to them by reference.
    static Options top, diag, rec, rep;

    add_window_options(&app, top);
    add_output_options(&app, top);
    app.callback([&app] {
        if (app.get_subcommands().empty()) run_diagnose(top);
    });

    auto* d = app.add_subcommand("diagnose", "Observe for a window and print the verdict (the default command)");
    add_window_options(d, diag);
    add_output_options(d, diag);
    d->callback([] { run_diagnose(diag); });

    auto* r = app.add_subcommand("record", "Observe for a window, write the evidence bundle (JSON) and print the verdict");
    add_window_options(r, rec);
    r->add_option("-o,--output", rec.output, "Bundle file to write (written atomically)")->required();
    add_output_options(r, rec);
    r->callback([] { run_record(rec); });

    auto* p = app.add_subcommand("replay", "Analyse a recorded bundle offline: the same verdict as the live run");
    p->add_option("bundle", rep.bundle, "Bundle written by `iodiag record`")->required()->check(CLI::ExistingFile);
    add_output_options(p, rep);
    p->callback([] { run_replay(rep); });
}

}  // namespace iodiag::cli
