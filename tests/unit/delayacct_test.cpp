#include <gtest/gtest.h>

#include "collectors/procfs/delayacct.hpp"
#include "collectors/text_file.hpp"

using namespace iodiag;

namespace {
const std::string kDir = std::string(IODIAG_FIXTURES) + "/delayacct";

// Returns scripted delays: the second read of each pid adds to the first.
class ScriptedSource : public DelaySource {
public:
    explicit ScriptedSource(uint64_t blkio_step_ns) : blkio_step_ns_(blkio_step_ns) {}
    std::optional<TaskDelays> read(int tgid) override {
        if (tgid != 4242) return std::nullopt;
        TaskDelays d;
        d.comm = "fio";
        d.detailed = true;
        d.blkio_count = 10 + 90 * reads_;
        d.blkio_ns = 1000000 + blkio_step_ns_ * reads_;   // over 90 waits
        d.freepages_ns = 5000000ULL * reads_;
        ++reads_;
        return d;
    }
    std::string describe() const override { return "scripted"; }

private:
    uint64_t blkio_step_ns_;
    int reads_ = 0;
};

// One window of the collector on pid 4242 of the "on" fixture, its delays
// scripted to grow by `blkio_step_ns` of blkio delay.
Evidence scripted_window(uint64_t blkio_step_ns) {
    DelayacctCollector c([=](const std::string&) { return std::make_unique<ScriptedSource>(blkio_step_ns); });
    CollectOptions o;
    o.root = kDir + "/on";
    o.pid = 4242;
    Evidence ev;
    if (!c.start(o).available) return ev;
    c.finish(ev);
    return ev;
}
}  // namespace

TEST(Delayacct, Field42EvenWithSpacesAndParensInComm) {
    const std::string line = read_text_file(kDir + "/on/proc/4242/stat");
    EXPECT_EQ(parse_delayacct_blkio_ticks(line, "stat"), 250u);
    EXPECT_EQ(parse_stat_comm(line), "fio (job) 1");
    try {
        parse_delayacct_blkio_ticks(read_text_file(kDir + "/on/proc/77/stat"), "/proc/77/stat");
        FAIL();
    } catch (const SourceError& e) {
        EXPECT_NE(std::string(e.what()).find("/proc/77/stat: 5 fields, need 42"), std::string::npos) << e.what();
    }
}

TEST(Delayacct, OffIsUnavailableWithTheCommandAndNeverTurnedOn) {
    DelayacctCollector c;
    CollectOptions o;
    o.root = kDir + "/off";
    const CollectorStatus st = c.start(o);
    EXPECT_FALSE(st.available);
    EXPECT_NE(st.reason.find("sysctl -w kernel.task_delayacct=1"), std::string::npos) << st.reason;
    EXPECT_NE(st.reason.find("only tasks started afterwards"), std::string::npos) << st.reason;
    EXPECT_EQ(read_text_file(kDir + "/off/proc/sys/kernel/task_delayacct"), "0\n");
}

TEST(Delayacct, DeltasPerProcessFromTheSource) {
    const Evidence ev = scripted_window(450000000ULL);
    const Labels l{{"pid", "4242"}};
    ASSERT_TRUE(ev.find_metric("delayacct.blkio_delay_ms", l));
    EXPECT_DOUBLE_EQ(ev.find_metric("delayacct.blkio_delay_ms", l)->value, 450);
    EXPECT_DOUBLE_EQ(ev.find_metric("delayacct.blkio_count", l)->value, 90);
    EXPECT_DOUBLE_EQ(ev.find_metric("delayacct.blkio_avg_us", l)->value, 5000);
    EXPECT_DOUBLE_EQ(ev.find_metric("delayacct.freepages_delay_ms", l)->value, 5);
    EXPECT_EQ(ev.find_fact("delayacct.comm", l)->value, "fio");
}

// Linux 6.18 was seen to add ~2x the uptime to a reader's blkio delay in a
// few seconds. The fixture's process has 20 threads and is 1,000 s old
// (uptime 1000.22 s, starttime 22 ticks): 20,000 s of delay is the most it
// can have; 30,000 s in the window is the kernel's error, not a wait.
TEST(Delayacct, ADelayLongerThanTheThreadsHaveLivedIsNotReported) {
    const Evidence ev = scripted_window(30000ULL * 1000000000ULL);
    const Labels l{{"pid", "4242"}};
    EXPECT_FALSE(ev.find_metric("delayacct.blkio_delay_ms", l));
    EXPECT_FALSE(ev.find_metric("delayacct.blkio_delay_pct", l));
    const Fact* why = ev.find_fact("delayacct.implausible", l);
    ASSERT_TRUE(why);
    EXPECT_NE(why->value.find("fio: 30000005 ms of delay"), std::string::npos) << why->value;
    EXPECT_NE(why->value.find("(20000000 ms)"), std::string::npos) << why->value;
}

TEST(Delayacct, ProcStatFallbackReadsBlkioTicks) {
    auto src = make_proc_stat_source(kDir + "/on");
    auto d = src->read(4242);
    ASSERT_TRUE(d);
    EXPECT_FALSE(d->detailed);
    EXPECT_EQ(d->blkio_ns, 250ULL * (1000000000ULL / static_cast<uint64_t>(sysconf(_SC_CLK_TCK))));
    EXPECT_FALSE(src->read(77));   // malformed: skipped, not a wrong number
    EXPECT_FALSE(src->read(1));    // absent
}
