// iodiag check: the scheduled health check, as a Nagios / Icinga plugin.
// A short window (5 s by default), compared with the host's own past runs
// (the state directory), the usual analysis, then one status line with
// performance data and the exit code a plugin runner expects:
//   0 OK, 1 WARNING, 2 CRITICAL (the worst finding's severity), 3 UNKNOWN
//   (nothing could be observed, bad arguments, unreadable rules or site
//   configuration).
// The mapping itself is engine/render/plugin_output.hpp; the state directory
// app/history_store.hpp; what the past adds to the evidence
// engine/triage/history_metrics.hpp.
#include <chrono>
#include <iostream>
#include <sstream>

#include "app/check_command.hpp"
#include "app/collect.hpp"
#include "app/command_options.hpp"
#include "app/commands.hpp"
#include "app/fleet_outputs.hpp"
#include "app/history_store.hpp"
#include "app/site_config_loading.hpp"
#include "engine/render/plugin_output.hpp"
#include "engine/render/render.hpp"
#include "engine/triage/analysis.hpp"
#include "engine/evidence/json_text.hpp"

namespace iodiag::cli {

namespace {

struct CheckOptions {
    CollectOptions collect;
    VerdictOptions verdict;
    // History: "" / 0 = from the site configuration, else the defaults.
    std::string state_dir;
    size_t nights = 0;
    size_t keep = 0;
    std::string max_bytes;
    bool no_history = false;
};

// What the check did besides the verdict, for every output format.
struct CheckReport {
    bool history = false;                    // the state directory was used
    std::string state_dir;
    size_t nights_compared = 0;
    std::string saved;                       // tonight's bundle, "" when not saved
    std::vector<std::string> pruned;
    std::vector<SkippedFile> skipped;
    std::vector<std::string> problems;       // the state directory's
    std::string config_file;
    std::vector<std::string> config_changes;   // rule overrides and device entries applied
};

// A plugin prints a status line whatever happens.
[[noreturn]] void unknown(const std::string& why) {
    std::cout << "IODIAG UNKNOWN - " << why << "\n";
    throw ExitCode{static_cast<int>(PluginState::Unknown)};
}

HistoryContext history_context(const CheckOptions& o, const SiteConfig& config, HistoryLimits* limits) {
    HistoryContext ctx;
    ctx.where = !o.state_dir.empty() ? o.state_dir : config.history.state_dir.value_or(kDefaultStateDir);
    ctx.nights = o.nights ? o.nights : config.history.nights.value_or(ctx.nights);
    limits->keep = o.keep ? o.keep : config.history.keep.value_or(limits->keep);
    if (!o.max_bytes.empty()) {
        const auto b = parse_byte_size(o.max_bytes);
        if (!b || *b == 0) unknown("bad arguments: --max-bytes " + o.max_bytes + " is not a size (134217728, 128MiB)");
        limits->max_bytes = *b;
    } else if (config.history.max_bytes) {
        limits->max_bytes = *config.history.max_bytes;
    }
    return ctx;
}

std::string history_line(const CheckReport& r) {
    std::string s = r.nights_compared ? "compared with " + std::to_string(r.nights_compared) + " earlier run(s)"
                                      : "no earlier run to compare with";
    if (!r.problems.empty()) s += "; " + r.problems.front();
    if (!r.skipped.empty())
        s += "; " + std::to_string(r.skipped.size()) + " file(s) skipped (" + r.skipped.front().name + ": " +
             r.skipped.front().why + (r.skipped.size() > 1 ? ", ..." : "") + ")";
    return s;
}

std::string history_text(const CheckReport& r) {
    std::ostringstream out;
    out << "\nHISTORY (state directory " << r.state_dir << ")\n";
    out << "  " << history_line(r) << "\n";
    out << "  tonight's bundle: " << (r.saved.empty() ? "not saved" : r.saved) << "\n";
    for (const auto& p : r.problems) out << "  problem: " << p << "\n";
    for (const auto& s : r.skipped) out << "  skipped " << s.name << ": " << s.why << "\n";
    for (const auto& p : r.pruned) out << "  pruned " << p << "\n";
    return out.str();
}

std::string config_text(const CheckReport& r) {
    if (r.config_file.empty()) return "";
    std::ostringstream out;
    out << "\nSITE CONFIGURATION " << r.config_file << "\n";
    for (const auto& c : r.config_changes) out << "  " << c << "\n";
    return out.str();
}

std::string history_markdown(const CheckReport& r) {
    std::ostringstream out;
    out << "\n## History\n\nState directory `" << r.state_dir << "`: " << history_line(r) << ". Tonight's bundle: "
        << (r.saved.empty() ? "not saved" : "`" + r.saved + "`") << ".\n";
    for (const auto& p : r.problems) out << "\n- Problem: " << p;
    for (const auto& s : r.skipped) out << "\n- Skipped `" << s.name << "`: " << s.why;
    for (const auto& p : r.pruned) out << "\n- Pruned `" << p << "`";
    out << "\n";
    return out.str();
}

std::string config_markdown(const CheckReport& r) {
    if (r.config_file.empty()) return "";
    std::ostringstream out;
    out << "\n## Site configuration\n\n`" << r.config_file << "`" << (r.config_changes.empty() ? ": nothing applied." : ":")
        << "\n";
    for (const auto& c : r.config_changes) out << "\n- " << c;
    out << "\n";
    return out.str();
}

nlohmann::json report_json(const CheckReport& r) {
    nlohmann::json j = nlohmann::json::object();   // merged into "check": never null
    if (r.history) {
        nlohmann::json skipped = nlohmann::json::array();
        for (const auto& s : r.skipped) skipped.push_back({{"file", s.name}, {"why", s.why}});
        j["history"] = {{"state_dir", r.state_dir},
                        {"nights_compared", r.nights_compared},
                        {"saved", r.saved.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.saved)},
                        {"pruned", r.pruned},
                        {"skipped", skipped},
                        {"problems", r.problems}};
    }
    if (!r.config_file.empty()) j["site_config"] = {{"file", r.config_file}, {"applied", r.config_changes}};
    return j;
}

// What a plugin runner reads: the status line first; with --format text the
// full verdict follows as the plugin's long output. JSON and Markdown are
// documents for tools and tickets: they are printed alone (JSON carries the
// status line and perfdata in its "check" object), and the exit code is the
// same in every format.
void print_result(const Verdict& v, const PluginResult& pr, const CheckReport& r, const std::string& format) {
    if (format == "json" || format == "jsonl") {
        nlohmann::json j = render_json(v);
        j["check"] = plugin_json(pr);
        j["check"].update(report_json(r));
        std::cout << json_text(j, format == "json" ? 2 : -1) << "\n";
    } else if (format == "text") {
        std::cout << pr.status_line() << "\n"
                  << plugin_long_output(render_text(v) + (r.history ? history_text(r) : "") + config_text(r));
    } else {
        std::cout << render_verdict(v, format) << (r.history ? history_markdown(r) : "") << config_markdown(r);
    }
}

void run_check(const CheckOptions& o) {
    const auto started = std::chrono::steady_clock::now();
    if (const std::string problem = fleet_outputs_problem(o.verdict.fleet); !problem.empty()) unknown(problem);
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
    CheckReport report;
    report.config_file = site.config.file;
    report.config_changes = site.rule_changes;
    HistoryLimits limits;
    const HistoryContext hctx = history_context(o, site.config, &limits);
    HistoryStore store(hctx.where, limits);
    report.history = !o.no_history;
    report.state_dir = hctx.where;

    Evidence ev;
    try {
        ev = collect_evidence(o.collect, o.verdict.format == "text");
        for (auto& line : apply_site_devices(site.config, ev)) report.config_changes.push_back(std::move(line));
        if (report.history) {
            HistoryLoad past = store.load(ev.host);
            report.skipped = std::move(past.skipped);
            report.problems = std::move(past.problems);
            add_history_metrics(ev, past.runs, hctx);
            if (const Metric* n = ev.find_metric("history.nights")) report.nights_compared = static_cast<size_t>(n->value);
        }
        ev = as_recorded(ev);
    } catch (const std::exception& e) {
        unknown(std::string("observation failed: ") + e.what());
    }
    const Verdict v = analyze(ev, site.rules);

    if (report.history && report.problems.empty()) {
        std::string error;
        if (auto path = store.save(ev, &error)) {
            report.saved = *path;
            report.pruned = store.prune(ev.host, *path, report.problems);
        } else {
            report.problems.push_back(error);
        }
    }
    PluginResult pr = plugin_result(v);
    if (report.history) {
        pr.perfdata.push_back({"history_nights", static_cast<double>(report.nights_compared), "", {}, {}, 0, {}});
        if (!report.problems.empty() || !report.skipped.empty()) pr.summary += " (history: " + history_line(report) + ")";
    }
    print_result(v, pr, report, o.verdict.format);
    write_fleet_outputs(o.verdict.fleet, v, ev, "check", started);
    throw ExitCode{static_cast<int>(pr.state)};
}

}  // namespace

