// Rule files (rules/*.yaml, and the ones users write): every problem is a
// diagnostic with file:line:col, never an exception or a crash.
#include "app/catalog.hpp"
#include "engine/evidence/json_text.hpp"
#include "engine/rules/rules.hpp"
#include "tests/fuzz/fuzz_target.hpp"

IODIAG_FUZZ_TARGET(rules) {
    using namespace iodiag;
    static const MetricCatalog catalog = full_catalog();
    LoadContext ctx;
    ctx.catalog = &catalog;
    ctx.playbook_ids = {"block-scheduler", "dirty-limits"};
    const RuleSet set = load_rules_from_string(fuzz::text(data, size), "fuzz.yaml", ctx);
    for (const auto& d : set.diagnostics)
        if (d.pos.file != "fuzz.yaml") fuzz::fail("diagnostic without the file: " + d.to_string());
    json_text(set.to_json());
}
