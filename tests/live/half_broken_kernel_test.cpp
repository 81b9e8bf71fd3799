// Half-broken kernels and two runs at once, as root: a BPF collector whose
// program the verifier rejects, whose attach fails or whose tracepoint is
// missing (each forced through IODIAG_TEST_BPF_FAULTS) is unavailable with the
// reason, its layers say why they were not observed, and every other collector
// goes on; two iodiag runs at the same time both give a verdict and leave no
// BPF program behind.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "collectors/bpf/bpf_features.hpp"
#include "tests/live/live_support.hpp"

using namespace iodiag;
using namespace iodiag::live;
using nlohmann::json;

namespace {

const std::string kIodiag = IODIAG_BINARY;

std::string missing_bpf() {
    if (auto why = missing_root(); !why.empty()) return why;
    return KernelFeatureProbe().btf_available();
}

// One diagnosis as JSON (exit status in *rc); stderr goes to `err_file`.
json diagnose(const std::string& env, int* rc, const std::string& err_file = "/dev/null") {
    std::string out;
    *rc = run_capture(env + " " + kIodiag + " --duration 0.5 --format json 2>" + err_file, &out);
    try {
        return json::parse(out);
    } catch (const json::exception&) {
        return json();
    }
}

const json* collector(const json& verdict, const std::string& name) {
    for (const auto& c : verdict["collectors"])
        if (c["name"] == name) return &c;
    return nullptr;
}

std::set<std::string> available(const json& verdict) {
    std::set<std::string> out;
    for (const auto& c : verdict["collectors"])
        if (c["available"].get<bool>()) out.insert(c["name"].get<std::string>());
    return out;
}

// Ids of the BPF programs loaded on the machine now.
std::set<std::string> listed_program_ids() {
    std::string out;
    run_capture("bpftool prog list -j 2>/dev/null", &out);
    std::set<std::string> ids;
    try {
        for (const auto& p : json::parse(out)) ids.insert(std::to_string(p["id"].get<long>()));
    } catch (const json::exception&) {
    }
    return ids;
}

// Programs no live process holds (by a program or link fd): what an exited
// iodiag would have left behind (pinned or leaked). Programs of other work
// running on the machine meanwhile are held by their process and not counted.
// The kernel frees a program shortly after its last fd closes, so an orphan
// must still be there half a second later.
std::set<std::string> orphan_program_ids() {
    auto orphans = [] {
        std::set<std::string> ids = listed_program_ids();
        std::error_code ec;
        for (const auto& proc : std::filesystem::directory_iterator("/proc", ec)) {
            try {   // a process may exit while it is read
                std::error_code ec2;
                for (const auto& fd : std::filesystem::directory_iterator(proc.path() / "fdinfo", ec2)) {
                    std::ifstream in(fd.path());
                    std::string line;
                    while (std::getline(in, line))
                        if (line.rfind("prog_id:", 0) == 0) ids.erase(std::to_string(std::stol(line.substr(8))));
                }
            } catch (const std::exception&) {
            }
        }
        return ids;
    };
    std::set<std::string> first = orphans();
    if (first.empty()) return first;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::set<std::string> again = orphans(), both;
    for (const auto& id : first)
        if (again.count(id)) both.insert(id);
    return both;
}

// The orphans not in `before`, once they are gone or after 15 s: iodiag
// hands its per-syscall perf events to a child that closes them after it
// exits (collectors/bpf/deferred_release.hpp), and a program attached only
// through them is held by no fd meanwhile; each close waits for an RCU grace
// period, longer on a loaded machine. A leak stays past the wait.
// Returns the new ones left (`before` may hold a previous run's programs
// still on their way out).
std::set<std::string> new_orphans_after_release(const std::set<std::string>& before) {
    std::set<std::string> added;
    for (int i = 0; i < 15; ++i) {   // about a second a look (orphan_program_ids looks twice)
        added.clear();
        for (const auto& id : orphan_program_ids())
            if (!before.count(id)) added.insert(id);
        if (added.empty()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    return added;
}

struct Fault {
    std::string spec;        // IODIAG_TEST_BPF_FAULTS
    std::string collector;   // the one that must become unavailable
    std::string reason;      // a piece of its reason
};

}  // namespace

TEST(HalfBrokenKernel, EachForcedBpfFailureDisablesOnlyItsCollectorWithTheReason) {
    IODIAG_LIVE_REQUIRE(missing_bpf());
    int rc = 0;
    const json baseline = diagnose("", &rc);
    ASSERT_EQ(rc, 0);
    const std::set<std::string> normally = available(baseline);
    for (const char* bpf : {"syscall_bpf", "block_bpf"})
        ASSERT_TRUE(normally.count(bpf)) << bpf << " is not available on this machine even without faults";

    std::vector<Fault> faults = {
        // The verifier rejects a program: the whole object does not load.
        {"load:syscall_bpf", "syscall_bpf", "Permission denied"},
        {"load:block_bpf", "block_bpf", "Permission denied"},
        // Attaching fails (a tracepoint gone between the check and the attach).
        // The syscall collector falls back from the traced syscalls' own
        // events to raw_syscalls when one of those fails: both must fail.
        {"attach:sys_enter_read,attach:sys_enter", "syscall_bpf", "did not attach"},
        {"attach:block_rq_complete", "block_bpf", "attach"},
        // The tracepoint does not exist on this kernel (fsync's own event
        // missing sends the syscall collector to raw_syscalls, where
        // sys_exit is missing too).
        {"tracepoint:sys_enter_fsync,tracepoint:sys_exit", "syscall_bpf", "did not attach"},
        {"tracepoint:block_rq_issue", "block_bpf", "block_rq_issue"},
    };
    if (normally.count("iouring_bpf")) {
        faults.push_back({"load:iouring_bpf", "iouring_bpf", "Permission denied"});
        faults.push_back({"attach:iouring_bpf", "iouring_bpf", "attach"});
        faults.push_back({"tracepoint:io_uring_submit_req", "iouring_bpf", "io_uring_submit_req"});
    }
    const auto programs_before = orphan_program_ids();
    for (const auto& f : faults) {
        SCOPED_TRACE(f.spec);
        const json v = diagnose("IODIAG_TEST_BPF_FAULTS=" + f.spec, &rc);
        ASSERT_EQ(rc, 0) << "no verdict with " << f.spec;
        const json* c = collector(v, f.collector);
        ASSERT_TRUE(c);
        EXPECT_FALSE((*c)["available"].get<bool>());
        const std::string reason = (*c)["reason"].get<std::string>();
        EXPECT_NE(reason.find(f.reason), std::string::npos) << reason;
        // Every other collector that runs here still ran.
        std::set<std::string> expected = normally;
        expected.erase(f.collector);
        std::set<std::string> got = available(v);
        got.erase(f.collector);
        EXPECT_EQ(got, expected);
        // A layer only that collector measures says it was not observed because
        // the collector could not run, and why.
        if (f.collector == "syscall_bpf") {
            for (const auto& row : v["layers"])
                if (row["layer"] == "dirty") {
                    EXPECT_EQ(row["state"], "not observed");
                    const std::string by = row["observed_by"].get<std::string>();
                    EXPECT_NE(by.find("syscall_bpf could not run"), std::string::npos) << by;
                }
        }
    }
    // Failed loads and attaches leave nothing behind.
    EXPECT_EQ(new_orphans_after_release(programs_before), std::set<std::string>{});
}

TEST(TwoRuns, AtTheSameTimeBothGiveAVerdictWithEveryCollector) {
    IODIAG_LIVE_REQUIRE(missing_bpf());
    int rc = 0;
    const std::set<std::string> normally = available(diagnose("", &rc));
    ASSERT_EQ(rc, 0);
    const auto programs_before = orphan_program_ids();
    json first, second;
    int rc1 = -1, rc2 = -1;
    std::thread a([&] { first = diagnose("", &rc1); });
    std::thread b([&] { second = diagnose("", &rc2); });
    a.join();
    b.join();
    EXPECT_EQ(rc1, 0);
    EXPECT_EQ(rc2, 0);
    EXPECT_EQ(first["schema"], "iodiag-verdict");
    EXPECT_EQ(second["schema"], "iodiag-verdict");
    EXPECT_EQ(available(first), normally);
    EXPECT_EQ(available(second), normally);
    EXPECT_EQ(new_orphans_after_release(programs_before), std::set<std::string>{});
}