void add_check_command(CLI::App& app) {
    static CheckOptions opts;   // CLI11 binds to it by reference
    auto* c = app.add_subcommand(
        "check",
        "Health check for cron, a systemd timer or a monitoring system (Nagios/Icinga plugin conventions):\n"
        "observe a short window, compare it with this host's earlier runs (the state directory), print\n"
        "one status line\n"
        "  IODIAG <STATE> - <top finding's title> | 'label'=value[UOM];warn;crit;min;max ...\n"
        "then (--format text) the full verdict. Exit code = state:\n"
        "  0 OK        no warning or critical finding in the observed layers\n"
        "  1 WARNING   the worst finding is a warning\n"
        "  2 CRITICAL  the worst finding is critical\n"
        "  3 UNKNOWN   nothing could be observed, bad arguments, rules or a site configuration\n"
        "              (--config) that do not load\n"
        "Info-level notes never raise the state. --format json prints only the verdict, with the\n"
        "status line, perfdata and what happened to the history in its \"check\" object; plugin\n"
        "runners want the default text. Each run's bundle is kept in the state directory (bounded\n"
        "by --keep and --max-bytes, oldest removed first, only files iodiag wrote); a directory\n"
        "that is full, unwritable or holds a corrupt bundle is reported, and the check still runs.");
    add_window_options(c, opts.collect, 5);
    add_verdict_options(c, opts.verdict);
    c->add_option("--state-dir", opts.state_dir,
                  "Where the runs' bundles are kept (default: the site configuration's history.state_dir, else " +
                      kDefaultStateDir + ")");
    c->add_option("--nights", opts.nights,
                  "Compare with the median of the last N runs (per device: runs with enough requests for a p99); "
                  "default 7")
        ->check(CLI::PositiveNumber);
    c->add_option("--keep", opts.keep, "Keep at most N bundles, tonight's included (default 30)")
        ->check(CLI::PositiveNumber);
    c->add_option("--max-bytes", opts.max_bytes,
                  "Keep at most this many bytes of bundles (134217728, 128MiB, 500MB; default 128MiB)");
    c->add_flag("--no-history", opts.no_history, "Neither read nor write the state directory");
    c->callback([] { run_check(opts); });
}

}  // namespace iodiag::cli
