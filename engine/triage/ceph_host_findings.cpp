#include "engine/triage/ceph_host_findings.hpp"
#include "engine/triage/finding_fold.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "engine/evidence/format.hpp"

namespace iodiag {

namespace {

// Thread names ceph-osd gives its threads (Thread::create in the 16.2
// sources: BlueStore's kv sync/final/aio threads, the sharded op workers, the
// async messenger's workers, RocksDB's background threads). Used only where a
// bundle has no OSD pids to join on.
bool osd_thread_name(const std::string& comm) {
    static const char* const prefixes[] = {"bstore_", "tp_osd_tp", "msgr-worker", "ceph-osd", "rocksdb:"};
    return std::any_of(std::begin(prefixes), std::end(prefixes),
                       [&](const char* p) { return comm.rfind(p, 0) == 0; });
}

// A global rule's finding (no instance) whose share is of the slow syscall set.
bool about_slow_set(const Finding& f) {
    return f.instance_key.empty() && f.rule_id.rfind("ceph.", 0) != 0 && f.share_metric.rfind("attr.slow.", 0) == 0;
}

CitedValue cited_fact(const Fact& f) {
    CitedValue c;
    c.name = f.name;
    c.labels = f.labels;
    c.provenance = f.provenance;
    c.text = f.value;
    c.formatted = f.value;
    return c;
}

// Folds `g` into `c`: its evidence cited once, its mechanism appended after
// `intro`, its fixes placed before c's (`fixes_first`) or after them.
void absorb(Finding& c, const Finding& g, const std::string& intro, bool fixes_first) {
    c.folded.push_back(g.rule_id + "@" + g.instance);
    c.folded.insert(c.folded.end(), g.folded.begin(), g.folded.end());
    for (const auto& e : g.evidence) cite_once(c, e);
    trim_end(c.mechanism);
    std::string under = g.mechanism;
    trim_end(under);
    c.mechanism += " " + intro + " (" + g.rule_id + ", folded into this finding with its evidence): " + under;
    std::vector<Fix> fixes = fixes_first ? g.fixes : c.fixes;
    const std::vector<Fix>& rest = fixes_first ? c.fixes : g.fixes;
    fixes.insert(fixes.end(), rest.begin(), rest.end());
    c.fixes = std::move(fixes);
    c.verify.insert(c.verify.end(), g.verify.begin(), g.verify.end());
}

// One slow disk under an OSD, one finding: what other rules say of the same
// disk folds into the OSD's ceph.osd_disk_slow, which names the OSD and its
// device and keeps its share of the OSD's client op time.
// - The device and cgroup rules' findings about that device: the same slow
//   disk seen from below (its service time, or a blk-throttle cap on the I/O
//   under a stacked device that makes it slow). They add the mechanism under
//   the device, its evidence and its fixes (a cap is lifted, not a disk
//   replaced), placed first.
// - The same OSD's ceph.kv_sync_on_shared_slow_device: how that disk reaches
//   every write (the kv sync runs on it, RocksDB sharing the data device); its
//   fix (a DB/WAL device on flash) is a mitigation, placed after.
void fold_into_slow_osd_disks(std::vector<Finding>& fired, const Evidence& ev) {
    std::vector<bool> gone(fired.size(), false);
    for (size_t i = 0; i < fired.size(); ++i) {
        if (gone[i] || fired[i].rule_id != "ceph.osd_disk_slow" || fired[i].severity == Severity::Info) continue;
        const Fact* dev = ev.find_fact("ceph.osd.device", {{"osd", fired[i].instance}});
        if (!dev || dev->value.empty()) continue;
        for (size_t j = 0; j < fired.size(); ++j) {
            const Finding& g = fired[j];
            // A note (info) is not the slow disk: it stays a note.
            if (j == i || gone[j] || g.severity == Severity::Info) continue;
            const bool device_view = g.rule_id.rfind("ceph.", 0) != 0 && g.instance_key == "device" &&
                                     g.instance == dev->value && (g.layer == "device" || g.layer == "cgroup");
            const bool kv_sync = g.rule_id == "ceph.kv_sync_on_shared_slow_device" && g.instance == fired[i].instance;
            if (!device_view && !kv_sync) continue;
            gone[j] = true;
            if (device_view) {
                fired[i].title += " — " + g.title;
                absorb(fired[i], g, "What makes " + dev->value + " slow, seen from the device", true);
            } else {
                absorb(fired[i], g, "How the slow disk reaches every write", false);
            }
        }
    }
    drop_gone(fired, gone);
}

// A primary's wait for its slow peer (ceph.replica_wait_dominated) is the
// peer's slowness felt through replication: what the peer's own finding names
// (its disk, its commit, its queue) explains the primary's time too. That
// finding ranks at least as high as the waits it causes and says whom it holds
// up; each primary's finding stays, with its own share, below it. (The shares
// are of different OSDs' client op time: the peer's own can be the smaller,
// e.g. when its loop worker also waits for a CPU, and a consequence would then
// outrank its cause.)
void rank_slow_peers_above_their_primaries(std::vector<Finding>& fired, const Evidence& ev) {
    for (size_t i = 0; i < fired.size(); ++i) {
        const Finding& wait = fired[i];
        if (wait.rule_id != "ceph.replica_wait_dominated" || wait.severity == Severity::Info) continue;
        const Fact* peer = ev.find_fact("ceph.osd.slowest_peer", {{"osd", wait.instance}});
        if (!peer) continue;
        std::optional<size_t> cause;
        for (size_t j = 0; j < fired.size(); ++j) {
            const Finding& c = fired[j];
            if (c.instance_key != "osd" || c.instance != peer->value || c.severity == Severity::Info ||
                c.rule_id == wait.rule_id)
                continue;
            if (!cause || c.score > fired[*cause].score) cause = j;
        }
        if (!cause) continue;
        Finding& c = fired[*cause];
        c.score = std::max(c.score, std::nextafter(wait.score, 2.0));
        trim_end(c.mechanism);
        c.mechanism += " " + peer->value + " also holds up " + wait.instance + ", which replicates to it" +
                       (wait.share_pct ? ": " + format_value(*wait.share_pct, "pct") + " of " + wait.instance +
                                             "'s client op time" : "") +
                       " (" + wait.rule_id + " on " + wait.instance + ", ranked below this cause).";
    }
}

}  // namespace

std::optional<std::string> slow_set_osd(const Evidence& ev) {
    const std::vector<std::string> osds = ev.instances("osd");
    if (osds.empty()) return std::nullopt;
    const Fact* pid = ev.find_fact("attr.slow.top_pid");
    bool pids_known = false;
    for (const auto& osd : osds) {
        const Fact* p = ev.find_fact("ceph.osd.pid", {{"osd", osd}});
        if (!p) continue;
        pids_known = true;
        if (pid && p->value == pid->value) return osd;
    }
    if (pids_known) return std::nullopt;
    const Fact* comm = ev.find_fact("attr.slow.top_comm");
    if (comm && osd_thread_name(comm->value)) return std::string();
    return std::nullopt;
}

void yield_osd_findings_to_ceph(std::vector<Finding>& fired, const Evidence& ev) {
    fold_into_slow_osd_disks(fired, ev);
    rank_slow_peers_above_their_primaries(fired, ev);
    const std::optional<std::string> osd = slow_set_osd(ev);
    if (!osd) return;
    // An OSD whose admin socket gave nothing was not judged by the Ceph rules:
    // nothing yields to a view that did not see it.
    for (const auto& o : ev.instances("osd"))
        if ((osd->empty() || o == *osd) && ev.find_fact("ceph.osd.not_observed", {{"osd", o}})) return;
    // The Ceph finding that takes them: on the sufferer's OSD first, else the
    // highest-scoring one above info.
    std::optional<size_t> target;
    for (size_t i = 0; i < fired.size(); ++i) {
        const Finding& c = fired[i];
        if (c.rule_id.rfind("ceph.", 0) != 0 || c.severity == Severity::Info) continue;
        const bool on_osd = !osd->empty() && c.instance == *osd;
        const bool target_on_osd = target && !osd->empty() && fired[*target].instance == *osd;
        if (!target || (on_osd && !target_on_osd) || (on_osd == target_on_osd && c.score > fired[*target].score))
            target = i;
    }
    const std::string who = osd->empty() ? "an OSD of this host" : *osd;
    std::vector<bool> gone(fired.size(), false);
    const Fact* comm = ev.find_fact("attr.slow.top_comm");
    const std::string thread = comm ? " (thread " + comm->value + ")" : "";
    for (size_t i = 0; i < fired.size(); ++i) {
        Finding& f = fired[i];
        if (!about_slow_set(f)) continue;
        if (target) {
            Finding& c = fired[*target];
            gone[i] = true;
            c.folded.push_back(f.rule_id + (f.instance.empty() ? "" : "@" + f.instance));
            for (const auto& e : f.evidence) cite_once(c, e);
            trim_end(c.mechanism);
            c.mechanism += " (The host's slow syscalls are " + who + "'s" + thread + ": " + f.rule_id +
                           " saw this OSD from outside and is folded into this finding with its evidence.)";
            continue;
        }
        f.severity = Severity::Info;
        f.title += " — " + who + "'s own I/O" + thread + ", normal by the Ceph rules";
        // Its fixes are written for an application's fsyncs (separate a
        // database log, group commits); an OSD's commit path is tuned from the
        // Ceph view's findings, and here there is none to act on.
        f.fixes.clear();
        f.verify.clear();
        trim_end(f.mechanism);
        f.mechanism += " (These slow syscalls are " + who + "'s" + thread +
                       ": on a Ceph node an OSD's syncs of its block device are BlueStore's commit path and its "
                       "waits the op path's. The Ceph rules judged that OSD from its own counters (device under "
                       "it, bluestore, op queue, replicas) and found nothing above info, so this is a note: the "
                       "slowest syscalls of a host whose main I/O is its OSDs' commits.)";
        if (const Fact* pid = osd->empty() ? nullptr : ev.find_fact("ceph.osd.pid", {{"osd", *osd}}))
            cite_once(f, cited_fact(*pid));
    }
    drop_gone(fired, gone);
}

}  // namespace iodiag
