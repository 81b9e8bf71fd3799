// The site configuration (/etc/iodiag/iodiag.yaml, --config): checked against
// the shipped rules; when it loads, its overrides applied to them and its
// devices to a small evidence. Every problem is a diagnostic with file:line:col.
#include "app/catalog.hpp"
#include "engine/rules/site_config.hpp"
#include "engine/derive/derived_metrics.hpp"
#include "tests/fuzz/fuzz_target.hpp"

IODIAG_FUZZ_TARGET(site_config) {
    using namespace iodiag;
    static const MetricCatalog catalog = full_catalog();
    static const RuleSet shipped = [] {
        LoadContext lc;
        lc.catalog = &catalog;
        RuleSet r = load_rules({std::string(IODIAG_SOURCE_DIR) + "/rules"}, lc);
        if (!r.ok()) fuzz::fail("the shipped rules do not load");
        return r;
    }();
    SiteConfigContext ctx;
    ctx.rules = &shipped;
    ctx.catalog = &catalog;
    ctx.device_classes = reference_classes();
    const std::string text = fuzz::text(data, size);
    parse_byte_size(text.substr(0, 64));
    const SiteConfig config = parse_site_config(text, "iodiag.yaml", ctx);
    for (const auto& d : config.diagnostics)
        if (d.pos.file != "iodiag.yaml") fuzz::fail("diagnostic without the file: " + d.to_string());
    if (!config.ok()) return;
    RuleSet rules = shipped;
    apply_rule_overrides(config, rules);
    Evidence ev;
    ev.add_fact("device.class", {{"device", "vda"}}, "virtio", {"file", "/sys/block/vda"});
    ev.add_metric("disk.read_await_ms", {{"device", "nvme0n1"}}, 0.2, "ms", {"file", "/proc/diskstats"});
    apply_device_config(config, ev, [](const std::string& key) {
        return key.rfind("/dev/", 0) == 0 ? key.substr(5) : key;
    });
    fuzz::require_finite(ev);
}
