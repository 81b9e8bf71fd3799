// The rules in rules/, loaded once against the full metric catalog, for tests
// that analyse real bundles.
#pragma once

#include <string>

#include "app/catalog.hpp"
#include "engine/rules/rules.hpp"

namespace iodiag::testing {

inline const RuleSet& shipped_rules() {
    static const MetricCatalog catalog = full_catalog();
    static const RuleSet rules = [] {
        LoadContext ctx;
        ctx.catalog = &catalog;
        return load_rules({std::string(IODIAG_SOURCE_DIR) + "/rules"}, ctx);
    }();
    return rules;
}

}  // namespace iodiag::testing
