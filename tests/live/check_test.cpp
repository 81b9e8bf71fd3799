// Live, as root: `iodiag check` as a nightly job over a state directory.
//  - Three nightly-style runs while a reader does steady random reads on a
//    loop device, then a real fault (the backing disk throttled for the
//    reader's cgroup, so the loop device's own service time grows): the fourth
//    run reports the drift, naming the device and the runs it compared, and
//    exits WARNING or CRITICAL with its status line.
//  - A state directory that is full, then read-only: the check still runs,
//    says so, and leaves the files it did not write alone.
// Every cgroup, limit, mount and loop device is undone on every exit path.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "collectors/cgroup/cgroup_hierarchy.hpp"
#include "tests/live/live_support.hpp"

using namespace iodiag;
using namespace iodiag::live;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kIodiag = IODIAG_BINARY;

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

std::string first_line(const std::string& path) {
    std::ifstream in(path);
    std::string s;
    std::getline(in, s);
    return s;
}

// MAJ:MIN of the whole disk that holds `path` (a partition's parent disk:
// blk-throttle limits are per disk).
std::string disk_of(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return "";
    const std::string mm = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
    const fs::path sys = "/sys/dev/block/" + mm;
    std::error_code ec;
    if (fs::exists(sys / "partition", ec)) return trimmed(first_line((fs::canonical(sys, ec).parent_path() / "dev").string()));
    return fs::exists(sys, ec) ? mm : "";
}

