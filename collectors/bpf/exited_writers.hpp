// Threads that exited inside the window having dirtied data, as the kernel
// recorded them at their exit (bpf/syscall.bpf.c on_task_exit), handed from
// the syscall collector, whose BPF object records them, to proc_io, which
// names who dirtied the window's data (collectors/procfs/proc_io.hpp): once a
// process is reaped, its count is added to its parent's /proc/PID/io, so
// /proc alone names the shell that started a writer, not the writer.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace iodiag {

struct ExitedWriter {
    uint32_t tid = 0;
    uint32_t tgid = 0;
    std::string comm;          // its command when it exited
    uint64_t write_bytes = 0;  // what it dirtied in its life (task_io_accounting write_bytes)
};

class ExitedWriters {
public:
    ExitedWriters() = default;
    ~ExitedWriters();
    ExitedWriters(const ExitedWriters&) = delete;
    ExitedWriters& operator=(const ExitedWriters&) = delete;
    // The syscall collector, once its exit program is attached: the map it
    // fills (duplicated: readable after the collector released its own).
    void offer(int map_fd);
    // proc_io, at the end of the window: the threads recorded so far;
    // nullopt when nothing records them (no BPF, the collector did not start,
    // or its exit program did not attach).
    std::optional<std::vector<ExitedWriter>> read();

private:
    std::mutex mu_;
    int fd_ = -1;
};

}  // namespace iodiag
