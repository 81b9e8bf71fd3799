// Live: fio with ioengine=io_uring on ext4 (on a loop device). Buffered writes
// are punted to io-wq workers (all of them on this kernel): the collector
// reports the punt share and the rule iouring.buffered_io_punted fires. With
// direct=1 the requests are issued from the ring and the rule does not fire.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <thread>

#include "collectors/bpf/bpf_fault_injection.hpp"
#include "collectors/bpf/iouring_bpf.hpp"
#include "collectors/bpf/syscall_bpf.hpp"
#include "app/catalog.hpp"
#include "engine/rules/rules.hpp"
#include "live_support.hpp"

using namespace iodiag;

namespace {

class Ext4Mount {
public:
    explicit Ext4Mount(const std::string& dev) {
        dir_ = "/tmp/iodiag-iouring-" + std::to_string(getpid());
        std::string out;
        if (live::run_capture("mkfs.ext4 -q -F " + dev + " 2>&1", &out) != 0) {
            error_ = "mkfs.ext4 failed: " + out;
            return;
        }
        std::filesystem::create_directories(dir_);
        if (live::run_capture("mount " + dev + " " + dir_ + " 2>&1", &out) != 0) {
            error_ = "mount failed: " + out;
            return;
        }
        mounted_ = true;
    }
    ~Ext4Mount() {
        std::string out;
        if (mounted_) live::run_capture("umount " + dir_ + " 2>&1", &out);
        std::error_code ec;
        std::filesystem::remove(dir_, ec);
    }
    bool ok() const { return mounted_; }
    const std::string& error() const { return error_; }
    const std::string& dir() const { return dir_; }

private:
    std::string dir_, error_;
    bool mounted_ = false;
};

struct Outcome {
    Evidence ev;
    Tri rule = Tri::Unknown;
    CollectorStatus status;
};

Outcome run_fio(const Ext4Mount& fs, bool direct) {
    Outcome o;
    live::Background fio("exec fio --name=uring --directory=" + fs.dir() +
                         " --ioengine=io_uring --rw=randwrite --bs=4k --size=64m --iodepth=16"
                         " --rate_iops=2000 --time_based --runtime=20 --output=/dev/null --direct=" +
                         std::string(direct ? "1" : "0"));
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));   // file laid out, steady state
    IouringBpfCollector c;
    CollectOptions opts;
    o.status = c.start(opts);
    if (!o.status.available) return o;
    o.ev.collectors.push_back(o.status);
    std::this_thread::sleep_for(std::chrono::seconds(3));
    c.finish(o.ev);
    const MetricCatalog cat = full_catalog();
    LoadContext ctx{&cat, {}};
    RuleSet rs = load_rules({std::string(IODIAG_SOURCE_DIR) + "/rules/iouring.yaml"}, ctx);
    EXPECT_TRUE(rs.ok());
    for (const auto& r : evaluate_rules(rs, o.ev))
        if (r.rule && r.rule->id == "iouring.buffered_io_punted") o.rule = r.outcome;
    return o;
}

double metric(const Evidence& ev, const std::string& name) {
    const Metric* m = ev.find_metric(name);
    return m ? m->value : -1;
}

}  // namespace

