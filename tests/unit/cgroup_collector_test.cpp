// cgroup collector on fixture trees (a hybrid v1 host like the test machines,
// and a pure v2 host), copied to a temporary directory so the test can change
// the counters between start() and finish() with a fixed 10 s window.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "collectors/cgroup/cgroup_collector.hpp"
#include "collectors/cgroup/cgroup_hierarchy.hpp"
#include "collectors/cgroup/cgroup_model.hpp"
#include "collectors/cgroup/cgroup_v1.hpp"
#include "app/catalog.hpp"
#include "collectors/text_file.hpp"
#include "engine/rules/rules.hpp"

using namespace iodiag;
namespace fs = std::filesystem;

namespace {

class TempTree {
public:
    explicit TempTree(const std::string& fixture) {
        dir_ = fs::temp_directory_path() / ("iodiag-cgroup-" + std::to_string(::getpid()) + "-" + fixture);
        fs::remove_all(dir_);
        fs::copy(std::string(IODIAG_FIXTURES) + "/cgroup/" + fixture, dir_, fs::copy_options::recursive);
    }
    ~TempTree() { fs::remove_all(dir_); }
    std::string root() const { return dir_.string(); }
    void write(const std::string& rel, const std::string& text) const {
        std::ofstream(dir_ / rel.substr(1)) << text;
    }

private:
    fs::path dir_;
};

struct FakeClock {
    double now = 1000;
    CgroupCollector::Clock fn() {
        return [this] { return now; };
    }
};

double metric(const Evidence& ev, const std::string& name, const Labels& l) {
    const Metric* m = ev.find_metric(name, l);
    EXPECT_TRUE(m) << name;
    return m ? m->value : -1;
}

std::string fact(const Evidence& ev, const std::string& name, const Labels& l) {
    const Fact* f = ev.find_fact(name, l);
    EXPECT_TRUE(f) << name;
    return f ? f->value : "";
}

}  // namespace

TEST(CgroupMounts, DetectsHybridAndPureV2FromProcMounts) {
    const auto hybrid = cgroup::read_mounts(std::string(IODIAG_FIXTURES) + "/cgroup/hybrid");
    EXPECT_EQ(hybrid.v2, "/sys/fs/cgroup/unified");
    EXPECT_EQ(hybrid.v1.at("blkio"), "/sys/fs/cgroup/blkio");
    EXPECT_EQ(hybrid.v1.at("memory"), "/sys/fs/cgroup/memory");
    EXPECT_FALSE(hybrid.has_v1("systemd"));   // name=systemd is not a controller
    const auto v2 = cgroup::read_mounts(std::string(IODIAG_FIXTURES) + "/cgroup/v2");
    EXPECT_EQ(v2.v2, "/sys/fs/cgroup");
    EXPECT_TRUE(v2.v1.empty());
    const auto escaped = cgroup::parse_mounts("cgroup2 /mnt/my\\040cg cgroup2 rw 0 0\n");
    EXPECT_EQ(escaped.v2, "/mnt/my cg");
}

TEST(CgroupIds, InodeNumberMapsToPath) {
    TempTree t("v2");
    const std::string base = t.root() + "/sys/fs/cgroup";
    struct stat st {};
    ASSERT_EQ(::stat((base + "/batch").c_str(), &st), 0);
    cgroup::IdResolver r(base);
    EXPECT_EQ(r.path_of(st.st_ino).value_or("?"), "/batch");
    fs::create_directory(base + "/batch/late");
    ASSERT_EQ(::stat((base + "/batch/late").c_str(), &st), 0);
    EXPECT_EQ(r.path_of(st.st_ino).value_or("?"), "/batch/late");   // rescans on a miss
    EXPECT_FALSE(r.path_of(1).has_value());
}

TEST(CgroupV1, MalformedFileNamesFileAndLine) {
    try {
        cgroup::parse_v1_rw_stat("7:0 Read 10\n7:0 Write x\n", "/x/blkio.throttle.io_serviced");
        FAIL() << "no error";
    } catch (const SourceError& e) {
        EXPECT_NE(std::string(e.what()).find("/x/blkio.throttle.io_serviced:2"), std::string::npos) << e.what();
    }
    EXPECT_THROW(cgroup::parse_pressure("bogus avg10=1\n", "p"), SourceError);
}

