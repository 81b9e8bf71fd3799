// Who dirtied the data: /proc/PID/io write_bytes of every process at the
// start and end of the window. The kernel counts write_bytes when a process
// dirties page-cache pages (or sends direct I/O), so the difference says whose
// data writeback and journal commits carried in the window — often not the
// process that waited for them (an fsync waits for a commit that must write
// a big writer's ordered data first).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectors/bpf/exited_writers.hpp"
#include "collectors/collector.hpp"

namespace iodiag {

struct ProcIo {
    std::string comm;
    std::string app;   // its application (applications.hpp), "" when not asked: its comm stands for it
    // /proc/PID/io: what its live threads dirtied, and its exited threads and
    // the children it reaped (the kernel adds theirs to it).
    uint64_t write_bytes = 0;
    // What its live threads dirtied themselves (the sum of
    // /proc/PID/task/*/io): read at the end for a process whose write_bytes
    // grew (read_thread_write_bytes); unset when not read.
    std::optional<uint64_t> threads_write_bytes;
};

// pid -> comm and write_bytes, read from ROOT/proc/[pid]/{io,comm}. Processes
// that vanish while being read, and kernel threads, are skipped.
std::map<int, ProcIo> read_proc_io(const std::string& root);

// Sets threads_write_bytes of each process of `after` whose write_bytes grew
// since `before`, from ROOT/proc/PID/task/*/io (left unset when unreadable).
void read_thread_write_bytes(const std::string& root, const std::map<int, ProcIo>& before,
                             std::map<int, ProcIo>& after);

// Appends io.* metrics: the top writers of the window. A process's part is
// what it dirtied itself: its write_bytes grown between `before` and `after`
// (a process new in `after` counts from 0), at most what its live threads
// count (threads_write_bytes, where read), plus its threads that exited as
// `exited` recorded them; the rest of its growth is its reaped children's
// (a shell's, whose children are the writers). `exited`: the threads the
// kernel recorded at their exit in the window (ExitedWriters); a process gone
// by the end is named from them. Without them, the children's data is in
// io.write_bytes_dirtied and named as nobody's. Each writer is labelled with
// its application (ProcIo::app; `apps_of_exited` for one gone by the end),
// its comm where it has none.
void add_proc_io_metrics(const std::map<int, ProcIo>& before, const std::map<int, ProcIo>& after, double window_s,
                         Evidence& ev, const std::optional<std::vector<ExitedWriter>>& exited = std::nullopt,
                         const std::map<int, std::string>& apps_of_exited = {});

class ProcIoCollector : public Collector {
public:
    // exited: the syscall collector's record of threads that exit in the
    // window (nullptr: /proc only).
    explicit ProcIoCollector(std::shared_ptr<ExitedWriters> exited = nullptr) : exited_(std::move(exited)) {}
    std::string name() const override { return "proc_io"; }
    std::vector<MetricSpec> metric_specs() const override;
    CollectorStatus start(const CollectOptions& opts) override;
    void finish(Evidence& ev) override;
    bool finish_only_appends() const override { return true; }

private:
    std::string root_;
    double duration_s_ = 0;
    std::chrono::steady_clock::time_point start_;
    std::map<int, ProcIo> before_;
    std::shared_ptr<ExitedWriters> exited_;
};

}  // namespace iodiag
