#include "collectors/bpf/perf_tracepoint.hpp"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "collectors/bpf/bpf_fault_injection.hpp"

#if IODIAG_HAVE_BPF
#include <bpf/bpf.h>
#endif

namespace iodiag {

namespace {

// The event's id in tracefs (the perf event's config), or -1.
long tracefs_event_id(const std::string& category, const std::string& name) {
    for (const char* tracing : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
        std::ifstream in(std::string(tracing) + "/events/" + category + "/" + name + "/id");
        long id = -1;
        if (in >> id) return id;
    }
    return -1;
}

}  // namespace

std::string attach_perf_tracepoint(int prog_fd, const std::string& category, const std::string& name,
                                   PerfTracepointLink& out) {
    out = {};
    const std::string what = category + ":" + name;
    if (auto fault = injected_bpf_fault("attach", {name})) return what + ": " + *fault;
#if IODIAG_HAVE_BPF
    const long id = tracefs_event_id(category, name);
    if (id < 0) return what + ": no event id in tracefs";
    perf_event_attr attr{};
    attr.type = PERF_TYPE_TRACEPOINT;
    attr.size = sizeof(attr);
    attr.config = static_cast<unsigned long long>(id);
    attr.sample_period = 1;
    attr.wakeup_events = 1;
    // One CPU's event is enough: a tracepoint's BPF programs hang off the
    // event itself and run on every CPU (as libbpf attaches them).
    const int pfd = static_cast<int>(syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC));
    if (pfd < 0) return what + ": perf_event_open: " + std::strerror(errno);
    int link = bpf_link_create(prog_fd, pfd, BPF_PERF_EVENT, nullptr);
    if (link < 0 && ioctl(pfd, PERF_EVENT_IOC_SET_BPF, prog_fd) < 0) {   // kernels before BPF perf links
        const int err = errno;
        close(pfd);
        return what + ": attaching the program: " + std::strerror(err);
    }
    if (ioctl(pfd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
        const int err = errno;
        if (link >= 0) close(link);
        close(pfd);
        return what + ": enabling the event: " + std::strerror(err);
    }
    out.perf_fd = pfd;
    out.link_fd = link < 0 ? -1 : link;
    return "";
#else
    (void)prog_fd;
    return what + ": built without BPF";
#endif
}

std::vector<int> descriptors_of(const std::vector<PerfTracepointLink>& links) {
    std::vector<int> fds;
    for (const auto& l : links)
        for (int fd : {l.link_fd, l.perf_fd})
            if (fd >= 0) fds.push_back(fd);
    return fds;
}

}  // namespace iodiag
