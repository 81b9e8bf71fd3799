// On a Ceph node the processes whose syscalls are slow are often the OSDs
// themselves: BlueStore's kv sync thread (bstore_kv_sync) fdatasyncs the OSD's
// block device on every commit, the op threads wait for a CPU. The host-level
// findings about the slow syscall set (syscall.fsync_chain, runqueue delay...)
// then describe an OSD from the outside, in terms made for a filesystem's
// fsync chain, while the Ceph view describes it from the OSD's own counters,
// per OSD and per layer (device under the OSD, bluestore, osd_op,
// replication). Those host findings yield to the Ceph view, and so do the
// device's own findings about the disk under a slow OSD.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"
#include "engine/triage/verdict.hpp"

namespace iodiag {

// The OSD whose process suffered the slow syscall set: "osd.N" when the
// window's top sufferer (attr.slow.top_pid) is an OSD's pid (ceph.osd.pid, the
// admin socket's peer); "" when the OSD is known to be one of this host's but
// not which (a bundle recorded without the pids: the sufferer's thread is one
// ceph-osd names, e.g. bstore_kv_sync); nullopt when the sufferer is not an OSD
// or no Ceph collector reported.
std::optional<std::string> slow_set_osd(const Evidence& ev);

// A fired host-level finding about the slow syscall set (a global rule whose
// share is read from attr.slow.*) whose sufferer is an OSD folds into the Ceph
// finding on that OSD, or the top Ceph finding when no finding names that OSD;
// where no Ceph finding above info fired, the Ceph rules judged the OSD from
// its own counters and found it normal, and the host finding is kept as a note
// (Info) saying so. First, the device and cgroup findings on the device under
// an OSD whose disk the Ceph view found slow (ceph.osd_disk_slow) fold into
// that finding: one slow disk, one finding, named by the OSD and its device,
// with the mechanism under the device (e.g. a blk-throttle cap under its loop
// device) and its evidence and fixes; so does the same OSD's
// ceph.kv_sync_on_shared_slow_device (how that disk reaches every write, its
// DB/WAL fix after the disk's own). A slow peer's own finding then ranks
// above the primaries' waits for it (ceph.replica_wait_dominated), which it
// causes. Runs after fold_same_causes, before the layers' states.
void yield_osd_findings_to_ceph(std::vector<Finding>& fired, const Evidence& ev);

}  // namespace iodiag
