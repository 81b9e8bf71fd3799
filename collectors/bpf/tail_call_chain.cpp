#include "collectors/bpf/tail_call_chain.hpp"

#include <cerrno>
#include <cstring>

#if IODIAG_HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "collectors/bpf/bpf_features.hpp"
#endif

namespace iodiag {

void TailCallChain::offer(int prog_array_fd, ChainKind kind) {
    std::lock_guard<std::mutex> lock(mu_);
    array_fd_ = prog_array_fd;
    kind_ = prog_array_fd >= 0 ? kind : ChainKind::None;
}

void TailCallChain::withdraw() {
    std::lock_guard<std::mutex> lock(mu_);
    array_fd_ = -1;
    kind_ = ChainKind::None;
}

ChainKind TailCallChain::offered() {
    std::lock_guard<std::mutex> lock(mu_);
    return kind_;
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

#if IODIAG_HAVE_BPF
ChainOutcome chain_or_attach(TailCallChain& chain, bpf_program* prog, std::vector<bpf_link*>& links) {
    if (chain.take(bpf_program__fd(prog))) return {true, ""};
    LibbpfLog log;   // an attach failure is reported by the caller, not on stderr
    if (bpf_link* l = bpf_program__attach(prog)) {
        links.push_back(l);
        return {};
    }
    return {false, std::strerror(errno)};
}
#endif

}  // namespace iodiag
