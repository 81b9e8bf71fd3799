// Live: fio in a cgroup whose read IOPS limit is far below what the workload
// asks, and fio in a memory cgroup too small for what it reads. The cgroup
// collector must name the group, the limit and the measured rate, and the
// memcg's limit hits and reclaim.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "collectors/cgroup/cgroup_collector.hpp"
#include "collectors/cgroup/cgroup_hierarchy.hpp"
#include "app/catalog.hpp"
#include "engine/rules/rules.hpp"
#include "collectors/text_file.hpp"
#include "live_support.hpp"

using namespace iodiag;
namespace fs = std::filesystem;

namespace {

// A cgroup directory created for the test in the given hierarchies, removed
// (after its tasks are gone) on destruction.
class TestGroup {
public:
    TestGroup(std::vector<std::string> mount_dirs, const std::string& name)
        : name_("/" + name), mounts_(std::move(mount_dirs)) {
        for (const auto& m : mounts_) fs::create_directory(m + name_);
    }
    ~TestGroup() {
        for (const auto& m : mounts_)
            for (int i = 0; i < 50; ++i) {
                std::error_code ec;
                if (fs::remove(m + name_, ec) || !fs::exists(m + name_)) break;
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
    }
    const std::string& path() const { return name_; }
    void write(const std::string& mount, const std::string& file, const std::string& text) const {
        std::ofstream(mount + name_ + "/" + file) << text << std::flush;
    }
    // Shell prefix that moves the shell into the group in every hierarchy.
    std::string enter() const {
        std::string s;
        for (const auto& m : mounts_) s += "echo $$ > " + m + name_ + "/cgroup.procs && ";
        return s;
    }

private:
    std::string name_;
    std::vector<std::string> mounts_;
};

std::string maj_min(const std::string& dev_name) {
    return try_read_first_line("/sys/block/" + dev_name + "/dev").value_or("?");
}

Evidence observe(CgroupCollector& c, const std::string& group, double seconds) {
    CollectOptions o;
    o.cgroup = group;
    Evidence ev;
    ev.collectors.push_back(c.start(o));
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    c.finish(ev);
    return ev;
}

// Outcome of one rule of rules/cgroup.yaml for the group.
Tri rule_outcome(const Evidence& ev, const std::string& rule_id, const std::string& group, std::string* title) {
    const MetricCatalog cat = full_catalog();
    LoadContext ctx{&cat, {}};
    RuleSet rs = load_rules({std::string(IODIAG_SOURCE_DIR) + "/rules/cgroup.yaml"}, ctx);
    EXPECT_TRUE(rs.ok());
    for (const auto& r : evaluate_rules(rs, ev))
        if (r.rule && r.rule->id == rule_id && r.instance == group) {
            if (title) *title = r.title + " | " + r.mechanism;
            return r.outcome;
        }
    return Tri::Unknown;
}

}  // namespace

TEST(CgroupLive, ThrottledGroupNamesLimitAndMeasuredRate) {
    if (auto why = live::missing_root(); !why.empty()) GTEST_SKIP() << why;
    if (auto why = live::missing_tool("fio"); !why.empty()) GTEST_SKIP() << why;
    const cgroup::Mounts m = cgroup::read_mounts("/");
    if (!m.has_v1("blkio")) GTEST_SKIP() << "no cgroup v1 blkio hierarchy here (this test drives v1 limits)";
    live::LoopDevice loop("/dev/shm", 128);
    if (!loop.ok()) GTEST_SKIP() << loop.error();
    const std::string mm = maj_min(loop.name());
    const std::string blkio = m.v1.at("blkio");
    TestGroup g({blkio}, "iodiag-live-throttle-" + std::to_string(getpid()));
    g.write(blkio, "blkio.throttle.read_iops_device", mm + " 50");
    // The workload asks for far more than 50 IO/s (a RAM-backed loop device
    // serves tens of thousands).
    live::Background fio(g.enter() + "exec fio --name=thr --filename=" + loop.path() +
                         " --rw=randread --direct=1 --bs=4k --ioengine=libaio --iodepth=8"
                         " --time_based --runtime=30 --output=/dev/null");
    std::this_thread::sleep_for(std::chrono::seconds(1));
    ASSERT_TRUE(fio.running());
    CgroupCollector c;
    const Evidence ev = observe(c, g.path(), 4.0);
    const Labels l{{"cgroup", g.path()}};
    const Metric* util = ev.find_metric("cgroup.io_limit_utilisation_pct", l);
    ASSERT_TRUE(util) << "no limit utilisation for " << g.path();
    EXPECT_GE(util->value, 80);
    EXPECT_LE(util->value, 120);
    const Metric* iops = ev.find_metric("cgroup.io_read_iops", l);
    ASSERT_TRUE(iops);
    EXPECT_GT(iops->value, 35);
    EXPECT_LT(iops->value, 65);
    EXPECT_EQ(ev.find_fact("cgroup.io_limit_device", l)->value, loop.name() + " (" + mm + ")");
    EXPECT_EQ(ev.find_fact("cgroup.io_limit_setting", l)->value,
              "blkio.throttle.read_iops_device " + mm + " 50");
    std::cerr << "measured: " << ev.find_fact("cgroup.io_limit_measured", l)->value << "\n";
    std::string text;
    EXPECT_EQ(rule_outcome(ev, "cgroup.io_limit_reached", g.path(), &text), Tri::True);
    EXPECT_NE(text.find(loop.name() + " (" + mm + ")"), std::string::npos) << text;
    EXPECT_NE(text.find("read_iops_device " + mm + " 50"), std::string::npos) << text;
}

TEST(CgroupLive, SmallMemcgShowsLimitHitsAndReclaim) {
    if (auto why = live::missing_root(); !why.empty()) GTEST_SKIP() << why;
    if (auto why = live::missing_tool("fio"); !why.empty()) GTEST_SKIP() << why;
    const cgroup::Mounts m = cgroup::read_mounts("/");
    std::vector<std::string> dirs;
    std::string mem_file, limit_text;
    if (m.has_v1("memory")) {
        dirs.push_back(m.v1.at("memory"));
        mem_file = "memory.limit_in_bytes";
        if (m.has_v1("blkio")) dirs.push_back(m.v1.at("blkio"));   // so its reads are counted too
    } else if (!m.v2.empty()) {
        dirs.push_back(m.v2);
        mem_file = "memory.max";
    } else {
        GTEST_SKIP() << "no memory cgroup hierarchy";
    }
    live::LoopDevice loop("/dev/shm", 256);
    if (!loop.ok()) GTEST_SKIP() << loop.error();
    TestGroup g(dirs, "iodiag-live-memcg-" + std::to_string(getpid()));
    g.write(dirs[0], mem_file, std::to_string(32 << 20));
    // Buffered random reads over 192 MiB through a 32 MiB memcg: the page cache
    // cannot hold it, so the group keeps hitting its limit and evicting itself.
    live::Background fio(g.enter() + "exec fio --name=mem --filename=" + loop.path() +
                         " --rw=randread --direct=0 --bs=4k --size=192m --ioengine=psync"
                         " --rate_iops=3000 --time_based --runtime=30 --output=/dev/null");
    std::this_thread::sleep_for(std::chrono::seconds(2));
    ASSERT_TRUE(fio.running());
    CgroupCollector c;
    const Evidence ev = observe(c, g.path(), 4.0);
    const Labels l{{"cgroup", g.path()}};
    const Metric* hits = ev.find_metric("cgroup.memory_limit_hits_delta", l);
    ASSERT_TRUE(hits) << "no limit hits metric for " << g.path();
    EXPECT_GT(hits->value, 0);
    const Metric* limit = ev.find_metric("cgroup.memory_limit_bytes", l);
    ASSERT_TRUE(limit);
    EXPECT_EQ(limit->value, double(32 << 20));
    const Metric* refault = ev.find_metric("cgroup.memory_workingset_refault_file_delta", l);
    const Metric* reads = ev.find_metric("cgroup.io_read_bytes_per_s", l);
    EXPECT_TRUE((refault && refault->value > 0) || (reads && reads->value > 0));
    if (const Metric* scan = ev.find_metric("cgroup.memory_pgscan_delta", l)) { EXPECT_GT(scan->value, 0); }
    EXPECT_EQ(rule_outcome(ev, "cgroup.memcg_limit_reclaim", g.path(), nullptr), Tri::True);
    std::cerr << "limit hits " << hits->value << ", refaults " << (refault ? refault->value : -1)
              << ", reads " << (reads ? reads->value : -1) << " B/s\n";
}

TEST(CgroupLive, IdOfOwnV2GroupResolvesToItsPath) {
    const cgroup::Mounts m = cgroup::read_mounts("/");
    if (m.v2.empty()) GTEST_SKIP() << "no cgroup v2 hierarchy mounted";
    // "0::/path" is this process's v2 group (/proc/self/cgroup).
    std::string own;
    std::istringstream in(read_text_file("/proc/self/cgroup"));
    for (std::string line; std::getline(in, line);)
        if (line.rfind("0::", 0) == 0) own = line.substr(3);
    if (own.empty()) GTEST_SKIP() << "/proc/self/cgroup has no v2 line";
    struct stat st {};
    ASSERT_EQ(::stat((m.v2 + (own == "/" ? "" : own)).c_str(), &st), 0);
    EXPECT_EQ(cgroup::cgroup_path_for_id(st.st_ino).value_or("?"), own);
    // A group created after the resolver's first scan is found too.
    if (auto why = live::missing_root(); !why.empty()) return;
    TestGroup g({m.v2}, "iodiag-live-id-" + std::to_string(getpid()));
    ASSERT_EQ(::stat((m.v2 + g.path()).c_str(), &st), 0);
    EXPECT_EQ(cgroup::cgroup_path_for_id(st.st_ino).value_or("?"), g.path());
}
