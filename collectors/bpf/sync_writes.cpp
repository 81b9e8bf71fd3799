#include "collectors/bpf/sync_writes.hpp"

#include <algorithm>
#include <map>

#include "collectors/bpf/readahead_misses.hpp"   // kOtherApplications
#include "engine/evidence/layers.hpp"

namespace iodiag::syscall_bpf {

uint64_t SyncWrites::total_wait_ns() const {
    uint64_t t = 0;
    for (const uint64_t w : wait_ns) t += w;
    return t;
}

void SyncWrites::add_counts(const SyncWrites& o) {
    for (size_t r = 0; r < kSyncReasons.size(); ++r)
        writes[r] += o.writes[r], wait_ns[r] += o.wait_ns[r], time_ns[r] += o.time_ns[r];
    fsyncs += o.fsyncs;
    fsync_time_ns += o.fsync_time_ns;
}

std::vector<MetricSpec> sync_writes_specs() {
    using K = MetricSpec::Kind;
    return {
        {"fs.sync_writes", K::Metric, "count", layer::kJournal, "device",
         "write-family syscalls that waited inside the call for their data to be durable (journal, block I/O), per "
         "filesystem device, application and why the kernel made them synchronous (reason: o_sync = the file was "
         "opened O_SYNC/O_DSYNC, mount = the filesystem is mounted sync, attribute = the inode's sync attribute, "
         "other = none of them: direct I/O, RWF_DSYNC; dirsync = a create, openat, that waited for the journal "
         "because the filesystem is mounted dirsync or its directory has the dirsync or sync attribute; a create on "
         "a sync mount counts under mount)"},
        {"fs.sync_write_wait_us", K::Metric, "us", layer::kJournal, "device",
         "those writes' journal + device + block-queue wait"},
        {"fs.sync_write_time_us", K::Metric, "us", layer::kJournal, "device",
         "those writes' whole duration: the wait, and the CPU work and run-queue delay around it"},
        {"fs.fsyncs", K::Metric, "count", layer::kJournal, "device",
         "fsync and fdatasync calls on the device's files, per application"},
        {"fs.fsync_time_us", K::Metric, "us", layer::kJournal, "device", "those calls' whole duration"},
    };
}

void emit_sync_writes(const std::vector<SyncWrites>& writes, Evidence& ev) {
    std::map<std::pair<std::string, std::string>, SyncWrites> by_app;
    for (const auto& w : writes) by_app[{w.device, w.app.empty() ? "pid " + std::to_string(w.pid) : w.app}].add_counts(w);
    std::vector<std::pair<std::pair<std::string, std::string>, SyncWrites>> ranked(by_app.begin(), by_app.end());
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.second.total_wait_ns() > b.second.total_wait_ns(); });
    if (ranked.size() > kSyncWritesApplicationsKept) {
        std::map<std::string, SyncWrites> rest;
        for (size_t i = kSyncWritesApplicationsKept; i < ranked.size(); ++i)
            rest[ranked[i].first.first].add_counts(ranked[i].second);
        ranked.resize(kSyncWritesApplicationsKept);
        for (auto& [device, r] : rest) ranked.push_back({{device, kOtherApplications}, r});
    }
    const Provenance prov{"tracepoint",
                          "syscall_bpf: write-family syscalls charged device, block-queue or journal wait, per the "
                          "file's superblock s_dev and process; the reason from file->f_flags & O_DSYNC, "
                          "sb->s_flags & SB_SYNCHRONOUS, inode->i_flags & S_SYNC (the kernel's own IOCB_DSYNC "
                          "inputs, in that order); creates (openat) that waited for the journal with the kernel's "
                          "IS_DIRSYNC inputs, sb->s_flags & (SB_SYNCHRONOUS|SB_DIRSYNC) and the directory's "
                          "i_flags & (S_SYNC|S_DIRSYNC); fsync/fdatasync counted at their exit"};
    for (const auto& [key, w] : ranked) {
        const Labels l{{"device", key.first}, {"app", key.second}};
        for (size_t r = 0; r < kSyncReasons.size(); ++r) {
            if (!w.writes[r]) continue;
            Labels lr = l;
            lr["reason"] = kSyncReasons[r];
            ev.add_metric("fs.sync_writes", lr, static_cast<double>(w.writes[r]), "count", prov);
            ev.add_metric("fs.sync_write_wait_us", lr, static_cast<double>(w.wait_ns[r]) / 1000.0, "us", prov);
            ev.add_metric("fs.sync_write_time_us", lr, static_cast<double>(w.time_ns[r]) / 1000.0, "us", prov);
        }
        ev.add_metric("fs.fsyncs", l, static_cast<double>(w.fsyncs), "count", prov);
        ev.add_metric("fs.fsync_time_us", l, static_cast<double>(w.fsync_time_ns) / 1000.0, "us", prov);
    }
}

}  // namespace iodiag::syscall_bpf
