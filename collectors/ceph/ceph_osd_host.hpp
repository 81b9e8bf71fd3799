// What the host says about its local Ceph OSDs, without asking them: which
// admin sockets exist, which block devices an OSD's data directory points at,
// how much CPU its threads got and how long they waited for it, and how many
// receive queues the NICs have. All paths are read under a root prefix so the
// tests can use fixture trees.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace iodiag {

// An OSD admin socket: "<run_dir>/<cluster>-osd.<id>.asok" (Ceph's default
// `admin socket = $run_dir/$cluster-$name.asok`). Sockets of other daemons and
// of clients (ceph-client.*.asok) are not OSDs and are left out.
struct OsdSocket {
    std::string path;
    std::string cluster;   // "ceph"
    int id = -1;
    std::string name() const { return "osd." + std::to_string(id); }
};
// Sorted by id; empty when the directory does not exist (one failed opendir:
// what a host without Ceph pays).
std::vector<OsdSocket> find_osd_sockets(const std::string& run_dir);

// The devices BlueStore uses, as the data directory names them (what
// ceph-volume and ceph-disk create: `block`, `block.db`, `block.wal` links).
struct OsdDevices {
    std::string block;   // whole-disk kernel name, e.g. "sdb", "dm-3", "loop2"
    std::string db;      // "" = no separate DB device (RocksDB on `block`)
    std::string wal;     // "" = no separate WAL device
    std::string how;     // provenance: which link resolved to what
};
// The kernel name of the whole disk behind a device path ("/dev/sdb1" -> "sdb",
// "/dev/ceph-x/osd-block-y" -> "dm-3"); nullopt when it is not a block device.
std::optional<std::string> whole_disk_of(const std::string& root, const std::string& dev_path);
// Reads <osd_data>/block{,.db,.wal}; `block` empty when the link is missing.
OsdDevices resolve_osd_devices(const std::string& root, const std::string& osd_data);

// CPU used and time spent runnable but waiting for a CPU, per thread group of
// one process (/proc/PID/task/*/schedstat: run time, run-queue wait, in ns).
// Groups by thread name: "msgr-worker" (messenger), "tp_osd_tp" (op shards),
// "bstore_kv_sync", "bstore_kv_final", "bstore_aio", "rocksdb", "other".
struct ThreadCpu {
    uint64_t cpu_ns = 0;
    uint64_t wait_ns = 0;
    int threads = 0;
};
using ThreadCpuByGroup = std::map<std::string, ThreadCpu>;
std::optional<ThreadCpuByGroup> read_thread_cpu(const std::string& root, int pid);
std::string thread_group_of(const std::string& comm);
// "123 456 7" -> {cpu 123, wait 456}; nullopt if malformed.
std::optional<std::pair<uint64_t, uint64_t>> parse_schedstat(const std::string& text);

// Receive queues of the busiest-configured NIC (max over interfaces other than
// lo, from /sys/class/net/*/queues/rx-*); nullopt when there is none.
std::optional<int> nic_rx_queues(const std::string& root);

}  // namespace iodiag