TEST(IouringLive, BufferedWritesArePuntedDirectWritesAreNot) {
    if (auto why = live::missing_root(); !why.empty()) GTEST_SKIP() << why;
    for (const char* tool : {"fio", "mkfs.ext4", "losetup"})
        if (auto why = live::missing_tool(tool); !why.empty()) GTEST_SKIP() << why;
    live::LoopDevice loop("/dev/shm", 256);
    if (!loop.ok()) GTEST_SKIP() << loop.error();
    Ext4Mount fs(loop.path());
    if (!fs.ok()) GTEST_SKIP() << fs.error();

    const Outcome buffered = run_fio(fs, false);
    if (!buffered.status.available) GTEST_SKIP() << "iouring_bpf unavailable: " << buffered.status.reason;
    EXPECT_GT(metric(buffered.ev, "iouring.rw_submitted"), 1000);
    EXPECT_GE(metric(buffered.ev, "iouring.write_punt_share_pct"), 90);
    // A punted write is the worker's from the hand-off on: the inline attempt
    // before it (IOCB_NOWAIT, refused at once) is a sliver of its life.
    EXPECT_GT(metric(buffered.ev, "iouring.iowq_time_pct"), 50);
    EXPECT_EQ(buffered.rule, Tri::True);

    const Outcome direct = run_fio(fs, true);
    ASSERT_TRUE(direct.status.available) << direct.status.reason;
    EXPECT_GT(metric(direct.ev, "iouring.rw_submitted"), 1000);
    EXPECT_LT(metric(direct.ev, "iouring.rw_punt_share_pct"), 10);
    EXPECT_LT(metric(direct.ev, "iouring.iowq_time_pct"), 10);
    EXPECT_EQ(direct.rule, Tri::False);
    EXPECT_GT(metric(direct.ev, "iouring.completed"), 1000);
    // fio waits for completions: the waits are timed up to io_uring_enter's
    // exit (raw_syscalls:sys_exit filtered by syscall number).
    EXPECT_GT(metric(direct.ev, "iouring.cq_waits"), 0);
    EXPECT_GT(metric(direct.ev, "iouring.cq_wait_total_ms"), 0);
    for (const char* what : {"inflight_slot_busy", "ring_table_full"}) {
        const Metric* lost = direct.ev.find_metric("collector.lost_events", {{"collector", "iouring_bpf"}, {"what", what}});
        ASSERT_NE(lost, nullptr) << what;
        EXPECT_EQ(lost->value, 0) << what;
    }
    EXPECT_NE(direct.ev.find_metric("collector.lost_events",
                                    {{"collector", "iouring_bpf"}, {"what", "program_runs_skipped"}}),
              nullptr);
    std::cerr << "buffered: punt " << metric(buffered.ev, "iouring.rw_punt_share_pct") << " %, io-wq time "
              << metric(buffered.ev, "iouring.iowq_time_pct") << " %, p99 "
              << metric(buffered.ev, "iouring.latency_p99_us") << " us; direct: punt "
              << metric(direct.ev, "iouring.rw_punt_share_pct") << " %, p99 "
              << metric(direct.ev, "iouring.latency_p99_us") << " us, cq waits "
              << metric(direct.ev, "iouring.cq_waits") << "\n";
}

// The in-flight table shrunk to one slot pair under io_uring reads at queue
// depth 2: whenever two requests are live they hash to the same slot or to
// the pair's two slots, so each one must have found a place (the slot or its
// neighbour) for every read to be timed. A direct-mapped table lost half of
// them here (fio's two requests reuse two io_kiocbs that hashed alike).
TEST(IouringLive, TwoLiveRequestsThatShareASlotAreBothTimed) {
    if (auto why = live::missing_root(); !why.empty()) GTEST_SKIP() << why;
    if (auto why = live::missing_tool("fio"); !why.empty()) GTEST_SKIP() << why;
    IouringBpfCollector bad;
    bad.use_inflight_slots(3);
    EXPECT_NE(bad.start(CollectOptions{}).reason.find("not a power of two from 2"), std::string::npos);
    live::LoopDevice loop("/dev/shm", 64);
    if (!loop.ok()) GTEST_SKIP() << loop.error();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));   // udev's probe reads

    IouringBpfCollector c;
    c.use_inflight_slots(2);
    const CollectorStatus st = c.start(CollectOptions{});
    if (!st.available) GTEST_SKIP() << "iouring_bpf unavailable: " << st.reason;
    std::string out;
    ASSERT_EQ(live::run_capture("fio --name=pair --filename=" + loop.path() +
                                    " --ioengine=io_uring --rw=randread --direct=1 --bs=4k --size=8M"
                                    " --iodepth=2 --output=/dev/null 2>&1",
                                &out),
              0)
        << out;
    Evidence ev;
    c.finish(ev);
    const Metric* lost =
        ev.find_metric("collector.lost_events", {{"collector", "iouring_bpf"}, {"what", "inflight_slot_busy"}});
    ASSERT_NE(lost, nullptr);
    std::cerr << "queue depth 2 on one in-flight slot pair: " << metric(ev, "iouring.completed") << " of "
              << metric(ev, "iouring.rw_submitted") << " requests timed, " << lost->value << " refused a slot\n";
    EXPECT_GE(metric(ev, "iouring.rw_submitted"), 2048);   // fio's reads (other io_uring users may add)
    EXPECT_EQ(metric(ev, "iouring.completed"), metric(ev, "iouring.submitted"));
    EXPECT_EQ(lost->value, 0);
}

