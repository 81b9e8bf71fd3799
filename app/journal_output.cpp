#include "app/journal_output.hpp"

#include <cstring>

#include "engine/evidence/json_text.hpp"
#include "engine/render/render.hpp"
#include "engine/triage/judgement.hpp"

#if IODIAG_HAVE_LIBSYSTEMD
#include <sys/stat.h>
#include <sys/uio.h>

#include <cerrno>
#include <systemd/sd-journal.h>
#endif

namespace iodiag::cli {

std::string send_verdict_to_journal(const Verdict& v, const std::string& mode) {
#if IODIAG_HAVE_LIBSYSTEMD
    // sd_journal_sendv() succeeds silently when journald is not running (no
    // socket): look first, so the user hears that nothing was logged.
    const char* socket_path = "/run/systemd/journal/socket";
    struct stat st {};
    if (::stat(socket_path, &st) != 0)
        return std::string("journald is not running (") + socket_path + ": " + std::strerror(errno) + ")";
    if (!S_ISSOCK(st.st_mode)) return std::string("journald is not running (") + socket_path + " is not a socket)";
    const std::string status = status_word(v);
    // syslog priorities: 2 crit, 4 warning, 6 info.
    const char* priority = status == "critical" ? "2" : status == "warning" ? "4" : "6";
    std::vector<std::string> fields{
        "MESSAGE=" + json_text(render_json(v)),
        std::string("MESSAGE_ID=") + kVerdictMessageId,
        std::string("PRIORITY=") + priority,
        "SYSLOG_IDENTIFIER=iodiag",
        "IODIAG_MODE=" + mode,
        "IODIAG_STATUS=" + status,
        "IODIAG_FINGERPRINT=" + v.fingerprint,
    };
    if (!v.findings.empty()) fields.push_back("IODIAG_TOP_RULE=" + v.findings.front().rule_id);
    std::vector<iovec> iov;
    for (auto& f : fields) iov.push_back({f.data(), f.size()});
    const int rc = sd_journal_sendv(iov.data(), static_cast<int>(iov.size()));
    if (rc < 0)
        return std::string("journald not reachable at ") + socket_path + ": " + std::strerror(-rc);
    return "";
#else
    (void)v;
    (void)mode;
    return "this iodiag was built without libsystemd (libsystemd-dev missing at build time)";
#endif
}

}  // namespace iodiag::cli
