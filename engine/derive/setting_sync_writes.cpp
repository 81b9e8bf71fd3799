// Whether a `sync`, `dirsync` or `data=journal` mount, or the sync or dirsync
// attribute, explains the suffering application's write and create waits
// (issue 34, docs/settings.md "mount sync", "dirsync", "data=journal").
#include "engine/derive/derive_steps.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>


namespace iodiag::derive {

namespace {

// The application's durability waits on one filesystem device
// (fs.sync_write*{device, app, reason}, fs.fsyncs; bpf/syscall.bpf.c sync_writes).
struct DeviceWrites {
    double mount_writes = 0, mount_time_us = 0;   // made synchronous by the mount option
    double attr_writes = 0, attr_time_us = 0;     // ... by the inode's sync attribute
    double dirsync_creates = 0, dirsync_time_us = 0;   // creates made synchronous by dirsync
    double other_writes = 0, other_time_us = 0;   // writes that waited with none of those reasons (buffered)
    double fsyncs = 0;
    double durable_time_us = 0;   // every wait for durability: such writes and creates of any reason, fsyncs
};

std::map<std::string, DeviceWrites> writes_of(const Evidence& ev, const std::string& app) {
    std::map<std::string, DeviceWrites> out;
    for_each_device_metric_of(ev, "fs.", app, [&](const std::string& d, const Metric& m) {
        if (m.name != "fs.sync_writes" && m.name != "fs.sync_write_time_us" && m.name != "fs.fsyncs" &&
            m.name != "fs.fsync_time_us")
            return;
        DeviceWrites& w = out[d];
        if (m.name == "fs.sync_write_time_us" || m.name == "fs.fsync_time_us") w.durable_time_us += m.value;
        if (m.name == "fs.fsync_time_us") return;
        const auto r = m.labels.find("reason");
        const std::string reason = r == m.labels.end() ? "" : r->second;
        if (m.name == "fs.fsyncs") w.fsyncs += m.value;
        else if (reason == "mount") (m.name == "fs.sync_writes" ? w.mount_writes : w.mount_time_us) += m.value;
        else if (reason == "attribute") (m.name == "fs.sync_writes" ? w.attr_writes : w.attr_time_us) += m.value;
        else if (reason == "dirsync") (m.name == "fs.sync_writes" ? w.dirsync_creates : w.dirsync_time_us) += m.value;
        else if (reason == "other") (m.name == "fs.sync_writes" ? w.other_writes : w.other_time_us) += m.value;
    });
    return out;
}

// A filesystem mounted `dirsync` (or a directory with the dirsync attribute)
// makes every directory change wait until durable: a create commits the
// journal (ext4) or forces the log (XFS) before it returns, where elsewhere
// it is a change in memory that the next commit carries. Measured in the
// kernel as the creates (openat) that waited for the journal there (reason
// dirsync). Without the setting the new entries would ride in the commits
// the application's own fsyncs make: where it makes none, all of the creates'
// time is the setting's; where it fsyncs its files, each file costs two
// commits instead of one, and with commits costing alike the setting's part
// of its waits for durability is creates / (creates + fsyncs), at most the
// creates' own time. (Renames and unlinks, which dirsync slows too, are not
// traced: the share is low where the application makes them.)
void add_dirsync_setting(Evidence& ev, const std::string& app, double app_us, const std::string& device,
                         const DeviceWrites& w) {
    const Labels l{{"device", device}};
    const std::string of = " of " + app + " on " + device;
    ev.add_metric("setting.dirsync_time_pct", l, std::min(100.0, 100.0 * w.dirsync_time_us / app_us), "pct",
                  derived("100 x fs.sync_write_time_us{reason=dirsync}" + of +
                          " / its syscall time (syscall.proc.time_us summed)"));
    // (setting.dirsync_share_pct below, once the durability waits are known)
    ev.add_metric("setting.dirsync_creates", l, w.dirsync_creates, "count",
                  derived("fs.sync_writes{reason=dirsync}" + of));
    const double durable_pct = std::min(100.0, 100.0 * w.durable_time_us / app_us);
    ev.add_metric("setting.durability_time_pct", l, durable_pct, "pct",
                  derived("100 x (fs.sync_write_time_us, every reason, + fs.fsync_time_us)" + of +
                          " / its syscall time: all of its waits for durability there"));
    const double creates_pct = std::min(100.0, 100.0 * w.dirsync_time_us / app_us);
    ev.add_metric("setting.dirsync_share_pct", l,
                  std::min(creates_pct, durable_pct * w.dirsync_creates / (w.dirsync_creates + w.fsyncs)), "pct",
                  derived("min(setting.dirsync_time_pct, setting.durability_time_pct x creates / (creates + fs.fsyncs))" +
                          of + ": the commits its own fsyncs would not have made, commits costing alike"));
    const Metric* mounted = ev.find_metric("fs.mount_dirsync", l);
    const bool by_mount = mounted && mounted->value > 0;
    ev.add_fact("setting.dirsync_cause", l,
                by_mount ? "the mount option dirsync" : "the dirsync attribute of its directories (chattr +D)",
                derived(by_mount ? "fs.mount_dirsync{device=" + device + "}: dirsync among its mount options"
                                 : "fs.mount_dirsync{device=" + device + "} not set: the kernel's other IS_DIRSYNC "
                                   "input, the directory's attribute"));
}

// ext4 mounted data=journal writes file data through the journal: each
// buffered write's pages join the running transaction, every commit writes
// them to the journal and a checkpoint writes them again in place. A writer
// then waits where a data=ordered writer does not: for journal space when
// the log is full (start_this_handle, __jbd2_log_wait_for_space, whose
// checkpoint it may run itself, waiting for those writes), and for a commit
// to take its pages. Measured in the kernel as its writes that waited for
// durability (the journal, their own block I/O) with none of the reasons a
// write is made synchronous (reason "other"): a buffered write under
// data=ordered waits for neither but in passing (a commit switching
// transactions), so on a data=journal mount those waits are the mode's.
void add_data_journal_setting(Evidence& ev, const std::string& app, double app_us, const std::string& device,
                              const DeviceWrites& w) {
    const Labels l{{"device", device}};
    const std::string of = " of " + app + " on " + device;
    ev.add_metric("setting.data_journal_writes", l, w.other_writes, "count",
                  derived("fs.sync_writes{reason=other}" + of + ": buffered writes that waited for the journal or "
                          "their own block I/O"));
    // The journal commits every commit= seconds (5 by default) whatever
    // is written; a writer that only waits for those waits once a period.
    // More often, its data filled the journal and forced commits.
    double interval_s = 5;
    if (const Fact* o = ev.find_fact("fs.mount_options", l)) {
        const auto at = o->value.find("commit=");
        if (at != std::string::npos && (at == 0 || o->value[at - 1] == ','))
            interval_s = std::max(1.0, std::atof(o->value.c_str() + at + 7));
    }
    ev.add_metric("setting.journal_periodic_commits", l, std::max(1.0, ev.window.duration_s / interval_s), "count",
                  derived("the window's length / the commit interval (the commit= mount option, 5 s by default), "
                          "at least 1: the commits the journal makes on its own"));
    ev.add_metric("setting.data_journal_wait_pct", l, std::min(100.0, 100.0 * w.other_time_us / app_us), "pct",
                  derived("100 x fs.sync_write_time_us{reason=other}" + of +
                          " / its syscall time (syscall.proc.time_us summed): their whole duration"));
    // The part the mode governs: its slow syscalls' time in the write
    // path's layers. Journaling each buffer costs the write CPU work inside
    // the filesystem too (the lab's bulk writers: 48-51 % of their slow time
    // in the filesystem class, 17-18 % in the journal's waits), which the
    // waits alone leave out.
    double path = 0;
    for (const char* c : {"filesystem", "journal", "device", "block_queue"})
        path += metric_or(ev, std::string("attr.sufferer.") + c + "_pct", {}, 0);
    ev.add_metric("setting.data_journal_share_pct", l, std::min(100.0, path), "pct",
                  derived("attr.sufferer.{filesystem,journal,device,block_queue}_pct summed (at most 100): " + app +
                          "'s slow syscalls' time in the write path's layers"));
}

}  // namespace

// A filesystem mounted `sync` (or a file with the sync attribute) makes every
// write wait until its data and metadata are durable: on ext4 a journal
// commit per write, on XFS a log force, each a device round trip or several.
// Measured in the kernel (bpf/syscall.bpf.c sync_writes): the application's
// writes that waited for durability and why the kernel made them
// synchronous (the file's O_SYNC/O_DSYNC, which the application chose, comes
// first and is not the setting's), with their whole duration: the wait for
// durability and the CPU work and run-queue delay around it, all of which a
// buffered write (microseconds) does not have. What the setting costs it is
// the part its own fsyncs would not have paid anyway: each write commits,
// where without the setting only each fsync would, so that time is avoidable
// in the proportion 1 - fsyncs / such writes (an application that fsyncs
// after every write loses little to the mount).
void add_sync_writes_setting(Evidence& ev) {
    const Fact* app = judged_application(ev);
    if (!app) return;
    const double app_us = app_syscall_time_us(ev, app->value);
    if (app_us <= 0) return;
    for (const auto& [d, w] : writes_of(ev, app->value)) {
        if (w.dirsync_creates > 0) add_dirsync_setting(ev, app->value, app_us, d, w);
        if (w.other_writes > 0 && metric_or(ev, "fs.mount_data_journal", {{"device", d}}, 0) == 1)
            add_data_journal_setting(ev, app->value, app_us, d, w);
        const double writes = w.mount_writes + w.attr_writes;
        if (writes <= 0) continue;
        const Labels l{{"device", d}};
        const std::string of = " of " + app->value + " on " + d;
        const double time_pct = std::min(100.0, 100.0 * (w.mount_time_us + w.attr_time_us) / app_us);
        ev.add_metric("setting.sync_writes_time_pct", l, time_pct, "pct",
                      derived("100 x fs.sync_write_time_us{reason=mount|attribute}" + of +
                              " / its syscall time (syscall.proc.time_us summed)"));
        const double avoidable = std::max(0.0, 1.0 - w.fsyncs / writes);
        ev.add_metric("setting.sync_writes_share_pct", l, time_pct * avoidable, "pct",
                      derived("setting.sync_writes_time_pct x (1 - fs.fsyncs / fs.sync_writes{reason=mount|"
                              "attribute})" + of + ": the commits its own fsyncs would not have made"));
        ev.add_metric("setting.sync_writes", l, writes, "count", derived("fs.sync_writes{reason=mount|attribute}" + of));
        if (w.fsyncs > 0)
            ev.add_metric("setting.sync_writes_per_fsync", l, writes / w.fsyncs, "count",
                          derived("fs.sync_writes{reason=mount|attribute} / fs.fsyncs" + of));
        const std::string cause = w.mount_writes >= w.attr_writes ? "mounted sync" : "the sync attribute (chattr +S) on its files";
        ev.add_fact("setting.sync_writes_cause", l, cause,
                    derived("the reason (fs.sync_writes{reason}) of most of the synchronous writes" + of));
    }
}

std::vector<MetricSpec> sync_writes_setting_specs() {
    using K = MetricSpec::Kind;
    return {
        {"setting.sync_writes_time_pct", K::Metric, "pct", layer::kJournal, "device",
         "share of the suffering application's syscall time in writes that waited for durability because the "
         "filesystem is mounted sync or its files have the sync attribute (their whole duration)"},
        {"setting.sync_writes_share_pct", K::Metric, "pct", layer::kJournal, "device",
         "of that, the part its own fsyncs would not have paid: what the setting costs it"},
        {"setting.sync_writes", K::Metric, "count", layer::kJournal, "device",
         "the suffering application's writes the setting made synchronous"},
        {"setting.sync_writes_per_fsync", K::Metric, "count", layer::kJournal, "device",
         "those writes per fsync it made on the device (absent when it made none)"},
        {"setting.sync_writes_cause", K::Fact, "", layer::kJournal, "device",
         "what made the writes synchronous: the mount option or the files' attribute"},
        {"setting.dirsync_time_pct", K::Metric, "pct", layer::kJournal, "device",
         "share of the suffering application's syscall time in creates that waited for the journal because the "
         "filesystem is mounted dirsync or the directory has the dirsync attribute (their whole duration)"},
        {"setting.dirsync_creates", K::Metric, "count", layer::kJournal, "device",
         "the suffering application's creates that dirsync made wait for the journal"},
        {"setting.durability_time_pct", K::Metric, "pct", layer::kJournal, "device",
         "share of its syscall time in every wait for durability on the device: writes and creates that waited, "
         "whatever made them synchronous, and its fsyncs (given where dirsync creates are measured)"},
        {"setting.dirsync_share_pct", K::Metric, "pct", layer::kJournal, "device",
         "of its time, the part the setting costs it: the creates' commits its own fsyncs would not have made"},
        {"setting.dirsync_cause", K::Fact, "", layer::kJournal, "device",
         "what made its directory changes synchronous: the mount option or the directories' attribute"},
        {"setting.data_journal_writes", K::Metric, "count", layer::kJournal, "device",
         "the suffering application's buffered writes that waited for the journal or their block I/O on an ext4 "
         "filesystem mounted data=journal"},
        {"setting.journal_periodic_commits", K::Metric, "count", layer::kJournal, "device",
         "the commits the journal makes on its own in the window (one per commit interval)"},
        {"setting.data_journal_wait_pct", K::Metric, "pct", layer::kJournal, "device",
         "share of its syscall time in those writes (their whole duration)"},
        {"setting.data_journal_share_pct", K::Metric, "pct", layer::kJournal, "device",
         "its slow syscalls' time in the write path's layers (filesystem, journal, block queue, device)"},
    };
}

}  // namespace iodiag::derive
