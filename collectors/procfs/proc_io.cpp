#include "collectors/procfs/proc_io.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "collectors/procfs/applications.hpp"
#include "collectors/procfs/proc_pid_stat.hpp"
#include "collectors/procfs/proc_pids.hpp"
#include "collectors/text_file.hpp"
#include "engine/evidence/format.hpp"
#include "engine/evidence/layers.hpp"

namespace iodiag {

namespace {

constexpr size_t kTopWriters = 5;

const std::string kProcSource =
    "/proc/[pid]/io write_bytes (counted when pages are dirtied or direct I/O is sent), start and end of the "
    "window; a process's own part at most what its live threads count (/proc/[pid]/task/*/io), the rest being "
    "its exited threads' and reaped children's";

// write_bytes of one /proc io file's text; nullopt when it has none.
std::optional<uint64_t> write_bytes_of(const std::string& io) {
    for (size_t at = 0; at < io.size();) {
        size_t end = io.find('\n', at);
        if (end == std::string::npos) end = io.size();
        if (io.compare(at, 12, "write_bytes:") == 0 && end - at > 12)
            return std::strtoull(io.c_str() + at + 12, nullptr, 10);
        at = end + 1;
    }
    return std::nullopt;
}

}  // namespace

std::map<int, ProcIo> read_proc_io(const std::string& root) {
    std::map<int, ProcIo> out;
    for (const int pid : numeric_entries(under_root(root, "/proc"))) {
        const std::string dir = under_root(root, "/proc/" + std::to_string(pid));
        // Kernel threads (flag PF_KTHREAD in /proc/PID/stat) write on behalf of
        // others: a loop device's worker writes the upper filesystem's data
        // into the backing file. Counting them would name the worker, not the
        // writer, and count the data twice.
        const auto stat = try_read_first_line(dir + "/stat");
        if (stat && stat_says_kernel_thread(*stat)) continue;
        const auto io = try_read_text_file(dir + "/io");
        if (!io) continue;   // gone, or not readable
        ProcIo p;
        p.write_bytes = write_bytes_of(*io).value_or(0);
        p.comm = try_read_first_line(dir + "/comm").value_or("?");
        out[pid] = p;
    }
    return out;
}

void read_thread_write_bytes(const std::string& root, const std::map<int, ProcIo>& before,
                             std::map<int, ProcIo>& after) {
    for (auto& [pid, p] : after) {
        const auto b = before.find(pid);
        if (b != before.end() && b->second.comm == p.comm && p.write_bytes <= b->second.write_bytes) continue;
        if (p.write_bytes == 0) continue;
        std::error_code ec;
        uint64_t sum = 0;
        bool any = false;
        for (const auto& t : std::filesystem::directory_iterator(
                 under_root(root, "/proc/" + std::to_string(pid) + "/task"), ec)) {
            const auto io = try_read_text_file(t.path().string() + "/io");
            if (!io) continue;   // a thread gone meanwhile: its count is in the process's now
            if (const auto w = write_bytes_of(*io)) sum += *w, any = true;
        }
        if (any) p.threads_write_bytes = sum;
    }
}

void add_proc_io_metrics(const std::map<int, ProcIo>& before, const std::map<int, ProcIo>& after, double window_s,
                         Evidence& ev, const std::optional<std::vector<ExitedWriter>>& exited,
                         const std::map<int, std::string>& apps_of_exited) {
    // The exited threads by process: their data, and the command (the main
    // thread's where it is among them).
    struct Exited {
        uint64_t bytes = 0;
        std::string comm;
        bool main = false;
    };
    std::map<int, Exited> exited_by_pid;
    if (exited)
        for (const auto& x : *exited) {
            Exited& e = exited_by_pid[static_cast<int>(x.tgid)];
            e.bytes += x.write_bytes;
            if (!e.main) e.comm = x.comm, e.main = x.tid == x.tgid;
        }
    struct Writer {
        uint64_t bytes = 0;
        int pid = 0;
        std::string comm;
        std::string app;   // its application; its comm where none was given
    };
    std::vector<Writer> writers;
    uint64_t all = 0;
    for (const auto& [pid, p] : after) {
        const auto b = before.find(pid);
        const uint64_t was = (b != before.end() && b->second.comm == p.comm) ? b->second.write_bytes : 0;
        if (p.write_bytes <= was) continue;
        const uint64_t grown = p.write_bytes - was;
        // Its own part: what its live threads count bounds it (a shell's
        // /proc/PID/io grows by each writer it reaps); its exited threads'
        // (as recorded) come back from the rest. The bound is their count
        // over their life (per-thread counts at the start are not read): a
        // shell that dirtied data before the window is credited with up to
        // that much of its children's.
        const uint64_t own = p.threads_write_bytes ? std::min(grown, *p.threads_write_bytes) : grown;
        uint64_t mine = own;
        if (const auto e = exited_by_pid.find(pid); e != exited_by_pid.end()) {
            mine += std::min(e->second.bytes, grown - own);
            exited_by_pid.erase(e);
        }
        if (mine) writers.push_back({mine, pid, p.comm, p.app.empty() ? p.comm : p.app});
        // Without the kernel's record of who exited, the rest stays in the
        // total as nobody's; with it, the exited processes are counted below.
        all += exited ? mine : grown;
    }
    // Processes gone by the end: what the kernel recorded at their threads'
    // exits, less what the process had at the start if it was there.
    for (const auto& [pid, e] : exited_by_pid) {
        if (after.count(pid)) continue;   // alive, grew by nothing in the window
        const auto b = before.find(pid);
        const uint64_t was = (b != before.end() && b->second.comm == e.comm) ? b->second.write_bytes : 0;
        if (e.bytes <= was) continue;
        const auto app = apps_of_exited.find(pid);
        writers.push_back({e.bytes - was, pid, e.comm, app == apps_of_exited.end() ? e.comm : app->second});
        all += e.bytes - was;
    }
    const std::string source =
        kProcSource + (exited ? "; processes and threads gone by the end as the kernel recorded them at their exit "
                                "(syscall_bpf, sched_process_exit)"
                              : "; processes that exited inside it are not named (their data is in the total)");
    const Provenance prov{exited ? "tracepoint" : "file", source};
    ev.add_metric("io.write_bytes_dirtied", {}, static_cast<double>(all), "bytes", prov);
    if (writers.empty()) return;
    std::sort(writers.begin(), writers.end(),
              [](const Writer& a, const Writer& b) { return a.bytes != b.bytes ? a.bytes > b.bytes : a.pid < b.pid; });
    for (size_t i = 0; i < writers.size() && i < kTopWriters; ++i)
        ev.add_metric("io.proc_write_bytes",
                      {{"pid", std::to_string(writers[i].pid)}, {"comm", writers[i].comm}, {"app", writers[i].app}},
                      static_cast<double>(writers[i].bytes), "bytes", prov);
    const uint64_t top_bytes = writers.front().bytes;
    ev.add_fact("io.top_writer", {}, writers.front().app + " (pid " + std::to_string(writers.front().pid) + ")", prov);
    ev.add_metric("io.top_writer_pct", {}, 100.0 * static_cast<double>(top_bytes) / static_cast<double>(all), "pct",
                  prov);
    if (window_s > 0)
        ev.add_metric("io.top_writer_bytes_per_s", {}, static_cast<double>(top_bytes) / window_s, "B/s", prov);
}

std::vector<MetricSpec> ProcIoCollector::metric_specs() const {
    using K = MetricSpec::Kind;
    return {
        {"io.write_bytes_dirtied", K::Metric, "bytes", layer::kDirty, "",
         "bytes all processes dirtied or wrote directly in the window (/proc/[pid]/io write_bytes)"},
        {"io.proc_write_bytes", K::Metric, "bytes", layer::kDirty, "pid",
         "bytes a top writer dirtied or wrote directly in the window"},
        {"io.top_writer", K::Fact, "", layer::kDirty, "", "the process that dirtied the most data in the window"},
        {"io.top_writer_pct", K::Metric, "pct", layer::kDirty, "", "its share of all bytes dirtied in the window"},
        {"io.top_writer_bytes_per_s", K::Metric, "B/s", layer::kDirty, "", "its write rate"},
    };
}

CollectorStatus ProcIoCollector::start(const CollectOptions& opts) {
    root_ = opts.root;
    duration_s_ = opts.duration_s;
    start_ = std::chrono::steady_clock::now();
    before_ = read_proc_io(root_);
    CollectorStatus st{name(), !before_.empty(), "", {}};
    if (before_.empty()) st.reason = "no readable " + under_root(root_, "/proc") + "/[pid]/io (not root?)";
    return st;
}

void ProcIoCollector::finish(Evidence& ev) {
    const double window =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    // /proc first, the kernel's record of exits after: a thread that exits
    // in between is then in both, and counted once (its process's growth has
    // it among its live threads', which bound what the exited ones add); the
    // other way round it would be in neither.
    std::map<int, ProcIo> after = read_proc_io(root_);
    read_thread_write_bytes(root_, before_, after);
    const auto exited = exited_ ? exited_->read() : std::nullopt;
    // Named only where they wrote: asking for every process's application
    // would read two more files of each.
    ApplicationIndex& apps = ApplicationIndex::of_root(root_);
    for (auto& [pid, p] : after) {
        const auto b = before_.find(pid);
        if (p.write_bytes > (b == before_.end() ? 0 : b->second.write_bytes))
            p.app = apps.application_of(static_cast<uint32_t>(pid), p.comm);
    }
    std::map<int, std::string> apps_of_exited;
    if (exited)
        for (const auto& x : *exited)
            if (x.tid == x.tgid || !apps_of_exited.count(static_cast<int>(x.tgid)))
                apps_of_exited[static_cast<int>(x.tgid)] = apps.application_of(x.tgid, x.comm);
    add_proc_io_metrics(before_, after, window > 0 ? window : duration_s_, ev, exited, apps_of_exited);
}

}  // namespace iodiag
