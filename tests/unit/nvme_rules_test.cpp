// rules/nvme.yaml evaluated on evidence from the SMART fixtures: each rule
// fires on the page that shows its condition and stays quiet on a healthy one.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "collectors/nvme/nvme_smart_collector.hpp"
#include "app/catalog.hpp"
#include "engine/rules/rules.hpp"

using namespace iodiag;

namespace {

const std::string kDir = std::string(IODIAG_FIXTURES) + "/nvme_smart";

// Evidence for nvme0n1 from a chosen SMART page (file source), plus the
// block collector's D2C p99 and the derived nominal latency when given.
Evidence evidence_for(const std::string& page, std::optional<double> d2c_p99_us) {
    NvmeSmartCollector c([page](const std::string&) {
        struct One : nvme::AdminSource {
            std::string page;
            std::vector<uint8_t> smart_log(const std::string&) override {
                return read(page);
            }
            std::vector<uint8_t> identify_controller(const std::string&) override { return read("identify_ctrl.bin"); }
            std::string describe(const std::string&, const std::string& w) const override { return "file " + w; }
            static std::vector<uint8_t> read(const std::string& f) {
                std::ifstream in(kDir + "/" + f, std::ios::binary);
                return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
            }
        };
        auto s = std::make_unique<One>();
        s->page = page;
        return s;
    });
    CollectOptions o;
    o.root = kDir + "/sysroot";
    o.devices = {"nvme0n1"};
    Evidence ev;
    ev.collectors.push_back(c.start(o));
    c.finish(ev);
    // What block_queue_config says of an nvme* disk.
    ev.add_fact("device.class", {{"device", "nvme0n1"}}, "nvme", {"file", "test"});
    if (d2c_p99_us) {
        ev.add_metric("block.d2c_p99_us", {{"device", "nvme0n1"}}, *d2c_p99_us, "us", {"test", "test"});
        ev.add_metric("device.nominal_read_latency_ms", {{"device", "nvme0n1"}}, 0.120, "ms", {"reference", "test"});
    }
    return ev;
}

std::map<std::string, Tri> outcomes(const Evidence& ev) {
    MetricCatalog cat = full_catalog();
    for (const char* n : {"block.d2c_p99_us", "block.d2c_share_pct"})
        if (!cat.find(n)) cat.add({n, MetricSpec::Kind::Metric, "us", "device", "device", "test"});
    LoadContext ctx{&cat, {}};
    RuleSet rs = load_rules({std::string(IODIAG_SOURCE_DIR) + "/rules/nvme.yaml"}, ctx);
    EXPECT_TRUE(rs.ok());
    std::map<std::string, Tri> out;
    for (const auto& r : evaluate_rules(rs, ev))
        if (r.instance == "nvme0n1") out[r.rule->id] = r.outcome;
    return out;
}

}  // namespace

TEST(NvmeRules, WornDriveWithD2CTailPointsAtGc) {
    auto o = outcomes(evidence_for("worn95.bin", 20000.0));
    EXPECT_EQ(o["nvme.wear_gc_stalls"], Tri::True);
    EXPECT_EQ(o["nvme.wear_near_end_of_life"], Tri::True);
    EXPECT_EQ(o["nvme.spare_below_threshold"], Tri::False);
    EXPECT_EQ(o["nvme.critical_warning"], Tri::False);
    auto calm = outcomes(evidence_for("worn95.bin", 150.0));
    EXPECT_EQ(calm["nvme.wear_gc_stalls"], Tri::False);
    auto unknown = outcomes(evidence_for("worn95.bin", std::nullopt));
    EXPECT_EQ(unknown["nvme.wear_gc_stalls"], Tri::Unknown);   // no block collector: not "healthy"
}

TEST(NvmeRules, HealthyDriveFiresNothing) {
    for (const auto& [id, t] : outcomes(evidence_for("healthy.bin", 150.0)))
        EXPECT_EQ(t, Tri::False) << id;
}

TEST(NvmeRules, SpareCriticalBitsAndHeat) {
    auto spare = outcomes(evidence_for("spare_low.bin", std::nullopt));
    EXPECT_EQ(spare["nvme.spare_below_threshold"], Tri::True);
    EXPECT_EQ(spare["nvme.critical_warning"], Tri::True);
    auto hot = outcomes(evidence_for("hot.bin", std::nullopt));
    EXPECT_EQ(hot["nvme.temperature_near_warning"], Tri::True);   // 80 C vs WCTEMP 70 C
    auto bits = outcomes(evidence_for("critical_bits.bin", std::nullopt));
    EXPECT_EQ(bits["nvme.critical_warning"], Tri::True);
}

// SMART rules are about NVMe drives: on another device class they are False,
// not "not evaluated" for want of a SMART log such a device cannot have.
TEST(NvmeRules, OtherDeviceClassesAreNotNvme) {
    Evidence ev;
    ev.add_fact("device.class", {{"device", "vda"}}, "virtio", {"file", "test"});
    MetricCatalog cat = full_catalog();
    for (const char* n : {"block.d2c_p99_us", "block.d2c_share_pct"})
        if (!cat.find(n)) cat.add({n, MetricSpec::Kind::Metric, "us", "device", "device", "test"});
    LoadContext ctx{&cat, {}};
    RuleSet rs = load_rules({std::string(IODIAG_SOURCE_DIR) + "/rules/nvme.yaml"}, ctx);
    ASSERT_TRUE(rs.ok());
    size_t seen = 0;
    for (const auto& r : evaluate_rules(rs, ev))
        if (r.instance == "vda") {
            ++seen;
            EXPECT_EQ(r.outcome, Tri::False) << r.rule->id;
        }
    EXPECT_EQ(seen, rs.rules.size());
}