namespace {
// The real kernel, except that tp_btf is reported as refused: exercises the
// raw_tp program set that kernels without tp_btf get.
class NoTpBtfProbe : public KernelFeatureProbe {
public:
    bool tp_btf_loads(const std::string&) override { return false; }
};

// fio reading a loop device over /dev/shm through io_uring at a steady 1000
// requests per second, and a reference collector (its own programs, tp_btf
// where the kernel has it) started once the load runs. `skip` says why not.
struct SteadyIouringLoad {
    explicit SteadyIouringLoad(const std::string& name) {
        if (skip = live::missing_root(); !skip.empty()) return;
        if (skip = live::missing_tool("fio"); !skip.empty()) return;
        if (!loop.ok()) {
            skip = loop.error();
            return;
        }
        fio.emplace("exec fio --name=" + name + " --filename=" + loop.path() +
                    " --ioengine=io_uring --rw=randread --direct=1 --bs=4k --iodepth=8"
                    " --rate_iops=1000 --time_based --runtime=20 --output=/dev/null");
        std::this_thread::sleep_for(std::chrono::milliseconds(700));
        if (const CollectorStatus st = reference.start(CollectOptions{}); !st.available)
            skip = "iouring_bpf unavailable: " + st.reason;
        reference_started = std::chrono::steady_clock::now();
    }
    live::LoopDevice loop{"/dev/shm", 64};
    std::optional<live::Background> fio;
    IouringBpfCollector reference;
    std::chrono::steady_clock::time_point reference_started;
    std::string skip;
};
}  // namespace

// The raw_tp set runs beside the tp_btf set on the same requests: its window
// lies inside the tp_btf one (started after it, finished before it), so it
// counts at most as many, and the two punt shares differ by no more than the
// tp_btf-only requests can move a share. How many requests a loaded machine
// punts (a NOWAIT issue that fails) changes nothing here: both see the same.
TEST(IouringLive, RawTpFallbackCountsTheSameRequests) {
    SteadyIouringLoad load("raw");
    if (!load.skip.empty()) GTEST_SKIP() << load.skip;
    IouringBpfCollector& reference = load.reference;
    NoTpBtfProbe probe;
    IouringBpfCollector raw(&probe);
    const CollectorStatus st = raw.start(CollectOptions{});
    if (!st.available) {
        Evidence ignored;
        reference.finish(ignored);
        GTEST_SKIP() << "raw_tp unavailable: " << st.reason;
    }
    std::this_thread::sleep_for(std::chrono::seconds(3));
    Evidence ev, ref;
    raw.finish(ev);
    reference.finish(ref);
    if (ref.find_fact("iouring.attach_mode")->value != "tp_btf")
        GTEST_SKIP() << "no tp_btf set to compare with on this kernel";
    EXPECT_EQ(ev.find_fact("iouring.attach_mode")->value, "raw_tp");
    const double n = metric(ev, "iouring.rw_submitted"), n_ref = metric(ref, "iouring.rw_submitted");
    EXPECT_GT(n, 1000);
    EXPECT_LE(n, n_ref);
    EXPECT_GT(metric(ev, "iouring.completed"), 0.5 * metric(ref, "iouring.completed"));
    EXPECT_LE(metric(ev, "iouring.completed"), metric(ref, "iouring.completed"));
    EXPECT_LE(metric(ev, "iouring.punted"), metric(ref, "iouring.punted"));
    // share_ref = (1 - f) * share + f * share_outside, f = the reference's
    // requests outside the raw window: |share_ref - share| <= 100 f (+ 2
    // points for requests submitted in one window and punted in the other).
    const double f = n_ref > 0 ? 1 - n / n_ref : 1;
    const double share = metric(ev, "iouring.rw_punt_share_pct"), share_ref = metric(ref, "iouring.rw_punt_share_pct");
    EXPECT_NEAR(share, share_ref, 100 * f + 2) << "raw_tp " << share << " % of " << n << ", tp_btf " << share_ref
                                               << " % of " << n_ref;
    EXPECT_GT(metric(ev, "iouring.latency_p50_us"), 0);
    EXPECT_GT(metric(ev, "iouring.cq_waits"), 0);
    std::cerr << "punt share: raw_tp " << share << " % of " << n << ", tp_btf " << share_ref << " % of " << n_ref
              << "\n";
}

// The tp_btf probe only loads a program: when the tp_btf set then fails to
// attach, the collector retries with the raw_tp set and says so.
TEST(IouringLive, TpBtfSetThatFailsToAttachFallsBackToRawTp) {
    if (auto why = live::missing_root(); !why.empty()) GTEST_SKIP() << why;
    struct FaultEnv {
        FaultEnv() { setenv(kBpfFaultsEnv, "attach:btf_submit_req", 1); }
        ~FaultEnv() { unsetenv(kBpfFaultsEnv); }
    } fault;
    IouringBpfCollector c;
    const CollectorStatus st = c.start(CollectOptions{});
    if (!st.available && st.reason.find("raw_tp") == std::string::npos)
        GTEST_SKIP() << "iouring_bpf unavailable: " << st.reason;
    ASSERT_TRUE(st.available) << st.reason;
    Evidence ev;
    c.finish(ev);
    const Fact* mode = ev.find_fact("iouring.attach_mode");
    ASSERT_NE(mode, nullptr);
    EXPECT_EQ(mode->value, "raw_tp");
    EXPECT_NE(st.reason.find("attach btf_submit_req"), std::string::npos) << st.reason;
    EXPECT_NE(st.reason.find("using raw_tp"), std::string::npos) << st.reason;
}

