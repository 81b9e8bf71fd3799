// Names for the cgroup ids a BPF program records: a cgroup's id is the inode
// number of its directory in cgroupfs (kernfs node id), for v2 and for each
// v1 hierarchy alike, so walking the mounted hierarchy and stat()ing each
// directory maps id -> path.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace iodiag {

class CgroupIdNames {
public:
    // root prefixes the paths (fixture trees in tests).
    explicit CgroupIdNames(std::string root = "/");
    // "/a/b" for a cgroup v2 id, "" when unknown.
    std::string v2_path(uint64_t id);
    // "/a/b" for a cgroup v1 memory-controller id, "" when unknown or no v1 memory mount.
    std::string v1_memory_path(uint64_t id);
    // "/a/b" for a cgroup v1 blkio (io controller) id, "" when unknown or no v1 blkio mount.
    std::string v1_blkio_path(uint64_t id);
    // The label iodiag uses: the non-root v1 controller cgroups the task is in,
    // "memory:/a/b" and/or "blkio:/c" joined with ","; else the v2 path, else
    // "/" (root), or "cgroup-id:N" when nothing resolves (the cgroup was removed
    // before the window ended).
    std::string label(uint64_t v2_id, uint64_t memcg_id, uint64_t blkio_id = 0);
    // The path of a bio's blkcg id (the io controller's cgroup, bio->bi_blkg):
    // in the v1 blkio hierarchy where one is mounted (the io controller is
    // bound there), else in the v2 one. "" when unknown.
    std::string blkcg_path(uint64_t id);
    // Whether the io controller is a v1 hierarchy's (blkio) here.
    bool blkio_on_v1();

    // The ids the kernel gives a process's cgroups (the kernfs ids the BPF
    // programs read: each directory's inode number), from /proc/PID/cgroup,
    // for a process the programs recorded nothing of. 0 where unknown. `io`
    // is the io controller's (v1 blkio where mounted, else v2: the v2 group
    // itself, which holds the controller's state where a limit is set).
    struct Ids {
        uint64_t v2 = 0, memory = 0, blkio = 0, io = 0;
    };
    Ids ids_of(int pid);

private:
    static std::map<uint64_t, std::string> scan(const std::string& mount_dir);
    std::string root_;
    bool scanned_ = false;
    std::string v2_mount_, memory_mount_, blkio_mount_;
    std::map<uint64_t, std::string> v2_, memory_, blkio_;
    void ensure_scanned();
};

}  // namespace iodiag
