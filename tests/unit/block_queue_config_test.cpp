#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "collectors/sysfs/block_queue_config.hpp"
#include "collectors/text_file.hpp"
#include "engine/derive/derived_metrics.hpp"
#include "tests/unit/procsys_fixtures.hpp"

using namespace iodiag;
using namespace iodiag::fixtures;

namespace {

std::string fact(const Evidence& ev, const std::string& name, const std::string& dev) {
    const Fact* f = ev.find_fact(name, {{"device", dev}});
    return f ? f->value : "<absent>";
}
double metric(const Evidence& ev, const std::string& name, const std::string& dev) {
    const Metric* m = ev.find_metric(name, {{"device", dev}});
    return m ? m->value : -1;
}
}  // namespace

TEST(BlockQueueConfig, DeviceClassFromNameAndRotational) {
    EXPECT_EQ(classify_device("nvme0n1", false), "nvme");
    EXPECT_EQ(classify_device("sda", true), "hdd");
    EXPECT_EQ(classify_device("sda", false), "sata_ssd");
    EXPECT_EQ(classify_device("hdb", true), "hdd");
    EXPECT_EQ(classify_device("sda", std::nullopt), std::nullopt);  // unknown rotational: no guess
    EXPECT_EQ(classify_device("vda", true), "virtio");              // virtio says rotational=1: still virtio
    EXPECT_EQ(classify_device("xvda", std::nullopt), "virtio");
    EXPECT_EQ(classify_device("loop3", false), "loop");
    EXPECT_EQ(classify_device("zram0", false), "zram");
    EXPECT_EQ(classify_device("dm-2", false), "dm");
    EXPECT_EQ(classify_device("md127", false), "md");
    EXPECT_EQ(classify_device("mmcblk0", false), "other");
}

TEST(BlockQueueConfig, ActiveScheduler) {
    EXPECT_EQ(parse_active_scheduler("none [mq-deadline] kyber bfq", "s"), "mq-deadline");
    EXPECT_EQ(parse_active_scheduler("[none] mq-deadline kyber bfq", "s"), "none");
    EXPECT_EQ(parse_active_scheduler("none", "s"), "none");
    for (const std::string bad : {"none mq-deadline", "[none", "[] none", "", "[a [b] c"}) {
        try {
            parse_active_scheduler(bad, "/sys/block/vda/queue/scheduler");
            ADD_FAILURE() << "no error for '" << bad << "'";
        } catch (const SourceError& e) {
            EXPECT_NE(std::string(e.what()).find("/sys/block/vda/queue/scheduler: "), std::string::npos);
        }
    }
}

TEST(BlockQueueConfig, WholeDiskOfADeviceNumber) {
    EXPECT_EQ(whole_disk_of_devnum(kGuest, 254, 0), "vda");
    EXPECT_EQ(whole_disk_of_devnum(kGuest, 8, 17), "sdb");  // partition sdb1 -> its disk
    EXPECT_EQ(whole_disk_of_devnum(kGuest, 8, 16), "sdb");
    EXPECT_EQ(whole_disk_of_devnum(kGuest, 0, 35), std::nullopt);  // tmpfs/overlay: anonymous device
}

