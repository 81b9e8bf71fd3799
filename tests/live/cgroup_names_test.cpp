// Live: real cgroups with the path shapes systemd, Docker and the kubelet
// create (both kubelet drivers), a process doing I/O in each, and `iodiag
// record`: the bundle names every one of them (cgroup.name, cgroup.kind),
// for the syscall collector's v1 labels and the cgroup collector's paths
// alike, and `iodiag replay` shows the same names. The groups are created in
// the v1 blkio and memory hierarchies (cgroup v2 here is an empty mount) and
// removed on every exit path, parents the test created included.
//
// The runtime state (a container's name) is not faked on the host: names from
// the runtimes' state directories are tested on fixtures (cgroup_names_test).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "collectors/cgroup/cgroup_hierarchy.hpp"
#include "engine/evidence/bundle.hpp"
#include "engine/evidence/cgroup_labels.hpp"
#include "tests/live/live_support.hpp"

using namespace iodiag;
namespace fs = std::filesystem;

namespace {

const std::string kIodiag = IODIAG_BINARY;

std::string random_hex(std::mt19937_64& rng, size_t n) {
    static const char* kDigits = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < n; ++i) s += kDigits[rng() % 16];
    return s;
}

// A Kubernetes pod uid (8-4-4-4-12 hex).
std::string random_uid(std::mt19937_64& rng) {
    return random_hex(rng, 8) + "-" + random_hex(rng, 4) + "-4" + random_hex(rng, 3) + "-8" + random_hex(rng, 3) +
           "-" + random_hex(rng, 12);
}

// A cgroup at `path` in every given hierarchy; the directories it had to
// create (the parents too) are removed, deepest first, once its tasks are
// gone.
class ShapedGroup {
public:
    ShapedGroup(std::vector<std::string> mounts, std::string path) : path_(std::move(path)), mounts_(std::move(mounts)) {
        for (const auto& m : mounts_) {
            fs::path at = m;
            for (const auto& part : fs::path(path_).relative_path()) {
                at /= part;
                std::error_code ec;
                if (fs::create_directory(at, ec)) created_.push_back(at);
                if (ec) error_ = at.string() + ": " + ec.message();
            }
        }
    }
    ~ShapedGroup() {
        for (auto it = created_.rbegin(); it != created_.rend(); ++it)
            for (int i = 0; i < 50; ++i) {   // the killed tasks leave the group asynchronously
                std::error_code ec;
                if (fs::remove(*it, ec) || !fs::exists(*it)) break;
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
    }
    ShapedGroup(const ShapedGroup&) = delete;
    ShapedGroup& operator=(const ShapedGroup&) = delete;
    const std::string& path() const { return path_; }
    const std::string& error() const { return error_; }
    // Shell prefix that moves the shell into the group in every hierarchy.
    std::string enter() const {
        std::string s;
        for (const auto& m : mounts_) s += "echo $$ > " + m + path_ + "/cgroup.procs && ";
        return s;
    }

private:
    std::string path_, error_;
    std::vector<std::string> mounts_;
    std::vector<fs::path> created_;
};

struct Expected {
    std::string path, kind, name;
};

}  // namespace

