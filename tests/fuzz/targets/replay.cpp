// The engine on any bundle that loads: derived metrics, the shipped rules, the
// decision graph, ranking, and the text / JSON / diff renderers. A bundle from
// a stranger must give a verdict or a clear error, never a crash.
#include "app/catalog.hpp"
#include "engine/evidence/bundle.hpp"
#include "engine/evidence/json_text.hpp"
#include "engine/render/render.hpp"
#include "engine/render/render_diff.hpp"
#include "engine/triage/analysis.hpp"
#include "engine/triage/verdict_diff.hpp"
#include "collectors/nvme/nvme_smart_diff.hpp"
#include "tests/fuzz/fuzz_target.hpp"

IODIAG_FUZZ_TARGET(replay) {
    using namespace iodiag;
    static const MetricCatalog catalog = full_catalog();
    static const RuleSet rules = [] {
        LoadContext ctx;
        ctx.catalog = &catalog;
        RuleSet r = load_rules({std::string(IODIAG_SOURCE_DIR) + "/rules"}, ctx);
        if (!r.ok()) fuzz::fail("the shipped rules do not load");
        return r;
    }();
    Evidence ev;
    try {
        ev = parse_bundle(fuzz::text(data, size));
    } catch (const BundleError&) {
        return;
    }
    const Verdict v = analyze(ev, rules);
    render_text(v);
    json_text(render_json(v));
    VerdictDiff d = diff_evidence(Evidence{}, ev, rules);
    nvme::compare_smart(ev, ev);
    render_diff_text(d);
    json_text(render_diff_json(d));
}
