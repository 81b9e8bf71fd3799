// The kernel's name of a block device (loop0, sda1, nvme0n1p2) from its
// device number, as /sys/dev/block links it: what the BPF collectors (a
// superblock's s_dev) and /proc/self/mountinfo (MAJ:MIN) give.
#pragma once

#include <cstdint>
#include <string>

namespace iodiag {

// The kernel's in-kernel dev_t encoding (include/linux/kdev_t.h: MINORBITS 20),
// as a superblock's s_dev holds it.
inline uint32_t kernel_dev_major(uint32_t kernel_dev) { return kernel_dev >> 20; }
inline uint32_t kernel_dev_minor(uint32_t kernel_dev) { return kernel_dev & 0xfffff; }

// The device's name below `root` ("/" the live system); with
// `partition_to_disk` a partition's disk (its queue holds the settings a
// filesystem on it uses: read_ahead_kb). An anonymous device (major 0: a
// btrfs filesystem's) is named by the mount table's source for it where that
// is a block device; "MAJ:MIN" when neither knows one (a network filesystem).
std::string block_device_name(const std::string& root, uint32_t major, uint32_t minor, bool partition_to_disk);

}  // namespace iodiag
