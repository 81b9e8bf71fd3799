#include "app/report_command.hpp"
#include "engine/evidence/atomic_file.hpp"

#include <filesystem>
#include <iostream>

#include "app/bundle_loading.hpp"
#include "app/commands.hpp"
#include "app/diff_command.hpp"
#include "app/site_config_loading.hpp"
#include "engine/evidence/bundle.hpp"
#include "engine/render/heatmap_files.hpp"
#include "engine/render/render.hpp"
#include "engine/render/report_html.hpp"
#include "engine/triage/analysis.hpp"
#include "engine/triage/verdict_diff.hpp"

namespace iodiag::cli {

namespace {

struct ReportCommandOptions {
    std::vector<std::string> bundles;
    std::string output;
    std::string rules_dir;
    std::string config;
    std::string markdown;   // also a ticket body here, its heatmaps as SVG files beside it
    size_t heatmaps_per_name = 6;
};

// The verdict as a Markdown ticket body with the first heatmaps linked as SVG
// files written beside it (a ticket system takes the files as attachments);
// the HTML report stays the richest form. The pictures first, the text last,
// each file atomically.
void write_markdown_ticket(const std::string& path, const Evidence& ev, const Verdict& v) {
    const std::filesystem::path p(path);
    const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
    try {
        const auto files = write_heatmap_files(ev, dir, p.stem().string());
        std::string md = render_markdown(v) + "\n## Latency over time\n\n";
        md += files.empty() ? "No per-interval series in this bundle: the heatmaps need a newer recording "
                              "(iodiag record, --interval 1 by default).\n"
                            : markdown_heatmap_links(files);
        write_file_atomically(path, md);
        std::cerr << "iodiag report: ticket body written to " << path << " with " << files.size()
                  << " heatmap file(s) beside it\n";
    } catch (const std::exception& e) {
        std::cerr << "iodiag report: " << e.what() << "\n";
        throw ExitCode{3};
    }
}

void run_report(const ReportCommandOptions& o) {
    if (!o.markdown.empty() && o.bundles.size() != 1) {
        std::cerr << "iodiag report: --markdown takes one bundle (a before/after comparison is the HTML page)\n";
        throw ExitCode{3};
    }
    // As replay: the rules with the site configuration's overrides (its device
    // entries are in the bundle already, recorded with provenance "config").
    const RuleSet rules = load_rules_and_site_config_or_exit(o.rules_dir, o.config).rules;
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
        if (!o.markdown.empty()) write_markdown_ticket(o.markdown, ev, analyze(ev, rules));
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
    c->add_option("--config", o.config,
                  "Site configuration whose rule overrides apply (default: $IODIAG_CONFIG, else "
                  "/etc/iodiag/iodiag.yaml if it exists)");
    c->add_option("--markdown", o.markdown,
                  "Also a Markdown ticket body (the verdict, then the first heatmaps linked as SVG files written "
                  "beside it, named after it); one bundle only");
    c->add_option("--heatmaps", o.heatmaps_per_name, "Heatmaps drawn per series name (busiest first)")
        ->default_val(6)
        ->check(CLI::Range(1, 64));
    c->callback([] { run_report(o); });
}

}  // namespace iodiag::cli
