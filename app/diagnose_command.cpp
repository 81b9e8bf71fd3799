// diagnose (the default), record and replay: collect -> bundle -> analyze -> render.
#include <chrono>
#include <iostream>
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>

#include "engine/triage/analysis.hpp"
#include "engine/evidence/bundle.hpp"
#include "app/collect.hpp"
#include "app/command_options.hpp"
#include "app/commands.hpp"
#include "app/fleet_outputs.hpp"
#include "app/site_config_loading.hpp"

namespace iodiag::cli {

namespace {

struct Options {
    CollectOptions collect;
    VerdictOptions verdict;
    std::string output;   // record: bundle path
    std::string bundle;   // replay: bundle path
};

void print_verdict(const Verdict& v, const Options& o) { std::cout << render_verdict(v, o.verdict.format); }

void add_window_options(CLI::App* cmd, Options& o) { cli::add_window_options(cmd, o.collect, 10); }
void add_output_options(CLI::App* cmd, Options& o) { add_verdict_options(cmd, o.verdict); }

struct Observed {
    SiteSetup site;
    Evidence ev;
};

// The live evidence with the site configuration's device references, as its
// bundle holds it, and the rules and site configuration. Those load during
// the window (~20-25 ms of YAML parsing and rule checks on one core), which
// leaves the cores idle, rather than beside the collectors' start, which
// keeps them busy; an error in them cuts the window short and ends the
// program with exit code 3, with nothing printed or written but the error.
Observed observe(const Options& o) {
    std::optional<SiteSetup> site;
    Evidence ev = collect_evidence(o.collect, o.verdict.format == "text", [&] {
        site = load_rules_and_site_config_or_exit(o.verdict.rules_dir, o.verdict.config);
    });
    apply_site_devices(site->config, ev);
    return {std::move(*site), as_recorded(ev)};
}

void run_diagnose(const Options& o) {
    const auto started = std::chrono::steady_clock::now();
    check_fleet_outputs(o.verdict.fleet, "diagnose");
    const auto [site, ev] = observe(o);
    const Verdict v = analyze(ev, site.rules);
    print_verdict(v, o);
    write_fleet_outputs(o.verdict.fleet, v, ev, "diagnose", started);
}

// Writes the bundle and prints the verdict, which a replay of the bundle reproduces.
void run_record(const Options& o) {
    const auto started = std::chrono::steady_clock::now();
    check_fleet_outputs(o.verdict.fleet, "record");
    const auto [site, ev] = observe(o);
    try {
        save_bundle(o.output, ev);
    } catch (const std::exception& e) {
        std::cerr << "iodiag record: " << e.what() << "\n";
        throw ExitCode{3};
    }
    std::cerr << "iodiag: evidence of a " << ev.window.duration_s << " s window written to " << o.output
              << " (replay with: iodiag replay " << o.output << ")\n";
    const Verdict v = analyze(ev, site.rules);
    print_verdict(v, o);
    write_fleet_outputs(o.verdict.fleet, v, ev, "record", started);
}

// The bundle carries the device references the recording used; the rule
// overrides come from this host's site configuration.
void run_replay(const Options& o) {
    const auto started = std::chrono::steady_clock::now();
    check_fleet_outputs(o.verdict.fleet, "replay");
    const SiteSetup site = load_rules_and_site_config_or_exit(o.verdict.rules_dir, o.verdict.config);
    Evidence ev;
    try {
        ev = load_bundle(o.bundle);
    } catch (const std::exception& e) {
        std::cerr << "iodiag replay: " << e.what() << "\n";
        throw ExitCode{3};
    }
    const Verdict v = analyze(ev, site.rules);
    print_verdict(v, o);
    write_fleet_outputs(o.verdict.fleet, v, ev, "replay", started);
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
