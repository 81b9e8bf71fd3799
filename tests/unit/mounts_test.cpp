// Issue 34: the mounts and their options (collectors/procfs/mounts.hpp), and
// the writes that waited for durability per device and application
// (collectors/bpf/sync_writes.hpp): what names a `sync` mount as a cause.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "collectors/bpf/sync_writes.hpp"
#include "collectors/procfs/mounts.hpp"
#include "collectors/text_file.hpp"

using namespace iodiag;

namespace {

const char* kMountinfo =
    "22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,discard\n"
    "46 22 7:0 / /srv/my\\040data rw,relatime shared:30 - ext4 /dev/loop0 rw,sync\n"
    "47 22 7:0 /sub /mnt/bind rw,relatime - ext4 /dev/loop0 rw,sync\n"
    "48 22 0:45 / /tmp rw,nosuid - tmpfs tmpfs rw,size=100k\n"
    "49 22 7:1 /x /mnt/x rw - xfs /dev/loop1 rw,dirsync,wsync\n";

}  // namespace

TEST(Mounts, MountinfoLinesGiveDeviceMountPointAndBothOptionLists) {
    const auto mounts = parse_mountinfo(kMountinfo, "/proc/self/mountinfo");
    ASSERT_EQ(mounts.size(), 5u);
    EXPECT_EQ(mounts[1].major, 7u);
    EXPECT_EQ(mounts[1].minor, 0u);
    EXPECT_EQ(mounts[1].mount_point, "/srv/my data");   // \040 decoded
    EXPECT_EQ(mounts[1].fstype, "ext4");
    EXPECT_EQ(mounts[1].options, "rw,relatime,rw,sync");
    EXPECT_EQ(mounts[2].root, "/sub");
}

TEST(Mounts, AMalformedLineIsAnErrorNamingItsLine) {
    try {
        parse_mountinfo("22 1 254:1 / / rw - ext4 /dev/vda1 rw\n23 1 7:0 / /x rw ext4\n", "/proc/self/mountinfo");
        FAIL() << "no error";
    } catch (const SourceError& e) {
        EXPECT_NE(std::string(e.what()).find("/proc/self/mountinfo:2"), std::string::npos) << e.what();
    }
}

TEST(Mounts, AnOptionIsMatchedWhole) {
    EXPECT_TRUE(has_mount_option("rw,relatime,rw,sync", "sync"));
    EXPECT_FALSE(has_mount_option("rw,async,nosync", "sync"));
    EXPECT_TRUE(has_mount_option("sync", "sync"));
    EXPECT_FALSE(has_mount_option("", "sync"));
    EXPECT_TRUE(has_mount_option("rw,dirsync,wsync", "dirsync"));
    EXPECT_TRUE(has_mount_option("rw,relatime,rw,nodelalloc,data=journal", "data=journal"));
    EXPECT_FALSE(has_mount_option("rw,data=ordered", "data=journal"));
}

