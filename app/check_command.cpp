// iodiag check: the scheduled health check, as a Nagios / Icinga plugin.
// A short window (5 s by default), the usual analysis, then one status line
// with performance data and the exit code a plugin runner expects:
//   0 OK, 1 WARNING, 2 CRITICAL (the worst finding's severity), 3 UNKNOWN
//   (nothing could be observed, bad arguments, unreadable rules).
// The mapping itself is engine/render/plugin_output.hpp.
#include <iostream>

#include "app/check_command.hpp"
#include "app/collect.hpp"
#include "app/command_options.hpp"
#include "app/commands.hpp"
#include "app/site_config_loading.hpp"
#include "engine/render/plugin_output.hpp"
#include "engine/render/render.hpp"
#include "engine/triage/analysis.hpp"

namespace iodiag::cli {

namespace {

struct CheckOptions {
    CollectOptions collect;
    VerdictOptions verdict;
};

// What a plugin runner reads: the status line first; with --format text the
// full verdict follows as the plugin's long output. JSON and Markdown are
// documents for tools and tickets: they are printed alone (JSON carries the
// status line and perfdata in its "check" object), and the exit code is the
// same in every format.
void print_result(const Verdict& v, const PluginResult& r, const std::string& format) {
    if (format == "json") {
        nlohmann::json j = render_json(v);
        j["check"] = plugin_json(r);
        std::cout << j.dump(2) << "\n";
    } else if (format == "text") {
        std::cout << r.status_line() << "\n" << plugin_long_output(render_text(v));
    } else {
        std::cout << render_verdict(v, format);
    }
}

// A plugin prints a status line whatever happens.
[[noreturn]] void unknown(const std::string& why) {
    std::cout << "IODIAG UNKNOWN - " << why << "\n";
    throw ExitCode{static_cast<int>(PluginState::Unknown)};
}

void run_check(const CheckOptions& o) {
    SiteSetup site;
    try {
        std::string why;
        try {
            site = load_rules_and_site_config_or_exit(o.verdict.rules_dir, o.verdict.config, &why);
        } catch (const ExitCode&) {
            unknown(why);
        }
    } catch (const std::exception& e) {
        unknown(e.what());
    }
    Evidence ev;
    try {
        ev = collect_evidence(o.collect);
        apply_site_devices(site.config, ev);
        ev = as_recorded(ev);
    } catch (const std::exception& e) {
        unknown(std::string("observation failed: ") + e.what());
    }
    const Verdict v = analyze(ev, site.rules);
    const PluginResult r = plugin_result(v, ev);
    print_result(v, r, o.verdict.format);
    throw ExitCode{static_cast<int>(r.state)};
}

}  // namespace

void add_check_command(CLI::App& app) {
    static CheckOptions opts;   // CLI11 binds to it by reference
    auto* c = app.add_subcommand(
        "check",
        "Health check for cron, a systemd timer or a monitoring system (Nagios/Icinga plugin conventions):\n"
        "observe a short window, print one status line\n"
        "  IODIAG <STATE> - <top finding's title> | 'label'=value[UOM];warn;crit;min;max ...\n"
        "then (--format text) the full verdict. Exit code = state:\n"
        "  0 OK        no warning or critical finding in the observed layers\n"
        "  1 WARNING   the worst finding is a warning\n"
        "  2 CRITICAL  the worst finding is critical\n"
        "  3 UNKNOWN   nothing could be observed, bad arguments, rules or a site configuration\n"
        "              (--config) that do not load\n"
        "Info-level notes never raise the state. --format json prints only the verdict, with the\n"
        "status line and perfdata in its \"check\" object; plugin runners want the default text.");
    add_window_options(c, opts.collect, 5);
    add_verdict_options(c, opts.verdict);
    c->callback([] { run_check(opts); });
}

}  // namespace iodiag::cli