TEST(CgroupCollector, HybridV1ThrottledGroupNamesLimitAndRate) {
    TempTree t("hybrid");
    FakeClock clock;
    CgroupCollector c(clock.fn());
    CollectOptions o;
    o.root = t.root();
    const CollectorStatus st = c.start(o);
    ASSERT_TRUE(st.available) << st.reason;
    EXPECT_TRUE(st.layers.empty());   // v1: no throttled-time statistic
    EXPECT_NE(st.reason.find("no throttled-time statistic"), std::string::npos) << st.reason;

    // 10 s at 49 read IO/s against a 50 IO/s limit.
    clock.now += 10;
    t.write("/sys/fs/cgroup/blkio/fio-test/blkio.throttle.io_serviced",
            "7:0 Read 1490\n7:0 Write 0\n7:0 Total 1490\nTotal 1490\n");
    t.write("/sys/fs/cgroup/blkio/fio-test/blkio.throttle.io_service_bytes",
            "7:0 Read 6103040\n7:0 Write 0\n7:0 Total 6103040\nTotal 6103040\n");
    // The small memcg hit its limit 40 more times, with refaults and major faults.
    t.write("/sys/fs/cgroup/memory/fio-mem/memory.failcnt", "45\n");
    Evidence ev;
    c.finish(ev);

    const Labels g{{"cgroup", "/fio-test"}};
    EXPECT_DOUBLE_EQ(metric(ev, "cgroup.io_read_iops", g), 49.0);
    EXPECT_DOUBLE_EQ(metric(ev, "cgroup.io_limit_utilisation_pct", g), 98.0);
    EXPECT_EQ(fact(ev, "cgroup.io_limit_device", g), "loop0 (7:0)");
    EXPECT_EQ(fact(ev, "cgroup.io_limit_setting", g), "blkio.throttle.read_iops_device 7:0 50");
    EXPECT_EQ(fact(ev, "cgroup.io_limit_measured", g), "read IO/s limit 50/s, measured 49.0/s over 10.0 s");
    EXPECT_DOUBLE_EQ(metric(ev, "cgroup.device_read_iops_limit", {{"cgroup", "/fio-test"}, {"device", "loop0"}}), 50);
    // write_bps_device "7:0 0" means no limit.
    EXPECT_EQ(ev.find_metric("cgroup.device_write_bps_limit", {{"cgroup", "/fio-test"}, {"device", "loop0"}}),
              nullptr);

    const Labels m{{"cgroup", "/fio-mem"}};
    EXPECT_DOUBLE_EQ(metric(ev, "cgroup.memory_failcnt_delta", m), 40);
    EXPECT_DOUBLE_EQ(metric(ev, "cgroup.memory_limit_hits_delta", m), 40);
    EXPECT_DOUBLE_EQ(metric(ev, "cgroup.memory_limit_bytes", m), 67108864);
    EXPECT_EQ(ev.find_metric("cgroup.memory_pgscan_delta", m), nullptr);   // v1 has none
    // A group with nothing happening is not reported; unlimited v1 memcg has no limit metric.
    EXPECT_EQ(ev.find_fact("cgroup.hierarchy", {{"cgroup", "/idle"}}), nullptr);
}

