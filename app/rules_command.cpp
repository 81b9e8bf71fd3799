#include "app/rules_command.hpp"

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/catalog.hpp"
#include "app/commands.hpp"
#include "app/data_dirs.hpp"
#include "app/site_config_loading.hpp"
#include "engine/derive/derived_metrics.hpp"
#include "engine/rules/playbooks.hpp"
#include "engine/rules/rules.hpp"
#include "engine/evidence/json_text.hpp"

namespace iodiag::cli {

namespace {

struct DataOptions {
    std::string rules_dir;
    std::string playbooks_dir;
    std::string format = "text";
    std::vector<std::string> paths;
    std::string config;   // lint: the site configuration to check ("" = $IODIAG_CONFIG or the default, if any)
};

void add_dir_options(CLI::App* cmd, DataOptions& o) {
    cmd->add_option("--rules-dir", o.rules_dir,
                    "Rules directory (default, first found: " + data_dir_search_order("rules") + ")");
    cmd->add_option("--playbooks-dir", o.playbooks_dir,
                    "Playbooks directory (default, first found: " + data_dir_search_order("playbooks") + ")");
}

struct Loaded {
    PlaybookSet playbooks;
    RuleSet rules;
    std::vector<Diagnostic> diagnostics;   // playbooks', rules', cross-checks, in that order
};

Loaded load_everything(const DataOptions& o) {
    Loaded l;
    l.playbooks = load_playbooks({find_data_dir("playbooks", o.playbooks_dir)});
    const MetricCatalog catalog = full_catalog();
    LoadContext ctx;
    ctx.catalog = &catalog;
    ctx.playbook_ids = l.playbooks.ids();
    const std::vector<std::string> paths =
        o.paths.empty() ? std::vector<std::string>{find_data_dir("rules", o.rules_dir)} : o.paths;
    l.rules = load_rules(paths, ctx);
    l.diagnostics = l.playbooks.diagnostics;
    l.diagnostics.insert(l.diagnostics.end(), l.rules.diagnostics.begin(), l.rules.diagnostics.end());
    // Playbooks name rules of the whole set: cross-check only when the rules and
    // the playbooks belong together (defaults, or both directories given).
    if (o.paths.empty() && (o.rules_dir.empty() || !o.playbooks_dir.empty())) {
        const auto cross = check_playbook_rules(l.playbooks, l.rules);
        l.diagnostics.insert(l.diagnostics.end(), cross.begin(), cross.end());
    }
    return l;
}

// The site configuration is checked against the rules it would change.
std::vector<Diagnostic> lint_site_config(const DataOptions& o, const RuleSet& rules, std::string* path) {
    // Rule files named on the command line are linted alone, unless a
    // configuration is named too.
    if (!o.paths.empty() && o.config.empty()) return {};
    bool must_exist = false;
    *path = site_config_path(o.config, &must_exist);
    if (path->empty()) return {};
    const MetricCatalog catalog = full_catalog();
    SiteConfigContext ctx;
    ctx.rules = &rules;
    ctx.catalog = &catalog;
    ctx.device_classes = reference_classes();
    return load_site_config(*path, ctx).diagnostics;
}

nlohmann::json diag_json(const Diagnostic& d) {
    return {{"code", d.code}, {"severity", d.error ? "error" : "warning"}, {"file", d.pos.file},
            {"line", d.pos.line}, {"column", d.pos.column}, {"message", d.message}};
}

void run_lint(const DataOptions& o) {
    Loaded l = load_everything(o);
    std::string config_path;
    const auto config_diags = lint_site_config(o, l.rules, &config_path);
    l.diagnostics.insert(l.diagnostics.end(), config_diags.begin(), config_diags.end());
    size_t errors = 0, warnings = 0;
    for (const auto& d : l.diagnostics) (d.error ? errors : warnings)++;
    if (o.format == "json") {
        nlohmann::json j;
        j["rules"] = nlohmann::json::array();
        for (const auto& r : l.rules.rules) j["rules"].push_back(r.id);
        j["playbooks"] = l.playbooks.ids();
        j["site_config"] = config_path;
        j["diagnostics"] = nlohmann::json::array();
        for (const auto& d : l.diagnostics) j["diagnostics"].push_back(diag_json(d));
        j["errors"] = errors;
        j["warnings"] = warnings;
        j["ok"] = errors == 0;
        std::cout << json_text(j, 2) << "\n";
    } else {
        for (const auto& d : l.diagnostics) std::cout << d.to_string() << "\n";
        std::cout << l.rules.rules.size() << " rules and " << l.playbooks.playbooks.size() << " playbooks loaded"
                  << (config_path.empty() ? "" : ", site configuration " + config_path + " checked") << ": " << errors
                  << " error(s), " << warnings << " warning(s)\n";
    }
    if (errors) throw ExitCode{1};
}

void run_list(const DataOptions& o) {
    const Loaded l = load_everything(o);
    for (const auto& d : l.diagnostics)
        if (d.error) std::cerr << d.to_string() << "\n";
    if (o.format == "json") {
        nlohmann::json j = nlohmann::json::array();
        for (const auto& r : l.rules.rules) {
            nlohmann::json fixes = nlohmann::json::array();
            for (const auto& f : r.fixes)
                fixes.push_back({{"priority", to_string(f.priority)}, {"action", f.action}, {"playbook", f.playbook}});
            j.push_back({{"id", r.id}, {"layer", r.layer}, {"severity", to_string(r.severity)},
                         {"for_each", r.for_each}, {"title", r.title}, {"confidence", r.confidence},
                         {"file", r.pos.file}, {"line", r.pos.line}, {"fixes", fixes}});
        }
        std::cout << json_text(j, 2) << "\n";
    } else {
        size_t w_id = 2, w_layer = 5;
        for (const auto& r : l.rules.rules) {
            w_id = std::max(w_id, r.id.size());
            w_layer = std::max(w_layer, r.layer.size());
        }
        auto pad = [](std::string s, size_t w) { return s + std::string(w > s.size() ? w - s.size() : 0, ' '); };
        std::cout << pad("ID", w_id) << "  " << pad("LAYER", w_layer) << "  " << pad("SEVERITY", 8) << "  TITLE  (FILE:LINE)\n";
        for (const auto& r : l.rules.rules)
            std::cout << pad(r.id, w_id) << "  " << pad(r.layer, w_layer) << "  " << pad(to_string(r.severity), 8)
                      << "  " << r.title << "  (" << r.pos.file << ":" << r.pos.line << ")\n";
    }
    if (!l.rules.ok() || !l.playbooks.ok()) throw ExitCode{1};
}

// `iodiag --rules-dir D rules lint` names the directory on the main command.
void inherit_dirs(CLI::App* root, DataOptions& o) {
    for (auto [name, target] : {std::pair{"--rules-dir", &o.rules_dir}, std::pair{"--playbooks-dir", &o.playbooks_dir}})
        if (target->empty())
            if (const CLI::Option* opt = root->get_option_no_throw(name); opt && opt->count() > 0)
                *target = opt->as<std::string>();
}

}  // namespace

void add_rules_commands(CLI::App& app) {
    CLI::App* root = &app;
    auto* rules = app.add_subcommand("rules", "Check and list the diagnosis rules (rules/*.yaml)");
    rules->require_subcommand(1);

    auto lint_opts = std::make_shared<DataOptions>();
    auto* lint = rules->add_subcommand(
        "lint",
        "Load the rules and playbooks and report every problem as FILE:LINE:COL: CODE: message\n"
        "(unknown metrics, keys, layers, playbooks, macros, placeholders ...), and the site configuration\n"
        "against the rules it changes (unknown rule ids, thresholds that match no comparison, bad values).\n"
        "Exit 1 on any error.");
    lint->add_option("paths", lint_opts->paths, "Rule files or directories (default: the rules directory)");
    lint->add_option("--config", lint_opts->config,
                     "Site configuration to check (default: $IODIAG_CONFIG, else /etc/iodiag/iodiag.yaml if it exists)");
    lint->add_option("--format", lint_opts->format, "Output format")->check(CLI::IsMember({"text", "json"}));
    add_dir_options(lint, *lint_opts);
    lint->callback([lint_opts, root] {
        inherit_dirs(root, *lint_opts);
        run_lint(*lint_opts);
    });

    auto list_opts = std::make_shared<DataOptions>();
    auto* list = rules->add_subcommand("list", "List the rules: id, layer, severity, title, where defined");
    list->add_option("--format", list_opts->format, "Output format")->check(CLI::IsMember({"text", "json"}));
    add_dir_options(list, *list_opts);
    list->callback([list_opts, root] {
        inherit_dirs(root, *list_opts);
        run_list(*list_opts);
    });
}

void add_playbook_command(CLI::App& app) {
    CLI::App* root = &app;
    auto opts = std::make_shared<DataOptions>();
    auto id = std::make_shared<std::string>();
    auto* cmd = app.add_subcommand("playbook", "Print a remediation playbook: steps, commands, verification, rollback");
    cmd->add_option("id", *id, "Playbook id (as a finding's fix names it)")->required();
    cmd->add_option("--playbooks-dir", opts->playbooks_dir,
                    "Playbooks directory (default, first found: " + data_dir_search_order("playbooks") + ")");
    cmd->callback([opts, id, root] {
        inherit_dirs(root, *opts);
        const PlaybookSet set = load_playbooks({find_data_dir("playbooks", opts->playbooks_dir)});
        for (const auto& d : set.diagnostics) std::cerr << d.to_string() << "\n";
        if (const Playbook* p = set.find(*id)) {
            std::cout << render_playbook(*p);
            return;
        }
        std::cerr << "iodiag: unknown playbook '" << *id << "'. Known playbooks:";
        for (const auto& known : set.ids()) std::cerr << " " << known;
        std::cerr << "\n";
        throw ExitCode{1};
    });
}

}  // namespace iodiag::cli
