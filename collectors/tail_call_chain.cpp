#include "collectors/tail_call_chain.hpp"

#include <cerrno>

#if IODIAG_HAVE_BPF
#include <bpf/bpf.h>
#endif

namespace iodiag {

void TailCallChain::offer(int prog_array_fd) {
    std::lock_guard<std::mutex> lock(mu_);
    array_fd_ = prog_array_fd;
}

void TailCallChain::withdraw() {
    std::lock_guard<std::mutex> lock(mu_);
    array_fd_ = -1;
}

bool TailCallChain::take(int prog_fd) {
    std::lock_guard<std::mutex> lock(mu_);
    if (array_fd_ < 0 || prog_fd < 0) return false;
#if IODIAG_HAVE_BPF
    const unsigned key = 0;
    taken_ = bpf_map_update_elem(array_fd_, &key, &prog_fd, BPF_ANY) == 0;
    return taken_;
#else
    errno = ENOSYS;
    return false;
#endif
}

void TailCallChain::release() {
    std::lock_guard<std::mutex> lock(mu_);
#if IODIAG_HAVE_BPF
    if (taken_ && array_fd_ >= 0) {
        const unsigned key = 0;
        bpf_map_delete_elem(array_fd_, &key);
    }
#endif
    taken_ = false;
}

bool TailCallChain::taken() {
    std::lock_guard<std::mutex> lock(mu_);
    return taken_;
}

}  // namespace iodiag