TEST(BlockQueueConfigCollector, FixtureTree) {
    BlockQueueConfigCollector c;
    CollectOptions opts;
    opts.root = kGuest;
    const auto st = c.start(opts);
    ASSERT_TRUE(st.available) << st.reason;
    EXPECT_TRUE(st.layers.empty());
    EXPECT_TRUE(st.reason.empty()) << st.reason;
    Evidence ev;
    c.finish(ev);
    // loop1 has no backing file: skipped.
    EXPECT_EQ(ev.instances("device"), (std::vector<std::string>{"loop0", "nvme0n1", "sdb", "vda", "zram0"}));

    EXPECT_EQ(fact(ev, "queue.scheduler", "vda"), "mq-deadline");
    EXPECT_EQ(fact(ev, "device.class", "vda"), "virtio");
    EXPECT_DOUBLE_EQ(metric(ev, "queue.nr_requests", "vda"), 256);
    EXPECT_DOUBLE_EQ(metric(ev, "queue.rotational", "vda"), 1);
    EXPECT_DOUBLE_EQ(metric(ev, "queue.read_ahead_kb", "vda"), 8192);
    EXPECT_DOUBLE_EQ(metric(ev, "queue.wbt_lat_usec", "vda"), 75000);
    EXPECT_DOUBLE_EQ(metric(ev, "queue.max_sectors_kb", "vda"), 4096);
    EXPECT_DOUBLE_EQ(metric(ev, "queue.nomerges", "vda"), 0);
    EXPECT_DOUBLE_EQ(metric(ev, "queue.nr_hw_queues", "vda"), 1);
    EXPECT_EQ(ev.find_metric("queue.nr_requests", {{"device", "vda"}})->provenance.source,
              "/sys/block/vda/queue/nr_requests");

    EXPECT_EQ(fact(ev, "device.class", "nvme0n1"), "nvme");
    EXPECT_EQ(fact(ev, "queue.scheduler", "nvme0n1"), "none");
    EXPECT_DOUBLE_EQ(metric(ev, "queue.nr_hw_queues", "nvme0n1"), 2);
    // The kernel's default nr_requests: the driver's depth with no scheduler,
    // twice the smaller of it and 128 with one (vda: mq-deadline over 128 tags).
    EXPECT_DOUBLE_EQ(metric(ev, "queue.hw_queue_depth", "nvme0n1"), 1023);
    EXPECT_DOUBLE_EQ(metric(ev, "queue.nr_requests_default", "nvme0n1"), 1023);
    EXPECT_DOUBLE_EQ(metric(ev, "queue.hw_queue_depth", "vda"), 128);
    EXPECT_DOUBLE_EQ(metric(ev, "queue.nr_requests_default", "vda"), 256);
    EXPECT_EQ(nr_requests_default(1023, "mq-deadline"), 256u);
    EXPECT_EQ(nr_requests_default(32, "bfq"), 64u);
    EXPECT_EQ(nr_requests_default(4, "none"), 4u);
    EXPECT_DOUBLE_EQ(metric(ev, "queue.wbt_lat_usec", "nvme0n1"), 2000);

    EXPECT_EQ(fact(ev, "device.class", "sdb"), "hdd");
    EXPECT_EQ(fact(ev, "queue.scheduler", "sdb"), "bfq");
    EXPECT_EQ(ev.find_metric("queue.wbt_lat_usec", {{"device", "sdb"}}), nullptr);  // absent file

    // zram is bio-based: no scheduler, no nr_requests, no mq.
    EXPECT_EQ(fact(ev, "device.class", "zram0"), "zram");
    EXPECT_EQ(fact(ev, "queue.scheduler", "zram0"), "<absent>");
    EXPECT_EQ(ev.find_metric("queue.nr_requests", {{"device", "zram0"}}), nullptr);
    EXPECT_EQ(ev.find_metric("queue.nr_hw_queues", {{"device", "zram0"}}), nullptr);

    // loop0's backing file is not in the tree: the file is named, its disk unknown.
    EXPECT_EQ(fact(ev, "device.class", "loop0"), "loop");
    EXPECT_EQ(fact(ev, "device.backing_file", "loop0"), "/images/disk.img");
    EXPECT_EQ(fact(ev, "device.backing_device", "loop0"), "<absent>");

    // The cache as the block layer believes it, and as the device says where
    // its driver shows it: vda was declared write through over a device that
    // caches (someone wrote queue/write_cache); sdb's caching mode page.
    EXPECT_EQ(fact(ev, "queue.write_cache", "vda"), "write through");
    EXPECT_EQ(fact(ev, "device.cache_type", "vda"), "write back");
    EXPECT_EQ(ev.find_fact("device.cache_type", {{"device", "vda"}})->provenance.source, "/sys/block/vda/cache_type");
    EXPECT_EQ(fact(ev, "queue.write_cache", "sdb"), "write back");
    EXPECT_EQ(fact(ev, "device.cache_type", "sdb"), "write back");
    EXPECT_EQ(ev.find_fact("device.cache_type", {{"device", "sdb"}})->provenance.source,
              "/sys/block/sdb/device/scsi_disk/2:0:0:0/cache_type");
    EXPECT_EQ(fact(ev, "queue.write_cache", "nvme0n1"), "write back");
    EXPECT_EQ(fact(ev, "device.cache_type", "nvme0n1"), "<absent>");   // NVMe shows no such file
    EXPECT_EQ(fact(ev, "queue.write_cache", "zram0"), "write through");
}

TEST(BlockQueueConfigCollector, DeviceFilter) {
    BlockQueueConfigCollector c;
    CollectOptions opts;
    opts.root = kGuest;
    opts.devices = {"sdb", "/dev/zram0"};
    ASSERT_TRUE(c.start(opts).available);
    Evidence ev;
    c.finish(ev);
    EXPECT_EQ(ev.instances("device"), (std::vector<std::string>{"sdb", "zram0"}));
}

TEST(BlockQueueConfigCollector, GarbageValuesAreNamedAndNotEmitted) {
    BlockQueueConfigCollector c;
    CollectOptions opts;
    opts.root = kBroken;
    const auto st = c.start(opts);
    ASSERT_TRUE(st.available);
    EXPECT_NE(st.reason.find(kBroken + "/sys/block/vda/queue/nr_requests: expected an unsigned number"),
              std::string::npos)
        << st.reason;
    EXPECT_NE(st.reason.find(kBroken + "/sys/block/vda/queue/scheduler: no active scheduler"), std::string::npos)
        << st.reason;
    EXPECT_NE(st.reason.find(kBroken + "/sys/block/vda/queue/write_cache: expected 'write back' or 'write through', "
                                       "got 'write sometimes'"),
              std::string::npos)
        << st.reason;
    Evidence ev;
    c.finish(ev);
    EXPECT_EQ(ev.find_fact("queue.write_cache", {{"device", "vda"}}), nullptr);
    EXPECT_EQ(ev.find_metric("queue.nr_requests", {{"device", "vda"}}), nullptr);
    EXPECT_EQ(ev.find_fact("queue.scheduler", {{"device", "vda"}}), nullptr);
    EXPECT_EQ(fact(ev, "device.class", "vda"), "virtio");
}

