#include "app/rules_loading.hpp"

#include <iostream>

#include "app/catalog.hpp"
#include "app/commands.hpp"
#include "app/data_dirs.hpp"

namespace iodiag::cli {

RuleSet load_rules_or_exit(const std::string& explicit_dir) {
    const MetricCatalog catalog = full_catalog();
    LoadContext ctx;
    ctx.catalog = &catalog;
    const std::string dir = find_data_dir("rules", explicit_dir);
    RuleSet rules = load_rules({dir}, ctx);
    for (const auto& d : rules.diagnostics) std::cerr << d.to_string() << "\n";
    if (!rules.ok()) {
        std::cerr << "iodiag: the rules in " << dir << " do not load; run `iodiag rules lint " << dir << "`\n";
        throw ExitCode{3};
    }
    return rules;
}

}  // namespace iodiag::cli
