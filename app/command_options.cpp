#include "app/command_options.hpp"

#include <spdlog/spdlog.h>

#include "app/data_dirs.hpp"
#include "collectors/lost_events.hpp"
#include "engine/evidence/bundle.hpp"
#include "engine/evidence/recordable.hpp"
#include "engine/render/render.hpp"
#include "engine/evidence/json_text.hpp"

namespace iodiag::cli {

void add_window_options(CLI::App* cmd, CollectOptions& o, double default_duration_s) {
    cmd->add_option("-d,--duration", o.duration_s, "Observation window in seconds (Ctrl-C ends it early)")
        ->default_val(default_duration_s)
        ->check(CLI::Range(0.1, 3600.0));
    cmd->add_option("--device", o.devices, "Only these block devices (kernel names, e.g. nvme0n1); repeatable");
    cmd->add_option("--pid", o.pid, "Only this process (where a collector can filter)");
    cmd->add_option("--cgroup", o.cgroup, "Only this cgroup path (where a collector can filter)");
    cmd->add_option("--victim", o.victim,
                    "Judge the verdict for this application while still observing the whole machine (unlike "
                    "--pid and --cgroup, which hide the neighbors that may cause its wait): a pid, an "
                    "application's command line or a part of it (\"ingest.py\"), a command name, or a unit, "
                    "container or pod name in its cgroup path (\"postgresql@15-main.service\"); the verdict "
                    "says the victim was given, not found");
    cmd->add_option("--threshold", o.slow_threshold_us,
                    "What counts as a slow operation, in microseconds (slow syscalls for the attribution, "
                    "slow block I/Os for the exemplars); default: the window's own p99")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--interval", o.interval_s,
                    "Length of one interval of the per-interval series kept in the bundle, in seconds "
                    "(heatmaps, share over time); 0 = no series")
        ->default_val(1.0)
        ->check(CLI::Range(0.0, 3600.0));
}

void add_verdict_options(CLI::App* cmd, VerdictOptions& o) {
    cmd->add_option("--format", o.format,
                    "Verdict format: text (a terminal), json (schema iodiag-verdict), jsonl (the same JSON on one "
                    "line, for log pipelines), markdown (a ticket body)")
        ->check(CLI::IsMember({"text", "json", "jsonl", "markdown"}))
        ->default_val("text");
    cmd->add_option("--rules-dir", o.rules_dir,
                    "Directory of rule files (default, first found: " + data_dir_search_order("rules") + ")");
    cmd->add_option("--config", o.config,
                    "Site configuration: rule overrides (disable, severity, thresholds), device classes and "
                    "reference latencies (default: $IODIAG_CONFIG, else /etc/iodiag/iodiag.yaml if it exists; "
                    "an error in it exits 3 before anything is observed)");
    add_fleet_output_options(cmd, o.fleet);
}

std::string render_verdict(const Verdict& v, const std::string& format) {
    if (format == "json") return json_text(render_json(v), 2) + "\n";
    if (format == "jsonl") return json_text(render_json(v)) + "\n";   // one verdict per line
    if (format == "markdown") return render_markdown(v);
    return render_text(v, {.verbose = spdlog::get_level() <= spdlog::level::debug});   // -v: every provenance in full
}

// The very text a bundle holds, read back: the live path analyses what a
// replay reads, so record + replay can never disagree.
Evidence as_recorded(const Evidence& ev) {
    Evidence kept = ev;
    const std::vector<std::string> dropped = drop_unrecordable(kept);
    for (const auto& d : dropped) spdlog::warn("not recorded: {}", d);
    if (!dropped.empty())
        add_lost_events(kept, "bundle",
                        {{"unrecordable_values", dropped.size(),
                          "every other value; each one left out or cut is logged (a collector's error, not the host's)",
                          "values a bundle refuses (engine/evidence/recordable.hpp)"}});
    return parse_bundle(bundle_text(kept));
}

}  // namespace iodiag::cli
