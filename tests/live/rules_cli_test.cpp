// `iodiag rules lint|list` and `iodiag playbook` as a user runs them, and one
// rule reproduced for real: a tiny nr_requests on a loop device under many
// synchronous readers must be diagnosed as tag starvation.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "live_support.hpp"

namespace iodiag {
namespace {

namespace fs = std::filesystem;
using live::run_capture;

const std::string kBin = IODIAG_BINARY;

struct TempDir {
    fs::path path = fs::temp_directory_path() / ("iodiag_rules_cli_" + std::to_string(::getpid()));
    TempDir() { fs::create_directories(path); }
    ~TempDir() { fs::remove_all(path); }
};

TEST(RulesCli, LintReportsEveryProblemWithPositionAndFails) {
    TempDir dir;
    std::ofstream(dir.path / "bad.yaml") << "rules:\n"
                                            "  - id: x\n"
                                            "    layer: disk\n"
                                            "    severity: warning\n"
                                            "    title: t\n"
                                            "    when: {metric: disk.util_pc, op: \">\", value: 1}\n"
                                            "    mechanism: m\n";
    std::string out;
    const int rc = run_capture(kBin + " rules lint " + (dir.path / "bad.yaml").string() + " 2>&1", &out);
    EXPECT_EQ(rc, 1) << out;
    const std::string file = (dir.path / "bad.yaml").string();
    EXPECT_NE(out.find(file + ":3:12: E008: unknown layer 'disk'"), std::string::npos) << out;
    EXPECT_NE(out.find(file + ":6:20: E004: unknown metric 'disk.util_pc' (did you mean 'disk.util_pct'?)"),
              std::string::npos)
        << out;

    out.clear();   // run_capture appends: the JSON must be parsed alone
    const int rc_json = run_capture(kBin + " rules lint --format json " + file + " 2>/dev/null", &out);
    EXPECT_EQ(rc_json, 1);
    const auto j = nlohmann::json::parse(out.substr(out.find('{')));
    EXPECT_EQ(j["errors"], 2);
    EXPECT_EQ(j["ok"], false);
    EXPECT_EQ(j["diagnostics"][0]["code"], "E008");
    EXPECT_EQ(j["diagnostics"][0]["line"], 3);
}

// The rules load during the window (off the collectors' CPU-bound start): a
// rule that does not load must still end the run at once, with its position,
// exit code 3 and neither a verdict nor a bundle, not after the window.
TEST(RulesCli, BadRulesEndALiveRecordingAtOnceWithExitThreeAndNothingWritten) {
    TempDir dir;
    std::ofstream(dir.path / "bad.yaml") << "rules:\n"
                                            "  - id: x\n"
                                            "    layer: disk\n";
    const fs::path bundle = dir.path / "b.json", err = dir.path / "stderr";
    std::string out;
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = run_capture(kBin + " record --duration 60 -o " + bundle.string() + " --rules-dir " +
                                   dir.path.string() + " --format json 2>" + err.string(),
                               &out);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::ifstream in(err);
    const std::string errors((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(rc, 3) << errors;
    EXPECT_TRUE(out.empty()) << out;
    EXPECT_FALSE(fs::exists(bundle));
    EXPECT_NE(errors.find((dir.path / "bad.yaml").string() + ":3:12: E008: unknown layer 'disk'"), std::string::npos)
        << errors;
    // Not a timing budget: a window of 60 s that ran its course would take 60.
    EXPECT_LT(took, 30.0) << "the window was not cut short by the rules' error";
}

TEST(RulesCli, ListAndPlaybook) {
    std::string out;
    EXPECT_EQ(run_capture(kBin + " rules list 2>/dev/null", &out), 0) << out;
    EXPECT_NE(out.find("device.saturated"), std::string::npos) << out;
    EXPECT_NE(out.find("rules/device.yaml:"), std::string::npos) << out;

    EXPECT_EQ(run_capture(kBin + " playbook block-scheduler 2>/dev/null", &out), 0);
    EXPECT_NE(out.find("Steps:"), std::string::npos) << out;
    EXPECT_NE(out.find("$ echo mq-deadline > /sys/block/DEV/queue/scheduler"), std::string::npos) << out;

    EXPECT_EQ(run_capture(kBin + " playbook no-such-playbook 2>&1", &out), 1);
    EXPECT_NE(out.find("unknown playbook 'no-such-playbook'"), std::string::npos) << out;
    EXPECT_NE(out.find("block-scheduler"), std::string::npos) << out;   // the known ids are listed
}

// The device is a FUSE file that answers every request after 4 ms (tests/lab/
// slowfs.py): its service is a sleep. Over a file in RAM each request was CPU
// work, and on a busy machine (CI, a sanitizer build beside it) the readers
// spent their time runnable rather than waiting for a tag: iodiag named the
// run queue, rightly, and this test failed.
TEST(RulesLive, TinyNrRequestsIsDiagnosedAsTagStarvation) {
    for (const auto& why : {live::missing_root(), live::missing_tool("fio"), live::missing_tool("losetup")})
        if (!why.empty()) GTEST_SKIP() << why;
    live::SlowFs slow("fixed:4", 64);
    if (!slow.error().empty()) GTEST_SKIP() << "no slow device: " << slow.error();
    live::LoopDevice loop(slow.image());
    if (!loop.ok()) GTEST_SKIP() << "no loop device: " << loop.error();
    // Requests served side by side, as a device with its own queue serves them.
    run_capture("losetup --direct-io=on " + loop.path() + " 2>/dev/null", nullptr);
    std::ofstream("/sys/block/" + loop.name() + "/queue/nr_requests") << 4;
    std::string out;
    run_capture("cat /sys/block/" + loop.name() + "/queue/nr_requests", &out);
    ASSERT_EQ(out, "4\n") << "cannot set nr_requests";
    // Many synchronous readers: each waits for a tag in Q2G (DESIGN §7).
    live::Background fio("fio --name=tags --filename=" + loop.path() +
                         " --rw=randread --bs=4k --direct=1 --ioengine=psync --numjobs=12"
                         " --time_based --runtime=30 >/dev/null 2>&1");
    sleep(2);
    const int rc = run_capture(kBin + " -d 3 --device " + loop.name() + " --format json 2>/dev/null", &out);
    ASSERT_NE(out.find('{'), std::string::npos) << "rc " << rc << ": " << out;
    const auto v = nlohmann::json::parse(out.substr(out.find('{')));
    bool found = false;
    for (const auto& f : v["findings"])
        if (f["rule_id"] == "block_queue.nr_requests_tiny" && f["instance"] == loop.name()) found = true;
    EXPECT_TRUE(found) << v["findings"].dump(2) << "\nnot evaluated: " << v["not_evaluated"].dump(2);
}

}  // namespace
}  // namespace iodiag
