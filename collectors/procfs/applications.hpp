// Applications as people know them (issue 33): which program a process is
// part of, named the way an operator looks it up ("python3 ingest.py"), never
// by its command name alone: two `python3` programs are two applications.
//
// An application is a process together with the processes it forked that run
// the same program: a database's backends under its postmaster, fio's job
// processes under fio, a web server's workers. A child running another
// program (a shell's `dd`, a script's `cp`) is an application of its own: it
// is what loaded the device, and it is what an operator kills or throttles.
// Processes of one service are not merged on the service alone: a unit such
// as cron.service runs every job of the host, a backup beside its victim;
// the unit is shown beside the name instead (the cgroup's name).
//
// Every collector that labels a process asks one index per run, so that the
// syscall, block, /proc/PID/io and CPU collectors give one process the same
// application (the label `app`). A process is read from /proc once, the first
// time a collector asks while it lives; one that exited before anybody asked
// keeps what the kernel recorded of it (its comm, and its command line when
// it exec'd inside the window), or its comm alone.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace iodiag {

// What one process is, as far as it was seen.
struct ProcessIdentity {
    uint32_t ppid = 0;     // 0: unknown (gone before /proc was read)
    std::string comm;
    std::string cmdline;   // argv joined by spaces; "" for a kernel thread or unknown
};

// The longest application name given; a longer command line keeps its head
// and its tail with "..." between. Long enough for a program and its
// distinguishing arguments (`python3 /srv/jobs/ingest.py --batch 7`), short
// enough for a finding's title.
inline constexpr size_t kApplicationNameMax = 64;

// How long a collector's question about an exited process waits for the
// syscall collector's record of it (its finish reads one BPF map).
inline constexpr std::chrono::seconds kKernelNamesWait{5};

// A command line as shown: argv[0]'s last path component and the arguments
// (NULs read from /proc/PID/cmdline as spaces: proc_cmdline.hpp), cut to
// kApplicationNameMax; the comm when the command line is empty.
std::string command_line_shown(const std::string& cmdline, const std::string& comm);

class ApplicationIndex {
public:
    explicit ApplicationIndex(std::string proc_root = "") : root_(std::move(proc_root)) {}

    // The one index of this run over the /proc under `root` ("" or "/": the
    // host's; a test's fixture tree otherwise).
    static ApplicationIndex& of_root(const std::string& root);
    static ApplicationIndex& host() { return of_root(""); }

    // What a collector recorded of a process in the kernel (its comm, and its
    // command line as of its I/O): kept for a process that exits before /proc
    // is read; /proc adds its parent.
    void remember(uint32_t pid, const std::string& comm, const std::string& cmdline);

    // The syscall collector records every process's command line in the
    // kernel and remembers them all when it finishes, while the other
    // collectors finish beside it. A process that exited in the window is
    // then known only from that record: asked about before it is given, the
    // index waits for it (kKernelNamesWait at most), so that a short-lived
    // `dd if=... of=...` started by a shell loop gets its command line from
    // every collector, not its bare comm from the quicker ones (which made
    // it look like another application beside itself). Only once the window
    // is over (window_over(), before the finishes): a question asked while
    // it runs (a sample naming a process that exited or is a zombie at that
    // moment) is answered at once, never holding the sampler up.
    void expect_kernel_names();
    void window_over();
    void kernel_names_given();

    // The application `pid` is part of: the command line shown of the
    // eldest ancestor running the same program (same comm) without a break
    // in the chain, else of the process itself, else `comm`.
    std::string application_of(uint32_t pid, const std::string& comm);

private:
    std::optional<ProcessIdentity> identity_locked(uint32_t pid);
    std::string root_;
    std::mutex mu_;
    std::condition_variable given_;
    bool expecting_ = false;     // expect_kernel_names() called, kernel_names_given() not yet
    bool window_over_ = false;   // window_over() called since expect_kernel_names()
    std::map<uint32_t, ProcessIdentity> known_;
    std::map<uint32_t, bool> read_;   // pid -> /proc read tried
};

}  // namespace iodiag
