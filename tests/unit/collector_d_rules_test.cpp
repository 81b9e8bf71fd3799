// Helper D's rule files (nvme, cgroup, iouring) load without errors against the
// catalog of the registered collectors. Names owned by collectors that are not
// registered yet (the block collector's D2C metrics) are declared here, so this
// test checks our own files, not the integration order.
#include <gtest/gtest.h>

#include <filesystem>

#include "app/catalog.hpp"
#include "engine/rules/rules.hpp"

using namespace iodiag;

namespace {

MetricCatalog catalog_with_foreign_names() {
    MetricCatalog cat = full_catalog();
    const std::vector<MetricSpec> foreign{
        {"block.d2c_p99_us", MetricSpec::Kind::Metric, "us", "device", "device",
         "block collector: D2C p99"},
        {"block.d2c_share_pct", MetricSpec::Kind::Metric, "pct", "device", "device",
         "block collector: D2C share"},
    };
    for (const auto& s : foreign)
        if (!cat.find(s.name)) cat.add(s);
    return cat;
}

std::vector<std::string> playbook_ids() {
    std::vector<std::string> ids;
    for (const auto& e : std::filesystem::directory_iterator(std::string(IODIAG_SOURCE_DIR) + "/playbooks"))
        if (e.path().extension() == ".yaml") ids.push_back(e.path().stem().string());
    return ids;
}

void expect_loads(const std::string& file) {
    const MetricCatalog cat = catalog_with_foreign_names();
    LoadContext ctx{&cat, playbook_ids()};
    const std::string path = std::string(IODIAG_SOURCE_DIR) + "/rules/" + file;
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not written yet";
    RuleSet rs = load_rules({path}, ctx);
    // W002 (us over ms) is expected where the threshold carries the factor 1000.
    for (const auto& d : rs.diagnostics)
        if (d.error || d.code != "W002") ADD_FAILURE() << d.to_string();
    EXPECT_TRUE(rs.ok());
    EXPECT_FALSE(rs.rules.empty());
}

}  // namespace

TEST(CollectorDRules, NvmeRulesLoad) { expect_loads("nvme.yaml"); }
TEST(CollectorDRules, CgroupRulesLoad) { expect_loads("cgroup.yaml"); }
TEST(CollectorDRules, IouringRulesLoad) { expect_loads("iouring.yaml"); }
