#include "collectors/ceph/ceph_admin_socket.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace iodiag {

namespace {

using Clock = std::chrono::steady_clock;

struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

int ms_left(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left > 0 ? static_cast<int>(left) : 0;
}

// Waits until fd is ready for `events` or the deadline passes.
bool wait_ready(int fd, short events, Clock::time_point deadline) {
    for (;;) {
        pollfd p{fd, events, 0};
        const int n = ::poll(&p, 1, ms_left(deadline));
        if (n > 0) return true;
        if (n == 0) return false;
        if (errno != EINTR) return false;
    }
}

}  // namespace

AdminSocketReply admin_socket_command(const std::string& path, const std::string& command_json, int timeout_ms,
                                      size_t max_bytes) {
    AdminSocketReply r;
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    auto fail = [&](const std::string& why) {
        r.ok = false;
        r.error = path + ": " + why;
        return r;
    };
    sockaddr_un addr{};
    if (path.size() >= sizeof addr.sun_path) return fail("path too long for a unix socket");
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);

    Fd s;
    s.fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s.fd < 0) return fail(std::string("socket: ") + std::strerror(errno));
    if (::connect(s.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        if (errno != EINPROGRESS && errno != EAGAIN) return fail(std::string("connect: ") + std::strerror(errno));
        if (!wait_ready(s.fd, POLLOUT, deadline)) return fail("connect timed out");
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) return fail(std::string("connect: ") + std::strerror(err));
    }
    ucred cred{};
    socklen_t clen = sizeof cred;
    if (::getsockopt(s.fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0) r.peer_pid = cred.pid;

    // The command and its terminating NUL.
    const std::string out = command_json + std::string(1, '\0');
    size_t sent = 0;
    while (sent < out.size()) {
        const ssize_t n = ::send(s.fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!wait_ready(s.fd, POLLOUT, deadline)) return fail("send timed out");
            continue;
        }
        return fail(std::string("send: ") + std::strerror(errno));
    }

    // Reads exactly `want` bytes into buf, within the deadline.
    auto read_exact = [&](char* buf, size_t want, const char* what) -> std::string {
        size_t got = 0;
        while (got < want) {
            const ssize_t n = ::recv(s.fd, buf + got, want - got, 0);
            if (n > 0) {
                got += static_cast<size_t>(n);
                continue;
            }
            if (n == 0)
                return std::string("connection closed after ") + std::to_string(got) + " of " +
                       std::to_string(want) + " bytes of the " + what;
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (!wait_ready(s.fd, POLLIN, deadline))
                    return std::string("timed out after ") + std::to_string(timeout_ms) + " ms waiting for the " + what;
                continue;
            }
            return std::string("recv: ") + std::strerror(errno);
        }
        return "";
    };
    unsigned char len_be[4];
    if (auto why = read_exact(reinterpret_cast<char*>(len_be), 4, "reply length"); !why.empty()) return fail(why);
    const uint32_t len = (uint32_t(len_be[0]) << 24) | (uint32_t(len_be[1]) << 16) | (uint32_t(len_be[2]) << 8) |
                         uint32_t(len_be[3]);
    if (len > max_bytes)
        return fail("reply length " + std::to_string(len) + " exceeds " + std::to_string(max_bytes) +
                    " bytes (not an admin socket of a known Ceph version?)");
    r.body.resize(len);
    if (auto why = read_exact(r.body.data(), len, "reply"); !why.empty()) return fail(why);
    r.ok = true;
    return r;
}

}  // namespace iodiag
