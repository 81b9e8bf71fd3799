#include "collectors/procfs/proc_io.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "collectors/procfs/applications.hpp"
#include "collectors/procfs/proc_pid_stat.hpp"
#include "collectors/text_file.hpp"
#include "engine/evidence/format.hpp"
#include "engine/evidence/layers.hpp"

namespace iodiag {

namespace {

constexpr size_t kTopWriters = 5;

const Provenance kProv{"file", "/proc/[pid]/io write_bytes (counted when pages are dirtied or direct I/O is sent), "
                               "start and end of the window; processes that exited inside it are not seen"};

}  // namespace

std::map<int, ProcIo> read_proc_io(const std::string& root) {
    std::map<int, ProcIo> out;
    std::error_code ec;
    const std::filesystem::path proc = under_root(root, "/proc");
    for (const auto& entry : std::filesystem::directory_iterator(proc, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
        // Kernel threads (flag PF_KTHREAD in /proc/PID/stat) write on behalf of
        // others: a loop device's worker writes the upper filesystem's data
        // into the backing file. Counting them would name the worker, not the
        // writer, and count the data twice.
        const auto stat = try_read_first_line(entry.path().string() + "/stat");
        if (stat && stat_says_kernel_thread(*stat)) continue;
        const auto io = try_read_text_file(entry.path().string() + "/io");
        if (!io) continue;   // gone, or not readable
        ProcIo p;
        for (size_t at = 0; at < io->size();) {
            size_t end = io->find('\n', at);
            if (end == std::string::npos) end = io->size();
            const std::string line = io->substr(at, end - at);
            if (line.rfind("write_bytes:", 0) == 0) p.write_bytes = std::strtoull(line.c_str() + 12, nullptr, 10);
            at = end + 1;
        }
        p.comm = try_read_first_line(entry.path().string() + "/comm").value_or("?");
        const long pid = std::strtol(name.c_str(), nullptr, 10);   // saturates, unlike atoi (UB past INT_MAX)
        if (pid <= 0 || pid > std::numeric_limits<int>::max()) continue;
        out[static_cast<int>(pid)] = p;
    }
    return out;
}

void add_proc_io_metrics(const std::map<int, ProcIo>& before, const std::map<int, ProcIo>& after, double window_s,
                         Evidence& ev) {
    std::vector<std::pair<uint64_t, int>> grown;
    uint64_t all = 0;
    for (const auto& [pid, p] : after) {
        const auto b = before.find(pid);
        const uint64_t was = (b != before.end() && b->second.comm == p.comm) ? b->second.write_bytes : 0;
        if (p.write_bytes <= was) continue;
        grown.push_back({p.write_bytes - was, pid});
        all += p.write_bytes - was;
    }
    ev.add_metric("io.write_bytes_dirtied", {}, static_cast<double>(all), "bytes", kProv);
    if (grown.empty()) return;
    std::sort(grown.rbegin(), grown.rend());
    for (size_t i = 0; i < grown.size() && i < kTopWriters; ++i) {
        const auto& [bytes, pid] = grown[i];
        const ProcIo& p = after.at(pid);
        ev.add_metric("io.proc_write_bytes",
                      {{"pid", std::to_string(pid)}, {"comm", p.comm}, {"app", p.app.empty() ? p.comm : p.app}},
                      static_cast<double>(bytes), "bytes", kProv);
    }
    const auto& [top_bytes, top_pid] = grown.front();
    const ProcIo& top = after.at(top_pid);
    ev.add_fact("io.top_writer", {}, (top.app.empty() ? top.comm : top.app) + " (pid " + std::to_string(top_pid) + ")",
                kProv);
    ev.add_metric("io.top_writer_pct", {}, 100.0 * static_cast<double>(top_bytes) / static_cast<double>(all), "pct",
                  kProv);
    if (window_s > 0)
        ev.add_metric("io.top_writer_bytes_per_s", {}, static_cast<double>(top_bytes) / window_s, "B/s", kProv);
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
    auto after = read_proc_io(root_);
    // Named only where they wrote: asking for every process's application
    // would read two more files of each.
    for (auto& [pid, p] : after) {
        const auto b = before_.find(pid);
        if (p.write_bytes > (b == before_.end() ? 0 : b->second.write_bytes))
            p.app = ApplicationIndex::of_root(root_).application_of(static_cast<uint32_t>(pid), p.comm);
    }
    add_proc_io_metrics(before_, after, window > 0 ? window : duration_s_, ev);
}

}  // namespace iodiag
