#include "app/site_config_loading.hpp"

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "app/catalog.hpp"
#include "app/commands.hpp"
#include "app/rules_loading.hpp"
#include "engine/derive/derived_metrics.hpp"

namespace iodiag::cli {

namespace fs = std::filesystem;

std::string site_config_path(const std::string& explicit_path, bool* must_exist) {
    *must_exist = true;
    if (!explicit_path.empty()) return explicit_path;
    if (const char* env = std::getenv("IODIAG_CONFIG"); env && *env) return env;
    *must_exist = false;
    std::error_code ec;
    return fs::exists(kDefaultSiteConfig, ec) ? kDefaultSiteConfig : "";
}

SiteSetup load_rules_and_site_config_or_exit(const std::string& rules_dir, const std::string& config_path,
                                             std::string* first_error) {
    SiteSetup s;
    try {
        s.rules = load_rules_or_exit(rules_dir);
    } catch (const ExitCode&) {
        if (first_error) *first_error = "the rules do not load (iodiag rules lint)";
        throw;
    }
    bool must_exist = false;
    const std::string path = site_config_path(config_path, &must_exist);
    if (path.empty()) return s;
    const MetricCatalog catalog = full_catalog();
    SiteConfigContext ctx;
    ctx.rules = &s.rules;
    ctx.catalog = &catalog;
    ctx.device_classes = reference_classes();
    s.config = load_site_config(path, ctx);
    for (const auto& d : s.config.diagnostics) std::cerr << d.to_string() << "\n";
    if (!s.config.ok()) {
        if (first_error)
            for (const auto& d : s.config.diagnostics)
                if (d.error && first_error->empty()) *first_error = "site configuration error: " + d.to_string();
        std::cerr << "iodiag: the site configuration " << path << " has errors; nothing was observed or written "
                  << "(check it with `iodiag rules lint --config " << path << "`)\n";
        throw ExitCode{3};
    }
    s.rule_changes = apply_rule_overrides(s.config, s.rules);
    return s;
}

std::vector<std::string> apply_site_devices(const SiteConfig& config, Evidence& ev) {
    return apply_device_config(config, ev, [](const std::string& key) -> std::string {
        if (key.rfind("/dev/", 0) != 0) return key;
        std::error_code ec;
        const fs::path real = fs::canonical(key, ec);   // follows /dev/disk/by-id/... links
        return ec ? "" : real.filename().string();
    });
}

}  // namespace iodiag::cli
