// A client for a Ceph daemon's admin socket (what `ceph daemon X CMD` speaks):
// the command as JSON text followed by a NUL byte, then the reply as a 4-byte
// big-endian length and that many bytes. Checked against Ceph 16.2
// (ceph_daemon.py, admin_socket()). The daemon answers one command per
// connection and closes it.
//
// Every call has a deadline: a hung OSD is exactly when iodiag runs, so a
// socket that accepts and never answers costs at most the timeout, never more.
#pragma once

#include <string>
#include <sys/types.h>

namespace iodiag {

struct AdminSocketReply {
    bool ok = false;
    std::string body;    // the daemon's reply (JSON for the commands iodiag sends)
    std::string error;   // why not, naming the socket: refused, timed out, truncated, too large
    pid_t peer_pid = 0;  // the daemon's PID (SO_PEERCRED), 0 when unknown
};

// Sends `command_json` (e.g. {"prefix": "perf dump"}) to the socket at `path`.
// Replies larger than max_bytes are refused (a corrupt length would otherwise
// make iodiag allocate gigabytes).
AdminSocketReply admin_socket_command(const std::string& path, const std::string& command_json,
                                      int timeout_ms, size_t max_bytes = 64u << 20);

}  // namespace iodiag