TEST(BlockQueueConfigCollector, MissingSysfsIsUnavailable) {
    BlockQueueConfigCollector c;
    CollectOptions opts;
    opts.root = kGuest + "/does-not-exist";
    const auto st = c.start(opts);
    EXPECT_FALSE(st.available);
    EXPECT_NE(st.reason.find("/does-not-exist/sys/block"), std::string::npos) << st.reason;
}

TEST(BlockQueueConfigCollector, RealSys) {
    BlockQueueConfigCollector c;
    const auto st = c.start(CollectOptions{});
    if (!st.available) GTEST_SKIP() << st.reason;
    Evidence ev;
    c.finish(ev);
    for (const auto& dev : ev.instances("device")) {
        const Fact* cls = ev.find_fact("device.class", {{"device", dev}});
        ASSERT_NE(cls, nullptr) << dev;
        if (const Metric* rot = ev.find_metric("queue.rotational", {{"device", dev}})) {
            EXPECT_TRUE(rot->value == 0 || rot->value == 1) << dev;
        }
        if (const Fact* sched = ev.find_fact("queue.scheduler", {{"device", dev}})) {
            EXPECT_FALSE(sched->value.empty()) << dev;
        }
    }
    if (std::filesystem::is_directory("/sys/block/vda")) {
        EXPECT_EQ(fact(ev, "device.class", "vda"), "virtio");
        EXPECT_NE(ev.find_fact("queue.scheduler", {{"device", "vda"}}), nullptr);
    }
    // The disk holding this source file, found the way loop backing files are.
    struct stat sb {};
    ASSERT_EQ(stat(__FILE__, &sb), 0);
    if (auto disk = whole_disk_of_devnum("/", major(sb.st_dev), minor(sb.st_dev))) {
        EXPECT_TRUE(std::filesystem::is_directory("/sys/block/" + *disk)) << *disk;
    }
}

// dm and md devices are walked down through /sys/block/*/slaves: a member
// partition counts as its whole disk (its requests are traced there), and a
// device with one member gets the stack chain down to it.
TEST(BlockQueueConfigCollector, DmAndMdMembersFromSlaves) {
    namespace fs = std::filesystem;
    const fs::path root = fs::temp_directory_path() / ("iodiag-dm-md-" + std::to_string(::getpid()));
    fs::remove_all(root);
    auto write = [](const fs::path& p, const std::string& text) {
        fs::create_directories(p.parent_path());
        std::ofstream(p) << text << "\n";
    };
    for (const char* d : {"sdb", "sdc", "sdd"}) {
        write(root / "sys/block" / d / "queue/rotational", "0");
        fs::create_directories(root / "sys/class/block");
        fs::create_directory_symlink(root / "sys/block" / d, root / "sys/class/block" / d);
    }
    write(root / "sys/block/sdb/sdb1/partition", "1");
    fs::create_directory_symlink(root / "sys/block/sdb/sdb1", root / "sys/class/block/sdb1");
    write(root / "sys/block/dm-0/queue/rotational", "0");
    write(root / "sys/block/dm-0/slaves/sdb1", "");   // the entry's name is what counts
    write(root / "sys/block/md0/queue/rotational", "0");
    write(root / "sys/block/md0/slaves/sdc", "");
    write(root / "sys/block/md0/slaves/sdd", "");

    BlockQueueConfigCollector c;
    CollectOptions opts;
    opts.root = root.string();
    ASSERT_TRUE(c.start(opts).available);
    Evidence ev;
    c.finish(ev);
    EXPECT_EQ(fact(ev, "device.slaves", "dm-0"), "sdb");   // partition sdb1 -> disk sdb
    EXPECT_EQ(fact(ev, "device.slaves", "md0"), "sdc,sdd");
    EXPECT_EQ(fact(ev, "device.slaves", "sdb"), "<absent>");
    EXPECT_EQ(ev.find_fact("device.slaves", {{"device", "dm-0"}})->provenance.source, "/sys/block/dm-0/slaves/");

    add_derived_metrics(ev);
    EXPECT_EQ(fact(ev, "device.stack_chain", "dm-0"), "dm-0 -> sdb");
    EXPECT_EQ(fact(ev, "device.bottom_device", "dm-0"), "sdb");
    EXPECT_EQ(fact(ev, "device.stack_chain", "md0"), "<absent>");   // two members: no single device below
    fs::remove_all(root);
}