class TempDir {
public:
    TempDir() {
        char tmpl[] = "/tmp/iodiag-live-check-XXXXXX";
        path_ = ::mkdtemp(tmpl) ? tmpl : "";
    }
    ~TempDir() {
        std::error_code ec;
        if (!path_.empty()) fs::remove_all(path_, ec);
    }
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

// A blkio (v1) or io (v2) group the reader runs in, with a read IOPS limit on
// one disk that can be set and lifted; removed after its tasks are gone.
class ThrottleGroup {
public:
    ThrottleGroup() {
        const cgroup::Mounts m = cgroup::read_mounts("/");
        const std::string name = "/iodiag-live-check-" + std::to_string(::getpid());
        if (m.has_v1("blkio")) {
            dir_ = m.v1.at("blkio") + name;
            v1_ = true;
        } else if (!m.v2.empty() && first_line(m.v2 + "/cgroup.controllers").find("io") != std::string::npos &&
                   first_line(m.v2 + "/cgroup.subtree_control").find("io") != std::string::npos) {
            dir_ = m.v2 + name;
        } else {
            why_not_ = "no cgroup v1 blkio hierarchy and no v2 io controller enabled at the root";
            return;
        }
        std::error_code ec;
        if (!fs::create_directory(dir_, ec)) why_not_ = "cannot create " + dir_ + ": " + ec.message();
    }
    ~ThrottleGroup() {
        if (!disk_.empty()) limit(0);
        for (int i = 0; i < 50 && !dir_.empty(); ++i) {
            std::error_code ec;
            if (fs::remove(dir_, ec) || !fs::exists(dir_)) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }
    const std::string& why_not() const { return why_not_; }
    std::string enter() const { return "echo $$ > " + dir_ + "/cgroup.procs && "; }
    // 0 lifts the limit.
    void limit(int read_iops) {
        if (v1_)
            std::ofstream(dir_ + "/blkio.throttle.read_iops_device") << disk_ << " " << read_iops << std::flush;
        else
            std::ofstream(dir_ + "/io.max") << disk_ << " riops=" << (read_iops ? std::to_string(read_iops) : "max")
                                            << std::flush;
    }
    void set_disk(const std::string& maj_min) { disk_ = maj_min; }

private:
    std::string dir_, disk_, why_not_;
    bool v1_ = false;
};

// Unmounts on every exit path.
class Tmpfs {
public:
    Tmpfs(const std::string& dir, const std::string& size) : dir_(dir) {
        std::string out;
        ok_ = run_capture("mount -t tmpfs -o size=" + size + ",mode=0750 iodiag-live-check " + dir + " 2>&1", &out) == 0;
        error_ = out;
    }
    ~Tmpfs() {
        if (ok_ && run_capture("umount " + dir_ + " 2>/dev/null", nullptr) != 0)
            run_capture("umount -l " + dir_ + " 2>/dev/null", nullptr);
    }
    bool ok() const { return ok_; }
    const std::string& error() const { return error_; }

private:
    std::string dir_, error_;
    bool ok_ = false;
};

struct CheckRun {
    int rc = -1;
    json doc;
};

CheckRun run_check(const std::string& args) {
    CheckRun r;
    std::string out;
    r.rc = run_capture(kIodiag + " check --format json " + args + " 2>/dev/null", &out);
    r.doc = json::parse(out, nullptr, false);
    return r;
}

const json* finding(const json& doc, const std::string& rule, const std::string& instance) {
    for (const auto& f : doc["findings"])
        if (f["rule_id"] == rule && f["instance"] == instance) return &f;
    return nullptr;
}

}  // namespace

TEST(LiveCheck, ThreeNightsThenAThrottledDeviceReportTheDriftWithTheNightsCompared) {
    if (const std::string why = missing_root(); !why.empty()) GTEST_SKIP() << why;
    if (const std::string why = missing_tool("fio"); !why.empty()) GTEST_SKIP() << why;
    ThrottleGroup group;
    if (const std::string why = group.why_not(); !why.empty()) GTEST_SKIP() << why;
    LoopDevice loop("/tmp", 256);
    ASSERT_TRUE(loop.ok()) << loop.error();
    // Real blocks (holes read as zeros without I/O), read with direct I/O on
    // the backing file, so every request reaches the backing disk.
    ASSERT_EQ(run_capture("dd if=/dev/zero of=" + loop.path() + " bs=1M count=256 oflag=direct status=none", nullptr), 0);
    run_capture("losetup --direct-io=on " + loop.path() + " 2>/dev/null", nullptr);
    const std::string backing = trimmed(first_line("/sys/block/" + loop.name() + "/loop/backing_file"));
    const std::string disk = disk_of(backing);
    ASSERT_FALSE(disk.empty()) << "no disk under " << backing;
    group.set_disk(disk);

    // The nightly workload: steady, rate-limited random reads (enough requests
    // in a window for a p99). The loop worker issues the backing reads in the
    // reader's cgroup, so a limit there on the backing disk is held inside the
    // loop device's own service time (D2C).
    Background fio(group.enter() + "exec fio --name=nightly --filename=" + loop.path() +
                   " --rw=randread --bs=4k --direct=1 --ioengine=libaio --iodepth=4 --rate_iops=300"
                   " --time_based --runtime=600 --output=/dev/null");
    std::this_thread::sleep_for(std::chrono::seconds(1));
    ASSERT_TRUE(fio.running()) << "fio did not start";

    TempDir state;
    ASSERT_FALSE(state.path().empty());
    const std::string args = "--duration 4 --state-dir " + state.path();
    std::vector<std::string> nights;
    for (int night = 1; night <= 3; ++night) {
        const CheckRun r = run_check(args);
        ASSERT_FALSE(r.doc.is_discarded()) << "night " << night;
        EXPECT_EQ(r.rc, r.doc["check"]["exit_code"].get<int>());
        EXPECT_EQ(finding(r.doc, "history.device_latency_drift", loop.name()), nullptr) << "night " << night;
        ASSERT_TRUE(r.doc["check"]["history"]["saved"].is_string()) << r.doc["check"]["history"].dump();
        nights.push_back(fs::path(r.doc["check"]["history"]["saved"].get<std::string>()).filename().string());
        std::printf("night %d: %s\n", night, r.doc["check"]["status_line"].get<std::string>().substr(0, 160).c_str());
    }

    // The fault: the backing disk limited to 40 reads/s for the reader
    // (300 asked), restored by the group's destructor.
    group.limit(40);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const CheckRun r = run_check(args);
    ASSERT_FALSE(r.doc.is_discarded());
    const std::string status = r.doc["check"]["status_line"];
    std::printf("fault: %s\n", status.substr(0, 300).c_str());
    EXPECT_TRUE(r.rc == 1 || r.rc == 2) << status;
    EXPECT_EQ(r.rc, r.doc["check"]["exit_code"].get<int>());
    EXPECT_TRUE(status.rfind("IODIAG WARNING - ", 0) == 0 || status.rfind("IODIAG CRITICAL - ", 0) == 0) << status;
    EXPECT_NE(status.find(" | 'status'="), std::string::npos) << status;

    const json* drift = finding(r.doc, "history.device_latency_drift", loop.name());
    ASSERT_NE(drift, nullptr) << r.doc["findings"].dump(1).substr(0, 4000);
    std::printf("drift: %s\n", drift->at("title").get<std::string>().c_str());
    EXPECT_NE(drift->at("title").get<std::string>().find(loop.name()), std::string::npos);
    std::string median_source;
    for (const auto& e : drift->at("evidence"))
        if (e["name"] == "history.d2c_p99_median_us") median_source = e["provenance"]["source"];
    for (const auto& night : nights) EXPECT_NE(median_source.find(night), std::string::npos) << median_source;
}

TEST(LiveCheck, AFullOrReadOnlyStateDirectoryIsReportedAndTheCheckStillRuns) {
    if (const std::string why = missing_root(); !why.empty()) GTEST_SKIP() << why;
    TempDir state;
    ASSERT_FALSE(state.path().empty());
    Tmpfs fs_(state.path(), "256k");
    ASSERT_TRUE(fs_.ok()) << fs_.error();
    const std::string corrupt = state.path() + "/iodiag-check-20000101T000000Z.json";
    std::ofstream(corrupt) << "{ truncated";
    // Fill it: a file iodiag did not write, which it must leave alone.
    run_capture("dd if=/dev/zero of=" + state.path() + "/filler bs=4k status=none 2>/dev/null", nullptr);

    CheckRun r = run_check("--duration 1 --state-dir " + state.path());
    ASSERT_FALSE(r.doc.is_discarded());
    EXPECT_NE(r.rc, 3) << r.doc["check"]["status_line"];
    const json& h = r.doc["check"]["history"];
    EXPECT_TRUE(h["saved"].is_null()) << h.dump();
    ASSERT_FALSE(h["problems"].empty()) << h.dump();
    EXPECT_NE(h["problems"][0].get<std::string>().find("is full"), std::string::npos) << h.dump();
    ASSERT_EQ(h["skipped"].size(), 1u) << h.dump();
    EXPECT_EQ(h["skipped"][0]["file"], "iodiag-check-20000101T000000Z.json");
    EXPECT_NE(r.doc["check"]["status_line"].get<std::string>().find("(history: "), std::string::npos);
    EXPECT_TRUE(fs::exists(corrupt));
    EXPECT_TRUE(fs::exists(state.path() + "/filler"));

    ASSERT_EQ(run_capture("mount -o remount,ro " + state.path(), nullptr), 0);
    r = run_check("--duration 1 --state-dir " + state.path());
    ASSERT_FALSE(r.doc.is_discarded());
    EXPECT_NE(r.rc, 3);
    ASSERT_FALSE(r.doc["check"]["history"]["problems"].empty());
    EXPECT_NE(r.doc["check"]["history"]["problems"][0].get<std::string>().find("not writable"), std::string::npos)
        << r.doc["check"]["history"].dump();
}

TEST(LiveCheck, TextOutputIsAPluginStatusLineThenTheVerdict) {
    if (const std::string why = missing_root(); !why.empty()) GTEST_SKIP() << why;
    std::string out;
    const int rc = run_capture(kIodiag + " check --duration 1 --no-history 2>/dev/null", &out);
    ASSERT_GE(rc, 0);
    EXPECT_LE(rc, 2) << out.substr(0, 400);
    const std::string status = out.substr(0, out.find('\n'));
    const char* states[] = {"OK", "WARNING", "CRITICAL"};
    EXPECT_EQ(status.rfind(std::string("IODIAG ") + states[rc] + " - ", 0), 0u) << status;
    EXPECT_NE(status.find(" | 'status'=" + std::to_string(rc) + ";1;2;0;3"), std::string::npos) << status;
    // The long output is the verdict, with no '|' a plugin runner would read as perfdata.
    const std::string rest = out.substr(out.find('\n') + 1);
    EXPECT_EQ(rest.rfind("iodiag verdict", 0), 0u);
    EXPECT_EQ(rest.find('|'), std::string::npos);
}

TEST(LiveCheck, JsonWithoutHistoryOrSiteConfigStillCarriesTheCheckObject) {
    // Neither a history nor a site configuration: the "check" object is the
    // plugin result alone (it once aborted merging an empty report into it).
    if (const std::string why = missing_root(); !why.empty()) GTEST_SKIP() << why;
    std::string out;
    const int rc = run_capture(kIodiag + " check --duration 1 --no-history --format json 2>/dev/null", &out);
    ASSERT_GE(rc, 0);
    EXPECT_LE(rc, 2) << out.substr(0, 400);
    const json j = json::parse(out);
    ASSERT_TRUE(j.contains("check")) << out.substr(0, 400);
    EXPECT_EQ(j["check"]["status_line"].get<std::string>().rfind("IODIAG ", 0), 0u);
    EXPECT_FALSE(j["check"].contains("history"));
}

// OK means it looked (issue 22): without the rights to load BPF, the layers
// that carry the applications' latency are not observed, and a nightly check
// installed that way must not say OK forever: UNKNOWN, exit 3, with why.
TEST(LiveCheck, WithoutTheRightsToObserveTheCheckIsUnknownNotOk) {
    if (const std::string why = missing_root(); !why.empty()) GTEST_SKIP() << why;
    if (const std::string why = missing_tool("runuser"); !why.empty()) GTEST_SKIP() << why;
    std::string out;
    const int rc = run_capture("cd / && runuser -u nobody -- " + kIodiag + " check --duration 1 --no-history 2>/dev/null",
                               &out);
    if (out.find("not executable") != std::string::npos || rc == 126)
        GTEST_SKIP() << "user nobody cannot run " << kIodiag << " (its directories are not searchable)";
    EXPECT_EQ(rc, 3) << out.substr(0, 600);
    const std::string status = out.substr(0, out.find('\n'));
    EXPECT_EQ(status.rfind("IODIAG UNKNOWN - ", 0), 0u) << status;
    EXPECT_NE(status.find("not observed"), std::string::npos) << status;
}
