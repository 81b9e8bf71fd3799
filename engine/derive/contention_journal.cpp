// Whose data the commits the suffering application's fsyncs waited for
// carried: the data written in the window to the device its own writes went
// to, split between the application and the others.
#include "engine/derive/contention.hpp"

#include <algorithm>
#include <map>

#include "engine/evidence/format.hpp"
#include "engine/evidence/application_label.hpp"

namespace iodiag::derive {

namespace {

struct Writes {
    double own = 0, kernel = 0, total = 0;
    std::map<std::pair<std::string, std::string>, std::pair<double, std::string>> others;   // (comm, cgroup) -> bytes, pid
};

}  // namespace

// What the kernel records: the bytes of every write request and who
// submitted it (block.submitter.write_bytes). An fsync's own data is mostly
// written in its caller's context; everyone's ordered data in a jbd2 commit
// is written by the journal thread, background writeback by the flusher:
// kernel threads, whose writes are split by who dirtied the window's data
// (/proc/PID/io write_bytes, io.proc_write_bytes): inferred, and said so.
void add_journal_contention(Evidence& ev) {
    const Fact* app_fact = ev.find_fact("attr.app.name");
    if (!app_fact) return;
    const std::string app = app_fact->value;
    // Its service's other programs are its parts (application_service.cpp):
    // a backup script's sync waits for its own cp's data.
    const std::string service = service_of_app(ev, app);
    std::map<std::string, Writes> by_dev;
    for (const auto& m : ev.metrics) {
        if (m.name != "block.submitter.write_bytes" || m.value <= 0 || !m.labels.count("device")) continue;
        auto label = [&](const char* k) { return m.labels.count(k) ? m.labels.at(k) : std::string(); };
        Writes& w = by_dev[label("device")];
        w.total += m.value;
        const std::string whose = application_label(m.labels), kind = label("kind");
        if (whose == app || (!service.empty() && kind == "process" && service_of_cgroup(ev, label("cgroup")) == service)) {
            w.own += m.value;
        } else if (kind == "writeback" || kind == "kernel") {
            w.kernel += m.value;
        } else if (kind == "process") {
            auto& o = w.others[{whose, label("cgroup")}];
            o.first += m.value;
            if (const Fact* p = ev.find_fact("block.submitter.top_pid", m.labels)) o.second = p->value;
        }
    }
    // The device the application's own writes (its fsyncs' data) went to.
    const auto dev = std::max_element(by_dev.begin(), by_dev.end(),
                                      [](const auto& a, const auto& b) { return a.second.own < b.second.own; });
    if (dev == by_dev.end() || dev->second.own <= 0 || dev->second.total <= 0) return;
    const Writes& w = dev->second;
    const double mine = sufferer_dirtied_fraction(ev, app);
    double others = mine >= 0 ? w.kernel * (1 - mine) : 0;
    std::string top_name, top_pid, top_cgroup, top_how;
    double top_bytes = 0;
    for (const auto& [key, v] : w.others) {
        others += v.first;
        if (v.first > top_bytes) {
            top_bytes = v.first, top_name = key.first, top_cgroup = key.second, top_pid = v.second;
            top_how = "the process other than " + app + " that wrote the most to " + dev->first +
                      " itself (block.submitter.write_bytes)";
        }
    }
    // The kernel threads' writes, charged to the largest dirtier when that
    // is not the application.
    const Fact* writer = ev.find_fact("io.top_writer");
    const Metric* writer_pct = ev.find_metric("io.top_writer_pct");
    if (writer && writer_pct && writer->value.rfind(app + " (pid ", 0) != 0 &&
        !(!service.empty() && service_of_pid(ev, top_writer_pid(writer->value)) == service)) {
        const double carried = w.kernel * writer_pct->value / 100;
        if (carried > top_bytes) {
            top_bytes = carried;
            top_name = writer->value.substr(0, writer->value.rfind(" (pid "));
            top_pid = top_writer_pid(writer->value);
            top_cgroup.clear();
            top_how = "inferred, not recorded by the kernel: the process that dirtied the most data in the window "
                      "(io.top_writer, /proc/PID/io), its part (io.top_writer_pct) of what the kernel's writeback "
                      "and journal threads wrote to " + dev->first;
        }
    }
    const Labels none;
    ev.add_fact("journal.data_device", none, dev->first,
                derived("the device " + app + "'s own write requests went to (block.submitter.write_bytes)"));
    ev.add_metric("journal.data_written_bytes", none, w.total, "bytes",
                  derived("bytes of all write requests completed on " + dev->first + " in the window"));
    ev.add_metric("journal.others_data_share_pct", none, 100.0 * others / w.total, "pct",
                  derived("others' part of the data written to " + dev->first + ": their own write requests, and the "
                          "writeback / journal threads' writes x the part of the window's dirtied data (/proc/PID/io) "
                          "that was not " + app + "'s (inferred)"));
    if (const Metric* chain = ev.find_metric("attr.slow.fsync_chain_pct"))
        ev.add_metric("journal.contention_share_pct", none, chain->value * others / w.total, "pct",
                      derived("attr.slow.fsync_chain_pct x journal.others_data_share_pct: the slow fsyncs' wait for "
                              "the commit chain, in the part carrying others' data"));
    if (top_name.empty()) return;
    ev.add_fact("journal.neighbor_comm", none, top_name, derived(top_how));
    if (!top_pid.empty()) ev.add_fact("journal.neighbor_pid", none, top_pid, derived(top_how));
    if (!top_cgroup.empty()) ev.add_fact("journal.neighbor_cgroup", none, top_cgroup, derived(top_how));
    ev.add_metric("journal.neighbor_bytes", none, top_bytes, "bytes", derived(top_how));
}

std::vector<MetricSpec> journal_contention_specs() {
    using K = MetricSpec::Kind;
    const std::string j = layer::kJournal;
    return {
        {"journal.data_device", K::Fact, "", j, "", "the device the suffering application's own writes went to"},
        {"journal.data_written_bytes", K::Metric, "bytes", j, "", "data written to it in the window"},
        {"journal.others_data_share_pct", K::Metric, "pct", j, "",
         "others' part of that data (their writes, and the kernel's writeback split by who dirtied it)"},
        {"journal.contention_share_pct", K::Metric, "pct", j, "",
         "part of the slow fsyncs' time spent in the commit chain carrying others' data"},
        {"journal.neighbor_comm", K::Fact, "", j, "", "the other writer with the most data there"},
        {"journal.neighbor_pid", K::Fact, "", j, "", "its process"},
        {"journal.neighbor_cgroup", K::Fact, "", j, "", "its cgroup, when it submitted the writes itself"},
        {"journal.neighbor_bytes", K::Metric, "bytes", j, "", "its data written there (measured or inferred)"},
    };
}

}  // namespace iodiag::derive