TEST(CgroupNamesLive, RealPathShapesAreNamedInTheBundleAndOnReplay) {
    IODIAG_LIVE_REQUIRE(live::missing_root());
    IODIAG_LIVE_REQUIRE(live::missing_tool("dd"));
    const cgroup::Mounts m = cgroup::read_mounts("/");
    if (!m.has_v1("blkio") || !m.has_v1("memory"))
        GTEST_SKIP() << "no cgroup v1 blkio and memory hierarchies here (the shapes are created there)";
    const std::vector<std::string> mounts{m.v1.at("blkio"), m.v1.at("memory")};

    std::mt19937_64 rng(std::random_device{}());
    const std::string docker = random_hex(rng, 64), cgroupfs_ctr = random_hex(rng, 64), systemd_ctr = random_hex(rng, 64);
    const std::string pod1 = random_uid(rng), pod2 = random_uid(rng);
    std::string pod2_ = pod2;
    std::replace(pod2_.begin(), pod2_.end(), '-', '_');
    const std::string unit = "iodiag-live-" + std::to_string(getpid()) + ".service";
    const std::vector<Expected> want = {
        {"/system.slice/docker-" + docker + ".scope", "docker-container", "docker container " + docker.substr(0, 12)},
        {"/kubepods/burstable/pod" + pod1 + "/" + cgroupfs_ctr, "k8s-container",
         "burstable pod " + pod1 + " container " + cgroupfs_ctr.substr(0, 12)},
        {"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + pod2_ + ".slice/cri-containerd-" +
             systemd_ctr + ".scope",
         "k8s-container", "besteffort pod " + pod2 + " container " + systemd_ctr.substr(0, 12)},
        {"/system.slice/" + unit, "systemd-unit", unit},
    };

    // The top directories the shapes need that the host does not have: gone again at the end.
    std::vector<std::string> absent_before;
    for (const auto& mnt : mounts)
        for (const char* top : {"/system.slice", "/kubepods", "/kubepods.slice"})
            if (!fs::exists(mnt + top)) absent_before.push_back(mnt + top);

    const std::string dir = "/tmp/iodiag-cgnames-" + std::to_string(getpid());
    fs::create_directories(dir);
    struct RemoveDir {
        std::string d;
        ~RemoveDir() { fs::remove_all(d); }
    } remove_dir{dir};
    // Removed last created first: a later group may sit in a parent an
    // earlier one created (/system.slice).
    struct Groups : std::vector<std::unique_ptr<ShapedGroup>> {
        ~Groups() {
            while (!empty()) pop_back();
        }
    } groups;
    std::vector<std::unique_ptr<live::Background>> writers;   // destroyed first: the groups empty before removal
    for (size_t i = 0; i < want.size(); ++i) {
        groups.push_back(std::make_unique<ShapedGroup>(mounts, want[i].path));
        ASSERT_EQ(groups.back()->error(), "");
        // Synchronous 64 KiB writes: syscalls the syscall collector times and
        // bios the blkio group counts.
        writers.push_back(std::make_unique<live::Background>(
            groups.back()->enter() + "exec sh -c 'while :; do dd if=/dev/zero of=" + dir + "/w" + std::to_string(i) +
            " bs=64k count=32 oflag=direct,dsync 2>/dev/null; done'"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    for (const auto& w : writers) ASSERT_TRUE(w->running());

    const std::string bundle = dir + "/bundle.json";
    std::string recorded, replayed;
    ASSERT_EQ(live::run_capture(kIodiag + " record --duration 2 -o " + bundle + " --format json 2>/dev/null", &recorded), 0);
    writers.clear();
    ASSERT_EQ(live::run_capture(kIodiag + " replay " + bundle + " --format json 2>/dev/null", &replayed), 0);
    EXPECT_EQ(recorded, replayed);

    const Evidence ev = load_bundle(bundle);
    const auto labels = cgroup_labels(ev);
    for (const auto& w : want) {
        SCOPED_TRACE(w.path);
        // The syscall collector's "memory:<path>,blkio:<path>" and the cgroup
        // collector's "<path>": every label holding the path is named.
        size_t seen = 0;
        for (const auto& label : labels) {
            if (label != w.path && label.find(":" + w.path) == std::string::npos) continue;
            ++seen;
            const auto n = find_cgroup_name(ev, label);
            ASSERT_TRUE(n) << label;
            EXPECT_EQ(n->name, w.name) << label;
            EXPECT_EQ(n->kind, w.kind) << label;
            std::printf("%s -> %s (%s)\n", label.c_str(), n->name.c_str(), n->kind.c_str());
        }
        EXPECT_GE(seen, 1u) << "no label of the group in the bundle";
    }
    // The verdict names whichever of them it cites, as the bundle does.
    const auto v = nlohmann::json::parse(replayed);
    for (const auto& [label, n] : v["cgroup_names"].items())
        for (const auto& w : want)
            if (label == w.path || label.find(":" + w.path) != std::string::npos) {
                EXPECT_EQ(n["name"], w.name) << label;
            }
    // Every group and the parents the test made are gone (the destructors'
    // order: last created first).
    while (!groups.empty()) groups.pop_back();
    for (const auto& d : absent_before) EXPECT_FALSE(fs::exists(d)) << d << " left behind";
}
