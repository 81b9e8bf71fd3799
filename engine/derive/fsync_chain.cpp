// The fsync chain: fsync -> journal commit -> the I/O it carries, as one cause.
#include "engine/derive/derive_steps.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "engine/evidence/histogram.hpp"
#include "engine/evidence/application_label.hpp"

namespace iodiag::derive {

namespace {

// The fsync chain: an fsync waits for the journal commit (or log force), which
// waits for the data it must carry, on the device, through the block queue and
// any I/O control. Summed, these are what a slow fsync waited for; each alone
// may be under its own rule's threshold. Defined only when the journal took
// part (some slow-set time waited for it).
// Share of the slow set's time spent in fsync-family syscalls, estimated from
// the per-operation duration histograms (syscall.latency_us{op}): each bucket
// at or above the slow threshold counts its operations at the bucket's
// midpoint. Both sides of the ratio are estimated alike, so the factor-of-two
// width of a bucket mostly cancels.
std::optional<double> slow_fsync_time_pct(const Evidence& ev) {
    const Metric* thr = ev.find_metric("attr.slow.threshold_us");
    if (!thr) return std::nullopt;
    const int first = thr->value > 0 ? Log2Histogram::bucket_of(static_cast<uint64_t>(thr->value)) : 0;
    double fsync = 0, all = 0;
    for (const auto& h : ev.histograms) {
        if (h.name != "syscall.latency_us") continue;
        const auto op = h.labels.find("op");
        if (op == h.labels.end()) continue;
        const auto& b = h.hist.buckets();
        double t = 0;
        for (size_t i = static_cast<size_t>(std::max(0, first)); i < b.size(); ++i)
            t += static_cast<double>(b[i]) * 1.5 * static_cast<double>(Log2Histogram::bucket_lo(static_cast<int>(i)));
        all += t;
        if (op->second == "fsync" || op->second == "sync_file_range") fsync += t;
    }
    if (all <= 0) return std::nullopt;
    return 100.0 * fsync / all;
}

// The fsyncs' own breakdown, from the slow syscall exemplars (every syscall of
// 1 ms or more is sent with its measured parts; the slowest are kept): the
// part of the fsync-family exemplars' time spent in each class. On a busy
// machine the slow set also holds other processes' preempted syscalls; the
// fsyncs' exemplars say what the fsyncs themselves waited for.
struct FsyncParts {
    size_t n = 0;
    double total = 0;
    std::map<std::string, double> us;   // class -> time
};

FsyncParts fsync_exemplar_parts(const Evidence& ev, const std::string& app = "") {
    FsyncParts p;
    for (const auto& e : ev.exemplars) {
        if (e.kind != "syscall") continue;
        if (!app.empty() && application_label(e.labels) != app) continue;
        const auto op = e.labels.find("op");
        if (op == e.labels.end() || (op->second != "fsync" && op->second != "sync_file_range")) continue;
        const auto t = e.values.find("total_us");
        if (t == e.values.end() || t->second <= 0) continue;
        ++p.n;
        p.total += t->second;
        for (const auto& [k, v] : e.values)
            if (k.size() > 3 && k.compare(k.size() - 3, 3, "_us") == 0 && k != "total_us") p.us[k.substr(0, k.size() - 3)] += v;
    }
    return p;
}

// Fewer fsync exemplars than this and their breakdown is not used.
constexpr size_t kMinFsyncExemplars = 5;

}  // namespace

void add_fsync_chain(Evidence& ev) {
    const auto fsync_pct = slow_fsync_time_pct(ev);
    if (fsync_pct)
        ev.add_metric("attr.slow.fsync_time_pct", {}, *fsync_pct, "pct",
                      derived("fsync/fdatasync/sync_file_range share of the slow set's time, from "
                              "syscall.latency_us{op} buckets at or above attr.slow.threshold_us (bucket midpoints)"));
    const Metric* journal = ev.find_metric("attr.slow.journal_pct");
    // The chain exists when the journal took part, or when the slow set is
    // mostly fsyncs (fdatasync of preallocated data needs no journal commit:
    // it waits for the data and the device's cache flush).
    if (!journal || (journal->value <= 0 && (!fsync_pct || *fsync_pct < 50))) return;
    static const char* kChain[] = {"journal", "device", "block_queue", "cgroup"};
    double chain = 0, journal_part = journal->value;
    std::string how;
    // The application that suffered most (all its processes: a database's
    // backends), when it has enough fsync exemplars of its own; else all.
    FsyncParts parts;
    if (const Fact* app = ev.find_fact("attr.slow.top_app")) parts = fsync_exemplar_parts(ev, app->value);
    if (parts.n < kMinFsyncExemplars) parts = fsync_exemplar_parts(ev);
    if (parts.n >= kMinFsyncExemplars && parts.total > 0) {
        for (const char* c : kChain) chain += parts.us.count(c) ? parts.us.at(c) : 0;
        chain = 100.0 * chain / parts.total;
        journal_part = 100.0 * (parts.us.count("journal") ? parts.us.at("journal") : 0) / parts.total;
        how = "share of the slow fsync-family exemplars' time (" + std::to_string(parts.n) +
              " syscalls of 1 ms or more, each part measured) spent in journal + device + block_queue + cgroup waits";
    } else {
        for (const char* c : kChain) chain += metric_or(ev, std::string("attr.slow.") + c + "_pct", {}, 0);
        // Device waits of other operations (reads) in the slow set are not the
        // chain: at most the fsyncs' own share of it.
        if (fsync_pct && *fsync_pct > 0) chain = std::min(chain, std::max(*fsync_pct, journal->value));
        how = "attr.slow.journal_pct + device_pct + block_queue_pct + cgroup_pct (at most the fsyncs' share of the "
              "slow set)";
    }
    ev.add_metric("attr.slow.fsync_chain_pct", {}, chain, "pct",
                  derived(how + ": the journal commit and the I/O it waits for"));
    ev.add_metric("attr.slow.journal_of_chain_pct", {}, chain > 0 ? 100.0 * journal_part / chain : 0, "pct",
                  derived("journal part of attr.slow.fsync_chain_pct, on the same basis"));
}

std::vector<MetricSpec> fsync_chain_specs() {
    using K = MetricSpec::Kind;
    return {
        {"attr.slow.fsync_chain_pct", K::Metric, "pct", layer::kJournal, "",
         "share of the slow fsyncs' time waiting for the journal and the I/O it carries (journal + device + block "
         "queue + cgroup), from their exemplars when there are enough, else from the slow set"},
        {"attr.slow.journal_of_chain_pct", K::Metric, "pct", layer::kJournal, "", "journal part of the fsync chain"},
        {"attr.slow.fsync_time_pct", K::Metric, "pct", layer::kSyscall, "",
         "share of the slow set's time spent in fsync-family syscalls (estimated from the duration buckets)"},
    };
}

}  // namespace iodiag::derive