// With the syscall collector running, the io_uring collector attaches no
// sys_exit program: the syscall collector's tail-calls its program at the
// exits of io_uring_enter (collectors/bpf/tail_call_chain.hpp). Its CQ waits are
// those of a reference collector with its own sys_exit, over a window nested
// in the reference's (started after it, the syscall collector finished
// before it), so at most as many and, at a steady rate, more than half of
// the reference's count scaled to the nested window's part of its window
// (starting three collectors takes seconds on a loaded machine: a fixed
// half failed there, 232 of 545). One whose chain nobody offered (the
// syscall collector not running) attaches its own sys_exit in all_started()
// and times its waits too.
TEST(IouringLive, CqWaitsEndThroughTheSyscallCollectorsSysExit) {
    SteadyIouringLoad load("chain");
    if (!load.skip.empty()) GTEST_SKIP() << load.skip;
    IouringBpfCollector& reference = load.reference;
    auto chain = std::make_shared<TailCallChain>();
    IouringBpfCollector chained, lone;
    chained.share_sys_exit(chain);
    lone.share_sys_exit(std::make_shared<TailCallChain>());
    SyscallBpfCollector syscalls;
    syscalls.share_sys_exit(chain);
    // the registry's order: io_uring first (nothing offered yet), then syscalls
    const CollectorStatus chained_st = chained.start(CollectOptions{});
    const CollectorStatus lone_st = lone.start(CollectOptions{});
    const CollectorStatus sys_st = syscalls.start(CollectOptions{});
    ASSERT_TRUE(chained_st.available) << chained_st.reason;
    ASSERT_TRUE(lone_st.available) << lone_st.reason;
    ASSERT_TRUE(sys_st.available) << sys_st.reason;
    chained.all_started();
    lone.all_started();
    syscalls.all_started();
    const auto nested_start = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(3));
    Evidence sys_ev, ev, lone_ev, ref;
    const auto nested_end = std::chrono::steady_clock::now();
    syscalls.finish(sys_ev);
    chained.finish(ev);
    lone.finish(lone_ev);
    reference.finish(ref);
    const auto reference_end = std::chrono::steady_clock::now();
    const double part = std::chrono::duration<double>(nested_end - nested_start).count() /
                        std::chrono::duration<double>(reference_end - load.reference_started).count();
    if (ref.find_fact("iouring.attach_mode")->value != "tp_btf")
        GTEST_SKIP() << "the chain needs the tp_btf set (raw_tp here)";
    const Metric* waits = ev.find_metric("iouring.cq_waits");
    ASSERT_NE(waits, nullptr);
    EXPECT_NE(waits->provenance.source.find("tail-called from syscall_bpf"), std::string::npos)
        << waits->provenance.source;
    const double n = metric(ev, "iouring.cq_waits"), n_ref = metric(ref, "iouring.cq_waits");
    // The load waits for completions about 300-800 times a second here; a
    // machine that starved fio (CI once saw 55 in 3 s, with as few in the
    // nested window as a handful of waits that began before it) leaves
    // nothing to compare: said, not passed.
    if (n_ref <= 100)
        GTEST_SKIP() << "the io_uring load waited for completions only " << n_ref
                     << " times in the reference's window (fio starved on this machine): too few to compare";
    // The chained and the lone collector watch the same window from their
    // own sys_exit paths: they count the same waits (the lone one started
    // a moment later). Against the reference, which watched longer, only as
    // a bound: a load that slowed while three collectors loaded (CI: 138
    // waits in the reference's 3.1 s, 54 in the nested 3 s) waited less
    // often in the nested window than on average.
    const double n_lone = metric(lone_ev, "iouring.cq_waits");
    EXPECT_GT(n, 0);
    EXPECT_GE(n, 0.8 * n_lone);
    EXPECT_GE(n_lone, 0.8 * n);
    EXPECT_LE(n, n_ref);
    EXPECT_LE(n_lone, n_ref);
    EXPECT_GT(metric(ev, "iouring.cq_wait_total_ms"), 0);
    EXPECT_EQ(lone_ev.find_metric("iouring.cq_waits")->provenance.source.find("tail-called"), std::string::npos);
    std::cerr << "CQ waits: chained " << n << ", own sys_exit " << metric(lone_ev, "iouring.cq_waits")
              << ", reference " << n_ref << "; the nested window is " << part * 100
              << " % of the reference's\n";
}