// Per block device: the whole filesystem's mount (not a bind mount of a
// directory in it), its options, whether it is sync; anonymous devices (tmpfs)
// left out.
TEST(Mounts, EachBlockDeviceGetsItsFilesystemsMountAndOptions) {
    namespace fs = std::filesystem;
    const fs::path root = fs::temp_directory_path() / ("iodiag-mounts-" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root / "proc/self");
    fs::create_directories(root / "sys/devices/virtual/block/loop0");
    fs::create_directories(root / "sys/devices/virtual/block/loop1");
    fs::create_directories(root / "sys/devices/pci0/block/vda/vda1");
    fs::create_directories(root / "sys/dev/block");
    fs::create_directory_symlink("../../devices/virtual/block/loop0", root / "sys/dev/block/7:0");
    fs::create_directory_symlink("../../devices/virtual/block/loop1", root / "sys/dev/block/7:1");
    fs::create_directory_symlink("../../devices/pci0/block/vda/vda1", root / "sys/dev/block/254:1");
    fs::create_directories(root / "sys/class/block/loop2");
    // The bind mount of loop0 comes first here: the whole mount still wins.
    // btrfs: an anonymous device number; its source names the device.
    std::ofstream(root / "proc/self/mountinfo")
        << "47 22 7:0 /sub /mnt/bind rw,relatime - ext4 /dev/loop0 rw,sync\n" << kMountinfo
        << "50 22 0:52 / /mnt/b rw,relatime - btrfs /dev/loop2 rw,discard,space_cache=v2\n";
    Evidence ev;
    MountsCollector::collect(root.string(), {}, ev);
    const Fact* point = ev.find_fact("fs.mount_point", {{"device", "loop0"}});
    ASSERT_NE(point, nullptr);
    EXPECT_EQ(point->value, "/srv/my data");
    EXPECT_EQ(ev.find_metric("fs.mount_sync", {{"device", "loop0"}})->value, 1);
    EXPECT_EQ(ev.find_metric("fs.mount_sync", {{"device", "vda1"}})->value, 0);
    EXPECT_EQ(ev.find_metric("fs.mount_dirsync", {{"device", "loop1"}})->value, 1);
    EXPECT_EQ(ev.find_fact("fs.type", {{"device", "loop1"}})->value, "xfs");
    // data=journal: an ext4 option, not evaluated on XFS.
    EXPECT_EQ(ev.find_metric("fs.mount_data_journal", {{"device", "loop0"}})->value, 0);
    EXPECT_EQ(ev.find_metric("fs.mount_data_journal", {{"device", "loop1"}}), nullptr);
    EXPECT_EQ(ev.find_fact("fs.mount_point", {{"device", "0:45"}}), nullptr);
    EXPECT_EQ(ev.find_fact("fs.type", {{"device", "loop2"}})->value, "btrfs");
    EXPECT_EQ(ev.find_metric("fs.mount_discard", {{"device", "loop2"}})->value, 1);
    // Online discard, from the superblock's options.
    EXPECT_EQ(ev.find_metric("fs.mount_discard", {{"device", "vda1"}})->value, 1);
    EXPECT_EQ(ev.find_metric("fs.mount_discard", {{"device", "loop0"}})->value, 0);
    // --device: only those.
    Evidence only;
    MountsCollector::collect(root.string(), {"/dev/loop1"}, only);
    EXPECT_EQ(only.find_fact("fs.mount_point", {{"device", "loop0"}}), nullptr);
    EXPECT_NE(only.find_fact("fs.mount_point", {{"device", "loop1"}}), nullptr);
    fs::remove_all(root);
}

// The kernel's counts per process become per application and reason; a
// reason with no writes is not emitted; fsyncs always are.
TEST(SyncWrites, ProcessesOfOneApplicationAreSummedPerReason) {
    using namespace iodiag::syscall_bpf;
    SyncWrites a{"loop0", "python3 ingest.py", 10, {0, 100, 0, 0}, {0, 5000000, 0, 0}, {0, 6000000, 0, 0}, 2};
    SyncWrites b{"loop0", "python3 ingest.py", 11, {7, 50, 0, 0}, {70000, 2500000, 0, 0}, {80000, 3000000, 0, 0}, 3};
    SyncWrites c{"loop0", "", 12, {0, 0, 0, 1}, {0, 0, 0, 1000}, {0, 0, 0, 1100}, 0};
    Evidence ev;
    emit_sync_writes({a, b, c}, ev);
    const Labels l{{"device", "loop0"}, {"app", "python3 ingest.py"}};
    auto with = [](Labels x, const char* reason) {
        x["reason"] = reason;
        return x;
    };
    EXPECT_EQ(ev.find_metric("fs.sync_writes", with(l, "mount"))->value, 150);
    EXPECT_DOUBLE_EQ(ev.find_metric("fs.sync_write_wait_us", with(l, "mount"))->value, 7500);
    EXPECT_DOUBLE_EQ(ev.find_metric("fs.sync_write_time_us", with(l, "mount"))->value, 9000);
    EXPECT_EQ(ev.find_metric("fs.sync_writes", with(l, "o_sync"))->value, 7);
    EXPECT_EQ(ev.find_metric("fs.sync_writes", with(l, "attribute")), nullptr);
    EXPECT_EQ(ev.find_metric("fs.fsyncs", l)->value, 5);
    EXPECT_EQ(ev.find_metric("fs.sync_writes", {{"device", "loop0"}, {"app", "pid 12"}, {"reason", "other"}})->value, 1);
}
