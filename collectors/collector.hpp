// A collector owns one source family (procfs, sysfs, a BPF program, ...).
// Lifecycle around an observation window:
//   start()  -> takes the "before" snapshot or attaches probes, says if available
//   sample() -> once per interval during the window (series, see below)
//   finish() -> takes the "after" snapshot or drains, appends to Evidence
// A collector never throws for a missing or unreadable source: it reports
// itself unavailable with the reason (naming the path), and the verdict says
// which layers could not be observed.
#pragma once

#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"
#include "engine/evidence/metric_catalog.hpp"

namespace iodiag {

struct CollectOptions {
    double duration_s = 10;
    std::vector<std::string> devices;  // empty = all
    int pid = 0;                       // 0 = all
    std::string cgroup;                // empty = all
    // The application the operator says suffered (--victim: a pid, an
    // application's or command's name, a unit, container or pod name); the
    // whole machine is still observed. Empty = find the one that suffered most.
    std::string victim;
    std::string root = "/";            // prefix for /proc and /sys (tests use fixture trees)
    // What counts as slow, in us (syscall duration for syscall_bpf, request
    // Q2C for block_bpf); 0 = derive from the window's p99.
    double slow_threshold_us = 0;
    // Length of one interval of the per-interval series (Evidence::series), in
    // seconds; 0 = no series.
    double interval_s = 1.0;
};

class Collector {
public:
    virtual ~Collector() = default;
    virtual std::string name() const = 0;
    // Every metric, fact and histogram this collector may emit.
    virtual std::vector<MetricSpec> metric_specs() const = 0;
    // Before the window. The returned status is recorded in the evidence.
    virtual CollectorStatus start(const CollectOptions& opts) = 0;
    // Once every collector's start() has returned, before the window (called
    // only if start() said available): for collectors that share kernel hooks
    // with another one (collectors/bpf/tail_call_chain.hpp), or that hand
    // their links to a process of their own while the window runs
    // (collectors/bpf/deferred_release.hpp).
    virtual void all_started() {}
    // At the end of each interval of the window (interval 0, 1, ...; the last
    // one, possibly shorter, is sampled right before finish()). A collector
    // that keeps series takes its cumulative figures here; interval i's values
    // are the difference to interval i-1's, so nothing counted between two
    // samples is lost (no map is reset). Called only if start() said available.
    virtual void sample(size_t /*interval*/) {}
    // After the window: append what was observed, and the series (one entry
    // per sample() call, as many as Evidence::series.count). Called only if
    // start() said available.
    virtual void finish(Evidence& ev) = 0;
    // True for collectors whose start() loads and attaches programs (BPF):
    // they are started first, so that the snapshot collectors' before/after
    // interval is the window itself, not the time the BPF verifier took. They
    // finish on a thread of their own, beside the snapshot collectors, into
    // evidence of their own appended after theirs: their finish() only
    // appends, it never reads what other collectors wrote.
    virtual bool slow_to_start() const { return false; }
    // True for a snapshot collector whose finish() only appends, reading
    // nothing already in the evidence (a slow starter's must, always): it
    // then finishes beside the others, into evidence of its own appended in
    // its place. The /proc walkers, whose finish grows with the host's
    // processes (~40-60 ms each with 1,500 of them here).
    virtual bool finish_only_appends() const { return false; }
    // For a slow starter whose start() is CPU-bound (BPF: libbpf's BTF parse
    // and CO-RE relocation, the kernel's verifier): its share of that CPU,
    // relative to the others' (0: its start mostly waits, e.g. on sysfs
    // reads). The CPU-bound starts run heaviest first, as many at once as
    // the process has CPUs: on two cores, three at once made the heaviest
    // share its core and finish last.
    virtual unsigned start_cpu_weight() const { return 0; }
    // False (after start()) when what this collector observes does not exist
    // on this host at all, e.g. no Ceph OSD: its status is then left out of the
    // evidence, so such a host pays nothing for it in the verdict either.
    virtual bool applicable() const { return true; }
};

}  // namespace iodiag
