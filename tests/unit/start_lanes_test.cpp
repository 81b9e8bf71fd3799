// The slow starters' schedule (app/start_lanes.hpp): the CPU-bound ones
// heaviest first, never more at once than the lanes; those that mostly wait
// beside them.
#include "app/start_lanes.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

namespace iodiag::cli {
namespace {

class FakeStarter : public Collector {
public:
    FakeStarter(std::string name, bool slow, unsigned weight) : name_(std::move(name)), slow_(slow), weight_(weight) {}
    std::string name() const override { return name_; }
    std::vector<MetricSpec> metric_specs() const override { return {}; }
    CollectorStatus start(const CollectOptions&) override { return {name_, true, "", {}}; }
    void finish(Evidence&) override {}
    bool slow_to_start() const override { return slow_; }
    unsigned start_cpu_weight() const override { return weight_; }

private:
    std::string name_;
    bool slow_;
    unsigned weight_;
};

struct Schedule {
    std::vector<std::string> order;   // CPU-bound starts, in the order they began
    size_t most_at_once = 0;          // CPU-bound starts running together, at most
    bool waiter_beside = false;       // the waiting starter ran while a CPU-bound one did
};

Schedule run(const std::vector<std::unique_ptr<Collector>>& collectors, size_t lanes) {
    Schedule s;
    std::mutex mu;
    size_t running = 0;
    start_slow_starters(
        collectors,
        [&](size_t i) {
            const bool cpu = collectors[i]->start_cpu_weight() > 0;
            {
                std::lock_guard<std::mutex> g(mu);
                if (cpu) {
                    s.order.push_back(collectors[i]->name());
                    s.most_at_once = std::max(s.most_at_once, ++running);
                } else if (running > 0) {
                    s.waiter_beside = true;
                }
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(cpu ? 100 : 10));
            std::lock_guard<std::mutex> g(mu);
            if (cpu) --running;
            else if (running > 0) s.waiter_beside = true;
        },
        lanes);
    return s;
}

std::vector<std::unique_ptr<Collector>> starters() {
    std::vector<std::unique_ptr<Collector>> c;
    c.push_back(std::make_unique<FakeStarter>("light", true, 1));
    c.push_back(std::make_unique<FakeStarter>("snapshot", false, 0));   // not a slow starter: never called
    c.push_back(std::make_unique<FakeStarter>("heaviest", true, 3));
    c.push_back(std::make_unique<FakeStarter>("sysfs_walk", true, 0));
    c.push_back(std::make_unique<FakeStarter>("middle", true, 2));
    return c;
}

TEST(StartLanes, OneLaneStartsTheCpuBoundOnesOneAfterAnotherHeaviestFirst) {
    const auto s = run(starters(), 1);
    EXPECT_EQ(s.order, (std::vector<std::string>{"heaviest", "middle", "light"}));
    EXPECT_EQ(s.most_at_once, 1u);
    EXPECT_TRUE(s.waiter_beside) << "the starter that mostly waits runs beside the lane, not after it";
}

TEST(StartLanes, TwoLanesRunTheTwoHeaviestAtOnceAndTheLightestAfter) {
    const auto s = run(starters(), 2);
    ASSERT_EQ(s.order.size(), 3u);
    // the two lanes take the two heaviest at once (in either order of locking)
    EXPECT_NE(std::find(s.order.begin(), s.order.begin() + 2, "heaviest"), s.order.begin() + 2);
    EXPECT_EQ(s.order.back(), "light");
    EXPECT_EQ(s.most_at_once, 2u);
}

TEST(StartLanes, MoreLanesThanStartersRunThemAllAtOnceAndZeroLanesStillStartsThem) {
    EXPECT_EQ(run(starters(), 8).most_at_once, 3u);
    const auto s = run(starters(), 0);
    EXPECT_EQ(s.order.size(), 3u);
    EXPECT_EQ(s.most_at_once, 1u);
}

// A start that mostly waits runs on a thread of its own: what it throws
// reaches the caller after every other start ended (escaping the thread, it
// would have ended the process).
TEST(StartLanes, AWaitingStarterThatThrowsIsRethrownAfterTheOthersStarted) {
    const auto collectors = starters();
    std::mutex mu;
    std::vector<std::string> started;
    try {
        start_slow_starters(
            collectors,
            [&](size_t i) {
                {
                    std::lock_guard<std::mutex> g(mu);
                    started.push_back(collectors[i]->name());
                }
                if (collectors[i]->name() == "sysfs_walk") throw std::runtime_error("sysfs_walk failed");
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            },
            2);
        ADD_FAILURE() << "the exception was swallowed";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "sysfs_walk failed");
    }
    std::sort(started.begin(), started.end());
    EXPECT_EQ(started, (std::vector<std::string>{"heaviest", "light", "middle", "sysfs_walk"}));
}

TEST(StartLanes, UsableCpusIsAtLeastOne) { EXPECT_GE(usable_cpus(), 1u); }

// The snapshots' starts (start_fast_starters): each once, never a slow
// starter, on as many threads at once as the lanes allow.
struct FastRun {
    std::vector<std::string> started;
    size_t most_at_once = 0;
};

// Fills `r` as the starts go, so that it holds what started when one throws.
void run_fast(const std::vector<std::unique_ptr<Collector>>& collectors, size_t lanes, FastRun& r,
              const std::string& throws = "") {
    std::mutex mu;
    size_t running = 0;
    start_fast_starters(
        collectors,
        [&](size_t i) {
            {
                std::lock_guard<std::mutex> g(mu);
                r.started.push_back(collectors[i]->name());
                r.most_at_once = std::max(r.most_at_once, ++running);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            std::lock_guard<std::mutex> g(mu);
            --running;
            if (collectors[i]->name() == throws) throw std::runtime_error(throws + " failed");
        },
        lanes);
}

std::vector<std::unique_ptr<Collector>> snapshots() {
    std::vector<std::unique_ptr<Collector>> c;
    c.push_back(std::make_unique<FakeStarter>("bpf", true, 3));   // a slow starter: never called here
    for (const char* n : {"diskstats", "vmstat", "proc_io", "proc_cpu", "cgroup"})
        c.push_back(std::make_unique<FakeStarter>(n, false, 0));
    return c;
}

TEST(StartLanes, TheSnapshotsStartEachOnceOnAsManyThreadsAsLanes) {
    const std::vector<std::string> all{"cgroup", "diskstats", "proc_cpu", "proc_io", "vmstat"};
    for (size_t lanes : {size_t(0), size_t(1), size_t(2), size_t(16)}) {
        FastRun r;
        run_fast(snapshots(), lanes, r);
        std::sort(r.started.begin(), r.started.end());
        EXPECT_EQ(r.started, all) << lanes << " lanes";
        EXPECT_EQ(r.most_at_once, std::clamp<size_t>(lanes, 1, all.size())) << lanes << " lanes";
    }
}

TEST(StartLanes, ASnapshotStartThatThrowsLetsTheOthersStartAndIsRethrown) {
    for (size_t lanes : {size_t(1), size_t(2)}) {
        FastRun r;
        try {
            run_fast(snapshots(), lanes, r, "diskstats");   // the first one taken
            ADD_FAILURE() << "the exception was swallowed (" << lanes << " lanes)";
        } catch (const std::runtime_error& e) {
            EXPECT_STREQ(e.what(), "diskstats failed");
        }
        EXPECT_EQ(r.started.size(), 5u) << lanes << " lanes";
    }
}

}  // namespace
}  // namespace iodiag::cli
