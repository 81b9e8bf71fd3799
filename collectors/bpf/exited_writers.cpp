#include "collectors/bpf/exited_writers.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#if IODIAG_HAVE_BPF
#include "bpf/syscall_events.h"
#include "collectors/bpf/bpf_array_read.hpp"
#endif

namespace iodiag {

ExitedWriters::~ExitedWriters() {
    if (fd_ >= 0) close(fd_);
}

void ExitedWriters::offer(int map_fd) {
    const int fd = map_fd >= 0 ? fcntl(map_fd, F_DUPFD_CLOEXEC, 0) : -1;
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
}

std::optional<std::vector<ExitedWriter>> ExitedWriters::read() {
    std::lock_guard<std::mutex> lock(mu_);
    if (fd_ < 0) return std::nullopt;
    std::vector<ExitedWriter> out;
#if IODIAG_HAVE_BPF
    for_each_hash_entry<uint32_t, iod_exit_info>(fd_, [&](uint32_t tid, const iod_exit_info& v) {
        out.push_back({tid, v.tgid, std::string(v.comm, strnlen(v.comm, sizeof(v.comm))), v.write_bytes});
    });
#endif
    return out;
}

}  // namespace iodiag
