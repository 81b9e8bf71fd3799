#include "app/diff_command.hpp"

#include <iostream>

#include "collectors/nvme/nvme_smart_diff.hpp"
#include "engine/evidence/bundle.hpp"
#include "app/commands.hpp"
#include "app/site_config_loading.hpp"
#include "engine/render/render_diff.hpp"
#include "engine/triage/verdict_diff.hpp"
#include "engine/evidence/json_text.hpp"

namespace iodiag::cli {

namespace {

struct DiffOptions {
    std::string before;
    std::string after;
    std::string format = "text";
    std::string rules_dir;
    std::string config;
};

Evidence load_or_exit(const std::string& path) {
    try {
        return load_bundle(path);
    } catch (const std::exception& e) {
        std::cerr << "iodiag diff: " << e.what() << "\n";
        throw ExitCode{3};
    }
}

}  // namespace

std::vector<SmartGrowth> smart_growth(const Evidence& before, const Evidence& after) {
    std::vector<SmartGrowth> out;
    for (auto& c : nvme::compare_smart(before, after))
        out.push_back({c.device, c.serial, c.field, c.before, c.after, c.delta, c.meaning});
    return out;
}

namespace {

void run_diff(const DiffOptions& o) {
    const RuleSet rules = load_rules_and_site_config_or_exit(o.rules_dir, o.config).rules;
    const Evidence before = load_or_exit(o.before);
    const Evidence after = load_or_exit(o.after);
    if (before.host != after.host)
        std::cerr << "iodiag diff: warning: the bundles come from different hosts (" << before.host << " vs "
                  << after.host << "); findings are compared by rule and instance name only\n";
    if (after.window.start_unix < before.window.start_unix)
        std::cerr << "iodiag diff: warning: AFTER (" << o.after << ") was recorded before BEFORE (" << o.before
                  << "); growth is reported in the order given\n";
    VerdictDiff d = diff_evidence(before, after, rules);
    d.smart = smart_growth(before, after);
    if (o.format == "json")
        std::cout << json_text(render_diff_json(d), 2) << "\n";
    else
        std::cout << render_diff_text(d);
    if (d.got_worse()) throw ExitCode{1};
}

}  // namespace

void add_diff_command(CLI::App& app) {
    static DiffOptions opts;   // CLI11 binds to it by reference
    auto* c = app.add_subcommand(
        "diff",
        "Compare two recorded bundles (before / after a fix): findings resolved, persisting and new, status,\n"
        "verify checks of resolved findings, NVMe SMART counters that grew.\n"
        "Exit 0: nothing got worse; 1: a new finding, a worse status or SMART growth; 3: unreadable input");
    c->add_option("before", opts.before, "Bundle recorded before (iodiag record -o BEFORE.json)")
        ->required()
        ->check(CLI::ExistingFile);
    c->add_option("after", opts.after, "Bundle recorded after")->required()->check(CLI::ExistingFile);
    c->add_option("--format", opts.format, "Output format")->check(CLI::IsMember({"text", "json"}))->default_val("text");
    c->add_option("--rules-dir", opts.rules_dir, "Directory of rule files (default: the installed or source rules/)");
    c->add_option("--config", opts.config,
                  "Site configuration whose rule overrides apply (default: $IODIAG_CONFIG, else "
                  "/etc/iodiag/iodiag.yaml if it exists)");
    c->callback([] { run_diff(opts); });
}

}  // namespace iodiag::cli
