#include "app/report_command.hpp"

#include <iostream>

#include "app/bundle_loading.hpp"
#include "app/commands.hpp"
#include "app/diff_command.hpp"
#include "app/rules_loading.hpp"
#include "engine/evidence/bundle.hpp"
#include "engine/render/report_html.hpp"
#include "engine/triage/analysis.hpp"
#include "engine/triage/verdict_diff.hpp"

namespace iodiag::cli {

namespace {

struct ReportCommandOptions {
    std::vector<std::string> bundles;
    std::string output;
    std::string rules_dir;
    size_t heatmaps_per_name = 6;
};

void run_report(const ReportCommandOptions& o) {
    const RuleSet rules = load_rules_or_exit(o.rules_dir);
    ReportOptions opts;
    opts.generator = std::string("iodiag ") + IODIAG_VERSION;
    opts.heatmaps_per_name = o.heatmaps_per_name;
    std::string html;
    if (o.bundles.size() == 1) {
        const Evidence ev = load_bundle_or_exit("report", o.bundles[0]);
        opts.source = o.bundles[0];
        html = render_report_html(ev, analyze(ev, rules), opts);
        if (ev.series.empty())
            std::cerr << "iodiag report: " << o.bundles[0]
                      << " has no per-interval series: the report says which pictures need a newer recording\n";
    } else {
        const Evidence before = load_bundle_or_exit("report", o.bundles[0]);
        const Evidence after = load_bundle_or_exit("report", o.bundles[1]);
        opts.source = "before: " + o.bundles[0] + " · after: " + o.bundles[1];
        VerdictDiff d = diff_evidence(before, after, rules);
        d.smart = smart_growth(before, after);
        html = render_diff_report_html(before, analyze(before, rules), after, analyze(after, rules), d, opts);
    }
    try {
        write_file_atomically(o.output, html);
    } catch (const std::exception& e) {
        std::cerr << "iodiag report: " << e.what() << "\n";
        throw ExitCode{3};
    }
    std::cerr << "iodiag report: written to " << o.output << "\n";
}

}  // namespace

void add_report_command(CLI::App& app) {
    static ReportCommandOptions o;   // CLI11 binds to it by reference
    auto* c = app.add_subcommand(
        "report",
        "One self-contained HTML file (inline SVG and CSS, no script, nothing fetched) from a recorded bundle:\n"
        "the verdict, each layer's share over time, latency heatmaps per syscall and per busy device, the\n"
        "findings with evidence, mechanism and ordered fixes, the decision trail, collectors, slowest operations.\n"
        "With two bundles (BEFORE AFTER): what a fix changed (the `iodiag diff` content) and both recordings'\n"
        "pictures side by side, each pair on one scale. A bundle without series (schema version 1) still gives\n"
        "a report that says which pictures need a newer recording.\n"
        "Exit 0: written (atomically); 3: bad arguments, an unreadable bundle, or rules that do not load");
    c->add_option("bundles", o.bundles, "BUNDLE, or BEFORE AFTER")->required()->expected(1, 2)->check(CLI::ExistingFile);
    c->add_option("-o,--output", o.output, "HTML file to write (replaced atomically)")->required();
    c->add_option("--rules-dir", o.rules_dir, "Directory of rule files (default: the installed or source rules/)");
    c->add_option("--heatmaps", o.heatmaps_per_name, "Heatmaps drawn per series name (busiest first)")
        ->default_val(6)
        ->check(CLI::Range(1, 64));
    c->callback([] { run_report(o); });
}

}  // namespace iodiag::cli
