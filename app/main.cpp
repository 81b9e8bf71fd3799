// iodiag: where does Linux storage latency go?
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "app/check_command.hpp"
#include "app/commands.hpp"
#include "app/diff_command.hpp"
#include "app/heatmap_command.hpp"
#include "app/report_command.hpp"
#include "app/rules_command.hpp"
#include "app/slow_command.hpp"
#include "app/startup_heap.hpp"
#include "iodiag_git_commit.hpp"   // generated at build time (cmake/git_commit.cmake)

int main(int argc, char** argv) {
    iodiag::cli::share_one_malloc_arena();
    // Logs go to stderr: stdout carries the verdict (JSON must stay parseable).
    spdlog::set_default_logger(spdlog::stderr_color_mt("iodiag"));
    CLI::App app{
        "iodiag — find where Linux storage latency goes.\n"
        "Observes this machine for a short window, walks the I/O stack bottom-up\n"
        "(device -> block queue -> filesystem/journal -> page cache, dirty throttling,\n"
        "reclaim -> syscall -> cgroup), and prints a ranked causal explanation with\n"
        "the evidence behind every claim and fixes ordered P0..P5.\n"
        "Run as root for the BPF collectors; without them the layers they observe are\n"
        "reported as not observed, never as healthy."};
    app.set_version_flag("--version", std::string("iodiag ") + IODIAG_VERSION + " (commit " + IODIAG_GIT_COMMIT + ")");
    app.require_subcommand(0, 1);
    bool verbose = false;
    app.add_flag("-v,--verbose", verbose, "Log what each collector does and how long it takes");
    app.parse_complete_callback([&verbose] {
        spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn);
    });
    // Subcommands register themselves here, one line each.
    iodiag::cli::add_diagnose_commands(app);
    iodiag::cli::add_slow_command(app);
    iodiag::cli::add_rules_commands(app);
    iodiag::cli::add_playbook_command(app);
    iodiag::cli::add_diff_command(app);
    iodiag::cli::add_check_command(app);
    iodiag::cli::add_heatmap_command(app);
    iodiag::cli::add_report_command(app);
    iodiag::cli::add_watch_command(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // Bad arguments: exit 3 (UNKNOWN in Nagios terms) unless it was --help/--version.
        const int rc = app.exit(e);
        // A plugin runner shows stdout's first line: `check` says UNKNOWN there too.
        if (rc != 0 && app.get_subcommand("check")->parsed())
            std::cout << "IODIAG UNKNOWN - bad arguments: " << e.what() << "\n";
        return rc == 0 ? 0 : 3;
    } catch (const iodiag::cli::ExitCode& e) {
        return e.code;
    } catch (const std::exception& e) {
        // A bug, not bad input (that has its own messages and exit 3): say what
        // it was rather than abort with a core dump.
        std::cerr << "iodiag: internal error: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
