// Fleet outputs of a verdict, through systems a fleet already runs rather than
// a server of our own: a node_exporter textfile (--prometheus FILE) and a
// structured journald entry (--journal). Shared by diagnose, record, replay,
// check and watch.
#pragma once

#include <chrono>
#include <string>

#include <CLI/CLI.hpp>

#include "engine/evidence/evidence.hpp"
#include "engine/triage/verdict.hpp"

namespace iodiag::cli {

struct FleetOutputs {
    std::string prometheus_file;   // empty: none
    bool journal = false;
};

void add_fleet_output_options(CLI::App* cmd, FleetOutputs& o);

// Before anything is observed: a textfile whose directory is missing (or is
// not a directory) is a bad argument. Empty when all is well, else why.
std::string fleet_outputs_problem(const FleetOutputs& o);
// The same, printed on stderr with ExitCode{3} thrown.
void check_fleet_outputs(const FleetOutputs& o, const std::string& command);

// After the verdict. `mode` names the command in the textfile's `mode` label;
// `started` is when the run began (its duration goes into the textfile).
// A textfile that cannot be written: the reason is printed and ExitCode{3}
// thrown (the previous file stays as it was: the write is atomic). A journal
// that cannot be reached is a warning (the verdict went to stdout anyway).
void write_fleet_outputs(const FleetOutputs& o, const Verdict& v, const Evidence& ev, const std::string& mode,
                         std::chrono::steady_clock::time_point started);

// Writes the textfile atomically; throws std::runtime_error naming the path.
void write_prometheus_textfile(const std::string& path, const Verdict& v, const Evidence& ev,
                               const std::string& mode, std::chrono::steady_clock::time_point started);

}  // namespace iodiag::cli