TEST(CgroupCollector, PureV2LimitsPressureLatencyAndReclaim) {
    TempTree t("v2");
    FakeClock clock;
    CgroupCollector c(clock.fn());
    CollectOptions o;
    o.root = t.root();
    const CollectorStatus st = c.start(o);
    ASSERT_TRUE(st.available) << st.reason;
    EXPECT_EQ(st.layers, std::vector<std::string>{"cgroup"});
    clock.now += 10;
    // batch wrote 100 MiB in 10 s against wbps=10 MiB/s and stalled 3 s on I/O.
    t.write("/sys/fs/cgroup/batch/io.stat",
            "259:0 rbytes=1000000 wbytes=106857600 rios=100 wios=25800 dbytes=0 dios=0\n");
    t.write("/sys/fs/cgroup/batch/io.pressure",
            "some avg10=30.00 avg60=0.00 avg300=0.00 total=3000000\nfull avg10=0 avg60=0 avg300=0 total=1000000\n");
    // app hit memory.max and reclaimed.
    t.write("/sys/fs/cgroup/app/memory.events", "low 0\nhigh 0\nmax 13\noom 0\noom_kill 0\n");
    t.write("/sys/fs/cgroup/app/memory.stat",
            "file 100000000\nfile_dirty 0\nfile_writeback 0\npgscan 5000\npgsteal 4000\npgmajfault 9\n"
            "workingset_refault_file 850\n");
    Evidence ev;
    c.finish(ev);

    const Labels b{{"cgroup", "/batch"}};
    EXPECT_DOUBLE_EQ(metric(ev, "cgroup.io_write_bytes_per_s", b), 10485760.0);
    EXPECT_DOUBLE_EQ(metric(ev, "cgroup.io_limit_utilisation_pct", b), 100.0);
    EXPECT_EQ(fact(ev, "cgroup.io_limit_device", b), "nvme0n1 (259:0)");
    EXPECT_EQ(fact(ev, "cgroup.io_limit_setting", b), "io.max 259:0 wbps=10485760");
    EXPECT_DOUBLE_EQ(metric(ev, "cgroup.io_pressure_some_pct", b), 30.0);
    EXPECT_DOUBLE_EQ(metric(ev, "cgroup.io_pressure_full_pct", b), 10.0);
    EXPECT_DOUBLE_EQ(metric(ev, "cgroup.io_latency_configured", b), 0);
    EXPECT_EQ(fact(ev, "cgroup.io_top_device_majmin", b), "259:0");
    EXPECT_EQ(fact(ev, "cgroup.io_weight", b), "default 100");

    const Labels a{{"cgroup", "/app"}};
    EXPECT_DOUBLE_EQ(metric(ev, "cgroup.memory_events_max_delta", a), 10);
    EXPECT_DOUBLE_EQ(metric(ev, "cgroup.memory_limit_hits_delta", a), 10);
    EXPECT_DOUBLE_EQ(metric(ev, "cgroup.memory_pgscan_delta", a), 4000);
    EXPECT_DOUBLE_EQ(metric(ev, "cgroup.memory_pgsteal_delta", a), 3100);
    EXPECT_DOUBLE_EQ(metric(ev, "cgroup.memory_workingset_refault_file_delta", a), 800);
    EXPECT_DOUBLE_EQ(metric(ev, "cgroup.io_latency_target_us", a), 2000);
    EXPECT_DOUBLE_EQ(metric(ev, "cgroup.memory_usage_pct_of_limit", a), 100.0 * 104857600 / 134217728);

    MetricCatalog cat;
    cat.add_all(c.metric_specs());
    for (const auto& x : ev.metrics) EXPECT_TRUE(cat.find(x.name)) << x.name;
    for (const auto& x : ev.facts) EXPECT_TRUE(cat.find(x.name)) << x.name;

    // rules/cgroup.yaml on this evidence.
    const MetricCatalog full = full_catalog();
    LoadContext ctx{&full, {}};
    RuleSet rs = load_rules({std::string(IODIAG_SOURCE_DIR) + "/rules/cgroup.yaml"}, ctx);
    ASSERT_TRUE(rs.ok());
    const auto results = evaluate_rules(rs, ev);
    auto result = [&](const std::string& id, const std::string& instance) -> const RuleResult* {
        for (const auto& r : results)
            if (r.rule->id == id && r.instance == instance) return &r;
        ADD_FAILURE() << "no result for " << id << " " << instance;
        static const RuleResult none;
        return &none;
    };
    EXPECT_EQ(result("cgroup.io_limit_reached", "/batch")->outcome, Tri::True);
    EXPECT_EQ(result("cgroup.io_limit_reached", "/app")->outcome, Tri::Unknown);   // no limit set
    EXPECT_EQ(result("cgroup.memcg_limit_reclaim", "/app")->outcome, Tri::True);
    EXPECT_EQ(result("cgroup.memcg_limit_reclaim", "/batch")->outcome, Tri::False);
    const RuleResult* adv = result("cgroup.io_latency_protection", "/batch");
    EXPECT_EQ(adv->outcome, Tri::True);
    ASSERT_FALSE(adv->fixes.empty());
    EXPECT_NE(adv->fixes[0].action.find("echo \"259:0 target=<usec>\" > " + t.root() + "/sys/fs/cgroup/batch/io.latency"),
              std::string::npos)
        << adv->fixes[0].action;
    EXPECT_EQ(result("cgroup.io_latency_protection", "/app")->outcome, Tri::False);
}

TEST(CgroupCollector, NoCgroupMountsIsUnavailable) {
    CgroupCollector c;
    CollectOptions o;
    o.root = std::string(IODIAG_FIXTURES) + "/nvme_smart/sysroot";   // no proc/mounts there
    const CollectorStatus st = c.start(o);
    EXPECT_FALSE(st.available);
    EXPECT_NE(st.reason.find("proc/mounts"), std::string::npos) << st.reason;
}
