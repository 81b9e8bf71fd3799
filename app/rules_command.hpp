// `iodiag rules lint|list` and `iodiag playbook ID`.
#pragma once

#include <CLI/CLI.hpp>

namespace iodiag::cli {

// rules lint [PATHS...] [--format text|json] [--rules-dir D] [--playbooks-dir D]
// rules list [--format text|json] [--rules-dir D] [--playbooks-dir D]
void add_rules_commands(CLI::App& app);
// playbook ID [--playbooks-dir D]
void add_playbook_command(CLI::App& app);

}  // namespace iodiag::cli
