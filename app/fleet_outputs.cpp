#include "app/fleet_outputs.hpp"
#include "engine/evidence/atomic_file.hpp"

#include <filesystem>
#include <iostream>

#include "app/commands.hpp"
#include "app/journal_output.hpp"
#include "engine/evidence/bundle.hpp"
#include "engine/render/render_prometheus.hpp"

namespace iodiag::cli {

namespace fs = std::filesystem;

void add_fleet_output_options(CLI::App* cmd, FleetOutputs& o) {
    cmd->add_option("--prometheus", o.prometheus_file,
                    "Also write the verdict as a node_exporter textfile-collector file (e.g. "
                    "/var/lib/prometheus/node-exporter/iodiag.prom), replaced atomically; its directory must "
                    "exist");
    cmd->add_flag("--journal", o.journal,
                  "Also send the verdict to journald as one entry (MESSAGE = the verdict as one JSON line; "
                  "fields IODIAG_STATUS, IODIAG_FINGERPRINT, IODIAG_TOP_RULE); a warning if journald is not "
                  "reachable");
}

std::string fleet_outputs_problem(const FleetOutputs& o) {
    if (o.prometheus_file.empty()) return "";
    fs::path dir = fs::path(o.prometheus_file).parent_path();
    if (dir.empty()) dir = ".";
    std::error_code ec;
    const auto st = fs::status(dir, ec);
    std::string problem;
    if (!fs::exists(st))
        problem = "directory " + dir.string() + " does not exist (node_exporter's --collector.textfile.directory "
                  "must exist before iodiag writes into it)";
    else if (!fs::is_directory(st))
        problem = dir.string() + " is not a directory";
    else if (fs::is_directory(fs::status(o.prometheus_file, ec)))
        problem = o.prometheus_file + " is a directory; give the file to write, e.g. " +
                  (fs::path(o.prometheus_file) / "iodiag.prom").string();
    return problem.empty() ? "" : "--prometheus " + o.prometheus_file + ": " + problem;
}

void check_fleet_outputs(const FleetOutputs& o, const std::string& command) {
    if (const std::string problem = fleet_outputs_problem(o); !problem.empty()) {
        std::cerr << "iodiag " << command << ": " << problem << "\n";
        throw ExitCode{3};
    }
}

void write_prometheus_textfile(const std::string& path, const Verdict& v, const Evidence& ev,
                               const std::string& mode, std::chrono::steady_clock::time_point started) {
    PrometheusRun run;
    run.mode = mode;
    run.version = IODIAG_VERSION;
    run.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    run.finished_unix =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    // The temporary name does not end in .prom, so node_exporter never reads
    // a half-written file; rename() replaces the old one in one step.
    write_file_atomically(path, render_prometheus(v, ev, run));
}

void write_fleet_outputs(const FleetOutputs& o, const Verdict& v, const Evidence& ev, const std::string& mode,
                         std::chrono::steady_clock::time_point started) {
    if (o.journal) {
        if (const std::string why = send_verdict_to_journal(v, mode); !why.empty())
            std::cerr << "iodiag " << mode << ": --journal: verdict not sent to the journal: " << why << "\n";
    }
    if (!o.prometheus_file.empty()) {
        try {
            write_prometheus_textfile(o.prometheus_file, v, ev, mode, started);
        } catch (const std::exception& e) {
            std::cerr << "iodiag " << mode << ": --prometheus: " << e.what() << "\n";
            throw ExitCode{3};
        }
    }
}

}  // namespace iodiag::cli
