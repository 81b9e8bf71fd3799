// What the commands that analyse evidence share (diagnose, record, replay,
// check): the observation window's options, the verdict's format and data
// options, and the step that makes a live run analyse exactly what its bundle
// holds.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "app/fleet_outputs.hpp"
#include "collectors/collector.hpp"
#include "engine/evidence/evidence.hpp"
#include "engine/triage/verdict.hpp"

namespace iodiag::cli {

struct VerdictOptions {
    std::string format = "text";   // text | json | jsonl | markdown
    std::string rules_dir;
    std::string config;            // site configuration file ("" = $IODIAG_CONFIG or the default)
    FleetOutputs fleet;            // --prometheus, --journal
};

// --duration (default `default_duration_s`), --device, --pid, --cgroup,
// --victim, --threshold, --interval.
void add_window_options(CLI::App* cmd, CollectOptions& o, double default_duration_s);
// --format, --rules-dir, --config, --prometheus, --journal.
void add_verdict_options(CLI::App* cmd, VerdictOptions& o);

// The verdict in one of the formats --format accepts.
std::string render_verdict(const Verdict& v, const std::string& format);

// Same evidence in, same verdict out: the live path analyses what a replay of
// its bundle would read, so record + replay can never disagree. A value a
// bundle refuses is left out first, logged and counted (recordable.hpp).
Evidence as_recorded(const Evidence& ev);

}  // namespace iodiag::cli
