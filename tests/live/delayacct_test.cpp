// Live: with kernel.task_delayacct turned on *by this test* (and restored),
// a process doing synchronous direct reads shows blkio delay through taskstats.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "collectors/procfs/delayacct.hpp"
#include "collectors/text_file.hpp"
#include "live_support.hpp"

using namespace iodiag;

namespace {
class SysctlOverride {
public:
    SysctlOverride(std::string path, const std::string& value) : path_(std::move(path)) {
        old_ = try_read_first_line(path_).value_or("");
        std::ofstream(path_) << value << std::flush;
    }
    ~SysctlOverride() {
        if (!old_.empty()) std::ofstream(path_) << old_ << std::flush;
    }

private:
    std::string path_, old_;
};
}  // namespace

TEST(DelayacctLive, DirectReaderShowsBlkioDelayViaTaskstats) {
    if (auto why = live::missing_root(); !why.empty()) GTEST_SKIP() << why;
    if (auto why = live::missing_tool("fio"); !why.empty()) GTEST_SKIP() << why;
    const std::string sysctl = "/proc/sys/kernel/task_delayacct";
    if (!try_read_first_line(sysctl)) GTEST_SKIP() << sysctl << " absent: no task delay accounting in this kernel";
    SysctlOverride on(sysctl, "1");
    live::LoopDevice loop("/tmp", 256);   // on the virtual disk: reads really wait
    if (!loop.ok()) GTEST_SKIP() << loop.error();
    // Started after the sysctl: only such tasks are counted.
    live::Background fio("exec fio --name=da --filename=" + loop.path() +
                         " --rw=randread --direct=1 --bs=4k --ioengine=psync --rate_iops=500"
                         " --time_based --runtime=20 --output=/dev/null");
    std::this_thread::sleep_for(std::chrono::seconds(1));
    ASSERT_TRUE(fio.running());
    DelayacctCollector c;
    CollectOptions o;
    const CollectorStatus st = c.start(o);
    ASSERT_TRUE(st.available) << st.reason;
    std::this_thread::sleep_for(std::chrono::seconds(3));
    Evidence ev;
    c.finish(ev);
    EXPECT_EQ(ev.find_fact("delayacct.source", {})->value.rfind("netlink", 0), 0u) << st.reason;
    bool found = false;
    for (const auto& f : ev.facts) {
        if (f.name != "delayacct.comm" || f.value.rfind("fio", 0) != 0) continue;
        const Metric* m = ev.find_metric("delayacct.blkio_delay_ms", f.labels);
        const Metric* n = ev.find_metric("delayacct.blkio_count", f.labels);
        if (m && n && n->value > 100) {
            found = true;
            EXPECT_GT(m->value, 0);
            std::cerr << "pid " << f.labels.at("pid") << ": " << n->value << " waits, " << m->value << " ms\n";
        }
    }
    EXPECT_TRUE(found) << "no fio process with blkio waits in the evidence";
}
