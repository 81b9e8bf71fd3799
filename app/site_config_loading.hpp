// Loading the rules together with the site configuration, for every command
// that analyses evidence: which file is read, what happens when it is wrong.
//
// The configuration file: --config FILE, else $IODIAG_CONFIG, else
// /etc/iodiag/iodiag.yaml. An explicit one (option or environment) must
// exist; the default one may be missing (no site configuration).
#pragma once

#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"
#include "engine/rules/rules.hpp"
#include "engine/rules/site_config.hpp"

namespace iodiag::cli {

struct SiteSetup {
    RuleSet rules;                        // with the configuration's overrides applied
    SiteConfig config;                    // file "" when none was read
    std::vector<std::string> rule_changes;   // what the overrides changed, one line each
};

// The configuration file to read ("" = none), per the order above.
std::string site_config_path(const std::string& explicit_path, bool* must_exist);

// Rules (load_rules_or_exit) and the site configuration checked against them.
// Any error: the diagnostics (file:line:col: CODE: message) on stderr, and the
// program ends with exit code 3 (throws ExitCode) before anything is observed
// or written. `first_error`, when given, receives a one-line reason first.
SiteSetup load_rules_and_site_config_or_exit(const std::string& rules_dir, const std::string& config_path,
                                             std::string* first_error = nullptr);

// The device entries of the configuration into live evidence (kind "config").
// A /dev path is resolved to its kernel name on this host. Returns what was
// applied, one line per device entry.
std::vector<std::string> apply_site_devices(const SiteConfig& config, Evidence& ev);

}  // namespace iodiag::cli
